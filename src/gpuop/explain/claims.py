"""The DynamicResources filter for pods with ResourceClaims, with the reasons per device.

kube-scheduler says only "cannot allocate all claims" for a node where a pod's claims do not
fit. :func:`claims_filter` replays the structured allocator (:mod:`gpuop.dra.allocate`) on the
node and says, per request and per device, why not: a class or request selector that is false,
a device another claim holds, a counter set a held device exhausts, a pool being updated.

The cluster side is :class:`DraCluster`, read once from a dump's ResourceSlices,
DeviceClasses, ResourceClaims and ResourceClaimTemplates. A pod's claims come by name
(``resourceClaimName``) or by template: the claim the resource claim controller made
(``status.resourceClaimStatuses``) when the dump has it, else the claim the template would
make. What the scheduler does before allocating is kept: a claim that does not exist yet
rejects the pod everywhere; a claim already allocated pins the pod to the node of its devices;
a CEL runtime error aborts the pod's scheduling cycle (an Error, not a rejection).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpuop.dra.allocate import NodeVerdict as ClaimsVerdict
from gpuop.dra.allocate import allocated_devices, fit
from gpuop.dra.cel import CelError, compile_selector
from gpuop.dra.model import (
    Claim,
    DeviceClass,
    DeviceRequest,
    DraInputError,
    Slice,
    claim_key,
    pod_claim_refs,
    read_claim,
    read_claim_template,
    read_classes,
    read_slices,
)
from gpuop.explain.model import Code, Status
from gpuop.manifests import QuantityError, parse_quantity

__all__ = [
    "CANNOT_ALLOCATE",
    "DRA_KINDS",
    "DRA_PLUGIN",
    "ClaimsVerdict",
    "DraCluster",
    "PodClaims",
    "claims_filter",
    "extended_claim",
    "extended_resources",
    "pod_claims",
    "pod_for_claim",
    "read_dra",
    "verdict_to_dict",
]

DRA_PLUGIN: Final = "DynamicResources"
IMPLICIT_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
CANNOT_ALLOCATE: Final = "cannot allocate all claims"
NOT_AVAILABLE: Final = "resourceclaim not available on the node"
DRA_KINDS: Final = ("ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate")


@dataclass(frozen=True)
class DraCluster:
    """The DRA objects of a cluster dump."""

    slices: tuple[Slice, ...] = ()
    classes: Mapping[str, DeviceClass] | None = None
    claims: Mapping[str, Claim] | None = None
    templates: Mapping[str, Mapping[str, Any]] | None = None
    warnings: tuple[str, ...] = ()
    #: Extended resource name -> the DeviceClass that backs it (:func:`extended_resources`).
    extended: Mapping[str, str] | None = None


def extended_resources(classes: Mapping[str, DeviceClass]) -> dict[str, str]:
    """``ExtendedResourceCache``: each extended resource name a DeviceClass backs, and which
    class: its ``extendedResourceName``, and ``deviceclass.resource.kubernetes.io/<name>``
    for every class. Two classes that name one resource: the newer wins, then the lower
    name."""
    found: dict[str, str] = {IMPLICIT_PREFIX + name: name for name in classes}
    chosen: dict[str, DeviceClass] = {}
    for device_class in classes.values():
        resource = device_class.extended_resource_name
        if not resource:
            continue
        other = chosen.get(resource)
        if other is None or (device_class.created, other.name) > (other.created, device_class.name):
            chosen[resource] = device_class
    found.update((resource, c.name) for resource, c in chosen.items())
    return found


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return claim_key(str(meta.get("namespace") or "default"), str(meta.get("name") or ""))


def _check_cel(expressions: Sequence[str], where: str) -> None:
    for i, expr in enumerate(expressions):
        try:
            compile_selector(expr)
        except CelError as error:
            raise DraInputError(f"{where}: selector #{i}: {error}") from None


def read_dra(objects: Sequence[Mapping[str, Any]], node_names: Sequence[str]) -> DraCluster:
    """The DRA objects of ``objects``; :class:`DraInputError` for one that cannot be used.

    A selector that does not compile is an input error (the API server refuses such an
    object); a slice for a node that is not in the input is a warning.
    """
    by_kind: dict[str, list[Mapping[str, Any]]] = {kind: [] for kind in DRA_KINDS}
    for obj in objects:
        kind = obj.get("kind")
        if isinstance(kind, str) and kind in by_kind:
            by_kind[kind].append(obj)
    slices = tuple(read_slices(by_kind["ResourceSlice"]))
    classes = read_classes(by_kind["DeviceClass"])
    for device_class in classes.values():
        _check_cel(device_class.selectors, f"DeviceClass {device_class.name}")
    claims = {}
    for obj in by_kind["ResourceClaim"]:
        claim = read_claim(obj)
        claims[claim.key] = claim
    templates = {_key(obj): obj for obj in by_kind["ResourceClaimTemplate"]}
    known = set(node_names)
    warnings = []
    for s in slices:
        if s.node_name and s.node_name not in known:
            warnings.append(
                f"ResourceSlice {s.name} is for node {s.node_name}, which is not in the input"
                " (its devices are not counted)"
            )
    return DraCluster(
        slices, classes, claims, templates, tuple(warnings), extended_resources(classes)
    )


@dataclass(frozen=True)
class PodClaims:
    """A pod's claims as the DynamicResources PreFilter sees them."""

    pending: tuple[Claim, ...] = ()
    allocated: tuple[Claim, ...] = ()
    #: The PreFilter rejects the pod everywhere with this (a claim not there yet...).
    problem: str | None = None
    notes: tuple[str, ...] = ()


def pod_claims(pod: Mapping[str, Any], dra: DraCluster) -> PodClaims | None:
    """The pod's claims (None when it has none); :class:`DraInputError` for bad ones."""
    if not isinstance(pod.get("spec"), Mapping) or not pod["spec"].get("resourceClaims"):
        return None
    refs = pod_claim_refs(pod)
    namespace = _key(pod).split("/", 1)[0]
    pod_name = _key(pod).split("/", 1)[1]
    claims = dict(dra.claims or {})
    templates = dict(dra.templates or {})
    pending: list[Claim] = []
    allocated: list[Claim] = []
    notes: list[str] = []
    for ref in refs:
        claim: Claim | None = None
        if ref.claim_name is not None:
            claim = claims.get(claim_key(namespace, ref.claim_name))
            if claim is None and ref.template_name is None:
                return PodClaims(problem=f'resourceclaim "{ref.claim_name}" not found')
        if claim is None and ref.template_name is not None:
            raw = templates.get(claim_key(namespace, ref.template_name))
            if raw is None:
                return PodClaims(problem=f'resourceclaimtemplate "{ref.template_name}" not found')
            claim = read_claim_template(
                raw, claim_name=f"{pod_name}-{ref.name}", namespace=namespace
            )
            notes.append(
                f"claim {ref.name}: as ResourceClaimTemplate {ref.template_name} would make it"
            )
        if claim is None:  # pragma: no cover - one of the two names is always set
            continue
        for request in claim.requests:
            for sub in request.subrequests or (request,):
                _check_cel(sub.selectors, f"ResourceClaim {claim.key}, request {request.name}")
                if claim.allocated is None and sub.device_class not in (dra.classes or {}):
                    return PodClaims(
                        problem=f"request {sub.name}: device class {sub.device_class} does not exist"
                    )
        (allocated if claim.allocated is not None else pending).append(claim)
    return PodClaims(tuple(pending), tuple(allocated), notes=tuple(notes))


def _container_requests(container: Mapping[str, Any]) -> dict[str, Any]:
    """The container's requests as the API server defaults them (limits fill the gaps)."""
    resources = container.get("resources")
    resources = resources if isinstance(resources, Mapping) else {}
    limits, requests = resources.get("limits"), resources.get("requests")
    return {
        **(limits if isinstance(limits, Mapping) else {}),
        **(requests if isinstance(requests, Mapping) else {}),
    }


def _whole(quantity: Any) -> int:
    """``Quantity.AsInt64`` (0 when it is not a whole number)."""
    try:
        number = parse_quantity(quantity)
    except QuantityError:
        return 0
    return int(number) if number == number.to_integral_value() else 0


def _container_request(
    index: int,
    container: Mapping[str, Any],
    resource: str,
    device_class: str,
    reusable: Sequence[DeviceRequest | None],
) -> DeviceRequest | None:
    """``createResourceRequestAndMappings``: the devices one container asks for beyond
    those of `reusable` requests (a later long-lived container's, for an init container)."""
    requests = _container_requests(container)
    wanted = _whole(requests[resource]) if resource in requests else 0
    if wanted == 0:
        return None
    covered = 0
    for request in reusable:
        if request is not None:
            covered += request.count
            if covered >= wanted:
                return None
    position = sorted(requests).index(resource)
    return DeviceRequest(
        name=f"container-{index}-request-{position}",
        device_class=device_class,
        count=wanted - covered,
    )


def extended_claim(pod: Mapping[str, Any], wanted: Mapping[str, str]) -> Claim:
    """The claim the scheduler makes on a node for the pod's extended resources that only
    DRA provides there (`wanted`: resource -> DeviceClass), its requests as
    ``createRequestsAndMappings`` builds them: one per container and resource, the init
    containers that run before the others reusing their devices."""
    spec = pod.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    init = [c for c in spec.get("initContainers") or () if isinstance(c, Mapping)]
    containers = [*init, *(c for c in spec.get("containers") or () if isinstance(c, Mapping))]
    sidecar = [c.get("restartPolicy") == "Always" for c in init]
    long_lived = [i for i in range(len(containers)) if i >= len(init) or sidecar[i]]
    short_lived = [i for i in range(len(init)) if not sidecar[i]]
    requests: list[DeviceRequest] = []
    for resource in sorted(wanted):
        device_class = wanted[resource]
        lasting: list[DeviceRequest | None] = [None] * len(containers)
        for i in long_lived:
            lasting[i] = _container_request(i, containers[i], resource, device_class, ())
        largest: DeviceRequest | None = None
        for i in short_lived:
            found = _container_request(i, containers[i], resource, device_class, lasting[i:])
            if found is not None and (largest is None or largest.count < found.count):
                largest = found
        if largest is not None:
            requests.append(largest)
        requests.extend(r for r in lasting if r is not None)
    requests.sort(key=lambda r: r.name)
    namespace, name = _key(pod).split("/", 1)
    return Claim(namespace, f"{name}-extended-resources", tuple(requests))


def pod_for_claim(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The pod that stands for a ResourceClaim explained on its own: one that uses just it."""
    meta = claim.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name = str(meta.get("name") or "")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{name}-user", "namespace": str(meta.get("namespace") or "default")},
        "spec": {
            "containers": [{"name": "main", "resources": {"claims": [{"name": "claim"}]}}],
            "resourceClaims": [{"name": "claim", "resourceClaimName": name}],
        },
    }


def _pool_nodes(dra: DraCluster) -> dict[tuple[str, str], set[str]]:
    nodes: dict[tuple[str, str], set[str]] = {}
    for s in dra.slices:
        if s.node_name:
            nodes.setdefault((s.driver, s.pool), set()).add(s.node_name)
    return nodes


def _details(verdict: ClaimsVerdict) -> tuple[str, ...]:
    lines: list[str] = list(verdict.problems)
    for request in verdict.requests:
        total = len(request.notes)
        lines.append(
            f"claim {request.claim}, request {request.request}: wants {request.wanted}, "
            f"{len(request.usable)} of {total} device(s) usable"
        )
        lines.extend(
            f"  {n.device}: {n.reason}"
            for n in request.notes
            if n.reason and n.reason not in verdict.problems
        )
    if verdict.requests and not lines[len(verdict.problems) :] and not verdict.fits:
        lines.append(verdict.reason)
    return tuple(lines)


def claims_filter(
    claims: PodClaims,
    node: str,
    labels: Mapping[str, str],
    dra: DraCluster,
    *,
    skip: Sequence[str] = (),
    extended: Claim | None = None,
) -> tuple[Status | None, ClaimsVerdict | None]:
    """The DynamicResources Filter on one node: (rejection or None, the allocator's verdict).

    `extended`: the claim for the pod's extended resources that DRA provides on this node
    (:func:`extended_claim`), allocated with the pod's own. A verdict with ``error`` set is
    the allocator failing, which aborts the pod's scheduling cycle; the status then carries
    code ERROR.
    """
    pools = _pool_nodes(dra)
    for claim in claims.allocated:
        on = set().union(*(pools.get((d.driver, d.pool), set()) for d in claim.allocated or ()))
        if on and node not in on:
            detail = f"claim {claim.key} is allocated on {', '.join(sorted(on))}"
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_AVAILABLE,), DRA_PLUGIN, (detail,)
            ), None
    pending = (
        (*claims.pending, extended)
        if extended is not None and extended.requests
        else claims.pending
    )
    if not pending:
        return None, None
    held = allocated_devices(
        list((dra.claims or {}).values()), skip=[*skip, *(c.key for c in claims.pending)]
    )
    verdict = fit(pending, node, dra.slices, dra.classes or {}, held, node_labels=labels)
    if verdict.fits:
        return None, verdict
    if verdict.error:
        return Status(Code.ERROR, (verdict.error,), DRA_PLUGIN, _details(verdict)), verdict
    return (
        Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (CANNOT_ALLOCATE,), DRA_PLUGIN, _details(verdict)
        ),
        verdict,
    )


def verdict_to_dict(verdict: ClaimsVerdict) -> dict[str, Any]:
    """One node's claims verdict in explain's JSON."""
    return {
        "node": verdict.node,
        "fits": verdict.fits,
        "error": verdict.error,
        "reason": verdict.reason or None,
        "problems": list(verdict.problems),
        "allocation": {
            claim: [f"{d.driver}/{d.pool}/{d.device}" for d in devices]
            for claim, devices in verdict.allocation.items()
        },
        "by_request": [
            {
                "claim": r.claim,
                "request": r.request,
                "wanted": r.wanted,
                "usable": list(r.usable),
                "considered": [{"device": n.device, "reason": n.reason or None} for n in r.notes],
            }
            for r in verdict.requests
        ],
    }
