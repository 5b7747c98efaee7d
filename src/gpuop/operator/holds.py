"""The two holds a reconcile pass puts on a node while pods use its GPUs.

Why this module exists: both rules answer one question, "would this write take a GPU away
from a running pod?", and both end the same way (the write waits, an Event says why, a
condition names the node, the force annotation lets it through). Keeping them together and
apart from the pass keeps `gpuop.operator.reconcile` to the order of the steps.

* A workload switch (`nvidia.com/gpu.workload.config` to another value) replaces the node's
  operand set: the node keeps its old config while pods use its GPU resources.
* A `nvidia.com/vgpu.config` change recreates every vGPU device: the vGPU device manager is
  parked while pods use the node's vGPU devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuop.api.labels import (
    FORCE_SWITCH_ANNOTATION,
    VGPU_CONFIG_LABEL,
    VGPU_DEVICE_MANAGER_DEPLOY_LABEL,
)
from gpuop.api.notices import EventReason
from gpuop.naming import classify_resource
from gpuop.operator.model import NodeEvent, PodInfo
from gpuop.planner import NodeFacts, NodePlan

VGPU_PAUSED = "paused-for-vgpu-change"
LISTED_USERS = 5


def _users(pods: Sequence[PodInfo]) -> str:
    return ", ".join(f"{p.namespace}/{p.name}" for p in pods[:LISTED_USERS])


def switch_held_event(node: str, before: str, after: str, busy: Sequence[PodInfo]) -> NodeEvent:
    """The Warning that says a workload switch waits for the node's GPU pods."""
    return NodeEvent(
        node,
        EventReason.WORKLOAD_SWITCH_HELD,
        f"switch from {before} to {after} is held while {len(busy)} pod(s) use"
        f" this node's GPUs ({_users(busy)}); annotate the node"
        f" {FORCE_SWITCH_ANNOTATION}=true to switch anyway",
    )


@dataclass
class VgpuHold:
    held: bool
    label_changes: dict[str, str | None]
    events: list[NodeEvent]


def vgpu_change_hold(
    name: str, facts: NodeFacts, node_plan: NodePlan, busy: Sequence[PodInfo], forced: bool
) -> VgpuHold | None:
    """Park the vGPU device manager while VMs use the node's vGPU devices.

    Applying a `nvidia.com/vgpu.config` deletes every vGPU device on the node and creates the
    new ones; a VM using one of them loses its GPU. The device manager acts on the label as
    soon as it changes, so it cannot be stopped after the fact: while pods use the node's
    vGPU resources its deploy label is `paused-for-vgpu-change` (the value upstream's vGPU
    device manager itself uses while it reconfigures), so its pod leaves the node and the
    devices stay as they are. A config change made meanwhile is held, with an Event and a
    condition, until the pods are gone (or the node is annotated to proceed); then the label
    goes back to `true` and the manager applies whatever config the node asks for.
    """
    labels = facts.labels
    value = labels.get(VGPU_DEVICE_MANAGER_DEPLOY_LABEL)
    paused = value == VGPU_PAUSED
    vgpu = node_plan.vgpu if node_plan.workload.config == "vm-vgpu" else None
    users = [p for p in busy if any(classify_resource(r) == "vgpu" for r in p.gpu_resources)]
    if vgpu is not None and value in ("true", VGPU_PAUSED) and users and not forced:
        park: dict[str, str | None] = (
            {} if paused else {VGPU_DEVICE_MANAGER_DEPLOY_LABEL: VGPU_PAUSED}
        )
        wanted = dict(vgpu.result.resources())
        current = {
            resource: quantity
            for resource, count in facts.allocatable.items()
            if classify_resource(resource) == "vgpu" and (quantity := _count(count))
        }
        if not current or current == wanted:
            return VgpuHold(False, park, [])
        have = ", ".join(f"{k}: {v}" for k, v in sorted(current.items()))
        want = (
            ", ".join(f"{k}: {v}" for k, v in sorted(wanted.items()))
            if wanted
            else "no device (it cannot be applied)"
        )
        message = (
            f"{VGPU_CONFIG_LABEL} {vgpu.config_name} is held while {len(users)} pod(s) use"
            f" this node's vGPU devices ({_users(users)}): it has {have}, the new config makes"
            f" {want}; move the VMs off, or annotate the node {FORCE_SWITCH_ANNOTATION}=true to"
            " apply it anyway"
        )
        return VgpuHold(True, park, [NodeEvent(name, EventReason.VGPU_CONFIG_CHANGE_HELD, message)])
    if paused:
        resume = "true" if vgpu is not None else None
        return VgpuHold(False, {VGPU_DEVICE_MANAGER_DEPLOY_LABEL: resume}, [])
    return None


def _count(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return 0


__all__ = ["VGPU_PAUSED", "VgpuHold", "switch_held_event", "vgpu_change_hold"]
