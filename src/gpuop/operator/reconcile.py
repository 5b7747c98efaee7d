"""One reconcile pass as a pure function: what the cluster looks like -> what to write.

The runtime (`gpuop.operator.runtime`) keeps a cache of ClusterPolicies, Nodes, operand
DaemonSets and pods, calls `reconcile` whenever any of them changes, and performs the
returned writes. Keeping the decision pure makes "a second pass writes nothing" a unit
test, and keeps every rule in one place:

* the active ClusterPolicy is `gpuop.api.policies.select_active`'s (the oldest one not
  being deleted, name breaks ties); the other live ones get `ignored`;
* node labels come from the planner, one merge patch per node per change;
* a node whose workload config would change while pods still use its GPU resources is
  held (its labels keep the old config) until they are gone, or the node (or the
  ClusterPolicy, for every node) is annotated `gpuop.io/force-workload-switch=true`;
* while pods use a vGPU node's vGPU devices its vGPU device manager is parked
  (`nvidia.com/gpu.deploy.vgpu-device-manager=paused-for-vgpu-change`), so a
  `nvidia.com/vgpu.config` change waits, held and visible, until they are gone;
* one DaemonSet per enabled operand, and the objects around it (ServiceAccount, RBAC,
  ConfigMaps, Services), each applied only when its rendered hash changed; objects of
  operands no longer enabled are deleted, as upstream does;
* status is `ready` when every enabled operand is Ready on every node that should run it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpuop.api.conditions import (
    ConditionType,
    Reason,
    condition,
    merge_conditions,
    status_differs,
)
from gpuop.api.labels import (
    FORCE_SWITCH_ANNOTATION,
    HASH_ANNOTATION,
    NFD_KERNEL,
    NFD_OS_ID,
    NFD_OS_VERSION_ID,
    UPGRADE_ENABLED_ANNOTATION,
    UPGRADE_STATE_LABEL,
    VGPU_CONFIG_LABEL,
    VGPU_DEVICE_MANAGER_DEPLOY_LABEL,
    WORKLOAD_LABEL,
)
from gpuop.api.policies import select_active
from gpuop.api.resources import current_workload
from gpuop.catalog import WorkloadConfig, operand_table
from gpuop.naming import classify_resource
from gpuop.operator.gpucluster import (
    active_gpu_cluster,
    claim_nodes,
    dra_node,
    gpu_cluster_objects,
    object_version,
    parse_active,
    plan_with_stacks,
    reconcile_gpu_cluster_only,
    set_status,
)
from gpuop.operator.model import (
    DRIVER_APP,
    UPGRADE_APPS,
    VALIDATOR_APP,
    Actions,
    NodeEvent,
    PodInfo,
    Snapshot,
    pod_info,
    uses_gpus,
    workload_pod,
)
from gpuop.operator.upgrades import driver_upgrades
from gpuop.planner import NodeFacts, NodePlan, plan, planning_key
from gpuop.policy import PolicyError, ResolvedPolicy, parse_cluster_policy
from gpuop.render import (
    os_tag_of,
    render_operand_daemonsets,
    render_runtime_classes,
    render_support_objects,
)
from gpuop.render.support import SERVICE_MONITOR_KIND, object_key

__all__ = [
    "DRIVER_APP",
    "UPGRADE_APPS",
    "VALIDATOR_APP",
    "Actions",
    "NodeEvent",
    "PodInfo",
    "Snapshot",
    "daemonset_ready",
    "pod_info",
    "reconcile",
    "uses_gpus",
    "workload_pod",
]

VGPU_PAUSED = "paused-for-vgpu-change"
MAX_LISTED_NODES = 50


def daemonset_ready(ds: Mapping[str, Any]) -> bool:
    """Upstream `isDaemonSetReady`."""
    status = ds.get("status") or {}
    desired = int(status.get("desiredNumberScheduled") or 0)
    if desired == 0:
        return True
    if int(status.get("numberUnavailable") or 0) != 0:
        return False
    meta = ds.get("metadata") or {}
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
        return False
    strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type")
    if strategy == "OnDelete":
        return int(status.get("numberReady") or 0) == desired
    return (
        int(status.get("updatedNumberScheduled") or 0) == desired
        and int(status.get("numberAvailable") or 0) == desired
    )


def _names(nodes: list[str]) -> str:
    shown = ", ".join(nodes[:10])
    return shown + (f" and {len(nodes) - 10} more" if len(nodes) > 10 else "")


@dataclass(frozen=True)
class PlannedNode:
    facts: NodeFacts
    plan: NodePlan
    workload_before: WorkloadConfig | None


PlanCache = dict[tuple[Any, ...], Any]


def _planned(
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
        cache[by_version] = result
    return result


def _rendered_daemonsets(
    policy: ResolvedPolicy,
    policy_key: tuple[Any, ...],
    operands: tuple[Any, ...],
    snapshot: Snapshot,
    cache: PlanCache | None,
    os_tag: str | None,
    kernels: dict[str, str],
) -> list[dict[str, Any]]:
    key = (
        "daemonsets",
        policy_key,
        snapshot.namespace,
        tuple(sorted(snapshot.operator_env.items())),
        os_tag,
        tuple(sorted(kernels.items())),
    )
    cached = cache.get(key) if cache is not None else None
    if cached is None:
        cached = [
            ds
            for op in operands
            for ds in render_operand_daemonsets(
                policy, op, snapshot.namespace, snapshot.operator_env, os_tag, kernels
            )
        ]
        if cache is not None:
            cache[key] = cached
    return [dict(ds) for ds in cached]


def _supporting_objects(
    policy: ResolvedPolicy,
    policy_key: tuple[Any, ...],
    snapshot: Snapshot,
    cache: PlanCache | None,
    actions: Actions,
) -> None:
    """RuntimeClasses, and every enabled operand's ServiceAccount, RBAC, ConfigMaps and
    Services (with or without GPU nodes: they cost nothing, and a pod naming a missing
    ServiceAccount is never created); what gpuop made that is no longer wanted goes."""
    key = ("support", policy_key, snapshot.namespace, snapshot.service_monitors_served)
    wanted = cache.get(key) if cache is not None else None
    if wanted is None:
        wanted = [
            obj
            for obj in [
                *render_runtime_classes(policy),
                *render_support_objects(policy, policy.enabled_operands(), snapshot.namespace),
            ]
            if obj["kind"] != SERVICE_MONITOR_KIND or snapshot.service_monitors_served
        ]
        if cache is not None:
            cache[key] = wanted
    wanted_keys = set()
    for obj in wanted:
        obj_key = object_key(obj)
        wanted_keys.add(obj_key)
        if (
            snapshot.existing_objects.get(obj_key)
            != obj["metadata"]["annotations"][HASH_ANNOTATION]
        ):
            actions.apply.append(obj)
    actions.delete_objects = sorted(k for k in snapshot.existing_objects if k not in wanted_keys)


def reconcile(
    snapshot: Snapshot,
    now: str,
    plan_cache: PlanCache | None = None,
) -> Actions:
    """Decide every write for one pass over the snapshot."""
    actions = Actions()
    selection = select_active(snapshot.policies)
    chosen = selection.active
    for other in selection.ignored:
        assert chosen is not None
        meta = other.get("metadata") or {}
        old_status = other.get("status") or {}
        active_name = (chosen.get("metadata") or {}).get("name")
        status = {
            "state": "ignored",
            "namespace": snapshot.namespace,
            "conditions": merge_conditions(
                old_status.get("conditions"),
                [
                    condition(
                        ConditionType.READY,
                        False,
                        Reason.IGNORED,
                        f"ClusterPolicy {active_name} is older and active;"
                        " only one ClusterPolicy is active in a cluster",
                    ),
                    condition(ConditionType.ERROR, False, Reason.IGNORED, ""),
                ],
                now,
            ),
        }
        if status_differs(old_status, status):
            actions.status[str(meta.get("name"))] = status

    gc_obj = active_gpu_cluster(snapshot.gpu_clusters)
    if chosen is None:
        if gc_obj is not None:
            gc_actions = reconcile_gpu_cluster_only(snapshot, gc_obj, now, plan_cache)
            gc_actions.status.update(actions.status)
            return gc_actions
        _cleanup_without_policy(snapshot, actions)
        return actions

    policy_name = str((chosen.get("metadata") or {}).get("name"))
    actions.active_policy = policy_name
    try:
        policy = parse_cluster_policy(chosen, f"ClusterPolicy {policy_name}")
    except PolicyError as exc:
        _set_status(
            actions,
            chosen,
            snapshot.namespace,
            "notReady",
            [
                condition(ConditionType.READY, False, Reason.ERROR, "the ClusterPolicy is invalid"),
                condition(
                    ConditionType.ERROR, True, Reason.RECONCILE_FAILED, "; ".join(exc.problems)
                ),
            ],
            now,
            {},
        )
        return actions

    consumers: dict[str, list[PodInfo]] = {}
    ready_operands: dict[str, set[str]] = {}
    for pod in snapshot.pods:
        if pod.terminal or not pod.node:
            continue
        if pod.operand is not None:
            if pod.ready:
                ready_operands.setdefault(pod.node, set()).add(pod.operand)
        elif uses_gpus(pod):
            consumers.setdefault(pod.node, []).append(pod)

    policy_key = (
        (chosen.get("metadata") or {}).get("uid"),
        (chosen.get("metadata") or {}).get("generation"),
        (chosen.get("metadata") or {}).get("resourceVersion")
        if not (chosen.get("metadata") or {}).get("generation")
        else None,
    )
    policy_annotations = (chosen.get("metadata") or {}).get("annotations") or {}
    policy_forces = policy_annotations.get(FORCE_SWITCH_ANNOTATION) == "true"
    held_nodes: list[str] = []
    vgpu_held_nodes: list[str] = []
    ignored_nodes: list[str] = []
    invalid_nodes: list[str] = []
    vgpu_problem_nodes: list[str] = []
    by_workload: dict[str, int] = {}
    gpu_nodes = 0
    os_tag: str | None = None
    kernels: dict[str, str] = {}
    planned_nodes: dict[str, PlannedNode] = {}
    gpu_cluster, gc_problem = parse_active(gc_obj) if gc_obj is not None else (None, "")
    if gc_obj is not None and gpu_cluster is None:
        set_status(actions, gc_obj, snapshot.namespace, False, "ReconcileFailed", gc_problem, now)
    claims = claim_nodes(snapshot) if gpu_cluster is not None else frozenset()
    dra_nodes = 0
    for name, node in sorted(snapshot.nodes.items()):
        if gpu_cluster is not None and gc_obj is not None:
            facts, stack_plan = plan_with_stacks(
                policy, policy_key, gpu_cluster, object_version(gc_obj), node,
                name in claims, plan_cache,
            )  # fmt: skip
            planned = PlannedNode(facts, stack_plan, current_workload(facts.labels))
        else:
            planned = _planned(policy, policy_key, name, node, plan_cache)
        facts, node_plan = planned.facts, planned.plan
        if node_plan.workload.reason == "dra-stack":
            # The DRA stack's nodes belong to the GPUCluster: its status counts them.
            dra_nodes += 1
            actions.plans[name] = node_plan
            planned_nodes[name] = planned
            forced = policy_forces or facts.annotations.get(FORCE_SWITCH_ANNOTATION) == "true"
            if dra_node(name, planned.workload_before, node_plan, consumers.get(name, []),
                        forced, actions):  # fmt: skip
                held_nodes.append(name)
            continue
        planned_nodes[name] = planned
        actions.plans[name] = node_plan
        if not node_plan.gpu_node:
            if node_plan.label_changes:
                actions.node_label_patches[name] = dict(node_plan.label_changes)
            continue
        gpu_nodes += 1
        if gpu_nodes == 1:
            # Upstream tags the driver image with the OS of the first GPU node by name.
            os_tag = os_tag_of(facts.labels)
        kernel = facts.labels.get(NFD_KERNEL)
        if kernel:
            os_id = facts.labels.get(NFD_OS_ID, "")
            kernels.setdefault(kernel, f"{os_id}{facts.labels.get(NFD_OS_VERSION_ID, '')}")
        config = node_plan.workload.config or "container"
        before = planned.workload_before
        busy = consumers.get(name, [])
        forced = policy_forces or facts.annotations.get(FORCE_SWITCH_ANNOTATION) == "true"
        if before is not None and before != config and busy and not forced:
            held_nodes.append(name)
            users = ", ".join(f"{p.namespace}/{p.name}" for p in busy[:5])
            actions.events.append(
                NodeEvent(
                    name,
                    "WorkloadSwitchHeld",
                    f"switch from {before} to {config} is held while {len(busy)} pod(s) use"
                    f" this node's GPUs ({users}); annotate the node"
                    f" {FORCE_SWITCH_ANNOTATION}=true to switch anyway",
                )
            )
            by_workload[before] = by_workload.get(before, 0) + 1
            continue
        by_workload[config] = by_workload.get(config, 0) + 1
        label_changes = dict(node_plan.label_changes)
        vgpu_hold = _vgpu_change_hold(name, facts, node_plan, busy, forced)
        if vgpu_hold is not None:
            label_changes.update(vgpu_hold.label_changes)
            actions.events.extend(vgpu_hold.events)
            if vgpu_hold.held:
                vgpu_held_nodes.append(name)
        if label_changes:
            actions.node_label_patches[name] = label_changes
            if before is not None and before != config:
                if not forced:
                    actions.switching.add(name)
                actions.events.append(
                    NodeEvent(
                        name, "WorkloadSwitched", f"workload config {before} -> {config}", "Normal"
                    )
                )
        for notice in node_plan.notices:
            if notice.code == "WorkloadLabelIgnored" and notice.severity == "warning":
                ignored_nodes.append(name)
                actions.events.append(NodeEvent(name, notice.code, notice.message))
            elif notice.code == "InvalidWorkloadLabel":
                invalid_nodes.append(name)
                actions.events.append(NodeEvent(name, notice.code, notice.message))
            elif notice.code == "VgpuConfigInfeasible":
                vgpu_problem_nodes.append(name)
                actions.events.append(NodeEvent(name, notice.code, notice.message))

    enabled = policy.enabled_operands() if gpu_nodes else ()
    enabled_names = {op.name for op in enabled}
    try:
        rendered = _rendered_daemonsets(
            policy, policy_key, tuple(enabled), snapshot, plan_cache, os_tag, kernels
        )
    except PolicyError as exc:
        _set_status(
            actions,
            chosen,
            snapshot.namespace,
            "notReady",
            [
                condition(
                    ConditionType.READY,
                    False,
                    Reason.ERROR,
                    "an operand image cannot be resolved",
                ),
                condition(
                    ConditionType.ERROR, True, Reason.RECONCILE_FAILED, "; ".join(exc.problems)
                ),
            ],
            now,
            {},
        )
        return actions
    _supporting_objects(policy, policy_key, snapshot, plan_cache, actions)
    if gpu_cluster is not None and gc_obj is not None:
        gpu_cluster_objects(snapshot, gc_obj, gpu_cluster, actions, now, plan_cache, dra_nodes)
    driver_upgrades(policy, snapshot, actions)
    for ds in rendered:
        live = snapshot.daemonsets.get(ds["metadata"]["name"])
        live_hash = ((live or {}).get("metadata") or {}).get("annotations", {}).get(HASH_ANNOTATION)
        if live is None or live_hash != ds["metadata"]["annotations"][HASH_ANNOTATION]:
            actions.apply.append(ds)
    managed = {op.daemonset for op in operand_table().operands}
    driver_daemonset = operand_table().operand("driver").daemonset
    wanted = {ds["metadata"]["name"] for ds in rendered}
    for name in sorted(snapshot.daemonsets):
        precompiled = name.startswith(f"{driver_daemonset}-")
        if (name in managed or precompiled) and name not in wanted and gpu_nodes:
            actions.delete_daemonsets.append(name)

    not_ready_ds = sorted(
        ds["metadata"]["name"]
        for ds in rendered
        if ds["metadata"]["name"] not in snapshot.daemonsets
        or not daemonset_ready(snapshot.daemonsets[ds["metadata"]["name"]])
        or any(a is ds for a in actions.apply)
    )
    waiting_nodes: list[dict[str, Any]] = []
    ready_nodes = 0
    for name, node_plan in sorted(actions.plans.items()):
        if not node_plan.gpu_node:
            continue
        if node_plan.workload.reason == "dra-stack" and name not in held_nodes:
            continue
        if name in held_nodes:
            waiting_nodes.append(
                {
                    "name": name,
                    "workload": planned_nodes[name].workload_before or "",
                    "waitingFor": [],
                    "held": True,
                    "message": "workload switch held: GPU pods still running",
                }
            )
            continue
        if name in vgpu_held_nodes:
            waiting_nodes.append(
                {
                    "name": name,
                    "workload": node_plan.workload.config or "",
                    "waitingFor": ["vgpu-device-manager"],
                    "held": True,
                    "message": "vGPU config change held: vGPU devices still in use",
                }
            )
            continue
        waiting = [
            op.name
            for op in node_plan.running_operands()
            if op.name in enabled_names and op.name not in ready_operands.get(name, ())
        ]
        if name in actions.node_label_patches:
            waiting = waiting or ["labels"]
        if waiting:
            stages = {op.name: op.stage or 0 for op in node_plan.operands}
            waiting.sort(key=lambda n: (stages.get(n, 0), n))
            waiting_nodes.append(
                {
                    "name": name,
                    "workload": node_plan.workload.config or "",
                    "waitingFor": waiting,
                    "held": False,
                    "message": f"waiting for {waiting[0]} (stage {stages.get(waiting[0], 0)})",
                }
            )
        else:
            ready_nodes += 1

    conditions: list[dict[str, str]] = []
    ready = not not_ready_ds and not waiting_nodes
    if ready:
        reason, message = (
            (
                Reason.RECONCILED,
                "ClusterPolicy is ready as all resources have been successfully reconciled",
            )
            if gpu_nodes
            else (
                Reason.NO_GPU_NODES,
                "No GPU node found, watching for new nodes to join the cluster.",
            )
        )
        conditions += [
            condition(ConditionType.READY, True, reason, message),
            condition(ConditionType.ERROR, False, Reason.READY, ""),
        ]
    else:
        parts = []
        if not_ready_ds:
            parts.append(f"states not ready: {not_ready_ds}")
        if waiting_nodes:
            parts.append(
                f"{len(waiting_nodes)} node(s) not ready: {_names([n['name'] for n in waiting_nodes])}"
            )
        conditions += [
            condition(
                ConditionType.READY, False, Reason.OPERAND_NOT_READY, "ClusterPolicy is not ready"
            ),
            condition(
                ConditionType.ERROR,
                True,
                Reason.OPERAND_NOT_READY,
                "ClusterPolicy is not ready; " + "; ".join(parts),
            ),
        ]
    # The per-node problem conditions: True with the nodes named while any node has it.
    node_conditions = (
        (
            ConditionType.WORKLOAD_LABELS_IGNORED,
            Reason.SANDBOX_WORKLOADS_DISABLED,
            ignored_nodes,
            f"{WORKLOAD_LABEL} is set but ignored because sandboxWorkloads.enabled is false on",
        ),
        (
            ConditionType.INVALID_WORKLOAD_LABELS,
            Reason.INVALID_VALUE,
            invalid_nodes,
            f"invalid {WORKLOAD_LABEL} on",
        ),
        (
            ConditionType.VGPU_CONFIG_INVALID,
            Reason.INFEASIBLE,
            vgpu_problem_nodes,
            f"{VGPU_CONFIG_LABEL} cannot be applied on",
        ),
        (
            ConditionType.WORKLOAD_SWITCH_HELD,
            Reason.GPU_PODS_RUNNING,
            held_nodes,
            "workload switch held on",
        ),
        (
            ConditionType.VGPU_CONFIG_CHANGE_HELD,
            Reason.VGPU_DEVICES_IN_USE,
            vgpu_held_nodes,
            f"{VGPU_CONFIG_LABEL} change held on",
        ),
    )
    for kind, reason, affected, what in node_conditions:
        conditions.append(
            condition(
                kind,
                bool(affected),
                reason if affected else Reason.NONE,
                f"{what}: {_names(affected)}" if affected else "",
            )
        )
    nodes_summary = {
        "gpuNodes": gpu_nodes,
        "readyNodes": ready_nodes,
        "byWorkload": dict(sorted(by_workload.items())),
        "notReady": waiting_nodes[:MAX_LISTED_NODES],
    }
    actions.ready = ready
    _set_status(
        actions,
        chosen,
        snapshot.namespace,
        "ready" if ready else "notReady",
        conditions,
        now,
        nodes_summary,
    )
    return actions


def _set_status(
    actions: Actions,
    policy: Mapping[str, Any],
    namespace: str,
    state: str,
    conditions: list[dict[str, str]],
    now: str,
    nodes: Mapping[str, Any],
) -> None:
    old = policy.get("status") or {}
    status: dict[str, Any] = {
        "state": state,
        "namespace": namespace,
        "conditions": merge_conditions(old.get("conditions"), conditions, now),
    }
    if nodes:
        status["nodes"] = dict(nodes)
    if status_differs(old, status):
        actions.status[str((policy.get("metadata") or {}).get("name"))] = status


@dataclass
class VgpuHold:
    held: bool
    label_changes: dict[str, str | None]
    events: list[NodeEvent]


def _vgpu_change_hold(
    name: str, facts: NodeFacts, node_plan: NodePlan, busy: list[PodInfo], forced: bool
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
        names = ", ".join(f"{p.namespace}/{p.name}" for p in users[:5])
        have = ", ".join(f"{k}: {v}" for k, v in sorted(current.items()))
        want = (
            ", ".join(f"{k}: {v}" for k, v in sorted(wanted.items()))
            if wanted
            else "no device (it cannot be applied)"
        )
        message = (
            f"{VGPU_CONFIG_LABEL} {vgpu.config_name} is held while {len(users)} pod(s) use"
            f" this node's vGPU devices ({names}): it has {have}, the new config makes {want};"
            f" move the VMs off, or annotate the node {FORCE_SWITCH_ANNOTATION}=true to apply"
            " it anyway"
        )
        return VgpuHold(True, park, [NodeEvent(name, "VgpuConfigChangeHeld", message)])
    if paused:
        resume = "true" if vgpu is not None else None
        return VgpuHold(False, {VGPU_DEVICE_MANAGER_DEPLOY_LABEL: resume}, [])
    return None


def _count(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return 0


def _cleanup_without_policy(snapshot: Snapshot, actions: Actions) -> None:
    """No ClusterPolicy: take back the deploy labels gpuop set (owned objects go by garbage
    collection). Values only users or managers write (`false`, `pre-installed`,
    `paused-for-*`, the `operands=false` opt-out) stay: the next ClusterPolicy honours them."""
    prefix = operand_table().deploy_labels.prefix
    known = operand_table().deploy_labels.known_keys
    for name, node in sorted(snapshot.nodes.items()):
        labels = (node.get("metadata") or {}).get("labels") or {}
        removals: dict[str, str | None] = {
            key: None
            for key, value in labels.items()
            if key.startswith(prefix) and key.removeprefix(prefix) in known and value == "true"
        }
        if UPGRADE_STATE_LABEL in labels:
            removals[UPGRADE_STATE_LABEL] = None
        if removals:
            actions.node_label_patches[name] = removals
        annotations = (node.get("metadata") or {}).get("annotations") or {}
        if UPGRADE_ENABLED_ANNOTATION in annotations:
            actions.node_annotation_patches[name] = {UPGRADE_ENABLED_ANNOTATION: None}
