"""The GPUCluster's part of a reconcile pass: its objects, its nodes' stack, its status.

Pure, like `gpuop.operator.reconcile`. A GPUCluster (nvidia.com/v1alpha1, the singleton
`gpu-cluster`) asks for the DRA stack. Upstream refuses it next to a ClusterPolicy
(PrerequisiteNotMet); gpuop runs both, one stack per node (`gpuop.planner.stack`): nodes
labelled `nvidia.com/gpu.stack=dra` get the GPUCluster's deploy labels, the others keep
the ClusterPolicy's. With a GPUCluster alone every GPU node runs the DRA stack, as
upstream does. Its status follows upstream's (internal/conditions/gpucluster.go): state
`ready` or `notReady`, the operator's namespace, and Ready/Error conditions with reasons
Reconciled, OperandNotReady and ReconcileFailed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gpuop.api.conditions import ConditionType, Reason, condition, merge_conditions, status_differs
from gpuop.api.labels import HASH_ANNOTATION
from gpuop.catalog.dra import dra_catalog
from gpuop.operator.holds import switch_held_event
from gpuop.operator.model import Actions, PlanCache, PodInfo, Snapshot, daemonset_ready
from gpuop.planner import NodeFacts, NodePlan, planning_key
from gpuop.planner.stack import plan_node
from gpuop.policy import PolicyError, ResolvedPolicy
from gpuop.policy.gpucluster import SINGLETON_NAME, ResolvedGpuCluster, parse_gpu_cluster
from gpuop.render.gpucluster import render_gpu_cluster
from gpuop.render.support import object_key


def active_gpu_cluster(objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The singleton `gpu-cluster`, unless it is being deleted."""
    for obj in objects:
        meta = obj.get("metadata") or {}
        if meta.get("name") == SINGLETON_NAME and not meta.get("deletionTimestamp"):
            return obj
    return None


def object_version(obj: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = obj.get("metadata") or {}
    return (meta.get("uid"), meta.get("generation"), meta.get("resourceVersion"))


def claim_nodes(snapshot: Snapshot) -> frozenset[str]:
    """Nodes with a pod holding ResourceClaims (terminating ones too, not finished ones).

    Upstream reads each claim's allocation and counts those of the gpu.nvidia.com driver,
    a claim it cannot read included; gpuop counts every pod with claims, the safe side.
    """
    return frozenset(
        pod.node
        for pod in snapshot.pods
        if pod.claims and pod.node and pod.phase not in ("Succeeded", "Failed")
    )


def plan_with_stacks(
    policy: ResolvedPolicy | None,
    policy_key: tuple[Any, ...],
    gpu_cluster: ResolvedGpuCluster,
    gc_key: tuple[Any, ...],
    node: Mapping[str, Any],
    claims: bool,
    cache: PlanCache | None,
) -> tuple[NodeFacts, NodePlan]:
    """The node's plan with both CRs in mind, shared by nodes that read alike."""
    facts = NodeFacts.from_object(node)
    key = ("stacks", policy_key, gc_key, claims, planning_key(facts))
    shared = cache.get(key) if cache is not None else None
    if shared is None:
        shared = plan_node(policy, gpu_cluster, facts, dra_claims_on_node=claims)
        if cache is not None:
            cache[key] = shared
    return facts, replace(shared, node=facts.name)


def parse_active(obj: Mapping[str, Any]) -> tuple[ResolvedGpuCluster | None, str]:
    try:
        return parse_gpu_cluster(dict(obj), f"GPUCluster {SINGLETON_NAME}"), ""
    except PolicyError as exc:
        return None, "; ".join(exc.problems)


def _conditions(ready: bool, reason: Reason, message: str) -> list[dict[str, str]]:
    """upstream gpuClusterUpdater: Ready and Error, one True."""
    if ready:
        return [
            condition(ConditionType.READY, True, reason, message),
            condition(ConditionType.ERROR, False, Reason.READY, ""),
        ]
    return [
        condition(ConditionType.READY, False, Reason.ERROR, ""),
        condition(ConditionType.ERROR, True, reason, message),
    ]


def set_status(
    actions: Actions,
    obj: Mapping[str, Any],
    namespace: str,
    ready: bool,
    reason: Reason,
    message: str,
    now: str,
) -> None:
    old = obj.get("status") or {}
    status = {
        "state": "ready" if ready else "notReady",
        "namespace": namespace,
        "conditions": merge_conditions(
            old.get("conditions"), _conditions(ready, reason, message), now
        ),
    }
    if status_differs(old, status):
        actions.gpu_cluster_status[SINGLETON_NAME] = status


def gpu_cluster_objects(
    snapshot: Snapshot,
    obj: Mapping[str, Any],
    gpu_cluster: ResolvedGpuCluster,
    actions: Actions,
    now: str,
    cache: PlanCache | None,
    dra_nodes: int,
) -> None:
    """Apply what changed of the GPUCluster's objects, keep them from the cleanup, status."""
    key = ("gpucluster-objects", object_version(obj), snapshot.namespace,
           tuple(sorted(snapshot.operator_env.items())))  # fmt: skip
    try:
        rendered = cache.get(key) if cache is not None else None
        if rendered is None:
            rendered = render_gpu_cluster(gpu_cluster, snapshot.namespace, snapshot.operator_env)
            if cache is not None:
                cache[key] = rendered
    except PolicyError as exc:
        set_status(actions, obj, snapshot.namespace, False, Reason.RECONCILE_FAILED,
                   "Error syncing state state-dra-driver: " + "; ".join(exc.problems), now)  # fmt: skip
        return
    wanted: set[tuple[str, str]] = set()
    not_ready: list[str] = []
    for item in rendered:
        digest = item["metadata"]["annotations"][HASH_ANNOTATION]
        if item["kind"] == "DaemonSet":
            live = snapshot.daemonsets.get(item["metadata"]["name"])
            live_hash = ((live or {}).get("metadata") or {}).get("annotations", {})
            if live is None or live_hash.get(HASH_ANNOTATION) != digest:
                actions.apply.append(item)
                not_ready.append(item["metadata"]["name"])
            elif not daemonset_ready(live):
                not_ready.append(item["metadata"]["name"])
            continue
        item_key = object_key(item)
        wanted.add(item_key)
        if snapshot.existing_objects.get(item_key) != digest:
            actions.apply.append(item)
    actions.delete_objects = [k for k in actions.delete_objects if k not in wanted]
    if not_ready:
        set_status(actions, obj, snapshot.namespace, False, Reason.OPERAND_NOT_READY,
                   "Waiting for operand pods to be ready", now)  # fmt: skip
    else:
        message = "All resources have been successfully reconciled"
        if not dra_nodes:
            message += f" (no node runs the {dra_catalog().driver} DRA stack yet)"
        set_status(actions, obj, snapshot.namespace, True, Reason.RECONCILED, message, now)


def reconcile_gpu_cluster_only(
    snapshot: Snapshot, obj: dict[str, Any], now: str, cache: PlanCache | None
) -> Actions:
    """A GPUCluster without a ClusterPolicy: every GPU node runs the DRA stack."""
    actions = Actions()
    gpu_cluster, problem = parse_active(obj)
    if gpu_cluster is None:
        set_status(actions, obj, snapshot.namespace, False, Reason.RECONCILE_FAILED, problem, now)
        return actions
    claims = claim_nodes(snapshot)
    gc_key = object_version(obj)
    dra_nodes = 0
    for name, node in sorted(snapshot.nodes.items()):
        _, node_plan = plan_with_stacks(None, (), gpu_cluster, gc_key, node, name in claims, cache)
        actions.plans[name] = node_plan
        if node_plan.label_changes:
            actions.node_label_patches[name] = dict(node_plan.label_changes)
        dra_nodes += node_plan.gpu_node
    gpu_cluster_objects(snapshot, obj, gpu_cluster, actions, now, cache, dra_nodes)
    actions.ready = not actions.apply and (
        actions.gpu_cluster_status.get(SINGLETON_NAME, obj.get("status") or {}).get("state")
        == "ready"
    )
    return actions


def dra_node(
    name: str,
    before: str | None,
    node_plan: NodePlan,
    busy: list[PodInfo],
    forced: bool,
    actions: Actions,
) -> bool:
    """A node of the DRA stack next to a ClusterPolicy: its labels, or a held switch.

    A node still labelled for a device-plugin workload while pods use its GPUs is held
    (True), as a workload switch is, until they are gone or the switch is forced.
    """
    if before is not None and busy and not forced:
        actions.events.append(switch_held_event(name, before, "the DRA stack", busy))
        return True
    if node_plan.label_changes:
        actions.node_label_patches[name] = dict(node_plan.label_changes)
        if before is not None and not forced:
            actions.switching.add(name)
    return False
