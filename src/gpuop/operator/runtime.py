"""The operator process: kopf watches and caches, one coalescing reconcile loop writes.

kopf lists and watches Nodes, ClusterPolicies, gpuop's DaemonSets and the pods that matter
(operand pods and pods using GPU resources) into in-memory indexes, relisting after
expired resource versions and API server restarts. Its event handlers only poke a trigger;
a single background loop then takes a snapshot of the indexes, asks the pure
`reconcile` what to write, and writes it with lightkube (merge patches on the keys gpuop
owns, server-side apply for rendered objects). No kopf change-handlers, daemons or
finalizers are used, so the operator never writes its own bookkeeping onto objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import kopf

from gpuop.kube import (
    ApiError,
    async_client,
    event_body,
    now_rfc3339,
    ops,
)
from gpuop.kube.watching import kopf_connection, run_watchers
from gpuop.operator import metrics
from gpuop.operator.reconcile import Actions, PlanCache, PodInfo, Snapshot, pod_info, reconcile
from gpuop.render import DEFAULT_VGPU_CONFIGMAP, MANAGED_BY

log = logging.getLogger("gpuop.operator")

_KEPT_ANNOTATION_PREFIXES = ("gpuop.io/", "nvidia.com/")


@dataclass
class OperatorConfig:
    namespace: str
    kubeconfig: str | None = None
    context: str | None = None
    resync_seconds: float = 300.0
    debounce_seconds: float = 0.2
    write_concurrency: int = 32
    operator_env: dict[str, str] = field(default_factory=dict)


def _plain(body: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(dict(body), default=lambda o: dict(o)))  # type: ignore[no-any-return]


def slim_node(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    status = body.get("status") or {}
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k.startswith(_KEPT_ANNOTATION_PREFIXES)
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "labels": dict(meta.get("labels") or {}),
            "annotations": annotations,
        },
        "status": {"allocatable": dict(status.get("allocatable") or {})},
    }


def slim_daemonset(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    return {
        "metadata": {
            "name": meta.get("name"),
            "generation": meta.get("generation"),
            "annotations": dict(meta.get("annotations") or {}),
        },
        "spec": {"updateStrategy": dict((body.get("spec") or {}).get("updateStrategy") or {})},
        "status": dict(body.get("status") or {}),
    }


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class OperatorState:
    """What the loop needs between passes: indexes, write overlays, posted events."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.trigger = asyncio.Event()
        self.indexes_ready = asyncio.Event()
        self.indexes: dict[str, Any] = {}
        self.client: Any = None
        self.node_overlay: dict[str, dict[str, Any]] = {}
        self.ds_overlay: dict[str, str] = {}
        self.status_overlay: dict[str, tuple[int, dict[str, Any]]] = {}
        self.posted_events: set[tuple[str, str, str]] = set()
        self.runtime_classes: set[str] = set()
        self.configmaps: dict[str, str] = {}
        self.plan_cache: PlanCache = {}
        self.last_actions: Actions | None = None
        self.last_status_write = 0.0
        self.passes = 0

    def attach(self, **indexes: Any) -> None:
        if not self.indexes:
            self.indexes = indexes
            self.indexes_ready.set()
        self.trigger.set()

    def _values(self, index_name: str) -> list[Any]:
        index = self.indexes.get(index_name)
        if index is None:
            return []
        values = []
        for store in index.values():
            values.extend(store)
        return values

    def snapshot(self) -> Snapshot:
        nodes: dict[str, dict[str, Any]] = {}
        for node in self._values("gpuop_nodes"):
            name = node["metadata"]["name"]
            overlay = self.node_overlay.get(name)
            if overlay is not None and _rv(overlay) > _rv(node):
                node = overlay
            else:
                self.node_overlay.pop(name, None)
            nodes[name] = node
        for name in list(self.node_overlay):
            if name not in nodes:
                self.node_overlay.pop(name)
        policies = []
        for policy in self._values("gpuop_policies"):
            name = policy["metadata"]["name"]
            written = self.status_overlay.get(name)
            if written is not None and written[0] > _rv(policy):
                policy = {**policy, "status": written[1]}
            else:
                self.status_overlay.pop(name, None)
            policies.append(policy)
        daemonsets: dict[str, dict[str, Any]] = {}
        for ds in self._values("gpuop_daemonsets"):
            name = ds["metadata"]["name"]
            applied = self.ds_overlay.get(name)
            annotations = ds["metadata"].get("annotations") or {}
            if applied is not None and annotations.get("nvidia.com/last-applied-hash") != applied:
                ds = {
                    **ds,
                    "metadata": {
                        **ds["metadata"],
                        "annotations": {**annotations, "nvidia.com/last-applied-hash": applied},
                    },
                }
            else:
                self.ds_overlay.pop(name, None)
            daemonsets[name] = ds
        pods: list[PodInfo] = list(self._values("gpuop_pods"))
        if len(self.plan_cache) > 4 * max(len(nodes), 64):
            self.plan_cache.clear()
        return Snapshot(
            policies=policies,
            nodes=nodes,
            daemonsets=daemonsets,
            pods=pods,
            namespace=self.config.namespace,
            operator_env=self.config.operator_env,
            existing_runtime_classes=set(self.runtime_classes),
            existing_configmaps=dict(self.configmaps),
        )


async def _prime(state: OperatorState, client: Any) -> None:
    """Read once what gpuop does not watch: its RuntimeClasses and the vGPU ConfigMap."""
    state.runtime_classes |= await ops.managed_runtime_classes(client, MANAGED_BY)
    data = await ops.configmap_data(client, DEFAULT_VGPU_CONFIGMAP, state.config.namespace)
    if data is not None:
        state.configmaps[DEFAULT_VGPU_CONFIGMAP] = data.get("config.yaml", "")


async def _execute(state: OperatorState, client: Any, actions: Actions) -> None:
    semaphore = asyncio.Semaphore(state.config.write_concurrency)
    before = state.snapshot()
    nodes, policies = before.nodes, before.policies
    namespace = state.config.namespace

    async def patch_node(name: str, changes: dict[str, str | None]) -> None:
        async with semaphore:
            result = await ops.patch_node_labels(client, name, changes)
            metrics.WRITES.labels(kind="node-labels").inc()
            if result is not None:
                state.node_overlay[name] = slim_node(result)

    async def post_event(node: str, reason: str, message: str, kind: str) -> None:
        key = (node, reason, message)
        if key in state.posted_events:
            return
        state.posted_events.add(key)
        uid = (nodes.get(node, {}).get("metadata") or {}).get("uid")
        involved = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "uid": uid}}
        body = event_body(involved, reason, message, kind, namespace="default")
        async with semaphore:
            try:
                await ops.create_event(client, body)
                metrics.WRITES.labels(kind="event").inc()
            except ApiError as exc:
                log.warning("cannot post event %s on node %s: %s", reason, node, exc.status.message)

    await asyncio.gather(*(patch_node(n, c) for n, c in actions.node_label_patches.items()))

    async def apply(obj: dict[str, Any]) -> None:
        async with semaphore:
            try:
                await ops.apply_object(client, obj)
            except ApiError as exc:
                metrics.RECONCILE_ERRORS.inc()
                log.error(
                    "cannot apply %s %s: %s",
                    obj["kind"],
                    obj["metadata"]["name"],
                    exc.status.message,
                )
                return
        metrics.WRITES.labels(kind=obj["kind"]).inc()
        name = obj["metadata"]["name"]
        if obj["kind"] == "DaemonSet":
            state.ds_overlay[name] = obj["metadata"]["annotations"]["nvidia.com/last-applied-hash"]
        elif obj["kind"] == "RuntimeClass":
            state.runtime_classes.add(name)
        elif obj["kind"] == "ConfigMap":
            state.configmaps[name] = obj["data"]["config.yaml"]

    # What the operand pods refer to (the RuntimeClass, the vGPU ConfigMap) exists before
    # the DaemonSets that make them; each group is written at once.
    await asyncio.gather(*(apply(o) for o in actions.apply if o["kind"] != "DaemonSet"))
    await asyncio.gather(*(apply(o) for o in actions.apply if o["kind"] == "DaemonSet"))

    for name in actions.delete_daemonsets:
        await ops.delete_daemonset(client, name, namespace)
        metrics.WRITES.labels(kind="DaemonSet-delete").inc()

    for name, status in actions.status.items():
        current = next((p for p in policies if p["metadata"]["name"] == name), {})
        patch_status: dict[str, Any] = dict(status)
        for key in current.get("status") or {}:
            patch_status.setdefault(key, None)
        result = await ops.patch_policy_status(client, name, patch_status)
        metrics.WRITES.labels(kind="clusterpolicy-status").inc()
        if result is not None:
            state.status_overlay[name] = (_rv(result), dict(result.get("status") or {}))

    await asyncio.gather(*(post_event(e.node, e.reason, e.message, e.type) for e in actions.events))


STATUS_INTERVAL_SECONDS = 2.0


def _throttle_status(state: OperatorState, actions: Actions) -> None:
    """At most one status write per interval while nodes come up one by one.

    A change of `state` (ready/notReady/ignored) is written at once; progress counts wait,
    and a later pass (the loop re-triggers itself) writes the newest figures.
    """
    if not actions.status:
        return
    now = time.monotonic()
    if now - state.last_status_write >= STATUS_INTERVAL_SECONDS:
        state.last_status_write = now
        return
    current = {
        p["metadata"]["name"]: (p.get("status") or {}).get("state")
        for p in state.snapshot().policies
    }
    urgent = {n: s for n, s in actions.status.items() if current.get(n) != s.get("state")}
    if urgent:
        state.last_status_write = now
    actions.status = urgent
    loop = asyncio.get_running_loop()
    loop.call_later(STATUS_INTERVAL_SECONDS, state.trigger.set)


async def reconcile_loop(state: OperatorState) -> None:
    """Wait for a change (or the resync period), take a snapshot, write what differs."""
    await state.indexes_ready.wait()
    client = state.client
    assert client is not None
    await _prime(state, client)
    log.info("ready: watching %d nodes", len(state.snapshot().nodes))
    last_pass_seconds = 0.0
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(state.trigger.wait(), timeout=state.config.resync_seconds)
        # While thousands of operand pods roll out, events never stop: waiting at least as
        # long as the last pass took to decide keeps the operator to half a core, not a whole one.
        await asyncio.sleep(max(state.config.debounce_seconds, last_pass_seconds))
        state.trigger.clear()
        started = time.monotonic()
        try:
            snapshot = state.snapshot()
            actions = reconcile(snapshot, now_rfc3339(), state.plan_cache)
            last_pass_seconds = time.monotonic() - started
            _throttle_status(state, actions)
            await _execute(state, client, actions)
        except ApiError as exc:
            metrics.RECONCILE_ERRORS.inc()
            log.warning("reconcile failed: %s", exc.status.message)
            await asyncio.sleep(1.0)
            state.trigger.set()
            continue
        except Exception:
            metrics.RECONCILE_ERRORS.inc()
            log.exception("reconcile failed")
            await asyncio.sleep(2.0)
            state.trigger.set()
            continue
        state.passes += 1
        state.last_actions = actions
        metrics.RECONCILES.inc()
        metrics.RECONCILE_SECONDS.observe(time.monotonic() - started)
        metrics.observe_plans(actions)
        if actions.write_count:
            log.info(
                "reconciled in %.2fs: %d node patches, %d applies, %d deletes, %d status writes,"
                " ready=%s",
                time.monotonic() - started,
                len(actions.node_label_patches),
                len(actions.apply),
                len(actions.delete_daemonsets),
                len(actions.status),
                actions.ready,
            )
            # Our own writes come back as watch events; a follow-up pass confirms the fixed point.
            state.trigger.set()


def build_registry() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo:
        config: OperatorConfig = memo["config"]
        return kopf_connection(config.kubeconfig, config.context)

    @kopf.on.startup(registry=registry)
    async def startup(memo: kopf.Memo, **_: Any) -> None:
        state: OperatorState = memo["state"]
        config: OperatorConfig = memo["config"]
        state.client = async_client(config.kubeconfig, config.context)
        if not await ops.namespace_exists(state.client, config.namespace):
            raise kopf.PermanentError(f"operator namespace {config.namespace!r} does not exist")
        memo["task"] = asyncio.create_task(reconcile_loop(state))

    @kopf.on.cleanup(registry=registry)
    async def cleanup(memo: kopf.Memo, **_: Any) -> None:
        task = memo.get("task")
        if task is not None:
            task.cancel()
        state: OperatorState = memo["state"]
        if state.client is not None:
            await state.client.close()

    @kopf.index("", "v1", "nodes", registry=registry, id="gpuop_nodes")
    async def gpuop_nodes(name: str, body: kopf.Body, **_: Any) -> dict[str, Any]:
        return {name: slim_node(body)}

    @kopf.index("nvidia.com", "v1", "clusterpolicies", registry=registry, id="gpuop_policies")
    async def gpuop_policies(name: str, body: kopf.Body, **_: Any) -> dict[str, Any]:
        return {name: _plain(body)}

    @kopf.index(
        "apps",
        "v1",
        "daemonsets",
        registry=registry,
        labels={"app.kubernetes.io/managed-by": MANAGED_BY},
        id="gpuop_daemonsets",
    )
    async def gpuop_daemonsets(
        name: str, namespace: str | None, body: kopf.Body, memo: Any, **_: Any
    ) -> dict[str, Any] | None:
        if namespace != memo["config"].namespace:
            return None
        return {name: slim_daemonset(body)}

    @kopf.index("", "v1", "pods", registry=registry, id="gpuop_pods")
    async def gpuop_pods(body: kopf.Body, memo: Any, **_: Any) -> dict[str, PodInfo] | None:
        info = pod_info(body, memo["config"].namespace)
        if info is None:
            return None
        return {info.node: info}

    async def poke(memo: kopf.Memo, **kwargs: Any) -> None:
        state: OperatorState = memo["state"]
        state.attach(
            gpuop_nodes=kwargs["gpuop_nodes"],
            gpuop_policies=kwargs["gpuop_policies"],
            gpuop_daemonsets=kwargs["gpuop_daemonsets"],
            gpuop_pods=kwargs["gpuop_pods"],
        )

    def relevant_pod(body: kopf.Body, memo: Any, **_: Any) -> bool:
        return pod_info(body, memo["config"].namespace) is not None

    def managed_daemonset(namespace: str | None, memo: Any, **_: Any) -> bool:
        return bool(namespace == memo["config"].namespace)

    kopf.on.event("", "v1", "nodes", registry=registry)(poke)
    kopf.on.event("nvidia.com", "v1", "clusterpolicies", registry=registry)(poke)
    kopf.on.event(
        "apps",
        "v1",
        "daemonsets",
        registry=registry,
        labels={"app.kubernetes.io/managed-by": MANAGED_BY},
        when=managed_daemonset,
    )(poke)
    kopf.on.event("", "v1", "pods", registry=registry, when=relevant_pod)(poke)
    return registry


def run_operator(config: OperatorConfig, stop_flag: Any = None, ready_flag: Any = None) -> None:
    """Run until stopped (SIGINT/SIGTERM, or `stop_flag`)."""
    memo = kopf.Memo(config=config, state=OperatorState(config))
    run_watchers(build_registry(), memo, stop_flag, ready_flag)
