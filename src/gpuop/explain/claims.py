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

__all__ = [
    "CANNOT_ALLOCATE",
    "DRA_KINDS",
    "DRA_PLUGIN",
    "ClaimsVerdict",
    "DraCluster",
    "PodClaims",
    "claims_filter",
    "pod_claims",
    "pod_for_claim",
    "read_dra",
    "verdict_to_dict",
]

DRA_PLUGIN: Final = "DynamicResources"
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
    return DraCluster(slices, classes, claims, templates, tuple(warnings))


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
) -> tuple[Status | None, ClaimsVerdict | None]:
    """The DynamicResources Filter on one node: (rejection or None, the allocator's verdict).

    A verdict with ``error`` set is the allocator failing, which aborts the pod's scheduling
    cycle; the status then carries code ERROR.
    """
    pools = _pool_nodes(dra)
    for claim in claims.allocated:
        on = set().union(*(pools.get((d.driver, d.pool), set()) for d in claim.allocated or ()))
        if on and node not in on:
            detail = f"claim {claim.key} is allocated on {', '.join(sorted(on))}"
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NOT_AVAILABLE,), DRA_PLUGIN, (detail,)
            ), None
    if not claims.pending:
        return None, None
    held = allocated_devices(
        list((dra.claims or {}).values()), skip=[*skip, *(c.key for c in claims.pending)]
    )
    verdict = fit(claims.pending, node, dra.slices, dra.classes or {}, held, node_labels=labels)
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
