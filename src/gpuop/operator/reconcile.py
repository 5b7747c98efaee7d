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
from dataclasses import dataclass, field, replace
from typing import Any

from gpuop.api.conditions import (
    ConditionType,
    Reason,
    condition,
    merge_conditions,
    status_differs,
)
from gpuop.api.labels import (
    APP_LABEL,
    FORCE_SWITCH_ANNOTATION,
    HASH_ANNOTATION,
    MIRROR_POD_ANNOTATION,
    NFD_KERNEL,
    NFD_OS_ID,
    NFD_OS_VERSION_ID,
    OPERAND_LABEL,
    REVISION_LABEL,
    UPGRADE_ENABLED_ANNOTATION,
    UPGRADE_STATE_LABEL,
    VGPU_CONFIG_LABEL,
    VGPU_DEVICE_MANAGER_DEPLOY_LABEL,
    WORKLOAD_LABEL,
)
from gpuop.api.policies import select_active
from gpuop.api.resources import GPU_POD_RESOURCE_PREFIXES, current_workload
from gpuop.catalog import WorkloadConfig, operand_table
from gpuop.naming import classify_resource, is_gpu_resource
from gpuop.planner import NodeFacts, NodePlan, plan, planning_key
from gpuop.planner.upgrade import (
    DRIVER_CONFIG_DIGEST_ENV,
    EVENT_REASON,
    MAX_RESTARTS,
    DriverPod,
    UpgradeCounts,
    UpgradeNode,
    UpgradePolicy,
    WorkloadPod,
    plan_upgrades,
)
from gpuop.policy import PolicyError, ResolvedPolicy, parse_cluster_policy
from gpuop.render import (
    os_tag_of,
    render_operand_daemonsets,
    render_runtime_classes,
    render_support_objects,
)
from gpuop.render.support import SERVICE_MONITOR_KIND, object_key

VGPU_PAUSED = "paused-for-vgpu-change"
MAX_LISTED_NODES = 50
DRIVER_APP = "nvidia-driver-daemonset"
VALIDATOR_APP = "nvidia-operator-validator"
# Pods the upgrade state machine reads by upstream's `app` labels, whoever made them.
UPGRADE_APPS = frozenset({DRIVER_APP, VALIDATOR_APP})


@dataclass(frozen=True)
class PodInfo:
    """The parts of a pod the operator needs."""

    namespace: str
    name: str
    node: str
    operand: str | None
    ready: bool
    gpu_resources: tuple[str, ...]
    terminal: bool
    # For driver upgrades: the `app` label, the owning DaemonSet (None: no owner at all;
    # "": another kind of controller), the pod's revision and health, eviction blockers.
    app: str | None = None
    owner: str | None = None
    revision: str | None = None
    running: bool = False
    containers_ready: bool = False
    failing: bool = False
    terminating: bool = False
    controlled: bool = True
    empty_dir: bool = False
    config_digest: str | None = None


@dataclass
class Snapshot:
    policies: list[dict[str, Any]]
    nodes: dict[str, dict[str, Any]]
    daemonsets: dict[str, dict[str, Any]]
    pods: list[PodInfo]
    namespace: str
    operator_env: dict[str, str] = field(default_factory=dict)
    # Objects gpuop manages beside DaemonSets: (kind, name) -> the hash they were applied with.
    existing_objects: dict[tuple[str, str], str] = field(default_factory=dict)
    # Whether Prometheus operator's ServiceMonitor kind is served.
    service_monitors_served: bool = False
    # Driver upgrades: DaemonSet -> hash of its newest ControllerRevision, and the
    # DRIVER_CONFIG_DIGEST of its template; the pods on nodes waiting for jobs or a drain;
    # when this process began evicting each node's GPU pods; the clock, in epoch seconds.
    revisions: dict[str, str] = field(default_factory=dict)
    template_digests: dict[str, str] = field(default_factory=dict)
    node_pods: dict[str, tuple[WorkloadPod, ...]] = field(default_factory=dict)
    evicting_since: dict[str, float] = field(default_factory=dict)
    now_seconds: float = 0.0


@dataclass(frozen=True)
class NodeEvent:
    node: str
    reason: str
    message: str
    type: str = "Warning"


@dataclass
class Actions:
    """Writes for one pass. Empty when the cluster already matches."""

    node_label_patches: dict[str, dict[str, str | None]] = field(default_factory=dict)
    apply: list[dict[str, Any]] = field(default_factory=list)
    delete_daemonsets: list[str] = field(default_factory=list)
    delete_objects: list[tuple[str, str]] = field(default_factory=list)
    status: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[NodeEvent] = field(default_factory=list)
    plans: dict[str, NodePlan] = field(default_factory=dict)
    ready: bool = False
    active_policy: str | None = None
    # Driver upgrades: node annotations, cordon (True) / uncordon (False), GPU pods to
    # evict and driver pods to delete, as (namespace, name).
    node_annotation_patches: dict[str, dict[str, str | None]] = field(default_factory=dict)
    cordon: dict[str, bool] = field(default_factory=dict)
    evictions: list[tuple[str, str]] = field(default_factory=list)
    delete_pods: list[tuple[str, str]] = field(default_factory=list)
    upgrades_enabled: bool = False
    upgrade_counts: UpgradeCounts | None = None

    @property
    def write_count(self) -> int:
        return (
            len(self.node_label_patches)
            + len(set(self.node_annotation_patches) | set(self.cordon))
            + len(self.evictions)
            + len(self.delete_pods)
            + len(self.apply)
            + len(self.delete_daemonsets)
            + len(self.delete_objects)
            + len(self.status)
        )


def pod_info(pod: Mapping[str, Any], namespace: str) -> PodInfo | None:
    """Reduce a Pod object; None for pods the operator does not care about."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    labels = meta.get("labels") or {}
    operand = labels.get(OPERAND_LABEL) if meta.get("namespace") == namespace else None
    resources: set[str] = set()
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = container.get("resources") or {}
        for part in ("limits", "requests"):
            for name in res.get(part) or {}:
                if is_gpu_resource(str(name)):
                    resources.add(str(name))
    app = labels.get(APP_LABEL) if meta.get("namespace") == namespace else None
    if operand is None and not resources and app not in UPGRADE_APPS:
        return None
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    phase = status.get("phase")
    owners = meta.get("ownerReferences") or []
    controller = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    owner = None
    if controller is not None:
        owner = str(controller.get("name") or "") if controller.get("kind") == "DaemonSet" else ""
    statuses = [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]
    containers = status.get("containerStatuses") or []
    digest = next(
        (
            str(env.get("value") or "")
            for container in spec.get("containers") or []
            for env in container.get("env") or []
            if env.get("name") == DRIVER_CONFIG_DIGEST_ENV
        ),
        None,
    )
    return PodInfo(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        node=str(spec.get("nodeName") or ""),
        operand=operand,
        ready=ready,
        gpu_resources=tuple(sorted(resources)),
        terminal=phase in ("Succeeded", "Failed") or meta.get("deletionTimestamp") is not None,
        app=app,
        owner=owner,
        revision=labels.get(REVISION_LABEL),
        running=phase == "Running",
        containers_ready=bool(containers) and all(c.get("ready") for c in containers),
        failing=any(
            not c.get("ready") and int(c.get("restartCount") or 0) > MAX_RESTARTS for c in statuses
        ),
        terminating=meta.get("deletionTimestamp") is not None,
        controlled=controller is not None,
        empty_dir=any("emptyDir" in v for v in spec.get("volumes") or []),
        config_digest=digest,
    )


def workload_pod(pod: Mapping[str, Any]) -> WorkloadPod:
    """A pod on an upgrading node, for `waitForCompletion` and drain."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    owners = meta.get("ownerReferences") or []
    annotations = meta.get("annotations") or {}
    phase = (pod.get("status") or {}).get("phase")
    return WorkloadPod(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        controlled=any(o.get("controller") for o in owners),
        empty_dir=any("emptyDir" in v for v in spec.get("volumes") or []),
        finished=phase in ("Succeeded", "Failed"),
        labels=dict(meta.get("labels") or {}),
        terminating=meta.get("deletionTimestamp") is not None,
        daemonset=any(o.get("kind") == "DaemonSet" and o.get("controller") for o in owners),
        mirror=MIRROR_POD_ANNOTATION in annotations,
    )


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

    if chosen is None:
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
        elif pod.gpu_resources:
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
    for name, node in sorted(snapshot.nodes.items()):
        planned = _planned(policy, policy_key, name, node, plan_cache)
        facts, node_plan = planned.facts, planned.plan
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
    _driver_upgrades(policy, snapshot, actions)
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


def _upgrade_policy(policy: ResolvedPolicy) -> UpgradePolicy | None:
    """The upgrade policy when automatic upgrades are on (upstream: a driver the operator
    deploys, `autoUpgrade`, and no sandbox workloads), else None."""
    driver = policy.policy.spec.driver
    raw = driver.upgradePolicy if driver is not None else None
    if raw is None or policy.sandbox_enabled:
        return None
    if not policy.operand_enabled(operand_table().operand("driver")):
        return None
    upgrade = UpgradePolicy.from_spec(raw.model_dump(exclude_none=True))
    return upgrade if upgrade.auto_upgrade else None


def _merge_node_labels(actions: Actions, node: str, changes: Mapping[str, str | None]) -> None:
    if changes:
        actions.node_label_patches.setdefault(node, {}).update(changes)


def _driver_upgrades(policy: ResolvedPolicy, snapshot: Snapshot, actions: Actions) -> None:
    """Upstream's upgrade controller: the enabled annotation on GPU nodes, and one step of the
    upgrade state machine for every node that runs a driver pod (`gpuop.planner.upgrade`).
    With upgrades off, the state labels go, as upstream removes them."""
    upgrade = _upgrade_policy(policy)
    actions.upgrades_enabled = upgrade is not None
    for name, node in snapshot.nodes.items():
        meta = node.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        labels = meta.get("labels") or {}
        wanted = "true" if upgrade is not None and actions.plans[name].gpu_node else None
        if annotations.get(UPGRADE_ENABLED_ANNOTATION) != wanted:
            actions.node_annotation_patches.setdefault(name, {})[UPGRADE_ENABLED_ANNOTATION] = (
                wanted
            )
        if upgrade is None and UPGRADE_STATE_LABEL in labels:
            _merge_node_labels(actions, name, {UPGRADE_STATE_LABEL: None})
    if upgrade is None:
        return
    driver_daemonset = operand_table().operand("driver").daemonset

    def is_driver_daemonset(name: str) -> bool:
        return name == driver_daemonset or name.startswith(f"{driver_daemonset}-")

    drivers: dict[str, PodInfo] = {}
    validators: set[str] = set()
    owned: dict[str, int] = {}
    gpu_pods: dict[str, list[WorkloadPod]] = {}
    for pod in snapshot.pods:
        if not pod.node:
            continue
        if pod.app == DRIVER_APP and pod.namespace == snapshot.namespace:
            if pod.owner and is_driver_daemonset(pod.owner):
                owned[pod.owner] = owned.get(pod.owner, 0) + 1
            if pod.owner is None or is_driver_daemonset(pod.owner or ""):
                current = drivers.get(pod.node)
                # A node briefly runs two (the old one terminating): the live one counts.
                if current is None or (current.terminating and not pod.terminating):
                    drivers[pod.node] = pod
        elif pod.app == VALIDATOR_APP and pod.namespace == snapshot.namespace:
            if pod.running and pod.ready and not pod.terminating:
                validators.add(pod.node)
        elif (
            pod.operand is None
            and (pod.terminating or not pod.terminal)
            and any(r.startswith(GPU_POD_RESOURCE_PREFIXES) for r in pod.gpu_resources)
        ):
            gpu_pods.setdefault(pod.node, []).append(
                WorkloadPod(
                    namespace=pod.namespace,
                    name=pod.name,
                    controlled=pod.controlled,
                    empty_dir=pod.empty_dir,
                    finished=False,
                    terminating=pod.terminating,
                )
            )
    for name, ds in snapshot.daemonsets.items():
        if not is_driver_daemonset(name):
            continue
        desired = int(((ds.get("status") or {}).get("desiredNumberScheduled")) or 0)
        if desired != owned.get(name, 0):
            # Upstream's BuildState refuses to decide while a driver pod is missing.
            actions.upgrade_counts = None
            return
    nodes = []
    for node_name, pod in sorted(drivers.items()):
        if node_name not in snapshot.nodes:
            continue
        node = snapshot.nodes[node_name]
        meta = node.get("metadata") or {}
        nodes.append(
            UpgradeNode(
                name=node_name,
                labels=meta.get("labels") or {},
                annotations=meta.get("annotations") or {},
                unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
                ready=_node_ready(node),
                driver_pod=DriverPod(
                    namespace=pod.namespace,
                    name=pod.name,
                    owner=pod.owner or None,
                    revision=pod.revision,
                    running=pod.running,
                    containers_ready=pod.containers_ready,
                    failing=pod.failing,
                    terminating=pod.terminating,
                    config_digest=pod.config_digest,
                ),
                gpu_pods=tuple(gpu_pods.get(node_name, ())),
                validator_ready=node_name in validators,
                node_pods=snapshot.node_pods.get(node_name),
            )
        )
    result = plan_upgrades(
        upgrade,
        nodes,
        snapshot.revisions,
        snapshot.template_digests,
        snapshot.now_seconds,
        snapshot.evicting_since,
    )
    actions.upgrade_counts = result.counts
    for node_name, step in result.steps.items():
        _merge_node_labels(actions, node_name, step.labels)
        if step.annotations:
            actions.node_annotation_patches.setdefault(node_name, {}).update(step.annotations)
        if step.cordon is not None:
            actions.cordon[node_name] = step.cordon
        actions.evictions.extend(step.evict)
        if step.delete_driver_pod is not None:
            actions.delete_pods.append(step.delete_driver_pod)
        if step.state is not None:
            kind = "Warning" if step.state == "upgrade-failed" else "Normal"
            actions.events.append(NodeEvent(node_name, EVENT_REASON, step.message, kind))


def _node_ready(node: Mapping[str, Any]) -> bool:
    for item in (node.get("status") or {}).get("conditions") or []:
        if item.get("type") == "Ready":
            return bool(item.get("status") == "True")
    return True


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
