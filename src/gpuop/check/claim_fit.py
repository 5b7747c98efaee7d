"""Claims that can never be allocated, and the DRA input that cannot be used (GPU805-GPU809).

A claim "never fits" when the scheduler's allocator (`gpuop.dra.allocate.fit`, the replay
`gpuop explain` uses) finds no node where its requests could be served even with every
device free: no device matches the DeviceClass's and the request's selectors, or fewer
than the count do on any one node. Allocated devices and counters are left aside on
purpose; a claim that only waits for devices to free up is `gpuop explain`'s business.

Every object is read on its own, so one bad slice or claim becomes a finding (GPU809)
instead of hiding the others; CEL is compiled once per expression.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpuop.check.context import CheckContext
from gpuop.dra.allocate import fit
from gpuop.dra.cel import CelError, compile_selector
from gpuop.dra.model import (
    Claim,
    Device,
    DeviceClass,
    DeviceRequest,
    DraInputError,
    Slice,
    read_claim,
    read_claim_template,
    read_class,
    read_slice,
)
from gpuop.dra.pools import gather_pools
from gpuop.manifests.fields import text

__all__ = ["check_claim_fit"]

# How many nodes' reasons a GPU805 message lists.
_SHOWN_NODES = 3


@dataclass(frozen=True)
class _Subject:
    """Where a finding goes: the claim (or template) and how it was read."""

    kind: str
    namespace: str
    name: str
    claim: Claim


def _unreadable(ctx: CheckContext, obj: Mapping[str, Any], exc: DraInputError) -> None:
    kind = text(obj, "kind")
    ctx.add(
        "GPU809",
        kind,
        text(obj, "metadata", "name"),
        f"{str(exc)[:300]}; the DRA checks left it out",
        f"regenerate it from the API server (`kubectl get {kind.lower()} -o json`)",
        namespace=text(obj, "metadata", "namespace") or None,
    )


def _read_slices(ctx: CheckContext) -> list[Slice]:
    slices = []
    for obj in ctx.state.resource_slices:
        try:
            slices.append(read_slice(obj))
        except DraInputError as exc:
            _unreadable(ctx, obj, exc)
    return slices


def _compile(
    ctx: CheckContext, kind: str, name: str, namespace: str | None, where: str, expr: str
) -> bool:
    try:
        compile_selector(expr)
    except CelError as exc:
        ctx.add(
            "GPU808",
            kind,
            name,
            f"{where}: {exc}",
            "fix the expression (the DRA CEL environment: device.driver,"
            " device.attributes[domain][name], device.capacity[domain][name])",
            namespace=namespace,
        )
        return False
    return True


def _read_classes(ctx: CheckContext) -> tuple[dict[str, DeviceClass], set[str]]:
    """The usable DeviceClasses, and the names of those whose CEL does not compile."""
    classes: dict[str, DeviceClass] = {}
    broken: set[str] = set()
    for obj in ctx.state.device_classes:
        try:
            device_class = read_class(obj)
        except DraInputError as exc:
            _unreadable(ctx, obj, exc)
            broken.add(text(obj, "metadata", "name"))
            continue
        valid = [
            _compile(ctx, "DeviceClass", device_class.name, None, f"spec.selectors[{i}]", expr)
            for i, expr in enumerate(device_class.selectors)
        ]
        if all(valid):
            classes[device_class.name] = device_class
        else:
            broken.add(device_class.name)
    return classes, broken


def _read_subjects(ctx: CheckContext) -> list[_Subject]:
    subjects = []
    for kind, objects, reader in (
        ("ResourceClaim", ctx.state.resource_claims, read_claim),
        ("ResourceClaimTemplate", ctx.state.resource_claim_templates, read_claim_template),
    ):
        for obj in objects:
            try:
                claim = reader(obj)
            except DraInputError as exc:
                _unreadable(ctx, obj, exc)
                continue
            namespace = text(obj, "metadata", "namespace") or "default"
            subjects.append(_Subject(kind, namespace, text(obj, "metadata", "name"), claim))
    return subjects


def _leaf_requests(claim: Claim) -> list[tuple[str, DeviceRequest]]:
    """(where, request) for each request, a firstAvailable one's subrequests instead."""
    leaves = []
    for request in claim.requests:
        if request.subrequests:
            leaves += [(f"{request.name}/{sub.name}", sub) for sub in request.subrequests]
        else:
            leaves.append((request.name, request))
    return leaves


def _usable(
    ctx: CheckContext,
    subject: _Subject,
    classes: Mapping[str, DeviceClass],
    broken: set[str],
) -> bool:
    """Whether the claim's classes exist and its CEL compiles (findings for what does not)."""
    usable = True
    for where, request in _leaf_requests(subject.claim):
        for i, expr in enumerate(request.selectors):
            where_selector = f"request {where} selectors[{i}]"
            if not _compile(
                ctx, subject.kind, subject.name, subject.namespace, where_selector, expr
            ):
                usable = False
        name = request.device_class
        if name in classes:
            continue
        usable = False
        if name in broken or not ctx.state.device_classes:
            continue
        known = ", ".join(sorted(classes)) or "none usable"
        ctx.add(
            "GPU807",
            subject.kind,
            subject.name,
            f"request {where} asks for DeviceClass {name}, which the input does not have"
            f" (it has {known}): the claim is never allocated",
            "use one of the DRA driver's classes (gpu.nvidia.com, mig.nvidia.com,"
            f" vfio.gpu.nvidia.com), or create DeviceClass {name}",
            namespace=subject.namespace,
        )
    return usable


def _nodes(ctx: CheckContext, slices: Sequence[Slice]) -> dict[str, Mapping[str, str]]:
    """The input's Nodes (the scheduler places pods on no other); else the slices' nodes."""
    nodes: dict[str, Mapping[str, str]] = {view.name: view.labels for view in ctx.state.nodes}
    if nodes:
        return nodes
    for piece in slices:
        if piece.node_name:
            nodes.setdefault(piece.node_name, {})
        for device in piece.devices:
            if device.node:
                nodes.setdefault(device.node, {})
    return nodes


def _slices_by_node(
    nodes: Mapping[str, Mapping[str, str]], slices: Sequence[Slice]
) -> dict[str, list[Slice]]:
    """Per node, every slice of the pools it may see: its own, and those not bound to a node.

    Whole pools, so that the allocator still counts a pool's slices on other nodes when it
    asks whether the pool is complete; a large cluster's other nodes' slices stay out.
    """
    pools: dict[tuple[str, str], list[Slice]] = {}
    for piece in slices:
        pools.setdefault((piece.driver, piece.pool), []).append(piece)
    shared = [group for group in pools.values() if any(piece.node_name is None for piece in group)]
    own: dict[str, list[list[Slice]]] = {}
    for group in pools.values():
        for node in {piece.node_name for piece in group if piece.node_name}:
            own.setdefault(node, []).append(group)
    return {
        node: [piece for group in [*own.get(node, []), *shared] for piece in group]
        for node in nodes
    }


# CEL that can read an attribute or capacity without naming it (macros over a map, size(),
# a whole map compared): its result is cached per device, not per device content.
_READS_UNNAMED: Final = re.compile(
    r"\b(all|exists|exists_one|map|filter|size)\s*\(|(attributes|capacity)\s*\[[^\]]*\](?!\s*[.\[])"
)


class _Matcher:
    """Selectors evaluated once per expression and device content.

    Devices of one model differ only in the attributes that name them (uuid, PCI address),
    so an expression is keyed on the driver and the attributes and capacities whose names it
    mentions: a fleet of identical nodes costs one evaluation per expression. celpy walks
    the expression tree for each evaluation, so this is the check's whole cost.
    """

    def __init__(self) -> None:
        self._cache: dict[tuple[Any, ...], bool | CelError] = {}

    def _key(self, expr: str, device: Device) -> tuple[Any, ...]:
        if _READS_UNNAMED.search(expr):
            return (expr, device.id)
        attributes = tuple(
            sorted((k, v) for k, v in device.attributes.items() if k.rsplit("/", 1)[-1] in expr)
        )
        capacity = tuple(
            sorted((k, v) for k, v in device.capacity.items() if k.rsplit("/", 1)[-1] in expr)
        )
        return (expr, device.driver, device.allow_multiple, attributes, capacity)

    def matches(self, expressions: Sequence[str], device: Device) -> bool:
        """Whether every expression holds for the device; CelError for a runtime error."""
        for expr in expressions:
            key = self._key(expr, device)
            found = self._cache.get(key)
            if found is None:
                try:
                    found = compile_selector(expr).evaluate(device)
                except CelError as exc:
                    found = exc
                self._cache[key] = found
            if isinstance(found, CelError):
                raise found
            if not found:
                return False
        return True


def _shortfall(
    claim: Claim,
    devices: Sequence[Device],
    classes: Mapping[str, DeviceClass],
    matcher: _Matcher,
) -> str | None:
    """Why the claim cannot fit on a node even by counting its matching devices; None if it may.

    A necessary condition only (counters, constraints and taints are the allocator's):
    a claim that passes is then replayed with `fit`. CelError for a runtime error.
    """
    for request in claim.requests:
        reasons = []
        for leaf in request.subrequests or (request,):
            selectors = (*classes[leaf.device_class].selectors, *leaf.selectors)
            usable = sum(1 for device in devices if matcher.matches(selectors, device))
            wanted = leaf.count if leaf.mode == "ExactCount" else 1
            if usable >= wanted:
                break
            name = f"{request.name}/{leaf.name}" if request.subrequests else request.name
            shown = "all" if leaf.mode == "All" else str(wanted)
            reasons.append(
                f"claim {claim.key}, request {name}: wants {shown},"
                f" {usable} usable device{'' if usable == 1 else 's'}"
            )
        else:
            return reasons[0]
    return None


def _never_fits(
    ctx: CheckContext,
    subject: _Subject,
    nodes: Mapping[str, Mapping[str, str]],
    slices: Mapping[str, Sequence[Slice]],
    classes: Mapping[str, DeviceClass],
    matcher: _Matcher,
) -> None:
    claim = subject.claim
    reasons: list[tuple[str, str]] = []
    errors: list[str] = []
    for node, labels in sorted(nodes.items()):
        seen = {**labels, "kubernetes.io/hostname": labels.get("kubernetes.io/hostname", node)}
        pools = gather_pools(slices[node], node, seen)
        devices = [
            d for pool in pools if not (pool.incomplete or pool.invalid) for d in pool.devices()
        ]
        try:
            short = _shortfall(claim, devices, classes, matcher)
        except CelError as exc:
            errors.append(str(exc))
            reasons.append((node, str(exc)))
            continue
        if short is None:
            verdict = fit([claim], node, slices[node], classes, {}, node_labels=labels)
            if verdict.fits:
                return
            short = verdict.reason
        reasons.append((node, short))
    if errors and len(errors) == len(reasons):
        ctx.add(
            "GPU808",
            subject.kind,
            subject.name,
            f"fails on every node it is tried on: {errors[0][:300]}",
            "guard the attribute with has() or `in`, or fix the expression",
            namespace=subject.namespace,
        )
        return
    shown = "; ".join(f"{node}: {reason}" for node, reason in reasons[:_SHOWN_NODES])
    more = len(reasons) - _SHOWN_NODES
    ctx.add(
        "GPU805",
        subject.kind,
        subject.name,
        f"no node could allocate it even with every device free ({shown}"
        + (f"; and {more} more node(s)" if more > 0 else "")
        + ")",
        f"fix the selectors or the count; `gpuop explain` on {subject.kind}"
        f" {subject.namespace}/{subject.name} shows every device",
        namespace=subject.namespace,
    )


def check_claim_fit(ctx: CheckContext) -> None:
    """GPU805, GPU807, GPU808, GPU809 over the claims, templates, classes and slices."""
    slices = _read_slices(ctx)
    classes, broken = _read_classes(ctx)
    subjects = _read_subjects(ctx)
    if subjects and not ctx.state.device_classes:
        ctx.skip(
            "dra-classes",
            "no DeviceClasses in the input: claims' classes and whether they can fit not checked",
        )
        return
    nodes = _nodes(ctx, slices)
    if subjects and not nodes:
        ctx.skip("dra-fit", "no Nodes or ResourceSlices in the input: claims' fit not checked")
    by_node = _slices_by_node(nodes, slices)
    matcher = _Matcher()
    for subject in subjects:
        if not _usable(ctx, subject, classes, broken):
            continue
        if subject.kind == "ResourceClaim" and subject.claim.allocated is not None:
            continue
        if nodes:
            _never_fits(ctx, subject, nodes, by_node, classes, matcher)
