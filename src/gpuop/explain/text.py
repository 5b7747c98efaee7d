"""`gpuop explain`'s text: per workload, its requests, the verdict and each node's reason.

Beyond GROUP_NODES_ABOVE nodes the rejected nodes are grouped by reason (each group lists
a few names), so a large cluster's answer stays readable; `--all-nodes` lists them all.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Final

from gpuop.api.labels import WORKLOAD_LABEL
from gpuop.api.resources import RESOURCE_PREFIX
from gpuop.api.wording import listed
from gpuop.catalog.dra import dra_catalog
from gpuop.explain import PodExplanation
from gpuop.explain.model import NodeVerdicts
from gpuop.explain.preemption import NO_VICTIMS, NOT_HELPFUL
from gpuop.explain.subjects import Explained
from gpuop.manifests import format_quantity
from gpuop.manifests.fields import sequence, text
from gpuop.naming import classify_resource

__all__ = ["GROUP_NODES_ABOVE", "render_result", "render_text"]

#: Beyond this many nodes, the text output groups rejected nodes by reason.
GROUP_NODES_ABOVE: Final = 40
_LIST_IN_GROUP: Final = 5


def _amount(resource: str, amount: str) -> str:
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        try:
            return format_quantity(Decimal(amount), binary=True)
        except ArithmeticError:  # pragma: no cover - the engine gives integers
            return amount
    return amount


def _requests_line(explanation: PodExplanation) -> str:
    if not explanation.requests:
        return "requests: nothing (BestEffort)"
    return "requests: " + ", ".join(
        f"{name} {_amount(name, amount)}" for name, amount in explanation.requests
    )


def _never_fits_line(result: Explained, resource: str) -> str:
    line = f"never fits anywhere: no node advertises {resource}"
    nvidia = resource.startswith(RESOURCE_PREFIX)
    silent = result.silent_gpu_nodes if nvidia else []
    dra = result.dra_gpu_nodes if nvidia else []
    if silent:
        line += (
            f"; {len(silent)} node(s) have NVIDIA GPUs but advertise none, {_few(silent)}: no"
            " device plugin registered them (`gpuop check` says why, for each node's manager)"
        )
    if dra:
        line += (
            f"; {len(dra)} node(s) serve their GPUs through NVIDIA's DRA driver instead,"
            f" {_few(dra)}: claim one with a ResourceClaim (DeviceClass"
            f" {dra_catalog().driver}) rather than asking for {resource}"
        )
    if not silent and not dra and not result.shared_gpu_nodes:  # what the nodes say first
        line += _workload_hint(result, resource)
    near = result.near_misses.get(resource)
    if near:
        line += f" (nodes advertise {', '.join(near)}: names must match exactly)"
    return line


def _workload_hint(result: Explained, resource: str) -> str:
    """Which workload config's plugin advertises `resource`, or that none does."""
    config = result.advertised_by.get(resource)
    if config is not None:
        what = {
            "container": "the NVIDIA device plugin on container nodes",
            "passthrough": "the sandbox device plugin on vm-passthrough nodes (a PCI model name)",
            "vgpu": "the sandbox device plugin on vm-vgpu nodes (a vGPU type name)",
            "kata": "the Kata sandbox device plugin on vm-passthrough nodes",
        }[classify_resource(resource)]
        return (
            f"; it is advertised by {what}: label a node {WORKLOAD_LABEL}={config}"
            " or ask for the resource that workload config advertises"
        )
    if resource.startswith(RESOURCE_PREFIX):
        return "; no NVIDIA workload config advertises a resource of that name"
    return ""


def _few(names: Sequence[str]) -> str:
    """The first names of a group, and how many more."""
    shown = ", ".join(names[:_LIST_IN_GROUP])
    more = len(names) - _LIST_IN_GROUP
    return f"{shown} and {more} more" if more > 0 else shown


def _node_reason(verdict: Any) -> str:
    reasons = ", ".join(verdict.reasons) or "rejected"
    return f"{reasons} [{verdict.plugin}]" if verdict.plugin else reasons


def _node_lines(result: Explained, all_nodes: bool) -> list[str]:
    verdicts = result.explanation.nodes
    if not verdicts:
        return []
    lines: list[str] = []
    if all_nodes or len(verdicts) <= GROUP_NODES_ABOVE:
        width = min(max(len(v.name) for v in verdicts), 40)
        pad = " " * (width + 4)
        for verdict in verdicts:
            if verdict.fits:
                lines.append(f"  {verdict.name.ljust(width)}  fits")
                continue
            lines.append(f"  {verdict.name.ljust(width)}  no: {_node_reason(verdict)}")
            lines.extend(f"{pad}{detail}" for detail in verdict.details)
            extra = [p for p in verdict.preemption if p not in (NOT_HELPFUL, NO_VICTIMS)]
            lines.extend(f"{pad}preemption: {note}" for note in extra)
        return lines
    fitting, groups = _by_reason(verdicts)
    if fitting:
        lines.append(f"  {len(fitting)} node(s) fit: {_some(verdicts.names, fitting)}")
    for reason, positions in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"  {len(positions)} node(s) no: {reason}: {_some(verdicts.names, positions)}")
    lines.append("  (--all-nodes lists every node with its details)")
    return lines


def _by_reason(verdicts: NodeVerdicts) -> tuple[list[int], dict[str, list[int]]]:
    """The nodes that fit and the others by reason (positions), one look per class."""
    fitting: list[int] = []
    groups: dict[str, list[int]] = {}
    for positions, status in verdicts.classes:
        if status is None:
            fitting.extend(positions)
            continue
        reasons = ", ".join(status.reasons) or "rejected"
        reason = f"{reasons} [{status.plugin}]" if status.plugin else reasons
        groups.setdefault(reason, []).extend(positions)
    return fitting, groups


def _some(names: Sequence[str], positions: list[int]) -> str:
    """The first few nodes in node order, and how many more."""
    first = [names[at] for at in heapq.nsmallest(_LIST_IN_GROUP, positions)]
    return listed(first, _LIST_IN_GROUP, len(positions))


def _verdict_line(result: Explained) -> str:
    explanation = result.explanation
    total = len(explanation.nodes)
    feasible = explanation.feasible
    if feasible:
        verdict = f"fits {len(feasible)} of {total} node(s): {listed(feasible, _LIST_IN_GROUP)}"
        if result.subject.refusal is not None:
            verdict = f"blocked by KubeVirt (the launcher pod would fit {len(feasible)} of {total})"
        return verdict
    return f"fits none of {total} node(s)"


def render_result(result: Explained, *, all_nodes: bool = False) -> str:
    subject, explanation = result.subject, result.explanation
    lines = [f"{subject.title}: {_verdict_line(result)}"]
    if subject.launcher == "rendered":
        lines.append(f"  launcher pod: {text(subject.pod, 'metadata', 'name')} (rendered)")
    elif subject.launcher:
        lines.append(f"  launcher pod: {subject.launcher}")
    lines.append(f"  {_requests_line(explanation)}")
    claims = [
        f"{text(c, 'name')} ({'claim ' + text(c, 'resourceClaimName') if text(c, 'resourceClaimName') else 'template ' + text(c, 'resourceClaimTemplateName')})"
        for c in sequence(subject.pod, "spec", "resourceClaims")
    ]
    if claims:
        lines.append(f"  resource claims: {', '.join(claims)}")
    if subject.refusal is not None:
        lines.append(f"  KubeVirt: {subject.refusal}")
        lines.append(
            "    virt-controller creates no launcher pod, so the VMI stays Pending"
            " (Synchronized=False, reason FailedCreate); the placement below is what would"
            " happen once KubeVirt accepts it (gpuop kubevirt permitted-devices)"
            if "permittedHostDevices" in subject.refusal
            else "    the VMI is refused at admission; add the gate to"
            " spec.configuration.developerConfiguration.featureGates"
        )
    lines.extend(_node_lines(result, all_nodes))
    if explanation.summary is not None:
        lines.append(f"  scheduler: {explanation.summary}")
    outcome = explanation.preemption
    if outcome.nominated_node is not None:
        chosen = next(c for c in outcome.candidates if c.node == outcome.nominated_node)
        lines.append(
            f"  preemption: would evict {', '.join(chosen.victims)} on {chosen.node}"
            " and nominate the pod there"
        )
    lines.extend(f"  {_never_fits_line(result, r)}" for r in explanation.never_fits_anywhere)
    shared = result.shared_gpu_nodes
    if shared:
        lines.append(
            f"  other vendors' GPU plugins: {len(shared)} node(s) register their GPUs under"
            f" their own names instead, {_few(shared)}: ask for those names, or give the"
            " node back to NVIDIA's device plugin (`gpuop check` names each node's manager)"
        )
    seen: set[str] = set()
    for note in (*subject.notes, *explanation.warnings):
        if note not in seen:
            seen.add(note)
            lines.append(f"  note: {note}")
    return "\n".join(lines) + "\n"


def render_text(results: Sequence[Explained], *, all_nodes: bool = False) -> str:
    return "\n".join(render_result(r, all_nodes=all_nodes) for r in results)
