"""The operand table per workload config, worked out by the planner itself.

Each cell comes from planning a synthetic GPU node with that workload config under a
ClusterPolicy that enables every operand, so the table in the docs cannot say anything the
planner does not do. `gpuop operands` prints these rows and `gpuop operands --markdown`
prints `operands_markdown()`, which `docs/operands.md` embeds (a test keeps it in sync).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from gpuop.api.labels import (
    GPU_PRESENT_LABEL,
    MIG_CAPABLE_LABEL,
    MPS_CAPABLE_LABEL,
    NFD_GPU_LABELS,
    WORKLOAD_LABEL,
)
from gpuop.catalog import Operand, SandboxMode, WorkloadConfig, operand_table
from gpuop.planner import NodePlan, plan
from gpuop.policy import default_policy, default_policy_object, parse_cluster_policy

Placement = Literal["yes", "mig-capable", "mps-capable", "label-only", "no"]


@dataclass(frozen=True)
class WorkloadColumn:
    key: str
    title: str
    workload: WorkloadConfig
    mode: SandboxMode


COLUMNS: tuple[WorkloadColumn, ...] = (
    WorkloadColumn("container", "container", "container", "kubevirt"),
    WorkloadColumn("vm-passthrough", "vm-passthrough (kubevirt)", "vm-passthrough", "kubevirt"),
    WorkloadColumn("vm-passthrough-kata", "vm-passthrough (kata)", "vm-passthrough", "kata"),
    WorkloadColumn("vm-vgpu", "vm-vgpu", "vm-vgpu", "kubevirt"),
)

_CELL: dict[Placement, str] = {
    "yes": "✓",
    "mig-capable": "MIG-capable nodes",
    "mps-capable": "`mps.capable=true` nodes",
    "label-only": "label only",
    "no": "—",
}

_ADVERTISES: dict[str, tuple[str, ...]] = {
    "gpu": ("nvidia.com/gpu",),
    "sandbox": ("nvidia.com/<PCI device name>", "nvidia.com/<vGPU type>"),
    "pgpu": ("nvidia.com/pgpu",),
}


@dataclass(frozen=True)
class OperandRow:
    """One operand: how it is switched on and where it runs."""

    operand: Operand
    enabled_by: str
    default: Literal["on", "off", "never"]
    enabled_when_unset: bool
    placements: dict[str, Placement]

    @property
    def workloads(self) -> tuple[str, ...]:
        """Column keys where the operand runs (possibly only on some nodes)."""
        return tuple(
            column.key
            for column in COLUMNS
            if self.placements[column.key] in ("yes", "mig-capable", "mps-capable")
        )

    @property
    def advertises(self) -> tuple[str, ...]:
        kind = self.operand.advertises
        return _ADVERTISES[kind] if kind else ()

    def to_dict(self) -> dict[str, Any]:
        op = self.operand
        return {
            "name": op.name,
            "state": op.state,
            "daemonset": op.daemonset,
            "deploy_label": operand_table().deploy_labels.prefix + op.deploy_label,
            "enabled_by": self.enabled_by,
            "default": self.default,
            "enabled_when_unset": self.enabled_when_unset,
            "extra_node_selector": dict(op.extra_node_selector),
            "placements": dict(self.placements),
            "workloads": list(self.workloads),
            "waits_for": list(op.waits_for),
            "gate_files": list(op.gate_files),
            "advertises": list(self.advertises),
        }


def _enabled_by(op: Operand) -> str:
    if op.deprecated:
        return "never (deprecated)"
    parts = []
    if op.requires_sandbox:
        parts.append("sandboxWorkloads.enabled")
    if op.policy_field is not None:
        parts.append(f"{op.policy_field}.enabled")
    if op.requires_mode is not None:
        parts.append(f"mode={op.requires_mode}")
    return " + ".join(parts) if parts else "always"


def _default(op: Operand) -> Literal["on", "off", "never"]:
    if op.deprecated:
        return "never"
    if op.policy_field is None:
        return "on"
    return "on" if default_policy().block_enabled(op.policy_field, op.enabled_default) else "off"


def _everything_on(mode: SandboxMode) -> Any:
    obj = copy.deepcopy(default_policy_object())
    spec = obj.setdefault("spec", {})
    spec["sandboxWorkloads"] = {"enabled": True, "mode": mode}
    for op in operand_table().operands:
        if op.policy_field is not None:
            spec.setdefault(op.policy_field, {})["enabled"] = True
    return parse_cluster_policy(obj, f"every operand enabled ({mode})")


def _plan_for(column: WorkloadColumn, extra: dict[str, str]) -> NodePlan:
    labels = {NFD_GPU_LABELS[0]: "true", GPU_PRESENT_LABEL: "true"}
    labels[WORKLOAD_LABEL] = column.workload
    labels.update(extra)
    return plan(_everything_on(column.mode), {"metadata": {"name": "table", "labels": labels}})


def _placement(op: Operand, plans: dict[str, NodePlan]) -> Placement:
    def status(which: str) -> str:
        return next(p.status for p in plans[which].operands if p.name == op.name)

    if status("base") == "runs":
        return "yes"
    if status("mig") == "runs":
        return "mig-capable"
    if status("mps") == "runs":
        return "mps-capable"
    label = plans["base"].desired_labels.get(operand_table().deploy_labels.prefix + op.deploy_label)
    if label == "true" and status("base") == "disabled":
        return "label-only"
    return "no"


@cache
def operand_rows() -> tuple[OperandRow, ...]:
    """Every operand in upstream state order, with its placement per workload column."""
    plans_by_column = {
        column.key: {
            "base": _plan_for(column, {}),
            "mig": _plan_for(column, {MIG_CAPABLE_LABEL: "true"}),
            "mps": _plan_for(column, {MPS_CAPABLE_LABEL: "true"}),
        }
        for column in COLUMNS
    }
    return tuple(
        OperandRow(
            operand=op,
            enabled_by=_enabled_by(op),
            default=_default(op),
            enabled_when_unset=op.enabled_default and not op.deprecated,
            placements={key: _placement(op, plans) for key, plans in plans_by_column.items()},
        )
        for op in operand_table().operands
    )


def _default_cell(row: OperandRow) -> str:
    if row.default == "never" or row.operand.policy_field is None:
        return row.default
    unset = "on" if row.enabled_when_unset else "off"
    return row.default if unset == row.default else f"{row.default} (unset: {unset})"


def operands_markdown(workload: str | None = None) -> str:
    """The per-workload operand table as Markdown, with its legend."""
    columns = [c for c in COLUMNS if workload is None or c.workload == workload]
    rows = [
        r
        for r in operand_rows()
        if workload is None or any(r.placements[c.key] != "no" for c in columns)
    ]
    headers = ["Operand", "DaemonSet", "Enabled by", "Default", *[c.title for c in columns]]
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "---|" * len(headers),
    ]
    for row in rows:
        cells = [
            row.operand.name,
            f"`{row.operand.daemonset}`",
            " + ".join(f"`{part}`" for part in row.enabled_by.split(" + "))
            if row.enabled_by not in ("always", "never (deprecated)")
            else row.enabled_by,
            _default_cell(row),
            *[_CELL[row.placements[c.key]] for c in columns],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    prefix = operand_table().deploy_labels.prefix
    lines += [
        "",
        f"- ✓: the workload config sets `{prefix}<operand>=true` on the node, and the"
        " DaemonSet runs there when the ClusterPolicy enables the operand.",
        "- **label only**: the label is set, but the DaemonSet is never deployed in that mode.",
        "- **Default**: in gpuop's default ClusterPolicy (the Helm chart's values); *unset* is"
        " the upstream default when the field is absent. Operands that need"
        " `sandboxWorkloads.enabled` stay off by default: sandbox workloads are off, so every"
        " GPU node is a container node.",
        f"- Every workload config also sets `{prefix}client=true` (it marks nodes for"
        " third-party GPU clients).",
        "- With `sandboxWorkloads.mode=kata` only vm-passthrough nodes change: vm-vgpu nodes"
        " keep their labels, but the KubeVirt sandbox device plugin is not deployed in kata"
        " mode, so nothing advertises their vGPUs.",
        f"- A node opts out of every operand with `{prefix}operands=false`. A deploy label"
        " set to anything but `true` (`false`, `pre-installed`, `paused-for-*`) keeps that"
        " operand off the node for as long as the label stays.",
    ]
    return "\n".join(lines) + "\n"


__all__ = [
    "COLUMNS",
    "OperandRow",
    "Placement",
    "WorkloadColumn",
    "operand_rows",
    "operands_markdown",
]
