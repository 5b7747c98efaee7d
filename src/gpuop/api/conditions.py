"""ClusterPolicy status conditions: their types and reasons, and how a new set is merged.

Why this module exists: the operator writes the conditions, the lab and the tests read
them, and the docs name them; as inline strings a misspelt reason is a condition nobody
ever matches. Types and reasons are `StrEnum`s, so they serialise as the plain strings
upstream uses and compare equal to them.

The merge is the Kubernetes convention (`meta.SetStatusCondition`): a condition keeps its
`lastTransitionTime` while its status stays the same, and a status that differs only in
those stamps is not written again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any


class ConditionType(StrEnum):
    """The `type` of a ClusterPolicy condition."""

    READY = "Ready"
    ERROR = "Error"
    WORKLOAD_LABELS_IGNORED = "WorkloadLabelsIgnored"
    INVALID_WORKLOAD_LABELS = "InvalidWorkloadLabels"
    VGPU_CONFIG_INVALID = "VgpuConfigInvalid"
    WORKLOAD_SWITCH_HELD = "WorkloadSwitchHeld"
    VGPU_CONFIG_CHANGE_HELD = "VgpuConfigChangeHeld"
    # The API server refuses an object the operator applies (a 4xx other than 409 and 429):
    # retried with backoff, never in a busy loop, and said here until it is accepted.
    APPLY_REFUSED = "ApplyRefused"
    # Operands whose DaemonSets gpuop leaves as they are (OpenShift's driver and vGPU
    # manager, which upstream renders with the Driver Toolkit).
    OPERANDS_KEPT = "OperandsKept"


class Reason(StrEnum):
    """The `reason` of a ClusterPolicy condition."""

    # Ready / Error
    RECONCILED = "Reconciled"
    NO_GPU_NODES = "NoGPUNodes"
    READY = "Ready"
    OPERAND_NOT_READY = "OperandNotReady"
    ERROR = "Error"
    RECONCILE_FAILED = "ReconcileFailed"
    # a ClusterPolicy that is not the active one
    IGNORED = "Ignored"
    # the node conditions: NONE while no node is affected
    NONE = "None"
    SANDBOX_WORKLOADS_DISABLED = "SandboxWorkloadsDisabled"
    INVALID_VALUE = "InvalidValue"
    INFEASIBLE = "Infeasible"
    GPU_PODS_RUNNING = "GpuPodsRunning"
    VGPU_DEVICES_IN_USE = "VgpuDevicesInUse"
    REFUSED_BY_API_SERVER = "RefusedByAPIServer"
    OPENSHIFT_DRIVER_TOOLKIT = "OpenShiftDriverToolkit"


def condition(kind: ConditionType, ok: bool, reason: Reason, message: str) -> dict[str, str]:
    """One condition as the API holds it, without its transition time."""
    return {
        "type": str(kind),
        "status": "True" if ok else "False",
        "reason": str(reason),
        "message": message,
    }


def merge_conditions(
    old: Sequence[Mapping[str, Any]] | None, new: Sequence[Mapping[str, str]], now: str
) -> list[dict[str, Any]]:
    """`new`, each stamped with the `lastTransitionTime` of the same condition in `old`
    when its status did not change, else with `now`. Conditions only in `old` go."""
    previous = {c.get("type"): c for c in old or []}
    merged = []
    for cond in new:
        before = previous.get(cond["type"])
        stamp = (
            before.get("lastTransitionTime")
            if before
            and before.get("status") == cond["status"]
            and before.get("lastTransitionTime")
            else now
        )
        merged.append({**cond, "lastTransitionTime": stamp})
    return merged


def status_differs(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether writing `new` over `old` changes anything but transition times."""

    def strip(status: Mapping[str, Any] | None) -> Any:
        if not status:
            return {}
        copy = dict(status)
        copy["conditions"] = [
            {k: v for k, v in c.items() if k != "lastTransitionTime"}
            for c in copy.get("conditions") or []
        ]
        return copy

    return bool(strip(old) != strip(new))


__all__ = ["ConditionType", "Reason", "condition", "merge_conditions", "status_differs"]
