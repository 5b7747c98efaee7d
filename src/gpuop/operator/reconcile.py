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

The steps live beside this module: the node step (`nodes`, with the holds in `holds`), the
operand objects (`objects`) and the GPUCluster's part (`gpucluster`); this module orders
them and turns what they found into the ClusterPolicy's status.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuop.api.conditions import (
    ConditionType,
    Reason,
    condition,
    merge_conditions,
    status_differs,
)
from gpuop.api.labels import (
    UPGRADE_ENABLED_ANNOTATION,
    UPGRADE_STATE_LABEL,
    VGPU_CONFIG_LABEL,
    WORKLOAD_LABEL,
)
from gpuop.api.policies import PolicySelection, select_active
from gpuop.api.wording import listed
from gpuop.catalog import operand_table
from gpuop.operator.gpucluster import (
    active_gpu_cluster,
    gpu_cluster_objects,
    reconcile_gpu_cluster_only,
)
from gpuop.operator.model import (
    DRIVER_APP,
    UPGRADE_APPS,
    VALIDATOR_APP,
    Actions,
    NodeEvent,
    PlanCache,
    PodInfo,
    Snapshot,
    daemonset_ready,
    pod_info,
    uses_gpus,
    workload_pod,
)
from gpuop.operator.nodes import (
    ActivePolicy,
    NodeTally,
    PodCensus,
    active_gpu_cluster_beside,
    plan_nodes,
)
from gpuop.operator.objects import daemonset_writes, rendered_daemonsets, supporting_objects
from gpuop.operator.upgrades import driver_upgrades
from gpuop.policy import PolicyError, parse_cluster_policy
from gpuop.render import kept_on_openshift
from gpuop.render.nodes import container_runtime, on_openshift

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

MAX_LISTED_NODES = 50


def _names(nodes: list[str]) -> str:
    return listed(nodes, 10)


@dataclass(frozen=True)
class NodeCondition:
    """A ClusterPolicy condition that is True, naming the nodes, while any node has it."""

    type: ConditionType
    reason: Reason
    what: str


# In the order they stand in the status.
NODE_CONDITIONS: tuple[NodeCondition, ...] = (
    NodeCondition(
        ConditionType.WORKLOAD_LABELS_IGNORED,
        Reason.SANDBOX_WORKLOADS_DISABLED,
        f"{WORKLOAD_LABEL} is set but ignored because sandboxWorkloads.enabled is false on",
    ),
    NodeCondition(
        ConditionType.INVALID_WORKLOAD_LABELS, Reason.INVALID_VALUE, f"invalid {WORKLOAD_LABEL} on"
    ),
    NodeCondition(
        ConditionType.VGPU_CONFIG_INVALID,
        Reason.INFEASIBLE,
        f"{VGPU_CONFIG_LABEL} cannot be applied on",
    ),
    NodeCondition(
        ConditionType.WORKLOAD_SWITCH_HELD, Reason.GPU_PODS_RUNNING, "workload switch held on"
    ),
    NodeCondition(
        ConditionType.VGPU_CONFIG_CHANGE_HELD,
        Reason.VGPU_DEVICES_IN_USE,
        f"{VGPU_CONFIG_LABEL} change held on",
    ),
)


def reconcile(
    snapshot: Snapshot,
    now: str,
    plan_cache: PlanCache | None = None,
) -> Actions:
    """Decide every write for one pass over the snapshot.

    The steps: the ClusterPolicies not chosen are marked ignored; the chosen one is parsed;
    every node is planned (labels, holds, Events); the operand objects are rendered and
    compared with the live ones; the nodes' readiness and the conditions make the status.
    """
    actions = Actions()
    selection = select_active(snapshot.policies)
    _mark_ignored(snapshot, selection, now, actions)
    gc_obj = active_gpu_cluster(snapshot.gpu_clusters)
    chosen = selection.active
    if chosen is None:
        if gc_obj is not None:
            gc_actions = reconcile_gpu_cluster_only(snapshot, gc_obj, now, plan_cache)
            gc_actions.status.update(actions.status)
            return gc_actions
        _cleanup_without_policy(snapshot, actions, plan_cache)
        return actions

    policy_name = str((chosen.get("metadata") or {}).get("name"))
    actions.active_policy = policy_name
    try:
        policy = parse_cluster_policy(chosen, f"ClusterPolicy {policy_name}")
    except PolicyError as exc:
        _fail(actions, chosen, snapshot, "the ClusterPolicy is invalid", exc, now)
        return actions
    active = ActivePolicy.of(chosen, policy)
    census = PodCensus.of(snapshot.pods)
    gpu_cluster = active_gpu_cluster_beside(snapshot, gc_obj, now, actions)
    tally = plan_nodes(snapshot, active, gpu_cluster, census, plan_cache, actions)

    enabled = policy.enabled_operands() if tally.gpu_nodes else ()
    openshift = bool(enabled) and on_openshift(snapshot.nodes.values())
    kept = kept_on_openshift(openshift, enabled)
    try:
        rendered = rendered_daemonsets(
            policy,
            active.key,
            tuple(enabled),
            snapshot,
            plan_cache,
            tally.os_tag,
            tally.kernels,
            container_runtime(snapshot.nodes.values()) if enabled else "containerd",
            openshift,
        )
    except PolicyError as exc:
        _fail(actions, chosen, snapshot, "an operand image cannot be resolved", exc, now)
        return actions
    supporting_objects(policy, active.key, snapshot, plan_cache, actions)
    if gpu_cluster is not None:
        gpu_cluster_objects(
            snapshot, gpu_cluster.obj, gpu_cluster.spec, actions, now, plan_cache,
            tally.dra_nodes,
        )  # fmt: skip
    driver_upgrades(policy, snapshot, actions)
    daemonset_writes(snapshot, rendered, tally.gpu_nodes, actions, kept)

    not_ready_ds = sorted(
        ds["metadata"]["name"]
        for ds in rendered
        if ds["metadata"]["name"] not in snapshot.daemonsets
        or not daemonset_ready(snapshot.daemonsets[ds["metadata"]["name"]])
        or any(a is ds for a in actions.apply)
    )
    readiness = _node_readiness(actions, tally, census, {op.name for op in enabled})
    ready = not not_ready_ds and not readiness.waiting
    actions.ready = ready
    _set_status(
        actions,
        chosen,
        snapshot,
        "ready" if ready else "notReady",
        _policy_conditions(not_ready_ds, readiness.waiting, tally, snapshot.refused, kept),
        now,
        {
            "gpuNodes": tally.gpu_nodes,
            "readyNodes": readiness.ready,
            "byWorkload": dict(sorted(tally.by_workload.items())),
            "notReady": readiness.listed,
        },
    )
    return actions


def _mark_ignored(
    snapshot: Snapshot, selection: PolicySelection[dict[str, Any]], now: str, actions: Actions
) -> None:
    """Every live ClusterPolicy but the active one: `ignored`, naming the active one."""
    if selection.active is None:
        return
    active_name = (selection.active.get("metadata") or {}).get("name")
    for other in selection.ignored:
        old_status = other.get("status") or {}
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
            actions.status[str((other.get("metadata") or {}).get("name"))] = status


def _fail(
    actions: Actions,
    policy: Mapping[str, Any],
    snapshot: Snapshot,
    summary: str,
    error: PolicyError,
    now: str,
) -> None:
    """A pass that cannot go on: notReady, with what is wrong in the Error condition."""
    _set_status(
        actions,
        policy,
        snapshot,
        "notReady",
        [
            condition(ConditionType.READY, False, Reason.ERROR, summary),
            condition(
                ConditionType.ERROR, True, Reason.RECONCILE_FAILED, "; ".join(error.problems)
            ),
        ],
        now,
        {},
    )


@dataclass
class NodeReadiness:
    """The GPU nodes not ready yet (held, or waiting for an operand) and the ready count.
    Every waiting node is named, but only the first `MAX_LISTED_NODES` get a status entry:
    a fleet rolling out is ten thousand waiting nodes, and each pass counts them again."""

    waiting: list[str] = field(default_factory=list)
    listed: list[dict[str, Any]] = field(default_factory=list)
    ready: int = 0

    def wait(self, name: str) -> bool:
        """Count `name` as waiting; whether its status entry is still to be listed."""
        self.waiting.append(name)
        return len(self.listed) < MAX_LISTED_NODES


def _node_readiness(
    actions: Actions, tally: NodeTally, census: PodCensus, enabled_names: set[str]
) -> NodeReadiness:
    """Which GPU nodes wait, for what, in name order; and how many are ready."""
    readiness = NodeReadiness()
    expected_by_operands: dict[int, tuple[tuple[int, str], ...]] = {}
    held, vgpu_held = set(tally.held), set(tally.vgpu_held)
    for name in sorted(actions.plans):
        node_plan = actions.plans[name]
        if not node_plan.gpu_node:
            continue
        if node_plan.workload.reason == "dra-stack" and name not in held:
            continue
        if name in held:
            if readiness.wait(name):
                readiness.listed.append(
                    {
                        "name": name,
                        "workload": tally.planned[name].workload_before or "",
                        "waitingFor": [],
                        "held": True,
                        "message": "workload switch held: GPU pods still running",
                    },
                )
            continue
        if name in vgpu_held:
            if readiness.wait(name):
                readiness.listed.append(
                    {
                        "name": name,
                        "workload": node_plan.workload.config or "",
                        "waitingFor": ["vgpu-device-manager"],
                        "held": True,
                        "message": "vGPU config change held: vGPU devices still in use",
                    },
                )
            continue
        # Nodes planned alike share one operand tuple: its enabled, running operands are
        # listed once, in stage order, for all of them.
        expected = expected_by_operands.get(id(node_plan.operands))
        if expected is None:
            expected = tuple(
                sorted(
                    (op.stage or 0, op.name)
                    for op in node_plan.running_operands()
                    if op.name in enabled_names
                )
            )
            expected_by_operands[id(node_plan.operands)] = expected
        ready_here = census.ready_operands.get(name)
        waiting = (
            [(stage, op) for stage, op in expected if op not in ready_here]
            if ready_here
            else list(expected)
        )
        if not waiting and name in actions.node_label_patches:
            waiting = [(0, "labels")]
        if waiting:
            if readiness.wait(name):
                readiness.listed.append(
                    {
                        "name": name,
                        "workload": node_plan.workload.config or "",
                        "waitingFor": [op for _, op in waiting],
                        "held": False,
                        "message": f"waiting for {waiting[0][1]} (stage {waiting[0][0]})",
                    },
                )
        else:
            readiness.ready += 1
    return readiness


def _policy_conditions(
    not_ready_ds: list[str],
    waiting_nodes: list[str],
    tally: NodeTally,
    refused: Mapping[str, str],
    kept: tuple[str, ...] = (),
) -> list[dict[str, str]]:
    """Ready and Error as upstream sets them, one condition per row of NODE_CONDITIONS,
    ApplyRefused for what the API server will not take, and OperandsKept for the operands
    whose DaemonSets gpuop leaves as they are."""
    conditions: list[dict[str, str]] = []
    if not not_ready_ds and not waiting_nodes:
        reason, message = (
            (
                Reason.RECONCILED,
                "ClusterPolicy is ready as all resources have been successfully reconciled",
            )
            if tally.gpu_nodes
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
            parts.append(f"{len(waiting_nodes)} node(s) not ready: {_names(waiting_nodes)}")
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
    for row in NODE_CONDITIONS:
        affected = tally.affected[row.type]
        conditions.append(
            condition(
                row.type,
                bool(affected),
                row.reason if affected else Reason.NONE,
                f"{row.what}: {_names(affected)}" if affected else "",
            )
        )
    conditions.append(
        condition(
            ConditionType.APPLY_REFUSED,
            bool(refused),
            Reason.REFUSED_BY_API_SERVER if refused else Reason.NONE,
            "; ".join(f"{what}: {answer}" for what, answer in sorted(refused.items())),
        )
    )
    conditions.append(
        condition(
            ConditionType.OPERANDS_KEPT,
            bool(kept),
            Reason.OPENSHIFT_DRIVER_TOOLKIT if kept else Reason.NONE,
            (
                f"OpenShift: the {' and '.join(kept)} DaemonSets are left as they are (NVIDIA's"
                " operator renders them with the Driver Toolkit, one per RHCOS version; gpuop"
                " does not): gpuop neither applies nor deletes them"
            )
            if kept
            else "",
        )
    )
    return conditions


def _set_status(
    actions: Actions,
    policy: Mapping[str, Any],
    snapshot: Snapshot,
    state: str,
    conditions: list[dict[str, str]],
    now: str,
    nodes: Mapping[str, Any],
) -> None:
    old = policy.get("status") or {}
    status: dict[str, Any] = {
        "state": state,
        "namespace": snapshot.namespace,
        "conditions": merge_conditions(old.get("conditions"), conditions, now),
    }
    if nodes:
        status["nodes"] = dict(nodes)
    # What the installed CRD does not keep (NVIDIA's has no `status.nodes`) is never
    # compared, or every pass would find the status changed and write it again.
    for key in snapshot.status_dropped_keys:
        status.pop(key, None)
    if status_differs(old, status):
        actions.status[str((policy.get("metadata") or {}).get("name"))] = status


def _cleanup_without_policy(
    snapshot: Snapshot, actions: Actions, cache: PlanCache | None = None
) -> None:
    """No ClusterPolicy: take back the deploy labels gpuop set (owned objects go by garbage
    collection). Values only users or managers write (`false`, `pre-installed`,
    `paused-for-*`, the `operands=false` opt-out) stay: the next ClusterPolicy honours them.
    What a node needs is kept by its resourceVersion: nodes come and change without a
    ClusterPolicy too, and a pass over ten thousand need not read every label of each."""
    for name, node in sorted(snapshot.nodes.items()):
        version = (node.get("metadata") or {}).get("resourceVersion")
        kept = cache if cache is not None and version else {}
        key = ("cleanup", name, version)
        cleanup = kept.get(key)
        if cleanup is None:
            cleanup = kept[key] = _node_cleanup(node)
        removals, unannotate = cleanup
        if removals:
            actions.node_label_patches[name] = dict.fromkeys(removals)
        if unannotate:
            actions.node_annotation_patches[name] = {UPGRADE_ENABLED_ANNOTATION: None}


def _node_cleanup(node: Mapping[str, Any]) -> tuple[tuple[str, ...], bool]:
    """The labels to take back from a node without a ClusterPolicy, and whether its
    upgrade annotation goes too."""
    prefix = operand_table().deploy_labels.prefix
    known = operand_table().deploy_labels.known_keys
    labels = (node.get("metadata") or {}).get("labels") or {}
    removals = [
        key
        for key, value in labels.items()
        if value == "true" and key.startswith(prefix) and key.removeprefix(prefix) in known
    ]
    if UPGRADE_STATE_LABEL in labels:
        removals.append(UPGRADE_STATE_LABEL)
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return tuple(removals), UPGRADE_ENABLED_ANNOTATION in annotations
