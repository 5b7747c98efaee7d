"""The operator process: informers keep a copy of what it reads, one coalescing loop writes.

Informers (`gpuop.kube.informer`) list and watch Nodes, ClusterPolicies, GPUClusters
(where their CRD is installed), gpuop's DaemonSets and the pods that matter (operand pods and pods using GPU resources), relisting
after expired resource versions and riding out API server restarts. A change only pokes a
trigger; the controller loop (`gpuop.kube.controller`, shared with the simulator) then
runs a pass: `OperatorPasses` takes a snapshot of the stores (through the write overlays),
asks the pure `reconcile` what to write, and writes it with lightkube (merge patches on the
keys gpuop owns, server-side apply for rendered objects). Nothing is ever written onto
objects for the operator's own bookkeeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gpuop.api.labels import (
    DRA_ADMIN_ACCESS_NAMESPACE_LABEL,
    HASH_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    UPGRADE_STATE_LABEL,
)
from gpuop.api.notices import EventReason
from gpuop.kube import (
    API_ERRORS,
    FIELD_MANAGER,
    KubeconfigSource,
    KubeError,
    async_client,
    describe_api_error,
    event_body,
    now_rfc3339,
    ops,
)
from gpuop.kube.client import KubeClient
from gpuop.kube.controller import (
    BoundedWriter,
    ControllerLoop,
    LoopSettings,
    ObjectBackoff,
    Outcome,
    Trigger,
    WriteOverlay,
    replace,
    resource_version,
    wait_synced,
)
from gpuop.kube.errors import Invalid, KubeApiError
from gpuop.kube.heap import FULL_COLLECTION_SECONDS
from gpuop.kube.informer import Informer
from gpuop.kube.leader import LeaderElector, LeadershipLost, LeaseSettings
from gpuop.kube.running import run_controller, supervise, with_retries
from gpuop.operator import metrics
from gpuop.operator.health import HEALTH
from gpuop.operator.model import PlanCache
from gpuop.operator.reconcile import (
    Actions,
    PodInfo,
    Snapshot,
    pod_info,
    reconcile,
    uses_gpus,
    workload_pod,
)
from gpuop.operator.slim import (
    newest_revisions,
    same_node,
    slim_daemonset,
    slim_node,
    slim_revision,
)
from gpuop.planner.upgrade import (
    UpgradeState,
    WorkloadPod,
)
from gpuop.policy import PolicyError, parse_cluster_policy
from gpuop.render import configmap_keys, named_configmaps
from gpuop.render.gpucluster import GPU_CLUSTER_KINDS
from gpuop.render.support import SERVICE_MONITOR_KIND, SUPPORT_KINDS

log = logging.getLogger("gpuop.operator")


@dataclass
class OperatorConfig:
    namespace: str
    kubeconfig: KubeconfigSource = None
    context: str | None = None
    resync_seconds: float = 300.0
    # How long a pass waits to gather changes after the first: while events keep coming
    # the loop paces itself by its own passes (`pace_by_decide`), so this is the latency a
    # lone change (one node relabelled) pays.
    debounce_seconds: float = 0.1
    write_concurrency: int = 32
    operator_env: dict[str, str] = field(default_factory=dict)
    # Leader election (None: this process writes without taking the Lease).
    lease: LeaseSettings | None = None
    # Seconds between full collections of the cycle collector (`gpuop.kube.heap`).
    full_collection_seconds: float = FULL_COLLECTION_SECONDS


def _immutable_selector(obj: Mapping[str, Any], exc: KubeApiError) -> bool:
    return (
        obj.get("kind") == "DaemonSet"
        and isinstance(exc, Invalid)
        and "selector" in exc.detail
        and "immutable" in exc.detail
    )


def _with_hash(ds: dict[str, Any], digest: str) -> dict[str, Any]:
    """A DaemonSet as gpuop applied it: its stored copy with the hash it was applied with."""
    meta = ds["metadata"]
    annotations = {**(meta.get("annotations") or {}), HASH_ANNOTATION: digest}
    return {**ds, "metadata": {**meta, "annotations": annotations}}


def _with_status(policy: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {**policy, "status": status}


class OperatorState:
    """What the loop needs between passes: informers, write overlays, posted events."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.trigger = Trigger()
        self.client: Any = None
        self.nodes: Informer[dict[str, Any]] | None = None
        self.policies: Informer[dict[str, Any]] | None = None
        self.gpu_clusters: Informer[dict[str, Any]] | None = None
        self.daemonsets: Informer[dict[str, Any]] | None = None
        self.pods: Informer[PodInfo] | None = None
        self.revisions: Informer[dict[str, Any]] | None = None
        # Driver upgrades: the pods on nodes waiting for jobs or a drain (read each pass),
        # and when this process began evicting each node's GPU pods.
        self.node_pods: dict[str, tuple[WorkloadPod, ...]] = {}
        self.evicting_since: dict[str, float] = {}
        # Read your own writes: Nodes as patched, DaemonSets' applied hash, policy status.
        self.node_overlay: WriteOverlay[dict[str, Any], dict[str, Any]] = WriteOverlay(replace)
        self.ds_overlay: WriteOverlay[dict[str, Any], str] = WriteOverlay(_with_hash)
        self.status_overlay: WriteOverlay[dict[str, Any], dict[str, Any]] = WriteOverlay(
            _with_status
        )
        self.gc_status_overlay: WriteOverlay[dict[str, Any], dict[str, Any]] = WriteOverlay(
            _with_status
        )
        self.elector: LeaderElector | None = None
        self.writer = BoundedWriter(config.write_concurrency, self.may_write)
        # Objects the API server refused: not sent again before their backoff ends, and
        # named (`refused`, "Kind name" -> the answer) in the ApplyRefused condition.
        self.backoff = ObjectBackoff()
        self.refused: dict[str, str] = {}
        self.posted_events: set[tuple[str, str, str]] = set()
        # What gpuop applied beside DaemonSets: (kind, name) -> hash; read again every resync.
        self.applied: dict[tuple[str, str], str] = {}
        self.service_monitors_served = False
        # The namespace carries the admin-access label (read again every resync).
        self.admin_access_labelled = False
        self.last_prime = 0.0
        self.plan_cache: PlanCache = {}
        self.last_actions: Actions | None = None
        self.last_status_write = 0.0
        # ClusterPolicy status keys the API server did not keep (its CRD has no such field).
        self.status_dropped_keys: set[str] = set()
        # The keys of the ConfigMaps the ClusterPolicies hand the driver (read each pass).
        self.configmap_keys: dict[str, tuple[str, ...]] = {}
        self.passes = 0
        # The nodes whose upgrade state has the state machine look at every pod on them
        # (`_read_node_pods`), kept as their events come.
        self.pods_read_on: set[str] = set()

    def changed(self, _key: str, _value: object) -> None:
        self.trigger.set()

    def new_term(self) -> None:
        """Forget what this process wrote as leader (another may have written since) and
        read the managed objects again when it leads next."""
        self.node_overlay = WriteOverlay(replace)
        self.ds_overlay = WriteOverlay(_with_hash)
        self.status_overlay = WriteOverlay(_with_status)
        self.gc_status_overlay = WriteOverlay(_with_status)
        self.last_prime = 0.0
        self.last_actions = None

    def may_write(self) -> bool:
        """False once a leader's Lease may have lapsed: nothing more is sent."""
        return self.elector is None or self.elector.valid()

    def informers(self) -> list[Informer[Any]]:
        """One per kind the operator reads (empty until `watch` made them)."""
        found = [
            self.nodes,
            self.policies,
            self.gpu_clusters,
            self.daemonsets,
            self.pods,
            self.revisions,
        ]
        return [i for i in found if i is not None]

    def watch(self, client: KubeClient) -> list[Informer[Any]]:
        namespace = self.config.namespace
        self.nodes = Informer(client, "Node", slim_node, self.node_changed, unchanged=same_node)
        self.policies = Informer(client, "ClusterPolicy", dict, self.policy_changed)
        self.gpu_clusters = Informer(client, "GPUCluster", dict, self.changed, may_be_absent=True)
        self.daemonsets = Informer(
            client,
            "DaemonSet",
            slim_daemonset,
            self.changed,
            labels={MANAGED_BY_LABEL: MANAGED_BY},
            namespace=namespace,
        )
        self.pods = Informer(client, "Pod", lambda body: pod_info(body, namespace), self.changed)
        self.revisions = Informer(
            client, "ControllerRevision", slim_revision, self.changed, namespace=namespace
        )
        return self.informers()

    @staticmethod
    def _stored(informer: Informer[Any] | None) -> list[Any]:
        return [] if informer is None else list(informer.store.values())

    @classmethod
    def _by_name(cls, informer: Informer[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
        return {obj["metadata"]["name"]: obj for obj in cls._stored(informer)}

    def policy_views(self) -> list[dict[str, Any]]:
        """The ClusterPolicies, each with the status this process wrote laid over it."""
        return list(
            self.status_overlay.over(self._by_name(self.policies), resource_version).values()
        )

    def gpu_cluster_views(self) -> list[dict[str, Any]]:
        """The GPUClusters, each with the status this process wrote laid over it."""
        return list(
            self.gc_status_overlay.over(self._by_name(self.gpu_clusters), resource_version).values()
        )

    def node_uid(self, name: str) -> str | None:
        node = self.nodes.store.get(name) if self.nodes is not None else None
        uid = ((node or {}).get("metadata") or {}).get("uid")
        return str(uid) if uid else None

    def policy_changed(self, key: str, value: dict[str, Any] | None) -> None:
        """A ClusterPolicy event; the echo of a status this process wrote wakes no pass."""
        if value is None:
            self.status_overlay.forget(key)
        elif self.status_overlay.caught_up(key, resource_version(value)):
            return
        self.trigger.set()

    def node_changed(self, key: str, value: dict[str, Any] | None) -> None:
        """A Node event: what this process wrote to the node is forgotten once the informer
        holds that version, so ten thousand patches are not kept twice until the next pass.
        The event of a patch of this process's own wakes no pass: the passes since the patch
        saw the node through the overlay. (At 10,000 nodes the labelling's echoes arrive for
        many seconds after it, and each woke a pass over the whole fleet.)"""
        labels = (value or {}).get("metadata", {}).get("labels") or {}
        if labels.get(UPGRADE_STATE_LABEL) in _NODE_PODS_STATES:
            self.pods_read_on.add(key)
        else:
            self.pods_read_on.discard(key)
        if value is None:
            self.node_overlay.forget(key)
        elif self.node_overlay.caught_up(key, resource_version(value)):
            return
        self.trigger.set()

    def snapshot(self) -> Snapshot:
        # The node informer's keys are the nodes' names.
        stored_nodes = self.nodes.store if self.nodes is not None else {}
        nodes = self.node_overlay.over(stored_nodes, resource_version)
        policies = self.policy_views()
        daemonsets = self.ds_overlay.over(self._by_name(self.daemonsets), resource_version)
        pods: list[PodInfo] = self._stored(self.pods)
        if len(self.plan_cache) > 4 * max(len(nodes), 64):
            self.plan_cache.clear()
        for name in list(self.evicting_since):
            labels = (nodes.get(name, {}).get("metadata") or {}).get("labels") or {}
            if labels.get(UPGRADE_STATE_LABEL) != UpgradeState.POD_DELETION_REQUIRED:
                self.evicting_since.pop(name)
        revisions: list[dict[str, Any]] = self._stored(self.revisions)
        return Snapshot(
            policies=policies,
            nodes=nodes,
            daemonsets=daemonsets,
            pods=pods,
            namespace=self.config.namespace,
            operator_env=self.config.operator_env,
            existing_objects=dict(self.applied),
            service_monitors_served=self.service_monitors_served,
            revisions=newest_revisions(revisions),
            template_digests={
                name: ds["configDigest"]
                for name, ds in daemonsets.items()
                if ds.get("configDigest") is not None
            },
            node_pods=dict(self.node_pods),
            evicting_since=dict(self.evicting_since),
            now_seconds=time.time(),
            gpu_clusters=self.gpu_cluster_views(),
            status_dropped_keys=frozenset(self.status_dropped_keys),
            refused=dict(self.refused),
            configmap_keys=dict(self.configmap_keys),
        )


async def _prime(state: OperatorState, client: KubeClient) -> None:
    """Read what gpuop does not watch: the objects it made beside DaemonSets (found by their
    managed-by label, so one deleted by hand is made again within a resync period), and
    whether Prometheus' ServiceMonitor kind is served. The GPUCluster's kinds are read
    whether or not one exists (one may be deleted while the operator is away)."""
    served = await ops.service_monitors_served(client)
    kinds = [
        kind
        for kind in ("RuntimeClass", *SUPPORT_KINDS, *GPU_CLUSTER_KINDS)
        if kind != SERVICE_MONITOR_KIND or served
    ]
    found = await asyncio.gather(
        *(
            ops.managed_objects(client, kind, state.config.namespace, MANAGED_BY, HASH_ANNOTATION)
            for kind in kinds
        )
    )
    state.applied = {
        (kind, name): digest
        for kind, objects in zip(kinds, found, strict=True)
        for name, digest in objects.items()
    }
    state.service_monitors_served = served
    state.admin_access_labelled = False
    state.last_prime = time.monotonic()


async def _execute(state: OperatorState, client: KubeClient, actions: Actions) -> None:
    writer = state.writer
    # Not a whole snapshot: one held through ten thousand writes would keep every node's
    # old copy alive beside the new one the watch brings.
    policies = state.policy_views()
    namespace = state.config.namespace

    async def patch_node(name: str) -> None:
        result = await ops.patch_node(
            client,
            name,
            labels=actions.node_label_patches.get(name),
            annotations=actions.node_annotation_patches.get(name),
            unschedulable=actions.cordon.get(name),
        )
        metrics.WRITES.labels(kind="node-labels").inc()
        stored = state.nodes.store.get(name) if state.nodes is not None else None
        if result is not None and (
            stored is None or resource_version(stored) < resource_version(result)
        ):
            state.node_overlay.wrote(name, resource_version(result), slim_node(result))

    async def post_event(node: str, reason: str, message: str, kind: str) -> None:
        key = (node, reason, message)
        if key in state.posted_events:
            return
        state.posted_events.add(key)
        uid = state.node_uid(node)
        involved = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "uid": uid}}
        body = event_body(involved, reason, message, kind, namespace="default")
        try:
            await ops.create_event(client, body)
            metrics.WRITES.labels(kind="event").inc()
        except KubeApiError as exc:
            log.warning("cannot post event %s on node %s: %s", reason, node, exc.detail)

    patched = {*actions.node_label_patches, *actions.node_annotation_patches, *actions.cordon}
    await writer.gather(partial(patch_node, n) for n in sorted(patched))

    async def evict(pod_namespace: str, pod_name: str) -> None:
        try:
            done = await ops.evict_pod(client, pod_namespace, pod_name)
        except KubeApiError as exc:
            log.warning("cannot evict pod %s/%s: %s", pod_namespace, pod_name, exc.detail)
            return
        metrics.WRITES.labels(kind="pod-eviction").inc()
        if not done:
            log.info("eviction of %s/%s refused by a disruption budget", pod_namespace, pod_name)

    # Nodes are cordoned (above) before their GPU pods are evicted and driver pods restarted.
    now = time.time()
    evicting = set(actions.evictions)
    pods: list[PodInfo] = state._stored(state.pods)
    for name in {p.node for p in pods if (p.namespace, p.name) in evicting}:
        state.evicting_since.setdefault(name, now)
    await writer.gather(partial(evict, ns, pod) for ns, pod in actions.evictions)
    for pod_namespace, pod_name in actions.delete_pods:
        await writer.run(partial(ops.delete_pod, client, pod_namespace, pod_name))
        metrics.WRITES.labels(kind="pod-delete").inc()

    async def apply(obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        digest = obj["metadata"]["annotations"][HASH_ANNOTATION]
        what = f"{obj['kind']} {name}"
        try:
            try:
                result = await ops.apply_object(client, obj)
            except KubeApiError as exc:
                if not _immutable_selector(obj, exc):
                    raise
                # A DaemonSet's selector cannot change (older gpuop releases selected on
                # `app` only): replace the DaemonSet.
                log.info("replacing DaemonSet %s: its selector changed", name)
                await ops.delete_daemonset(client, name, namespace)
                result = await ops.apply_object(client, obj)
        except KubeApiError as exc:
            await _refused(state, client, what, digest, exc, policies)
            return
        result = await _take_over_fields(client, obj, result, what)
        state.backoff.succeeded(what)
        state.refused.pop(what, None)
        metrics.WRITES.labels(kind=obj["kind"]).inc()
        if obj["kind"] == "DaemonSet":
            state.ds_overlay.wrote(name, resource_version(result), digest)
        else:
            state.applied[(obj["kind"], name)] = digest

    # What the operand pods refer to (RuntimeClasses, ServiceAccounts, ConfigMaps,
    # DeviceClasses, ResourceClaimTemplates) exists before the DaemonSets that make them,
    # and Roles before their bindings (the API server checks a binding against its role);
    # each kind is written at once.
    order = ("RuntimeClass", *SUPPORT_KINDS, *GPU_CLUSTER_KINDS[:-1], "DaemonSet")
    if not state.admin_access_labelled and any(
        o["kind"] == "ResourceClaimTemplate" for o in actions.apply
    ):
        # The API server accepts the DRA stack's admin-access claim templates only in a
        # namespace labelled for it; upstream's GPUCluster controller sets the label too.
        try:
            if await writer.run(
                partial(
                    ops.label_namespace, client, namespace, DRA_ADMIN_ACCESS_NAMESPACE_LABEL, "true"
                )
            ):
                metrics.WRITES.labels(kind="namespace-labels").inc()
            state.admin_access_labelled = True
        except KubeApiError as exc:
            log.error("cannot label namespace %s: %s", namespace, exc.detail)
    for kind in order:
        await writer.gather(partial(apply, o) for o in actions.apply if o["kind"] == kind)
    await writer.gather(partial(apply, o) for o in actions.apply if o["kind"] not in order)

    for name in actions.delete_daemonsets:
        await writer.run(partial(ops.delete_daemonset, client, name, namespace))
        metrics.WRITES.labels(kind="DaemonSet-delete").inc()
    for kind, name in actions.delete_objects:
        await writer.run(partial(ops.delete_managed_object, client, kind, name, namespace))
        state.applied.pop((kind, name), None)
        metrics.WRITES.labels(kind=f"{kind}-delete").inc()

    await _write_statuses(
        writer, client, policies, actions.status, ops.patch_policy_status,
        state.status_overlay, "clusterpolicy-status", state.status_dropped_keys,
    )  # fmt: skip
    await _write_statuses(
        writer, client, state.gpu_cluster_views(), actions.gpu_cluster_status,
        ops.patch_gpu_cluster_status, state.gc_status_overlay, "gpucluster-status", set(),
    )  # fmt: skip
    await writer.gather(
        partial(post_event, e.node, e.reason, e.message, e.type) for e in actions.events
    )


async def _take_over_fields(
    client: KubeClient, obj: dict[str, Any], applied: dict[str, Any], what: str
) -> dict[str, Any]:
    """Own what the previous operator's field manager owns on an object gpuop just applied,
    then apply again, so a field only it set goes (`ops.ownership_transfer`); the object
    as it is now. A refusal (someone wrote meanwhile) is logged: the next change retries."""
    transfer = ops.ownership_transfer(applied, FIELD_MANAGER)
    if transfer is None:
        return applied
    try:
        await ops.patch_managed_fields(client, applied, transfer)
        result = await ops.apply_object(client, obj)
    except KubeApiError as exc:
        log.warning("cannot take over the fields of %s: %s", what, describe_api_error(exc))
        return applied
    metrics.WRITES.labels(kind="managed-fields").inc()
    log.info("took over %s from the previous operator's field manager", what)
    return result


# Answers that will not change by asking again; the rest (429, 5xx) are the API server's
# passing trouble, retried with the same backoff but not reported as a refusal.
_TRANSIENT_CODES = (409, 429)


async def _refused(
    state: OperatorState,
    client: KubeClient,
    what: str,
    digest: str,
    exc: KubeApiError,
    policies: list[dict[str, Any]],
) -> None:
    """An apply the API server refused: back off on this object, and, for a refusal that
    asking again will not change, say so once in an Event on the ClusterPolicy (the
    ApplyRefused condition follows from `state.refused`)."""
    delay = state.backoff.failed(what, digest)
    answer = describe_api_error(exc)
    metrics.APPLY_REFUSED.labels(kind=what.split(" ", 1)[0]).inc()
    log.error("cannot apply %s: %s; trying again in %.0fs", what, answer, delay)
    code = exc.code or 0
    if not 400 <= code < 500 or code in _TRANSIENT_CODES or state.refused.get(what) == answer:
        return
    state.refused[what] = answer
    policy = next(iter(policies), None)
    if policy is None:
        return
    meta = policy.get("metadata") or {}
    involved = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": meta.get("name"), "uid": meta.get("uid")},
    }
    body = event_body(
        involved, EventReason.APPLY_REFUSED, f"the API server refuses {what}: {answer}", "Warning",
        namespace="default",
    )  # fmt: skip
    try:
        await state.writer.run(partial(ops.create_event, client, body))
        metrics.WRITES.labels(kind="event").inc()
    except KubeApiError as event_exc:
        log.warning("cannot post event ApplyRefused: %s", event_exc.detail)


SWITCH_RECHECK_SECONDS = 1.0


async def _hold_unseen_switches(
    state: OperatorState, client: KubeClient, actions: Actions
) -> list[str]:
    """Read the pods of the nodes about to switch workload from the API, and drop the switch
    of any node a pod uses the GPUs of (the pass's snapshot did not have it yet: the pod
    informer lags behind the node informer after a restart of the API server, or under load).

    The next pass, once the pod informer has caught up, holds the switch with its event.
    Returns the nodes held here.
    """
    names = sorted(n for n in actions.switching if n in actions.node_label_patches)
    if not names:
        return []
    found = await asyncio.gather(
        *(state.writer.run(partial(ops.pods_on_node, client, name)) for name in names)
    )
    namespace = state.config.namespace
    held = []
    for name, pods in zip(names, found, strict=True):
        infos = [info for pod in pods if (info := pod_info(pod, namespace)) is not None]
        users = [f"{p.namespace}/{p.name}" for p in infos if uses_gpus(p)]
        if not users:
            continue
        held.append(name)
        del actions.node_label_patches[name]
        actions.switching.discard(name)
        actions.events = [
            e
            for e in actions.events
            if not (e.node == name and e.reason == EventReason.WORKLOAD_SWITCHED)
        ]
        log.info(
            "node %s: workload switch held, %s use its GPUs (not yet in the pod informer)",
            name,
            ", ".join(users[:5]),
        )
    return held


async def _write_statuses(
    writer: BoundedWriter,
    client: KubeClient,
    objects: list[dict[str, Any]],
    statuses: Mapping[str, dict[str, Any]],
    patch: Callable[[Any, str, dict[str, Any]], Awaitable[dict[str, Any] | None]],
    overlay: WriteOverlay[dict[str, Any], dict[str, Any]],
    metric: str,
    dropped: set[str],
) -> None:
    """Write each status as a merge patch that clears the keys no longer set, and remember
    what was written until the informer delivers it, and which keys the API server did not
    keep (`dropped`: the object's CRD has no such status field)."""
    for name, status in statuses.items():
        current = next((o for o in objects if o["metadata"]["name"] == name), {})
        patch_status: dict[str, Any] = dict(status)
        for key in current.get("status") or {}:
            patch_status.setdefault(key, None)
        result = await writer.run(partial(patch, client, name, patch_status))
        metrics.WRITES.labels(kind=metric).inc()
        if result is not None:
            kept = dict(result.get("status") or {})
            overlay.wrote(name, resource_version(result), kept)
            # The write took (what was kept is what was sent), yet a key is missing: the
            # schema pruned it.
            took = bool(kept) and all(kept[key] == status.get(key) for key in kept)
            lost = {key for key, value in status.items() if value is not None} - set(kept)
            if not took:
                lost = set()
            if lost - dropped:
                log.info("%s: the CRD keeps no status field %s", metric, ", ".join(sorted(lost)))
            dropped |= lost


STATUS_INTERVAL_SECONDS = 2.0
UPGRADE_RECHECK_SECONDS = 10.0
# Upgrade states in which the state machine looks at every pod on the node, read live.
_NODE_PODS_STATES = (
    UpgradeState.WAIT_FOR_JOBS_REQUIRED,
    UpgradeState.POD_DELETION_REQUIRED,
    UpgradeState.DRAIN_REQUIRED,
    UpgradeState.POD_RESTART_REQUIRED,
)


async def _read_driver_configmaps(state: OperatorState, client: KubeClient) -> None:
    """The keys of the ConfigMaps the ClusterPolicies hand the driver file by file: the
    driver's DaemonSet mounts each key, as upstream's does, so a key added is a new pod
    template. Nothing is read when no policy names one."""
    names: list[str] = []
    for body in state.policy_views():
        try:
            names += named_configmaps(parse_cluster_policy(body))
        except PolicyError:
            continue  # the pass reports it
    found: dict[str, tuple[str, ...]] = {}
    namespace = state.config.namespace
    for name in dict.fromkeys(names):
        configmap = await ops.get_object(client, "ConfigMap", name, namespace)
        if configmap is not None:
            found[name] = configmap_keys(configmap)
    state.configmap_keys = found


async def _read_node_pods(state: OperatorState, client: KubeClient) -> None:
    """List the pods of the few nodes between the cordon and the driver restart (the pod
    informer keeps only operand and GPU pods, and may lag the scheduler's bindings)."""
    waiting = sorted(state.pods_read_on)
    found = await asyncio.gather(*(ops.pods_on_node(client, name) for name in waiting))
    state.node_pods = {
        name: tuple(workload_pod(pod) for pod in pods)
        for name, pods in zip(waiting, found, strict=True)
    }


def _hold_backed_off(state: OperatorState, actions: Actions) -> float | None:
    """Leave out of this pass the objects still in their backoff after a refusal; the
    seconds until the first backoff ends (a pass then tries it again)."""
    keys = {f"{o['kind']} {o['metadata']['name']}": o for o in actions.apply}
    state.backoff.keep_only(keys)
    for what in [w for w in state.refused if w not in keys]:
        del state.refused[what]  # no longer asked for, or taken meanwhile
    actions.apply = [
        obj
        for what, obj in keys.items()
        if not state.backoff.waiting(what, obj["metadata"]["annotations"][HASH_ANNOTATION])
    ]
    return state.backoff.next_retry()


def _throttle_status(state: OperatorState, actions: Actions) -> float | None:
    """At most one status write per interval while nodes come up one by one.

    A change of `state` (ready/notReady/ignored) is written at once; progress counts wait,
    and a later pass (after the seconds returned) writes the newest figures.
    """
    if not actions.status:
        return None
    now = time.monotonic()
    if now - state.last_status_write >= STATUS_INTERVAL_SECONDS:
        state.last_status_write = now
        return None
    current = {
        p["metadata"]["name"]: (p.get("status") or {}).get("state") for p in state.policy_views()
    }
    urgent = {n: s for n, s in actions.status.items() if current.get(n) != s.get("state")}
    if urgent:
        state.last_status_write = now
    actions.status = urgent
    return STATUS_INTERVAL_SECONDS


class OperatorPasses:
    """The operator's part of the controller loop: snapshot, `reconcile`, write."""

    def __init__(self, state: OperatorState, client: KubeClient) -> None:
        self.state = state
        self.client = client
        self.started = 0.0

    async def snapshot(self, resync: bool) -> Snapshot:
        state = self.state
        self.started = time.monotonic()
        if self.started - state.last_prime >= state.config.resync_seconds:
            await _prime(state, self.client)
        await _read_node_pods(state, self.client)
        await _read_driver_configmaps(state, self.client)
        return state.snapshot()

    def decide(self, snapshot: Snapshot) -> Actions:
        return reconcile(snapshot, now_rfc3339(), self.state.plan_cache)

    async def execute(self, actions: Actions) -> Outcome:
        state = self.state
        waits = [_throttle_status(state, actions), _hold_backed_off(state, actions)]
        if await _hold_unseen_switches(state, self.client, actions):
            waits.append(SWITCH_RECHECK_SECONDS)
        await _execute(state, self.client, actions)
        state.passes += 1
        state.last_actions = actions
        seconds = time.monotonic() - self.started
        metrics.RECONCILES.inc()
        metrics.RECONCILE_SECONDS.observe(seconds)
        metrics.observe_plans(actions)
        if actions.upgrade_counts is not None and actions.upgrade_counts.in_progress:
            # Waits with a timeout (jobs, pod deletion, validation) end without an event.
            waits.append(UPGRADE_RECHECK_SECONDS)
        if actions.write_count:
            log.info(
                "reconciled in %.2fs: %d node patches, %d applies, %d deletes, %d status writes,"
                " ready=%s",
                seconds,
                len(actions.node_label_patches),
                len(actions.apply),
                len(actions.delete_daemonsets),
                len(actions.status),
                actions.ready,
            )
        # Our own writes come back as watch events; a follow-up pass confirms the fixed point.
        return Outcome(
            again=bool(actions.write_count),
            requeue_after=min((w for w in waits if w is not None), default=None),
        )

    def failed(self, error: BaseException) -> None:
        metrics.RECONCILE_ERRORS.inc()


async def _prime_until_read(state: OperatorState, client: KubeClient) -> None:
    while True:
        try:
            await _prime(state, client)
            return
        except API_ERRORS as exc:
            log.warning("cannot read the objects gpuop manages yet: %s", describe_api_error(exc))
            await asyncio.sleep(1.0)


async def reconcile_loop(state: OperatorState) -> None:
    """Wait for a change (or the resync period), take a snapshot, write what differs.

    The first pass waits for every informer's first list: a pass that saw no ClusterPolicy
    yet would take back every node's deploy labels.
    """
    client = state.client
    assert client is not None
    await wait_synced(state.informers())
    await _prime_until_read(state, client)
    log.info("ready: watching %d nodes", len(state.snapshot().nodes))
    settings = LoopSettings(
        what="reconcile",
        resync_seconds=state.config.resync_seconds,
        debounce_seconds=state.config.debounce_seconds,
        pace_by_decide=True,
    )
    await ControllerLoop(OperatorPasses(state, client), state.trigger, settings, log).run()


def _leader_changed(lease: str) -> Callable[[bool, str | None], None]:
    def changed(leading: bool, holder: str | None) -> None:
        metrics.LEADER.labels(name=lease).set(1 if leading else 0)
        metrics.LEADER_CHANGES.inc()
        if HEALTH.role != "starting":
            HEALTH.role = "leader" if leading else "standby"

    return changed


async def _lead(state: OperatorState) -> None:
    """Reconcile, once this process leads (at once without leader election); while leading,
    the Lease is renewed beside the loop. Losing it stops the loop (nothing more is
    written) and the process stands by again, as a replica that never led: a single
    replica whose API server was away for longer than the renew deadline leads again once
    it can, without a restart."""
    elector = state.elector
    await wait_synced(state.informers())
    HEALTH.role = "leader" if elector is None else "standby"
    if elector is None:
        await reconcile_loop(state)
        return
    while True:
        await elector.acquire()
        HEALTH.role = "leader"
        try:
            await supervise(reconcile_loop(state), elector.hold())
        except LeadershipLost as lost:
            log.warning("%s; standing by, writing nothing until this process leads again", lost)
            HEALTH.role = "standby"
            state.new_term()


RELEASE_TIMEOUT_SECONDS = 5.0


async def serve(config: OperatorConfig) -> None:
    """Check the namespace, start the informers and, once leading, the loop; run until
    cancelled. A clean stop hands the Lease back."""
    state = OperatorState(config)
    client = async_client(config.kubeconfig, config.context)
    try:
        if not await with_retries(lambda: ops.namespace_exists(client, config.namespace)):
            raise KubeError(f"operator namespace {config.namespace!r} does not exist")
        state.client = client
        if config.lease is not None:
            state.elector = LeaderElector(client, config.lease, _leader_changed(config.lease.name))
            metrics.LEADER.labels(name=config.lease.name).set(0)
        informers = state.watch(client)
        # The informers run on a standby too: a new leader starts from a warm copy.
        await supervise(_lead(state), *(informer.run() for informer in informers))
    finally:
        if state.elector is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RELEASE_TIMEOUT_SECONDS):
                    await state.elector.release()
        await client.close()


def run_operator(config: OperatorConfig) -> None:
    """Run until stopped (SIGINT/SIGTERM)."""
    run_controller(serve(config), config.full_collection_seconds)
