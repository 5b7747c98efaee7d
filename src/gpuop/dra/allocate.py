"""kube-scheduler's structured allocator, replayed on one node, with the reasons it keeps to itself.

A replay of k8s.io/dynamic-resource-allocation/structured as Kubernetes 1.37 runs it by default
(the "incubating" variant: partitionable devices, admin access, prioritized lists, device taints
and consumable capacity on; binding conditions off). On one node:

* pools are gathered from the slices for that node, the newest generation of each; a pool is
  usable only when all ``resourceSliceCount`` slices of that generation exist; pools sorted by
  driver and name, slices by name, devices in slice order;
* every request is checked against its DeviceClass's selectors and then its own (CEL); a CEL
  runtime error ends the whole attempt with an error, which the scheduler turns into an Error
  status that aborts the pod's scheduling cycle;
* devices allocated to other claims (``status.allocation``, admin-access results excepted) are
  taken; a device that consumes counters fits only while every counter of its pool still covers
  what allocated and in-progress devices consume (KEP-4815);
* the search is the allocator's own depth-first search over claims, requests and devices, with
  its order, its backtracking and its 32-devices-per-claim limit, so the same claims fit or not.

Then, for a claim that does not fit, :func:`fit` says per request and per device why the device
could not be used, where the scheduler says only "cannot allocate all claims".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpuop.dra.cel import CelError, compile_selector
from gpuop.dra.model import AllocatedDevice, Claim, Device, DeviceClass, DeviceRequest, Slice
from gpuop.dra.pools import Pool, gather_pools

__all__ = ["DeviceNote", "NodeVerdict", "RequestFit", "fit"]

#: resourceapi.AllocationResultsMaxSize: the most devices one claim can get.
MAX_DEVICES_PER_CLAIM = 32
#: Steps of the search before giving up, as the scheduler's filter timeout would.
SEARCH_BUDGET = 200_000

DeviceKey = tuple[str, str, str]


@dataclass(frozen=True)
class DeviceNote:
    """One device considered for one request, and why it could not be used ("" if it could)."""

    device: str
    reason: str


@dataclass(frozen=True)
class RequestFit:
    """One request (or subrequest) of one claim on one node."""

    claim: str
    request: str
    wanted: str
    usable: tuple[str, ...]
    notes: tuple[DeviceNote, ...]


@dataclass(frozen=True)
class NodeVerdict:
    """Whether the claims fit together on ``node``, and why not."""

    node: str
    fits: bool
    #: Ends the scheduling cycle for the pod when set (CEL runtime error, pool being updated...).
    error: str | None = None
    allocation: Mapping[str, tuple[AllocatedDevice, ...]] = field(default_factory=dict)
    requests: tuple[RequestFit, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """One line: why not (empty when the claims fit)."""
        if self.fits:
            return ""
        if self.error:
            return self.error
        if self.problems:
            return self.problems[0]
        short = [r for r in self.requests if _short(r)]
        if short:
            r = short[0]
            return (
                f"claim {r.claim}, request {r.request}: wants {r.wanted}, "
                f"{len(r.usable)} usable device{'' if len(r.usable) == 1 else 's'}"
            )
        return "cannot allocate all claims: the usable devices cannot serve every request at once"


def _short(r: RequestFit) -> bool:
    if r.wanted == "all":
        return not r.usable
    return len(r.usable) < int(r.wanted)


# --- the search ---------------------------------------------------------------------------


class _Fatal(Exception):
    """An error Allocate returns: the scheduler aborts the pod's scheduling cycle."""


class _MaxSize(Exception):
    """errAllocationResultMaxSizeExceeded."""


@dataclass
class _Req:
    claim: int
    request: DeviceRequest
    parent: DeviceRequest | None
    device_class: DeviceClass
    num: int
    all_devices: list[tuple[Pool, Device]] | None = None


def _tolerated(taint: Mapping[str, object], tolerations: Sequence[Mapping[str, object]]) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("key") and t.get("key") != taint.get("key"):
            continue
        op = t.get("operator") or "Equal"
        if (op == "Equal" and t.get("value", "") == taint.get("value", "")) or op == "Exists":
            return True
    return False


def _taint_blocks(device: Device, request: DeviceRequest) -> Mapping[str, object] | None:
    for taint in device.taints:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(
            taint, request.tolerations
        ):
            return taint
    return None


@dataclass
class _Constraint:
    """matchAttribute: every device of the named requests has the same value of ``attribute``."""

    requests: frozenset[str]
    attribute: str
    value: object = None
    devices: int = 0

    def applies(self, names: tuple[str, str]) -> bool:
        return (
            not self.requests
            or names[0] in self.requests
            or f"{names[0]}/{names[1]}" in self.requests
        )

    def add(self, device: Device) -> bool:
        value = device.attributes.get(self.attribute)
        if value is None or (self.devices and value != self.value):
            return False
        self.value, self.devices = value, self.devices + 1
        return True

    def remove(self) -> None:
        self.devices -= 1
        if not self.devices:
            self.value = None


class _Allocator:
    def __init__(
        self,
        claims: Sequence[Claim],
        pools: list[Pool],
        classes: Mapping[str, DeviceClass],
        allocated: Mapping[DeviceKey, str],
    ) -> None:
        self.claims = claims
        self.pools = pools
        self.classes = classes
        self.allocated = allocated
        self.matches: dict[tuple[DeviceKey, int, int, int], bool] = {}
        self.allocating: dict[DeviceKey, set[int]] = {}
        self.consumed: dict[str, dict[str, dict[str, int]]] = {}
        self.available: dict[str, dict[str, dict[str, int]]] = {}
        self.results: list[list[tuple[str, Device, bool]]] = [[] for _ in claims]
        self.reqs: dict[tuple[int, int, int], _Req] = {}
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.steps = 0
        self.constraints = [
            [_Constraint(frozenset(names), attr) for names, attr in c.constraints] for c in claims
        ]

    # validateDeviceRequest
    def validate(self) -> None:
        for ci, claim in enumerate(self.claims):
            total = 0
            for ri, request in enumerate(claim.requests):
                if request.subrequests:
                    least = None
                    for si, sub in enumerate(request.subrequests):
                        data = self._request_data(ci, ri, si, sub, request)
                        least = data.num if least is None else min(least, data.num)
                    needed = least or 0
                else:
                    needed = self._request_data(ci, ri, 0, request, None).num
                if needed > MAX_DEVICES_PER_CLAIM - total:
                    raise _Fatal(
                        f"claim {claim.key}, request {request.name}: adding {needed} devices "
                        f"exceeds the claim limit of {MAX_DEVICES_PER_CLAIM}"
                    )
                total += needed

    def _request_data(
        self, ci: int, ri: int, si: int, request: DeviceRequest, parent: DeviceRequest | None
    ) -> _Req:
        claim = self.claims[ci]
        device_class = self.classes.get(request.device_class)
        if device_class is None:
            raise _Fatal(
                f"claim {claim.key}, request {request.name}: device class "
                f"{request.device_class} does not exist"
            )
        data = _Req(ci, request, parent, device_class, request.count)
        if request.mode == "All":
            data.all_devices = []
            for pool in self.pools:
                if pool.incomplete:
                    raise _Fatal(
                        f"claim {claim.key}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.id} is currently being updated"
                    )
                if pool.invalid:
                    raise _Fatal(
                        f"claim {claim.key}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.id} is currently invalid"
                    )
                for device in pool.devices():
                    if self.selectable((ci, ri, si), data, device):
                        data.all_devices.append((pool, device))
            data.num = len(data.all_devices)
        self.reqs[(ci, ri, si)] = data
        return data

    def selectable(self, key: tuple[int, int, int], data: _Req, device: Device) -> bool:
        cache_key = (device.key, *key)
        if cache_key in self.matches:
            return self.matches[cache_key]
        if device.binding_conditions:
            return False  # DRADeviceBindingConditions is off by default
        failed = _failed_selector(data, f"claim {self.claims[data.claim].key}", device)
        if failed is not None:
            owner, i, error = failed
            if error is not None:
                text = "CEL compile error" if error.compile_time else "CEL runtime error"
                raise _Fatal(
                    f"{owner}: selector #{i} on device {device.id}: {text}: {error.problem}"
                )
        self.matches[cache_key] = failed is None
        return failed is None

    def in_use(self, key: DeviceKey) -> bool:
        return key in self.allocated or bool(self.allocating.get(key))

    def _pool_available(self, pool: Pool) -> dict[str, dict[str, int]]:
        if pool.id not in self.available:
            avail = {name: dict(counters) for name, counters in pool.counters.items()}
            for device in (d for s in pool.slices + pool.other_slices for d in s.devices):
                if device.key not in self.allocated:
                    continue
                for use in device.consumes:
                    for counter, amount in use.counters.items():
                        if counter in avail.get(use.counter_set, {}):
                            avail[use.counter_set][counter] -= amount
            self.available[pool.id] = avail
        return self.available[pool.id]

    def _counters_take(self, pool: Pool, device: Device, sign: int) -> None:
        consumed = self.consumed.setdefault(pool.id, {})
        for use in device.consumes:
            target = consumed.setdefault(use.counter_set, {})
            for counter, amount in use.counters.items():
                target[counter] = target.get(counter, 0) + sign * amount

    def check_counters(self, pool: Pool, device: Device) -> bool:
        available = self._pool_available(pool)
        self._counters_take(pool, device, +1)
        consumed = self.consumed[pool.id]
        for name, counters in available.items():
            for counter, have in counters.items():
                if have < consumed.get(name, {}).get(counter, 0):
                    self._counters_take(pool, device, -1)
                    return False
        return True

    def _constraint_add(self, ci: int, names: tuple[str, str], device: Device) -> int | None:
        """Add ``device`` to the claim's constraints; the count added, or None (rolled back)."""
        added: list[_Constraint] = []
        for c in self.constraints[ci]:
            if not c.applies(names):
                continue
            if not c.add(device):
                for done in reversed(added):
                    done.remove()
                return None
            added.append(c)
        return len(added)

    def _constraint_remove(self, ci: int, names: tuple[str, str]) -> None:
        for c in self.constraints[ci]:
            if c.applies(names):
                c.remove()

    def allocate_device(
        self, ci: int, data: _Req, pool: Pool, device: Device, must: bool
    ) -> Callable[[], None] | None:
        """allocateDevice: take ``device`` for the request, or None; the result undoes it."""
        request = data.request
        if request.admin and ci in self.allocating.get(device.key, set()):
            return None
        if not request.admin and self.in_use(device.key):
            return None
        reserved = False
        if device.consumes:
            if not self.check_counters(pool, device):
                return None
            reserved = True
        names = (data.parent.name, request.name) if data.parent else (request.name, "")

        def rollback_partial() -> None:
            if reserved:
                self._counters_take(pool, device, -1)

        if _taint_blocks(device, request) is not None:
            rollback_partial()
            return None
        if self._constraint_add(ci, names, device) is None:
            rollback_partial()
            if must:
                raise _Fatal(
                    f"claim {self.claims[ci].key}, request {request.name}: cannot add device "
                    f"{device.id} because a claim constraint would not be satisfied"
                )
            return None
        self.allocating.setdefault(device.key, set()).add(ci)
        name = f"{names[0]}/{names[1]}" if data.parent else request.name
        self.results[ci].append((name, device, request.admin))
        before = len(self.results[ci]) - 1

        def undo() -> None:
            del self.results[ci][before:]
            self.allocating[device.key].discard(ci)
            self._constraint_remove(ci, names)
            rollback_partial()

        return undo

    def allocate_one(
        self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: tuple[int, int, int]
    ) -> bool:
        self.steps += 1
        if self.steps > SEARCH_BUDGET:
            raise _Fatal("timed out trying to allocate devices")
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            try:
                return self.allocate_one(ci + 1, 0, 0, 0, False, (0, 0, 0))
            except _MaxSize:
                return False
        data = self.reqs[(ci, ri, si)]
        if not in_sub and data.parent is not None:
            all_exceeded = True
            for sub in range(len(claim.requests[ri].subrequests)):
                try:
                    ok = self.allocate_one(ci, ri, sub, di, True, (0, 0, 0))
                except _MaxSize:
                    continue
                all_exceeded = False
                if ok:
                    self.selected_sub[(ci, ri)] = sub
                    return True
            if all_exceeded:
                raise _MaxSize
            return False
        request = data.request
        if request.mode == "All" and not data.all_devices:
            return False
        if di >= data.num:
            return self.allocate_one(ci, ri + 1, 0, 0, False, (0, 0, 0))
        if data.num - di > MAX_DEVICES_PER_CLAIM - len(self.results[ci]):
            raise _MaxSize
        if data.all_devices is not None:
            pool, device = data.all_devices[di]
            undo = self.allocate_device(ci, data, pool, device, True)
            if undo is None:
                return False
            try:
                done = self.allocate_one(ci, ri, si, di + 1, in_sub, (0, 0, 0))
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.incomplete or pool.invalid:
                continue
            for sli in range(start[1] if pi == start[0] else 0, len(pool.slices)):
                devices = pool.slices[sli].devices
                first = start[2] if (pi, sli) == start[:2] else 0
                for dvi in range(first, len(devices)):
                    device = devices[dvi]
                    if request.admin and ci in self.allocating.get(device.key, set()):
                        continue
                    if not request.admin and self.in_use(device.key):
                        continue
                    if not self.selectable((ci, ri, si), data, device):
                        continue
                    undo = self.allocate_device(ci, data, pool, device, False)
                    if undo is None:
                        continue
                    try:
                        done = self.allocate_one(ci, ri, si, di + 1, in_sub, (pi, sli, dvi + 1))
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False


# --- reasons ------------------------------------------------------------------------------


def _failed_selector(
    data: _Req, request_owner: str, device: Device
) -> tuple[str, int, CelError | None] | None:
    """The first selector, the class's then the request's, that ``device`` fails: (owner,
    index, the CEL error or None where it is false); None when all hold."""
    for owner, exprs in (
        (f"class {data.device_class.name}", data.device_class.selectors),
        (request_owner, data.request.selectors),
    ):
        for i, expr in enumerate(exprs):
            try:
                ok = compile_selector(expr).evaluate(device)
            except CelError as error:
                return owner, i, error
            if not ok:
                return owner, i, None
    return None


def _device_reason(
    alloc: _Allocator, key: tuple[int, int, int], data: _Req, pool: Pool, device: Device
) -> str:
    if pool.incomplete:
        return f"pool {pool.id} is incomplete (being updated)"
    if pool.invalid:
        return f"pool {pool.id} is invalid: {pool.invalid}"
    if device.binding_conditions:
        return "has binding conditions (DRADeviceBindingConditions is off)"
    failed = _failed_selector(data, f"request {data.request.name}", device)
    if failed is not None:
        owner, i, error = failed
        if error is not None:
            return f"selector #{i} of {owner}: {error}"
        return f"selector #{i} of {owner} is false"
    if not data.request.admin and device.key in alloc.allocated:
        return f"already allocated to {alloc.allocated[device.key]}"
    taint = _taint_blocks(device, data.request)
    if taint is not None:
        return f"tainted {taint.get('key')}={taint.get('value', '')}:{taint.get('effect')} (not tolerated)"
    if device.consumes:
        available = alloc._pool_available(pool)
        for use in device.consumes:
            for counter, amount in use.counters.items():
                have = available.get(use.counter_set, {}).get(counter, 0)
                if have < amount:
                    users = [
                        f"{d.name} ({alloc.allocated[d.key]})"
                        for d in (d for s in pool.slices + pool.other_slices for d in s.devices)
                        if d.key in alloc.allocated
                        and any(u.counter_set == use.counter_set for u in d.consumes)
                    ]
                    by = f" by {', '.join(users)}" if users else ""
                    return f"counter set {use.counter_set} exhausted{by}"
        for name, counters in available.items():
            if any(v < 0 for v in counters.values()):
                return f"counter set {name} of pool {pool.id} is overcommitted"
    return ""


def _request_fits(alloc: _Allocator) -> list[RequestFit]:
    fits = []
    for (ci, ri, si), data in sorted(alloc.reqs.items()):
        notes = []
        for pool in alloc.pools:
            for device in pool.devices():
                notes.append(
                    DeviceNote(device.name, _device_reason(alloc, (ci, ri, si), data, pool, device))
                )
        name = f"{data.parent.name}/{data.request.name}" if data.parent else data.request.name
        fits.append(
            RequestFit(
                claim=alloc.claims[ci].key,
                request=name,
                wanted="all" if data.request.mode == "All" else str(data.request.count),
                usable=tuple(n.device for n in notes if not n.reason),
                notes=tuple(notes),
            )
        )
    return fits


def allocated_devices(claims: Sequence[Claim], *, skip: Sequence[str] = ()) -> dict[DeviceKey, str]:
    """The devices other claims hold (admin-access results are not held), and by whom."""
    held: dict[DeviceKey, str] = {}
    for claim in claims:
        if claim.key in skip:
            continue
        for result in claim.allocated or ():
            if not result.admin:
                held[result.key] = claim.key
    return held


def fit(
    claims: Sequence[Claim],
    node: str,
    slices: Sequence[Slice],
    classes: Mapping[str, DeviceClass],
    allocated: Mapping[DeviceKey, str],
    *,
    node_labels: Mapping[str, str] | None = None,
) -> NodeVerdict:
    """Whether ``claims`` (all unallocated, one pod's) can be allocated together on ``node``.

    ``allocated`` maps each device other claims hold to the holder ("ns/name"), as
    :func:`allocated_devices` gives it.
    """
    labels = dict(node_labels or {})
    labels.setdefault("kubernetes.io/hostname", node)
    pools = gather_pools(slices, node, labels)
    problems = tuple(
        f"pool {p.id} is incomplete (being updated)"
        if p.incomplete
        else f"pool {p.id} is invalid: {p.invalid}"
        for p in pools
        if p.incomplete or p.invalid
    )
    alloc = _Allocator(claims, pools, classes, allocated)
    try:
        alloc.validate()
        done = alloc.allocate_one(0, 0, 0, 0, False, (0, 0, 0))
    except _Fatal as error:
        return NodeVerdict(
            node, False, error=str(error), requests=tuple(_safe_fits(alloc)), problems=problems
        )
    except _MaxSize:
        done = False
    if done:
        allocation = {
            claims[ci].key: tuple(
                AllocatedDevice(name, d.driver, d.pool, d.name, admin) for name, d, admin in results
            )
            for ci, results in enumerate(alloc.results)
        }
        return NodeVerdict(node, True, allocation=allocation, requests=tuple(_request_fits(alloc)))
    if any(p.invalid for p in pools):
        problems = ("invalid resource pools were encountered", *problems)
    return NodeVerdict(node, False, requests=tuple(_request_fits(alloc)), problems=problems)


def _safe_fits(alloc: _Allocator) -> list[RequestFit]:
    try:
        return _request_fits(alloc)
    except CelError:
        return []
