"""The planner's notice codes and the operator's Event reasons.

Why this module exists: a notice code is read in four places (the planner writes it, the
operator turns some into Events and conditions, the checker maps each to a finding code,
`gpuop plan` prints it) and an Event reason is what a runbook greps for. As inline strings
a misspelt code is a notice that nothing maps; as `StrEnum` members a typo is an import
error, and the values are the plain strings the API and the JSON output carry.
"""

from __future__ import annotations

from enum import StrEnum


class NoticeCode(StrEnum):
    """What the planner says about a node (`Notice.code`); stable, documented in
    docs/planner.md."""

    WORKLOAD_LABEL_IGNORED = "WorkloadLabelIgnored"
    INVALID_WORKLOAD_LABEL = "InvalidWorkloadLabel"
    BAD_INVENTORY = "BadInventory"
    UNKNOWN_INVENTORY = "UnknownInventory"
    INVENTORY_CONFLICT = "InventoryConflict"
    PARTIAL_VGPU_CARDS = "PartialVgpuCards"
    VGPU_CONFIG_INFEASIBLE = "VgpuConfigInfeasible"
    INVALID_RESOURCE_NAME = "InvalidResourceName"
    UNKNOWN_PCI_DEVICE = "UnknownPciDevice"
    VFIO_MANAGER_NOT_RUNNING = "VfioManagerNotRunning"
    VGPU_MANAGER_NOT_RUNNING = "VgpuManagerNotRunning"
    VGPU_CARDS_UNTOUCHED = "VgpuCardsUntouched"
    OPERAND_HELD = "OperandHeld"
    OPT_OUT_IGNORED_BY_DRA = "OptOutIgnoredByDra"
    STACK_LABEL_IGNORED = "StackLabelIgnored"
    DRA_PLUGIN_REMOVAL_DEFERRED = "DraPluginRemovalDeferred"
    NO_POLICY = "NoPolicy"


class EventReason(StrEnum):
    """The reasons of the Events the operator posts beside notices (a notice that becomes
    an Event keeps its code as the reason); documented in docs/operator.md."""

    WORKLOAD_SWITCH_HELD = "WorkloadSwitchHeld"
    WORKLOAD_SWITCHED = "WorkloadSwitched"
    VGPU_CONFIG_CHANGE_HELD = "VgpuConfigChangeHeld"
    GPU_DRIVER_UPGRADE = "GPUDriverUpgrade"
    APPLY_REFUSED = "ApplyRefused"


__all__ = ["EventReason", "NoticeCode"]
