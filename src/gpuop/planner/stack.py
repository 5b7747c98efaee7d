"""Which stack a node runs, device plugin (ClusterPolicy) or DRA (GPUCluster), and its plan.

NVIDIA's operator (v26.7.0) has two stacks and allows one per cluster: a GPUCluster next to
a ClusterPolicy is refused (PrerequisiteNotMet) and node labelling stops. gpuop goes
further: with both, each node runs one of them, chosen by its `nvidia.com/gpu.stack` label
(`device-plugin` or `dra`); unlabelled nodes keep the ClusterPolicy's stack, so a cluster
moves node by node. With one CR every node runs its stack, as upstream does, and a stack
label asking for the other is reported as ignored.

A node of the DRA stack is labelled exactly as upstream's GPUCluster labels a node
(controllers/state_manager.go, nodelabeling_controller.go): the device-plugin stack's
deploy labels are removed but for `driver` (GPUCluster does not manage the driver: an
NVIDIADriver CR or a ClusterPolicy driver gates on it) and `vgpu-manager`, and
`driver`, `dra-driver`, `dra-validator`, `dcgm-dra`, `dcgm-exporter-dra` are set to
"true" when absent or empty. A node leaving the DRA stack keeps `dra-driver` while a pod
on it still holds a `gpu.nvidia.com` claim, so the kubelet plugin can unprepare it last.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from gpuop.api.labels import GPU_PRESENT_LABEL, GPU_STACK_LABEL
from gpuop.api.notices import NoticeCode
from gpuop.catalog import operand_table
from gpuop.catalog.dra import Stack, dra_catalog
from gpuop.naming import PciDatabase
from gpuop.planner import (
    _other_kind_resources as device_plugin_names,
)
from gpuop.planner import applied, gpu_detection, node_inventory, not_a_gpu_node, plan
from gpuop.planner.inventory import learn_inventory
from gpuop.planner.model import (
    NodeFacts,
    NodePlan,
    Notice,
    OperandPlacement,
    OperandStatus,
    WorkloadDecision,
)
from gpuop.policy import DEFAULT_VGPU_CONFIG, ResolvedPolicy
from gpuop.policy.gpucluster import ResolvedGpuCluster
from gpuop.vgpu import VgpuConfigFile

StackReason = Literal[
    "cluster-policy-only",
    "gpu-cluster-only",
    "label",
    "default",
    "invalid-label",
    "no-policy",
]
STACKS: tuple[Stack, ...] = ("device-plugin", "dra")


@dataclass(frozen=True)
class StackDecision:
    """The stack a node runs, and why."""

    stack: Stack | None
    reason: StackReason
    label_value: str | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "stack": self.stack,
            "reason": self.reason,
            "label_value": self.label_value,
            "message": self.message,
        }


def decide_stack(
    labels: Mapping[str, str], *, cluster_policy: bool, gpu_cluster: bool
) -> StackDecision:
    """The node's stack from which CRs exist and its `nvidia.com/gpu.stack` label."""
    raw = labels.get(GPU_STACK_LABEL)
    if not cluster_policy and not gpu_cluster:
        return StackDecision(None, "no-policy", raw, "no ClusterPolicy and no GPUCluster")
    if not gpu_cluster:
        message = "only a ClusterPolicy exists: every node runs the device-plugin stack"
        if raw is not None and raw != "device-plugin":
            message += f" ({GPU_STACK_LABEL}={raw} is ignored: there is no GPUCluster)"
        return StackDecision("device-plugin", "cluster-policy-only", raw, message)
    if not cluster_policy:
        message = "only a GPUCluster exists: every node runs the DRA stack"
        if raw is not None and raw != "dra":
            message += f" ({GPU_STACK_LABEL}={raw} is ignored: there is no ClusterPolicy)"
        return StackDecision("dra", "gpu-cluster-only", raw, message)
    if raw is None:
        return StackDecision(
            "device-plugin",
            "default",
            None,
            f"a ClusterPolicy and a GPUCluster exist and the node has no {GPU_STACK_LABEL}"
            " label: it keeps the ClusterPolicy's device-plugin stack",
        )
    if raw in STACKS:
        return StackDecision(raw, "label", raw, f"{GPU_STACK_LABEL}={raw}")
    shown = "an empty value" if raw == "" else repr(raw)
    return StackDecision(
        "device-plugin",
        "invalid-label",
        raw,
        f"{GPU_STACK_LABEL} has {shown}, not one of {', '.join(STACKS)};"
        " the node keeps the ClusterPolicy's device-plugin stack",
    )


def _deploy_key(key: str) -> str:
    return operand_table().deploy_labels.prefix + key


def device_plugin_only_keys() -> frozenset[str]:
    """Upstream devicePluginOnlyStateLabelKeys: what a node joining the DRA stack loses."""
    table = operand_table().deploy_labels
    dra = dra_catalog()
    keys = set(table.known_keys) - set(table.dra_keys)
    return frozenset(keys - set(dra.deploy_keys) - set(dra.kept_on_dra_nodes))


def _dra_label_changes(labels: Mapping[str, str], detected: str | None) -> dict[str, str | None]:
    table = operand_table().deploy_labels
    changes: dict[str, str | None] = {}
    present = labels.get(GPU_PRESENT_LABEL)
    if detected is None:
        if present == "true":
            changes[GPU_PRESENT_LABEL] = "false"
        for key in sorted(table.known_keys):
            if _deploy_key(key) in labels:
                changes[_deploy_key(key)] = None
        return changes
    if present != "true":
        changes[GPU_PRESENT_LABEL] = "true"
    for key in sorted(device_plugin_only_keys()):
        if _deploy_key(key) in labels:
            changes[_deploy_key(key)] = None
    for key in dra_catalog().deploy_keys:
        if not labels.get(_deploy_key(key)):
            changes[_deploy_key(key)] = "true"
    return changes


def _place_dra_operands(
    gpu_cluster: ResolvedGpuCluster, labels: Mapping[str, str]
) -> tuple[OperandPlacement, ...]:
    placements: list[OperandPlacement] = []
    running: set[str] = set()
    operands = operand_table().gpucluster_operands
    for operand in operands:
        key = _deploy_key(operand.deploy_label)
        value = labels.get(key)
        status: OperandStatus
        if not gpu_cluster.operand_enabled(operand.name):
            status, detail = "disabled", "not deployed by this GPUCluster"
        elif value is None:
            status, detail = "not-for-workload", f"{key} is not set"
        elif value != "true":
            status, detail = "held", f"{key}={value}"
        else:
            status, detail = "runs", f"{key}=true"
            running.add(operand.name)
        placements.append(
            OperandPlacement(
                operand.name, operand.daemonset, key, status, value, operand.waits_for, None, detail
            )
        )
    by_name = {op.name: op for op in operands}

    def stage_of(name: str) -> int:
        deps = [d for d in by_name[name].waits_for if d in running]
        return 0 if not deps else 1 + max(stage_of(d) for d in deps)

    return tuple(
        replace(p, waits_for=tuple(d for d in p.waits_for if d in running), stage=stage_of(p.name))
        if p.runs
        else p
        for p in placements
    )


def plan_dra(
    gpu_cluster: ResolvedGpuCluster,
    node: NodeFacts | Mapping[str, Any],
    *,
    decision: StackDecision | None = None,
    pci_db: PciDatabase | None = None,
    vgpu_config: VgpuConfigFile | None = None,
) -> NodePlan:
    """A node of the DRA stack: upstream GPUCluster's labels and operands."""
    facts = node if isinstance(node, NodeFacts) else NodeFacts.from_object(node)
    database = pci_db or PciDatabase.builtin()
    labels = facts.labels
    detected = gpu_detection(labels)
    changes = _dra_label_changes(labels, detected)
    final = applied(labels, changes)
    table = operand_table().deploy_labels
    desired = {
        key: value
        for key, value in sorted(final.items())
        if key == GPU_PRESENT_LABEL
        or (key.startswith(table.prefix) and key.removeprefix(table.prefix) in table.known_keys)
    }
    inventory = node_inventory(facts, database, vgpu_config, DEFAULT_VGPU_CONFIG)
    decision = decision or StackDecision(
        "dra", "gpu-cluster-only", labels.get(GPU_STACK_LABEL), "planned for a GPUCluster"
    )
    notices: list[Notice] = []
    if labels.get(_deploy_key(table.opt_out_key)) == "false" and detected is not None:
        notices.append(
            Notice(
                NoticeCode.OPT_OUT_IGNORED_BY_DRA,
                "warning",
                f"{_deploy_key(table.opt_out_key)}=false is not read by GPUCluster's node"
                " labelling (upstream sets the DRA stack's labels regardless)",
            )
        )
    if detected is None:
        workload = WorkloadDecision(None, "not-a-gpu-node", None, "no NVIDIA GPU found by NFD")
        return not_a_gpu_node(facts, workload, changes, desired, inventory, notices, decision)
    workload = WorkloadDecision(
        None,
        "dra-stack",
        labels.get("nvidia.com/gpu.workload.config"),
        f"the DRA stack publishes every card to the {dra_catalog().driver} DRA driver;"
        " workload configs are the device-plugin stack's",
    )
    operands = _place_dra_operands(gpu_cluster, final)
    for op in operands:
        if op.status == "held":
            notices.append(
                Notice(NoticeCode.OPERAND_HELD, "info", f"{op.name} does not run: {op.detail}")
            )
    return NodePlan(
        facts.name,
        True,
        detected,
        workload,
        changes,
        desired,
        operands,
        {},
        device_plugin_names(inventory.cards, database, set()),
        None,
        inventory,
        tuple(notices),
        (),
        stack=decision,
    )


def plan_node(
    policy: ResolvedPolicy | None,
    gpu_cluster: ResolvedGpuCluster | None,
    node: NodeFacts | Mapping[str, Any],
    *,
    dra_claims_on_node: bool = False,
    pci_db: PciDatabase | None = None,
    vgpu_config: VgpuConfigFile | None = None,
) -> NodePlan:
    """The node's plan under whichever of a ClusterPolicy and a GPUCluster exist.

    `dra_claims_on_node`: a pod on the node holds a claim allocated by the DRA driver
    (terminating pods too); a node leaving the DRA stack then keeps `dra-driver`.
    """
    facts = node if isinstance(node, NodeFacts) else NodeFacts.from_object(node)
    decision = decide_stack(
        facts.labels, cluster_policy=policy is not None, gpu_cluster=gpu_cluster is not None
    )
    ignored = decision.stack is not None and decision.label_value not in (None, decision.stack)
    ignored_notice = Notice(NoticeCode.STACK_LABEL_IGNORED, "warning", decision.message)
    if decision.stack == "dra":
        assert gpu_cluster is not None
        dra_plan = plan_dra(
            gpu_cluster, facts, decision=decision, pci_db=pci_db, vgpu_config=vgpu_config
        )
        if ignored:
            return replace(dra_plan, notices=(*dra_plan.notices, ignored_notice))
        return dra_plan
    if policy is None:
        return _unplanned(facts, decision)
    result = plan(policy, facts, pci_db=pci_db, vgpu_config=vgpu_config)
    notices = list(result.notices)
    if ignored:
        notices.append(ignored_notice)
    plugin_key = _deploy_key(dra_catalog().plugin_deploy_key)
    changes = dict(result.label_changes)
    desired = dict(result.desired_labels)
    if dra_claims_on_node and plugin_key in changes and changes[plugin_key] is None:
        del changes[plugin_key]
        desired[plugin_key] = facts.labels[plugin_key]
        desired = dict(sorted(desired.items()))
        notices.append(
            Notice(
                NoticeCode.DRA_PLUGIN_REMOVAL_DEFERRED,
                "info",
                f"{plugin_key} stays while pods on the node hold {dra_catalog().driver}"
                " claims: the DRA kubelet plugin must unprepare them before it goes",
            )
        )
    return replace(
        result,
        label_changes=changes,
        desired_labels=desired,
        notices=tuple(notices),
        stack=decision,
    )


def _unplanned(facts: NodeFacts, decision: StackDecision) -> NodePlan:
    """Neither CR exists: upstream labels nothing, and neither does gpuop."""
    inventory = learn_inventory(facts.labels, facts.annotations, facts.allocatable)
    detected = gpu_detection(facts.labels)
    workload = WorkloadDecision(None, "not-a-gpu-node", None, decision.message)
    return NodePlan(
        facts.name,
        detected is not None,
        detected or "no NFD label for an NVIDIA PCI device is true",
        workload,
        {},
        {},
        (),
        {},
        (),
        None,
        inventory,
        (Notice(NoticeCode.NO_POLICY, "info", decision.message),),
        stack=decision,
    )
