"""Drift on purpose: put a simulated node into a state real GPU clusters end up in.

Each kind imitates a failure users report, so the checker can be shown to find it. Drift
is applied with the operator and the simulator stopped (otherwise they repair it at once),
as a merge patch of labels and status resources.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuop.api.cards import GpuCard
from gpuop.api.labels import (
    DEVICE_PLUGIN_DEPLOY_LABEL,
    NFD_GPU_LABELS,
    VGPU_CONFIG_STATE_LABEL,
    WORKLOAD_LABEL,
)
from gpuop.api.resources import CONTAINER_RESOURCE
from gpuop.catalog import gpu_catalog
from gpuop.naming import (
    PciDatabase,
    classify_resource,
    mdev_type_name,
    passthrough_resource,
    vgpu_resource,
)
from gpuop.sim.hardware import SimError


@dataclass(frozen=True)
class DriftKind:
    name: str
    applies_to: tuple[str, ...]
    imitates: str


DRIFT_KINDS: dict[str, DriftKind] = {
    kind.name: kind
    for kind in (
        DriftKind(
            "stale-resource",
            ("vm-passthrough", "vm-vgpu"),
            "a node switched away from containers still advertises nvidia.com/gpu: the kubelet"
            " keeps an extended resource in the node status after its device plugin is gone",
        ),
        DriftKind(
            "wrong-vgpu-count",
            ("vm-vgpu",),
            "fewer vGPU devices than profile x cards: an mdev creation failed half way, or a"
            " card was reset, and the device plugin advertises what is left",
        ),
        DriftKind(
            "wrong-vgpu-type",
            ("vm-vgpu",),
            "the node advertises a vGPU type other than its configured profile: devices created"
            " by hand or by an earlier config were never cleaned up",
        ),
        DriftKind(
            "label-flip",
            ("container", "vm-passthrough", "vm-vgpu"),
            "the workload label was changed while the operator was down (or ignored): operands"
            " and resources still belong to the old config",
        ),
        DriftKind(
            "two-kinds",
            ("container", "vm-passthrough"),
            "one node advertises two kinds of GPU resource at once: a second device plugin was"
            " deployed by hand next to the operator's",
        ),
        DriftKind(
            "deploy-label-edited",
            ("vm-passthrough", "vm-vgpu"),
            "a deploy label edited by hand contradicts the workload config, so a container"
            " operand is scheduled onto a VM node",
        ),
        DriftKind(
            "vgpu-config-failed",
            ("vm-vgpu",),
            "the vGPU device manager failed to apply nvidia.com/vgpu.config and the node"
            " stays in state failed",
        ),
        DriftKind(
            "non-gpu-advertising",
            ("container", "vm-passthrough", "vm-vgpu"),
            "node feature discovery lost the node's NVIDIA PCI label (NFD worker gone, device"
            " unbound) while the node still advertises GPUs and carries deploy labels",
        ),
        DriftKind(
            "too-many-devices",
            ("vm-passthrough",),
            "the node advertises more passthrough devices than it has GPUs: HDA or NVSwitch"
            " functions counted as GPUs, or a stale registration (only a hardware"
            " description, the optional gpuop.io/gpu-inventory hint, reveals it: nothing"
            " else on a real node counts its cards)",
        ),
    )
}


@dataclass
class DriftPatch:
    kind: str
    node: str
    labels: dict[str, str | None] = field(default_factory=dict)
    resources: dict[str, str | None] = field(default_factory=dict)
    description: str = ""


def _gpu_resources(allocatable: Mapping[str, str]) -> dict[str, int]:
    result = {}
    for key, value in allocatable.items():
        if classify_resource(key) != "other" and str(value).isdigit() and int(value) > 0:
            result[key] = int(value)
    return result


def node_workload(node: Mapping[str, Any]) -> str:
    """The workload config a healthy simulated node shows by what it advertises."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    kinds = {classify_resource(k) for k in _gpu_resources(allocatable)}
    if "vgpu" in kinds:
        return "vm-vgpu"
    if "passthrough" in kinds or "kata" in kinds:
        return "vm-passthrough"
    return "container"


def drift_patch(
    kind: str,
    node: Mapping[str, Any],
    cards: tuple[GpuCard, ...],
    pci_db: PciDatabase | None = None,
    rng: random.Random | None = None,
) -> DriftPatch:
    """The patch that puts `node` (with the machine's `cards`) into drift `kind`.

    `SimError` when it does not apply.
    """
    if kind not in DRIFT_KINDS:
        raise SimError(f"unknown drift kind {kind!r}; known: {', '.join(DRIFT_KINDS)}")
    rng = rng or random.Random(0)
    database = pci_db or PciDatabase.builtin()
    meta = node.get("metadata") or {}
    name = str(meta.get("name"))
    labels = dict(meta.get("labels") or {})
    allocatable = {
        str(k): str(v) for k, v in ((node.get("status") or {}).get("allocatable") or {}).items()
    }
    if not cards or cards[0].device_id is None:
        raise SimError(f"node {name} has no simulated GPUs")
    workload = node_workload(node)
    spec = DRIFT_KINDS[kind]
    if workload not in spec.applies_to:
        raise SimError(
            f"drift {kind} needs a node in {' or '.join(spec.applies_to)} mode; {name} is {workload}"
        )
    patch = DriftPatch(kind, name, description=spec.imitates)
    advertised = _gpu_resources(allocatable)
    pci_resource = passthrough_resource(cards[0].device_id, database).resource
    model = gpu_catalog().by_model(cards[0].model or "") if cards[0].model else None
    if kind == "stale-resource":
        patch.resources[CONTAINER_RESOURCE] = str(len(cards))
    elif kind in ("wrong-vgpu-count", "wrong-vgpu-type", "vgpu-config-failed"):
        vgpu = [k for k in advertised if classify_resource(k) == "vgpu"]
        if not vgpu:
            raise SimError(f"node {name} advertises no vGPU devices yet")
        current = vgpu[0]
        if kind == "wrong-vgpu-count":
            patch.resources[current] = str(max(1, advertised[current] - 1))
        elif kind == "wrong-vgpu-type":
            assert model is not None
            others = [
                t
                for t in model.vgpu_types
                if vgpu_resource(mdev_type_name(t)) != current
                and not model.vgpu_types[t].mig_backed
            ]
            other = rng.choice(sorted(others))
            patch.resources[current] = None
            patch.resources[vgpu_resource(mdev_type_name(other))] = str(advertised[current])
        else:
            patch.labels[VGPU_CONFIG_STATE_LABEL] = "failed"
    elif kind == "label-flip":
        choices = [w for w in ("container", "vm-passthrough", "vm-vgpu") if w != workload]
        patch.labels[WORKLOAD_LABEL] = rng.choice(choices)
    elif kind == "two-kinds":
        if workload == "container":
            patch.resources[pci_resource] = str(len(cards))
        else:
            patch.resources[CONTAINER_RESOURCE] = str(len(cards))
    elif kind == "deploy-label-edited":
        patch.labels[DEVICE_PLUGIN_DEPLOY_LABEL] = "true"
    elif kind == "non-gpu-advertising":
        for key in NFD_GPU_LABELS:
            if key in labels:
                patch.labels[key] = None
    elif kind == "too-many-devices":
        patch.resources[pci_resource] = str(len(cards) * 2)
    return patch


def applicable_kinds(node: Mapping[str, Any]) -> list[str]:
    workload = node_workload(node)
    return [k.name for k in DRIFT_KINDS.values() if workload in k.applies_to]


def render_drift_docs() -> str:
    """The drift-kind table of docs/sim.md."""
    lines = ["| drift kind | applies to | the real-world failure it imitates |", "|---|---|---|"]
    for kind in DRIFT_KINDS.values():
        lines.append(f"| `{kind.name}` | {', '.join(kind.applies_to)} | {kind.imitates} |")
    return "\n".join(lines) + "\n"
