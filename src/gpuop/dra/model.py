"""ResourceSlices, DeviceClasses and ResourceClaims (resource.k8s.io/v1), as typed values.

The readers take the plain dicts the API returns (or a dump holds) and give frozen dataclasses
that say only what allocation needs. Attribute and capacity names are fully qualified here
("gpu.nvidia.com/productName"): an unqualified name in a slice belongs to the slice's driver,
as the API defines. Anything malformed raises :class:`DraInputError` with "where: what".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from gpuop.dra.fields import DraInputError, boolean, integer, listing, mapping, quantity, string

__all__ = [
    "AllocatedDevice",
    "AttrValue",
    "Claim",
    "CounterSet",
    "CounterUse",
    "Device",
    "DeviceClass",
    "DeviceRequest",
    "DraInputError",
    "PodClaimRef",
    "Slice",
    "Version",
    "claim_key",
    "newest_generations",
    "pod_claim_refs",
    "qualify",
    "read_claim",
    "read_claim_template",
    "read_class",
    "read_classes",
    "read_slice",
    "read_slices",
]

AllocationMode = Literal["ExactCount", "All"]


@dataclass(frozen=True)
class Version:
    """A ``version`` attribute (a semantic version string)."""

    text: str

    def __str__(self) -> str:
        return self.text


AttrValue = bool | int | str | Version


@dataclass(frozen=True)
class CounterUse:
    """What a device consumes from one counter set of its pool."""

    counter_set: str
    counters: Mapping[str, int]


@dataclass(frozen=True)
class CounterSet:
    """A named set of counters a pool's devices share (KEP-4815)."""

    name: str
    counters: Mapping[str, int]


@dataclass(frozen=True)
class Device:
    """One device of a ResourceSlice."""

    driver: str
    pool: str
    name: str
    node: str | None
    attributes: Mapping[str, AttrValue]
    capacity: Mapping[str, int]
    consumes: tuple[CounterUse, ...] = ()
    allow_multiple: bool = False
    binding_conditions: bool = False
    taints: tuple[Mapping[str, Any], ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.pool}/{self.name}"


@dataclass(frozen=True)
class Slice:
    """One ResourceSlice: either devices or shared counters (never both since 1.35)."""

    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node_name: str | None
    all_nodes: bool
    node_selector: Mapping[str, Any] | None
    per_device_node_selection: bool
    devices: tuple[Device, ...]
    counter_sets: tuple[CounterSet, ...]


#: The annotation on the claim the scheduler makes for a pod's DRA-backed extended resources.
EXTENDED_CLAIM_ANNOTATION: Final = "resource.kubernetes.io/extended-resource-claim"


@dataclass(frozen=True)
class DeviceClass:
    name: str
    selectors: tuple[str, ...]
    #: ``spec.extendedResourceName``: pods asking for this extended resource get devices
    #: of this class where no device plugin advertises it (DRAExtendedResource).
    extended_resource_name: str | None = None
    #: ``metadata.creationTimestamp`` (RFC 3339): the newer class wins a shared name.
    created: str = ""


@dataclass(frozen=True)
class DeviceRequest:
    """One request (or one ``firstAvailable`` subrequest) of a claim."""

    name: str
    device_class: str
    selectors: tuple[str, ...] = ()
    count: int = 1
    mode: AllocationMode = "ExactCount"
    admin: bool = False
    tolerations: tuple[Mapping[str, Any], ...] = ()
    #: ``firstAvailable``: the alternatives, in order; the request's own fields are unused then.
    subrequests: tuple[DeviceRequest, ...] = ()


@dataclass(frozen=True)
class AllocatedDevice:
    request: str
    driver: str
    pool: str
    device: str
    admin: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    requests: tuple[DeviceRequest, ...]
    allocated: tuple[AllocatedDevice, ...] | None = None
    reserved_for: tuple[str, ...] = ()
    #: ``matchAttribute`` constraints: (request names, or empty for all; attribute).
    constraints: tuple[tuple[tuple[str, ...], str], ...] = ()
    #: For the claim the scheduler makes for a pod's DRA-backed extended resources
    #: (annotation ``resource.kubernetes.io/extended-resource-claim: "true"``): the
    #: owning pod's name and uid.
    extended_for: tuple[str, str] | None = None

    @property
    def key(self) -> str:
        return claim_key(self.namespace, self.name)


@dataclass(frozen=True)
class PodClaimRef:
    """One entry of ``pod.spec.resourceClaims``, with the claim's name where it is known."""

    name: str
    claim_name: str | None
    template_name: str | None


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def qualify(name: str, driver: str) -> str:
    """The fully qualified form of an attribute or capacity name of ``driver``'s device."""
    return name if "/" in name else f"{driver}/{name}"


def _counters(obj: object, where: str) -> dict[str, int]:
    counters: dict[str, int] = {}
    for name, counter in mapping(obj, where).items():
        counters[name] = quantity(
            mapping(counter, f"{where}.{name}").get("value"), f"{where}.{name}.value"
        )
    return counters


def _named_counters(obj: object, where: str, key: str) -> list[tuple[str, dict[str, int]]]:
    """A list of ``{key: name, counters: {...}}`` entries (counter sets, or a device's uses)."""
    entries = []
    for i, entry in enumerate(listing(obj, where)):
        name = string(mapping(entry, f"{where}[{i}]").get(key), f"{where}[{i}].{key}")
        entries.append((name, _counters(entry.get("counters"), f"{where}[{i}].counters")))
    return entries


def _shown_key(key: str) -> str:
    """A map key as an error message shows it: control characters escaped, one line."""
    return key.encode("unicode_escape").decode("ascii") if not key.isprintable() else key


def _attribute(obj: object, where: str) -> AttrValue:
    attr = mapping(obj, where)
    kinds = [k for k in ("bool", "int", "string", "version") if attr.get(k) is not None]
    if len(kinds) != 1:
        raise DraInputError(f"{where}: expected exactly one of bool, int, string, version")
    raw = attr[kinds[0]]
    if kinds[0] == "bool":
        return boolean(raw, f"{where}.bool")
    if kinds[0] == "int":
        return integer(raw, f"{where}.int", 0)
    if kinds[0] == "string":
        return string(raw, f"{where}.string", required=False)
    return Version(string(raw, f"{where}.version"))


def _name(obj: Mapping[str, Any], where: str) -> str:
    return string(
        mapping(obj.get("metadata"), f"{where}.metadata").get("name"), f"{where}.metadata.name"
    )


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    return ns if isinstance(ns, str) and ns else "default"


def _kind_check(obj: object, kind: str, where: str) -> Mapping[str, Any]:
    data = mapping(obj, where)
    found = data.get("kind")
    if found not in (None, kind):
        raise DraInputError(f"{where}: expected a {kind}, got {found!r}")
    return data


# --- ResourceSlices ------------------------------------------------------------------------


def _device(obj: object, where: str, driver: str, pool: str, node: str | None) -> Device:
    dev = mapping(obj, where)
    name = string(dev.get("name"), f"{where}.name")
    where = f"{where} ({name})"
    attributes = {
        qualify(key, driver): _attribute(raw, f"{where}.attributes[{_shown_key(key)}]")
        for key, raw in mapping(dev.get("attributes"), f"{where}.attributes").items()
    }
    capacity = {
        qualify(key, driver): quantity(
            mapping(raw, f"{where}.capacity[{_shown_key(key)}]").get("value"),
            f"{where}.capacity[{_shown_key(key)}].value",
        )
        for key, raw in mapping(dev.get("capacity"), f"{where}.capacity").items()
    }
    consumes = tuple(
        CounterUse(counter_set, counters)
        for counter_set, counters in _named_counters(
            dev.get("consumesCounters"), f"{where}.consumesCounters", "counterSet"
        )
    )
    taints = tuple(
        mapping(t, f"{where}.taints") for t in listing(dev.get("taints"), f"{where}.taints")
    )
    return Device(
        driver=driver,
        pool=pool,
        name=name,
        node=dev.get("nodeName") if isinstance(dev.get("nodeName"), str) else node,
        attributes=attributes,
        capacity=capacity,
        consumes=consumes,
        allow_multiple=boolean(
            dev.get("allowMultipleAllocations"), f"{where}.allowMultipleAllocations"
        ),
        binding_conditions=bool(
            listing(dev.get("bindingConditions"), f"{where}.bindingConditions")
        ),
        taints=taints,
    )


def read_slice(obj: object) -> Slice:
    """One ResourceSlice dict."""
    data = _kind_check(obj, "ResourceSlice", "ResourceSlice")
    name = _name(data, "ResourceSlice")
    where = f"ResourceSlice {name}"
    spec = mapping(data.get("spec"), f"{where}.spec")
    driver = string(spec.get("driver"), f"{where}.spec.driver")
    pool = mapping(spec.get("pool"), f"{where}.spec.pool")
    pool_name = string(pool.get("name"), f"{where}.spec.pool.name")
    node_name = spec.get("nodeName") if isinstance(spec.get("nodeName"), str) else None
    devices = tuple(
        _device(d, f"{where}.spec.devices[{i}]", driver, pool_name, node_name)
        for i, d in enumerate(listing(spec.get("devices"), f"{where}.spec.devices"))
    )
    counter_sets = tuple(
        CounterSet(name, counters)
        for name, counters in _named_counters(
            spec.get("sharedCounters"), f"{where}.spec.sharedCounters", "name"
        )
    )
    if devices and counter_sets:
        raise DraInputError(f"{where}: a slice holds devices or sharedCounters, not both")
    selector = spec.get("nodeSelector")
    return Slice(
        name=name,
        driver=driver,
        pool=pool_name,
        generation=integer(pool.get("generation"), f"{where}.spec.pool.generation", 0),
        slice_count=integer(
            pool.get("resourceSliceCount"), f"{where}.spec.pool.resourceSliceCount", 1
        ),
        node_name=node_name,
        all_nodes=boolean(spec.get("allNodes"), f"{where}.spec.allNodes"),
        node_selector=mapping(selector, f"{where}.spec.nodeSelector")
        if selector is not None
        else None,
        per_device_node_selection=boolean(
            spec.get("perDeviceNodeSelection"), f"{where}.spec.perDeviceNodeSelection"
        ),
        devices=devices,
        counter_sets=counter_sets,
    )


def read_slices(objs: Sequence[object]) -> list[Slice]:
    return [read_slice(obj) for obj in objs]


def newest_generations(slices: Iterable[Slice]) -> dict[tuple[str, str], list[Slice]]:
    """(driver, pool name) -> the slices of the pool's newest generation, in the order given."""
    newest: dict[tuple[str, str], list[Slice]] = {}
    for s in slices:
        key = (s.driver, s.pool)
        have = newest.get(key)
        if have is None or s.generation > have[0].generation:
            newest[key] = [s]
        elif s.generation == have[0].generation:
            have.append(s)
    return newest


# --- DeviceClasses -------------------------------------------------------------------------


def _selectors(obj: object, where: str) -> tuple[str, ...]:
    exprs = []
    for i, sel in enumerate(listing(obj, where)):
        cel = mapping(mapping(sel, f"{where}[{i}]").get("cel"), f"{where}[{i}].cel")
        if not cel:
            raise DraInputError(f"{where}[{i}]: only CEL selectors are known")
        exprs.append(string(cel.get("expression"), f"{where}[{i}].cel.expression"))
    return tuple(exprs)


def read_class(obj: object) -> DeviceClass:
    data = _kind_check(obj, "DeviceClass", "DeviceClass")
    name = _name(data, "DeviceClass")
    spec = mapping(data.get("spec"), f"DeviceClass {name}.spec")
    extended = string(
        spec.get("extendedResourceName"),
        f"DeviceClass {name}.spec.extendedResourceName",
        required=False,
    )
    meta = data.get("metadata")
    created = meta.get("creationTimestamp") if isinstance(meta, Mapping) else None
    return DeviceClass(
        name,
        _selectors(spec.get("selectors"), f"DeviceClass {name}.spec.selectors"),
        extended or None,
        created if isinstance(created, str) else "",
    )


def read_classes(objs: Sequence[object]) -> dict[str, DeviceClass]:
    classes = [read_class(obj) for obj in objs]
    return {c.name: c for c in classes}


# --- ResourceClaims ------------------------------------------------------------------------


def _exact(obj: Mapping[str, Any], name: str, where: str) -> DeviceRequest:
    raw_mode = obj.get("allocationMode") or "ExactCount"
    if raw_mode not in ("ExactCount", "All"):
        raise DraInputError(f"{where}.allocationMode: expected ExactCount or All, got {raw_mode!r}")
    mode: AllocationMode = "All" if raw_mode == "All" else "ExactCount"
    count = integer(obj.get("count"), f"{where}.count", 1)
    if mode == "ExactCount" and count < 1:
        raise DraInputError(f"{where}.count: must be at least 1, got {count}")
    return DeviceRequest(
        name=name,
        device_class=string(obj.get("deviceClassName"), f"{where}.deviceClassName"),
        selectors=_selectors(obj.get("selectors"), f"{where}.selectors"),
        count=count if mode == "ExactCount" else 0,
        mode=mode,
        admin=boolean(obj.get("adminAccess"), f"{where}.adminAccess"),
        tolerations=tuple(
            mapping(t, f"{where}.tolerations")
            for t in listing(obj.get("tolerations"), f"{where}.tolerations")
        ),
    )


def _request(obj: object, where: str) -> DeviceRequest:
    req = mapping(obj, where)
    name = string(req.get("name"), f"{where}.name")
    where = f"{where} ({name})"
    if req.get("exactly") is not None:
        return _exact(mapping(req["exactly"], f"{where}.exactly"), name, f"{where}.exactly")
    first = listing(req.get("firstAvailable"), f"{where}.firstAvailable")
    if first:
        subs = []
        for i, sub in enumerate(first):
            sub_map = mapping(sub, f"{where}.firstAvailable[{i}]")
            sub_name = string(sub_map.get("name"), f"{where}.firstAvailable[{i}].name")
            subs.append(_exact(sub_map, sub_name, f"{where}.firstAvailable[{i}]"))
        return DeviceRequest(name=name, device_class="", subrequests=tuple(subs))
    raise DraInputError(f"{where}: needs exactly or firstAvailable")


def _allocation(obj: object, where: str) -> tuple[AllocatedDevice, ...] | None:
    if obj is None:
        return None
    alloc = mapping(obj, where)
    results = listing(
        mapping(alloc.get("devices"), f"{where}.devices").get("results"), f"{where}.devices.results"
    )
    out = []
    for i, res in enumerate(results):
        r = mapping(res, f"{where}.devices.results[{i}]")
        w = f"{where}.devices.results[{i}]"
        out.append(
            AllocatedDevice(
                request=string(r.get("request"), f"{w}.request"),
                driver=string(r.get("driver"), f"{w}.driver"),
                pool=string(r.get("pool"), f"{w}.pool"),
                device=string(r.get("device"), f"{w}.device"),
                admin=boolean(r.get("adminAccess"), f"{w}.adminAccess"),
            )
        )
    return tuple(out)


def _claim_spec(
    spec: Mapping[str, Any], where: str
) -> tuple[tuple[DeviceRequest, ...], tuple[tuple[tuple[str, ...], str], ...]]:
    devices = mapping(spec.get("devices"), f"{where}.devices")
    requests = tuple(
        _request(r, f"{where}.devices.requests[{i}]")
        for i, r in enumerate(listing(devices.get("requests"), f"{where}.devices.requests"))
    )
    names = [r.name for r in requests]
    if len(set(names)) != len(names):
        raise DraInputError(f"{where}.devices.requests: request names must be unique")
    constraints = []
    for i, c in enumerate(listing(devices.get("constraints"), f"{where}.devices.constraints")):
        cm = mapping(c, f"{where}.devices.constraints[{i}]")
        attr = string(cm.get("matchAttribute"), f"{where}.devices.constraints[{i}].matchAttribute")
        reqs = tuple(
            string(r, f"{where}.devices.constraints[{i}].requests")
            for r in listing(cm.get("requests"), "")
        )
        constraints.append((reqs, attr))
    return requests, tuple(constraints)


def read_claim(obj: object) -> Claim:
    """One ResourceClaim dict, with its allocation and reservations if it has them."""
    data = _kind_check(obj, "ResourceClaim", "ResourceClaim")
    name = _name(data, "ResourceClaim")
    namespace = _namespace(data)
    where = f"ResourceClaim {namespace}/{name}"
    requests, constraints = _claim_spec(mapping(data.get("spec"), f"{where}.spec"), f"{where}.spec")
    status = mapping(data.get("status"), f"{where}.status")
    reserved = tuple(
        f"{mapping(r, f'{where}.status.reservedFor').get('resource', 'pods')}/{mapping(r, '').get('name', '')}"
        for r in listing(status.get("reservedFor"), f"{where}.status.reservedFor")
    )
    return Claim(
        namespace=namespace,
        name=name,
        requests=requests,
        allocated=_allocation(status.get("allocation"), f"{where}.status.allocation"),
        reserved_for=reserved,
        constraints=constraints,
        extended_for=_extended_owner(data),
    )


def _extended_owner(data: Mapping[str, Any]) -> tuple[str, str] | None:
    """The pod whose extended resources the claim holds, if the scheduler made it for one."""
    meta = data.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    annotations = meta.get("annotations")
    if not isinstance(annotations, Mapping) or annotations.get(EXTENDED_CLAIM_ANNOTATION) != "true":
        return None
    for owner in meta.get("ownerReferences") or ():
        if isinstance(owner, Mapping) and owner.get("kind") == "Pod" and owner.get("controller"):
            return str(owner.get("name") or ""), str(owner.get("uid") or "")
    return None


def read_claim_template(
    obj: object, *, claim_name: str | None = None, namespace: str | None = None
) -> Claim:
    """A ResourceClaimTemplate as the claim it makes (unallocated), named ``claim_name``."""
    data = _kind_check(obj, "ResourceClaimTemplate", "ResourceClaimTemplate")
    name = _name(data, "ResourceClaimTemplate")
    ns = namespace or _namespace(data)
    where = f"ResourceClaimTemplate {ns}/{name}"
    spec = mapping(mapping(data.get("spec"), f"{where}.spec").get("spec"), f"{where}.spec.spec")
    requests, constraints = _claim_spec(spec, f"{where}.spec.spec")
    return Claim(namespace=ns, name=claim_name or name, requests=requests, constraints=constraints)


def pod_claim_refs(pod: Mapping[str, Any]) -> list[PodClaimRef]:
    """``pod.spec.resourceClaims``, with the generated claim names from the pod's status."""
    where = f"Pod {_namespace(pod)}/{mapping(pod.get('metadata'), 'Pod.metadata').get('name', '?')}"
    spec = mapping(pod.get("spec"), f"{where}.spec")
    generated: dict[str, str | None] = {}
    status = mapping(pod.get("status"), f"{where}.status")
    for i, st in enumerate(
        listing(status.get("resourceClaimStatuses"), f"{where}.status.resourceClaimStatuses")
    ):
        entry = mapping(st, f"{where}.status.resourceClaimStatuses[{i}]")
        rc = entry.get("resourceClaimName")
        generated[string(entry.get("name"), f"{where}.status.resourceClaimStatuses[{i}].name")] = (
            rc if isinstance(rc, str) and rc else None
        )
    refs = []
    for i, rc in enumerate(listing(spec.get("resourceClaims"), f"{where}.spec.resourceClaims")):
        entry = mapping(rc, f"{where}.spec.resourceClaims[{i}]")
        name = string(entry.get("name"), f"{where}.spec.resourceClaims[{i}].name")
        claim = entry.get("resourceClaimName")
        template = entry.get("resourceClaimTemplateName")
        if bool(claim) == bool(template):
            raise DraInputError(
                f"{where}.spec.resourceClaims[{i}] ({name}): needs exactly one of "
                "resourceClaimName and resourceClaimTemplateName"
            )
        if claim:
            refs.append(
                PodClaimRef(
                    name, string(claim, f"{where}.spec.resourceClaims[{i}].resourceClaimName"), None
                )
            )
        else:
            refs.append(
                PodClaimRef(
                    name,
                    generated.get(name),
                    string(template, f"{where}.spec.resourceClaims[{i}].resourceClaimTemplateName"),
                )
            )
    return refs
