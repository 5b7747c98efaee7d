"""The lab's managers step: one node as each other manager of GPUs leaves it, checked live.

`gpuop lab --managers` runs it after the lab's seven steps (or `gpuop lab managers` alone on
a cluster left up by `--keep`). Most GPU clusters are not run by NVIDIA's GPU Operator: a
standalone device plugin, a managed cloud's stack, KubeVirt's or another vendor's plugin
serve their nodes, and `gpuop check` must hold each node to its own manager's contract.

1. The operator is paused: a GPU Operator labels every GPU node it sees as its own, and
   these nodes stand for clusters it does not run.
2. The simulator makes one node per manager (`gpuop sim node add --managed-by`): its
   labels, resources, OS image, the plugin's pod bound to it, the DRA driver's
   ResourceSlice. (KubeVirt's own plugin is left out: the lab serves no KubeVirt CRD.)
3. `gpuop check`, reading the cluster as `--live` does, names each node's manager and finds
   nothing wrong on any of them.
4. One node's resource is registered with 0 devices on purpose; the check finds GPU211 on
   that node alone.
5. The nodes are removed (their pods and slices with them) and the operator resumed.
"""

from __future__ import annotations

import contextlib
import html
import time
from collections.abc import Callable
from typing import Any

from gpuop.check import run_checks
from gpuop.check.model import Report
from gpuop.kube import ops
from gpuop.kube.collect import collect
from gpuop.kube.errors import KubeApiError
from gpuop.sim.hardware import NodeSpec
from gpuop.sim.managers import managers
from gpuop.sim.registry import add_nodes

# manager -> (GPU model, count): a model each one's platform offers.
MODELS: dict[str, tuple[str, int]] = {
    "gke": ("L4", 1),
    "eks-auto-mode": ("H100", 8),
    "nvidia-dra-driver": ("H100", 2),
    "nvidia-kubevirt-gpu-device-plugin": ("A100", 4),
    "aks": ("A100", 1),
    "aks-managed-gpu": ("A100", 1),
}
# The static manifest that AKS's and EKS's guides apply is the standalone plugin's.
NAMED_AS = {"aks": "nvidia-device-plugin", "eks": "nvidia-device-plugin"}
# Needs KubeVirt's CRD, which the lab does not serve.
LEFT_OUT = ("kubevirt", "gpu-operator")
# The node whose resource is registered with 0 devices, and the finding that says so.
ZEROED = "hami"
ZERO_DEVICES = "GPU211"
PREFIX = "lab-m-"
GONE_TIMEOUT_SECONDS = 60.0

Say = Callable[[str], None]


class ManagersStepFailure(Exception):
    """What the step expected, and what it saw."""


def lab_shapes() -> list[str]:
    """The managers the step makes a node for."""
    return [m for m in managers() if m not in LEFT_OUT]


def node_name(manager: str) -> str:
    return f"{PREFIX}{manager}"


def _specs() -> list[NodeSpec]:
    return [NodeSpec(node_name(m), *MODELS.get(m, ("A10", 2)), managed_by=m) for m in lab_shapes()]


def _report(client: Any) -> Report:
    return run_checks(collect(client).all_objects())


def _ours(report: Report, names: set[str]) -> list[tuple[str, str, str]]:
    return sorted(
        (f.code, f.node or f.name, f.message)
        for f in report.findings
        if (f.node or f.name) in names and f.severity != "info"
    )


def _zero(client: Any, name: str) -> str:
    """Register the node's NVIDIA resource with 0 devices (as a plugin that found the cards
    unusable does); the resource's name."""
    node = ops.get_node(client, name) or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    resource = str(next(r for r in sorted(allocatable) if r.startswith("nvidia.com/")))
    ops.patch_node_sync(client, name, resources={resource: "0"})
    return resource


def _remove(client: Any, names: list[str], say: Say) -> None:
    for name in names:
        with contextlib.suppress(KubeApiError):
            ops.delete_node_sync(client, name)
    deadline = time.monotonic() + GONE_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        left = {n for n in names if ops.get_node(client, n) is not None}
        if not left:
            break
        time.sleep(0.5)
    say(f"  removed the {len(names)} nodes (their pods and slices go with them)")


def run_step(client: Any, say: Say) -> dict[str, Any]:
    """Steps 2 to 5 (the caller pauses and resumes the operator)."""
    specs = _specs()
    names = [spec.name for spec in specs]
    _remove(client, [n for n in names if ops.get_node(client, n) is not None], lambda _: None)
    add_nodes(client, specs, "gpu-operator")
    say(f"  {len(specs)} nodes, each as its manager leaves it:")
    try:
        report = _report(client)
        named = {n.name: list(n.managers) for n in report.nodes if n.name in set(names)}
        rows = []
        for spec in specs:
            wanted = NAMED_AS.get(spec.managed_by, spec.managed_by)
            seen = named.get(spec.name, [])
            say(f"    {spec.name:<42} {', '.join(seen) or '(none)'}")
            rows.append({"node": spec.name, "manager": spec.managed_by, "named": seen})
            if seen[:1] != [wanted]:
                raise ManagersStepFailure(
                    f"expected {spec.name} named {wanted}; saw {', '.join(seen) or 'none'}"
                )
        found = _ours(report, set(names))
        if found:
            shown = "; ".join(f"{code} {node}: {message}" for code, node, message in found)
            raise ManagersStepFailure(f"expected nothing wrong on any node; saw {shown}")
        say("  gpuop check --live: each node named with its manager, nothing wrong on any")
        zeroed = node_name(ZEROED)
        resource = _zero(client, zeroed)
        say(f"  {zeroed} registers {resource} with 0 devices (its plugin found no usable card)")
        after = [(code, node) for code, node, _ in _ours(_report(client), set(names))]
        if after != [(ZERO_DEVICES, zeroed)]:
            raise ManagersStepFailure(
                f"expected {ZERO_DEVICES} on {zeroed} alone; saw"
                f" {', '.join(f'{c} {n}' for c, n in after) or 'nothing'}"
            )
        say(f"  gpuop check --live: {ZERO_DEVICES} on {zeroed}, nothing on the others")
        return {"nodes": rows, "zeroed": {"node": zeroed, "resource": resource}}
    finally:
        _remove(client, names, say)


def lab_step(ctx: Any) -> dict[str, Any]:
    """`gpuop lab --managers`'s step on the lab's cluster: the operator paused meanwhile."""
    from gpuop.lab.runner import MANAGERS_STEP, LabFailure, ensure_running, stop_background

    ensure_running(ctx)
    stop_background(ctx)
    ctx.say("  operator paused: a GPU Operator labels every GPU node it sees as its own")
    try:
        return run_step(ctx.client(), ctx.say)
    except ManagersStepFailure as exc:
        expected, _, seen = str(exc).removeprefix("expected ").partition("; saw ")
        raise LabFailure(MANAGERS_STEP, expected, seen) from exc
    finally:
        ensure_running(ctx)
        ctx.say("  operator and simulator running again")


def render_markdown(record: dict[str, Any]) -> list[str]:
    """The report's managers section (Markdown)."""
    if not record:
        return []
    lines = ["", "## Other managers of GPUs, checked live", ""]
    lines += ["| node | manager | named by `gpuop check` |", "|---|---|---|"]
    for row in record.get("nodes") or []:
        lines.append(f"| `{row['node']}` | {row['manager']} | {', '.join(row['named'])} |")
    zeroed = record.get("zeroed") or {}
    if zeroed:
        lines += [
            "",
            f"`{zeroed['node']}` then registered `{zeroed['resource']}` with 0 devices:"
            f" {ZERO_DEVICES} on that node alone.",
        ]
    return lines


def render_html(record: dict[str, Any]) -> str:
    """The report's managers section (HTML)."""
    if not record:
        return ""
    rows = "".join(
        f"<tr><td><code>{html.escape(r['node'])}</code></td><td>{html.escape(r['manager'])}</td>"
        f"<td>{html.escape(', '.join(r['named']))}</td></tr>"
        for r in record.get("nodes") or []
    )
    zeroed = record.get("zeroed") or {}
    note = (
        f"<p><code>{html.escape(zeroed['node'])}</code> then registered"
        f" <code>{html.escape(zeroed['resource'])}</code> with 0 devices: {ZERO_DEVICES} on that"
        " node alone.</p>"
        if zeroed
        else ""
    )
    return (
        "<h2>Other managers of GPUs, checked live</h2><table><tr><th>node</th><th>manager</th>"
        f"<th>named by gpuop check</th></tr>{rows}</table>{note}"
    )


__all__ = ["lab_shapes", "lab_step", "render_html", "render_markdown", "run_step"]
