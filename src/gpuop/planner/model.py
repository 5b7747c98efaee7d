"""What a plan says: `NodeFacts` in (what the node shows), `NodePlan` out (its workload
config, labels, operands, resources, vGPU profile and the notices that explain them).

Plain frozen values with their JSON form (`to_dict`), shared by the planner, the operator,
the checker and the commands that print plans.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gpuop.api.notices import NoticeCode
from gpuop.api.resources import RESOURCE_PREFIX
from gpuop.catalog import (
    WorkloadConfig,
)
from gpuop.manifests.fields import scalar_text
from gpuop.planner.inventory import (
    Inventory,
)
from gpuop.vgpu import VgpuApplyResult

if TYPE_CHECKING:
    from gpuop.planner.stack import StackDecision

Severity = Literal["error", "warning", "info"]


WorkloadReason = Literal[
    "label",
    "default",
    "ignored-sandbox-disabled",
    "sandbox-disabled",
    "invalid-label",
    "not-a-gpu-node",
    # The node runs GPUCluster's DRA stack: workload configs are the device-plugin stack's.
    "dra-stack",
]


OperandStatus = Literal["runs", "disabled", "not-for-workload", "held"]


@dataclass(frozen=True)
class Notice:
    """Something about the node a person should know; codes are stable."""

    code: NoticeCode
    severity: Severity
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": str(self.code), "severity": self.severity, "message": self.message}


@dataclass(frozen=True)
class WorkloadDecision:
    """The workload config a node gets, and why."""

    config: WorkloadConfig | None
    reason: WorkloadReason
    label_value: str | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config,
            "reason": self.reason,
            "label_value": self.label_value,
            "message": self.message,
        }


@dataclass(frozen=True)
class OperandPlacement:
    """Whether one operand runs on the node, and its place in the bring-up order."""

    name: str
    daemonset: str
    deploy_label: str
    status: OperandStatus
    label_value: str | None
    waits_for: tuple[str, ...]
    stage: int | None
    detail: str

    @property
    def runs(self) -> bool:
        return self.status == "runs"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "daemonset": self.daemonset,
            "deploy_label": self.deploy_label,
            "status": self.status,
            "label_value": self.label_value,
            "waits_for": list(self.waits_for),
            "stage": self.stage,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class VgpuPlan:
    config_name: str
    source: Literal["label", "default"]
    result: VgpuApplyResult

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config_name,
            "source": self.source,
            "state": self.result.state,
            "errors": list(self.result.errors),
            "per_card": [
                {"index": card.index, "model": card.model, "devices": card.devices}
                for card in self.result.cards
            ],
            # Only when some card is listed by no entry (its devices are left as they are).
            **({"untouched_cards": list(self.result.untouched)} if self.result.untouched else {}),
            "totals": self.result.totals,
        }


@dataclass(frozen=True)
class NodePlan:
    """Everything gpuop expects of one node under one ClusterPolicy."""

    node: str
    gpu_node: bool
    gpu_detection: str
    workload: WorkloadDecision
    label_changes: dict[str, str | None]
    desired_labels: dict[str, str]
    operands: tuple[OperandPlacement, ...]
    advertises: dict[str, int]
    must_not_advertise: tuple[str, ...]
    vgpu: VgpuPlan | None
    inventory: Inventory
    notices: tuple[Notice, ...] = field(default=())
    # Every name an operand here advertises, counted in `advertises` or not (when the
    # node's card count is unknown, the names are still known).
    expected_names: tuple[str, ...] = field(default=())
    # Which stack runs the node and why (gpuop.planner.stack); None: planned for a
    # ClusterPolicy alone, as upstream does.
    stack: StackDecision | None = None

    def running_operands(self) -> tuple[OperandPlacement, ...]:
        return tuple(op for op in self.operands if op.runs)

    @property
    def on_dra_stack(self) -> bool:
        """Whether the node runs the GPUCluster's DRA stack."""
        return self.stack is not None and self.stack.stack == "dra"

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "gpu_node": self.gpu_node,
            "gpu_detection": self.gpu_detection,
            "workload": self.workload.to_dict(),
            "label_changes": self.label_changes,
            "desired_labels": self.desired_labels,
            "operands": [op.to_dict() for op in self.operands],
            "advertises": self.advertises,
            "must_not_advertise": list(self.must_not_advertise),
            "vgpu": self.vgpu.to_dict() if self.vgpu else None,
            "inventory": self.inventory.to_dict(),
            "notices": [notice.to_dict() for notice in self.notices],
            "expected_names": list(self.expected_names),
            **({"stack": self.stack.to_dict()} if self.stack is not None else {}),
        }


@dataclass(frozen=True)
class NodeFacts:
    """The parts of a Node object the planner reads."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str] = field(default_factory=dict)
    allocatable: Mapping[str, str] = field(default_factory=dict)
    # status.capacity: every device a plugin registered (allocatable leaves out unhealthy ones).
    capacity: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_object(cls, node: Mapping[str, Any]) -> NodeFacts:
        """Read a Node (as from the API or a dump); tolerant of missing or odd fields."""
        metadata = node.get("metadata") if isinstance(node.get("metadata"), Mapping) else {}
        status = node.get("status") if isinstance(node.get("status"), Mapping) else {}
        assert isinstance(metadata, Mapping) and isinstance(status, Mapping)
        return cls(
            name=str(metadata.get("name") or ""),
            labels=_string_map(metadata.get("labels")),
            annotations=_string_map(metadata.get("annotations")),
            allocatable=_string_map(status.get("allocatable")),
            capacity={
                k: v
                for k, v in _string_map(status.get("capacity")).items()
                if k.startswith(RESOURCE_PREFIX)
            },
        )


def _string_map(value: Any) -> dict[str, str]:
    """Labels or annotations as the API would hold them: YAML's unquoted `true` is "true"
    (as every reader of a Node spells it), never Python's "True"."""
    if not isinstance(value, Mapping):
        return {}
    if type(value) is dict and all(type(k) is str and type(v) is str for k, v in value.items()):
        # Already the API's strings (every Node an informer holds): shared, not copied, so a
        # fleet's planned facts do not hold a second copy of every node's labels.
        return value
    return {str(k): v if isinstance(v, str) else scalar_text(v) for k, v in value.items()}
