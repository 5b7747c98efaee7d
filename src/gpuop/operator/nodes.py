"""The node step of a reconcile pass: plan every node, hold what must wait, tally the rest.

Why this module exists: planning a node is the part of a pass that grows with the fleet
and with the rules (the DRA stack beside the ClusterPolicy, the workload switch and vGPU
holds, the planner's notices); `gpuop.operator.reconcile` orders the steps and turns the
tally this step returns into the ClusterPolicy's status. Pure, like the pass.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpuop.api.conditions import ConditionType, Reason
from gpuop.api.labels import FORCE_SWITCH_ANNOTATION, NFD_KERNEL, NFD_OS_ID, NFD_OS_VERSION_ID
from gpuop.api.notices import EventReason, NoticeCode
from gpuop.api.resources import current_workload
from gpuop.catalog import WorkloadConfig
from gpuop.operator.gpucluster import (
    claim_nodes,
    dra_node,
    object_version,
    parse_active,
    plan_with_stacks,
    set_status,
)
from gpuop.operator.holds import switch_held_event, vgpu_change_hold
from gpuop.operator.model import Actions, NodeEvent, PlanCache, PodInfo, Snapshot, uses_gpus
from gpuop.planner import NodeFacts, NodePlan, plan, planning_key
from gpuop.policy import ResolvedPolicy
from gpuop.policy.gpucluster import ResolvedGpuCluster
from gpuop.render import os_tag_of

# Planner notices that become a node's Warning Event and put it in a node condition.
NOTICE_CONDITIONS: Mapping[NoticeCode, ConditionType] = {
    NoticeCode.WORKLOAD_LABEL_IGNORED: ConditionType.WORKLOAD_LABELS_IGNORED,
    NoticeCode.INVALID_WORKLOAD_LABEL: ConditionType.INVALID_WORKLOAD_LABELS,
    NoticeCode.VGPU_CONFIG_INFEASIBLE: ConditionType.VGPU_CONFIG_INVALID,
}


@dataclass(frozen=True)
class PlannedNode:
    """A node as read, its plan, and the workload config its labels held before."""

    facts: NodeFacts
    plan: NodePlan
    workload_before: WorkloadConfig | None


@dataclass(frozen=True)
class ActivePolicy:
    """The ClusterPolicy this pass reconciles, parsed, with the key its plans are cached by."""

    obj: Mapping[str, Any]
    policy: ResolvedPolicy
    key: tuple[Any, ...]
    forces_switch: bool

    @classmethod
    def of(cls, obj: Mapping[str, Any], policy: ResolvedPolicy) -> ActivePolicy:
        meta = obj.get("metadata") or {}
        # A policy object without a generation is keyed by its resourceVersion instead.
        key = (
            meta.get("uid"),
            meta.get("generation"),
            None if meta.get("generation") else meta.get("resourceVersion"),
        )
        forces = (meta.get("annotations") or {}).get(FORCE_SWITCH_ANNOTATION) == "true"
        return cls(obj, policy, key, forces)

    def forced(self, facts: NodeFacts) -> bool:
        """Whether a switch on this node goes ahead while pods use its GPUs."""
        return self.forces_switch or facts.annotations.get(FORCE_SWITCH_ANNOTATION) == "true"


@dataclass(frozen=True)
class ActiveGpuCluster:
    """The GPUCluster next to the ClusterPolicy, when it is valid: its nodes run the DRA stack."""

    obj: Mapping[str, Any]
    spec: ResolvedGpuCluster
    claims: frozenset[str]


@dataclass
class PodCensus:
    """The pods a pass counts: GPU consumers and Ready operand pods, by node."""

    consumers: dict[str, list[PodInfo]] = field(default_factory=dict)
    ready_operands: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, pods: Iterable[PodInfo]) -> PodCensus:
        census = cls()
        for pod in pods:
            if pod.terminal or not pod.node:
                continue
            if pod.operand is not None:
                if pod.ready:
                    census.ready_operands.setdefault(pod.node, set()).add(pod.operand)
            elif uses_gpus(pod):
                census.consumers.setdefault(pod.node, []).append(pod)
        return census


@dataclass
class NodeTally:
    """What planning every node found, for the operand objects and the status."""

    planned: dict[str, PlannedNode] = field(default_factory=dict)
    gpu_nodes: int = 0
    dra_nodes: int = 0
    os_tag: str | None = None
    kernels: dict[str, str] = field(default_factory=dict)
    by_workload: dict[str, int] = field(default_factory=dict)
    # The nodes each node condition names (see `reconcile.NODE_CONDITIONS`).
    affected: defaultdict[ConditionType, list[str]] = field(
        default_factory=lambda: defaultdict(list)
    )

    @property
    def held(self) -> list[str]:
        return self.affected[ConditionType.WORKLOAD_SWITCH_HELD]

    @property
    def vgpu_held(self) -> list[str]:
        return self.affected[ConditionType.VGPU_CONFIG_CHANGE_HELD]

    def count_workload(self, config: str) -> None:
        self.by_workload[config] = self.by_workload.get(config, 0) + 1

    def note_gpu_node(self, facts: NodeFacts) -> None:
        """Count a GPU node and the OS and kernel its driver image is built for."""
        self.gpu_nodes += 1
        if self.gpu_nodes == 1:
            # Upstream tags the driver image with the OS of the first GPU node by name.
            self.os_tag = os_tag_of(facts.labels)
        kernel = facts.labels.get(NFD_KERNEL)
        if kernel:
            os_id = facts.labels.get(NFD_OS_ID, "")
            self.kernels.setdefault(kernel, f"{os_id}{facts.labels.get(NFD_OS_VERSION_ID, '')}")


def planned_node(
    policy: ResolvedPolicy,
    policy_key: tuple[Any, ...],
    name: str,
    node: Mapping[str, Any],
    cache: PlanCache | None,
) -> PlannedNode:
    """The node's facts and plan, reused while neither the node nor the policy changed.

    A node's resourceVersion names its content, so a thousand quiet nodes are not re-read on
    every pass; nodes that read the same (the usual fleet of identical servers) share one
    planning, since a plan depends on the node's name only to carry it.
    """
    version = (node.get("metadata") or {}).get("resourceVersion")
    by_version = ("version", policy_key, name, version) if version else None
    if by_version is not None and cache is not None and by_version in cache:
        return cache[by_version]  # type: ignore[no-any-return]
    facts = NodeFacts.from_object(node)
    by_content = ("content", policy_key, planning_key(facts))
    shared = cache.get(by_content) if cache is not None else None
    if shared is None:
        node_plan = plan(policy, facts)
        if cache is not None:
            cache[by_content] = node_plan
    else:
        node_plan = replace(shared, node=facts.name)
    result = PlannedNode(facts, node_plan, current_workload(facts.labels))
    if by_version is not None and cache is not None:
        # The node's previous version is never asked for again: kept, every relabelled
        # node's facts would be held twice (a fleet's worth at the labelling peak).
        latest = ("latest version", name)
        superseded = cache.get(latest)
        if superseded is not None and superseded != by_version:
            cache.pop(superseded, None)
        cache[by_version] = result
        cache[latest] = by_version
    return result


def active_gpu_cluster_beside(
    snapshot: Snapshot, obj: Mapping[str, Any] | None, now: str, actions: Actions
) -> ActiveGpuCluster | None:
    """The GPUCluster beside the ClusterPolicy; an invalid one gets its error status."""
    if obj is None:
        return None
    spec, problem = parse_active(obj)
    if spec is None:
        set_status(actions, obj, snapshot.namespace, False, Reason.RECONCILE_FAILED, problem, now)
        return None
    return ActiveGpuCluster(obj, spec, claim_nodes(snapshot))


def plan_nodes(
    snapshot: Snapshot,
    active: ActivePolicy,
    gpu_cluster: ActiveGpuCluster | None,
    census: PodCensus,
    cache: PlanCache | None,
    actions: Actions,
) -> NodeTally:
    """Plan every node; record its labels, holds and Events in `actions`."""
    tally = NodeTally()
    for name, node in sorted(snapshot.nodes.items()):
        if gpu_cluster is not None:
            facts, stack_plan = plan_with_stacks(
                active.policy, active.key, gpu_cluster.spec, object_version(gpu_cluster.obj),
                node, name in gpu_cluster.claims, cache,
            )  # fmt: skip
            planned = PlannedNode(facts, stack_plan, current_workload(facts.labels))
        else:
            planned = planned_node(active.policy, active.key, name, node, cache)
        tally.planned[name] = planned
        actions.plans[name] = planned.plan
        busy = census.consumers.get(name, [])
        if planned.plan.workload.reason == "dra-stack":
            # The DRA stack's nodes belong to the GPUCluster: its status counts them.
            tally.dra_nodes += 1
            forced = active.forced(planned.facts)
            if dra_node(name, planned.workload_before, planned.plan, busy, forced, actions):
                tally.held.append(name)
        elif not planned.plan.gpu_node:
            if planned.plan.label_changes:
                actions.node_label_patches[name] = dict(planned.plan.label_changes)
        else:
            tally.note_gpu_node(planned.facts)
            _plan_gpu_node(name, planned, busy, active.forced(planned.facts), tally, actions)
    return tally


def _plan_gpu_node(
    name: str,
    planned: PlannedNode,
    busy: list[PodInfo],
    forced: bool,
    tally: NodeTally,
    actions: Actions,
) -> None:
    """A device-plugin GPU node: its labels unless a hold keeps them, and its notices."""
    facts, node_plan, before = planned.facts, planned.plan, planned.workload_before
    config = node_plan.workload.config or "container"
    if before is not None and before != config and busy and not forced:
        tally.held.append(name)
        actions.events.append(switch_held_event(name, before, config, busy))
        tally.count_workload(before)
        return
    tally.count_workload(config)
    label_changes = dict(node_plan.label_changes)
    vgpu_hold = vgpu_change_hold(name, facts, node_plan, busy, forced)
    if vgpu_hold is not None:
        label_changes.update(vgpu_hold.label_changes)
        actions.events.extend(vgpu_hold.events)
        if vgpu_hold.held:
            tally.vgpu_held.append(name)
    if label_changes:
        actions.node_label_patches[name] = label_changes
        if before is not None and before != config:
            if not forced:
                actions.switching.add(name)
            actions.events.append(
                NodeEvent(
                    name,
                    EventReason.WORKLOAD_SWITCHED,
                    f"workload config {before} -> {config}",
                    "Normal",
                )
            )
    for notice in node_plan.notices:
        kind = NOTICE_CONDITIONS.get(notice.code)
        if kind is None:
            continue
        if kind is ConditionType.WORKLOAD_LABELS_IGNORED and notice.severity != "warning":
            continue
        tally.affected[kind].append(name)
        actions.events.append(NodeEvent(name, notice.code, notice.message))
