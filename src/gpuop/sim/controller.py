"""`gpuop sim run`: the node side of simulated GPU servers, as a controller against the API.

It watches simulated Nodes and the operand pods on them (kopf indexes, relisting after
expired watches), and whenever they change, computes each node's simulated state with
`gpuop.sim.effects` and patches only what differs: node labels and annotations, and the
extended resources in the node's status (as a device plugin's registration would). The
container toolkit's effect is real: the nvidia runtime is registered in that node's
containerd configuration under `<hosts-dir>/<node>/`, with the same writer
`gpuop toolkit configure-runtime` uses. The operator cannot tell these nodes apart from
real ones: the simulator acts only where node-side software would.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
import yaml

from gpuop.kube import ApiError, async_client, ops
from gpuop.kube.watching import kopf_connection, run_watchers, watch_only
from gpuop.naming import PciDatabase
from gpuop.sim.effects import NodeChanges, OperandPod, node_changes
from gpuop.sim.hardware import SIM_LABEL
from gpuop.sim.hostroot import configure_host_runtime
from gpuop.vgpu import VgpuConfigError, VgpuConfigFile, default_vgpu_config, parse_vgpu_config

log = logging.getLogger("gpuop.sim")
OPERAND_LABEL = "gpuop.io/operand"
VGPU_CONFIGMAP = "default-vgpu-devices-config"


@dataclass
class SimConfig:
    namespace: str
    hosts_dir: Path
    kubeconfig: str | None = None
    context: str | None = None
    pci_db: PciDatabase = field(default_factory=PciDatabase.builtin)
    debounce_seconds: float = 0.1
    write_concurrency: int = 32


def _rv(obj: dict[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _slim_node(body: Any) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    return {
        "metadata": {
            "name": meta.get("name"),
            "resourceVersion": meta.get("resourceVersion"),
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
        },
        "status": {"allocatable": dict((body.get("status") or {}).get("allocatable") or {})},
    }


def _pod_entry(body: Any) -> tuple[str, OperandPod] | None:
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    operand = (meta.get("labels") or {}).get(OPERAND_LABEL)
    node = spec.get("nodeName")
    if not operand or not node or meta.get("deletionTimestamp"):
        return None
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    env: dict[str, str] = {}
    for container in spec.get("containers") or []:
        for item in container.get("env") or []:
            if isinstance(item.get("value"), str):
                env[str(item["name"])] = item["value"]
    return node, OperandPod(str(operand), ready, env)


class SimState:
    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.trigger = asyncio.Event()
        self.indexes: dict[str, Any] = {}
        self.ready = asyncio.Event()
        self.client: Any = None
        self.overlay: dict[str, dict[str, Any]] = {}
        self.runtime_configured: dict[str, bool] = {}
        self.vgpu_config: VgpuConfigFile = default_vgpu_config()
        self.vgpu_config_text: str | None = None
        self.passes = 0

    def attach(self, **indexes: Any) -> None:
        if not self.indexes:
            self.indexes = indexes
            self.ready.set()
        self.trigger.set()

    def nodes(self) -> dict[str, dict[str, Any]]:
        result: dict[str, dict[str, Any]] = {}
        for store in self.indexes["sim_nodes"].values():
            for node in store:
                name = node["metadata"]["name"]
                overlay = self.overlay.get(name)
                if overlay is not None and _rv(overlay) > _rv(node):
                    node = overlay
                else:
                    self.overlay.pop(name, None)
                result[name] = node
        return result

    def pods_by_node(self) -> dict[str, dict[str, OperandPod]]:
        result: dict[str, dict[str, OperandPod]] = {}
        for node, store in self.indexes["sim_pods"].items():
            for pod in store:
                current = result.setdefault(node, {})
                existing = current.get(pod.operand)
                if existing is None or (pod.ready and not existing.ready):
                    current[pod.operand] = pod
        return result


async def _refresh_vgpu_config(state: SimState) -> None:
    data = await ops.configmap_data(state.client, VGPU_CONFIGMAP, state.config.namespace)
    text = (data or {}).get("config.yaml")
    if text is None or text == state.vgpu_config_text:
        return
    state.vgpu_config_text = text
    try:
        state.vgpu_config = parse_vgpu_config(yaml.safe_load(text))
    except (VgpuConfigError, yaml.YAMLError) as exc:
        log.warning("ConfigMap %s is not a valid vGPU config: %s", VGPU_CONFIGMAP, exc)


async def _apply(
    state: SimState, name: str, changes: NodeChanges, semaphore: asyncio.Semaphore
) -> None:
    async with semaphore:
        result = None
        if changes.labels or changes.annotations:
            result = await ops.patch_node_metadata(
                state.client, name, changes.labels or None, changes.annotations or None
            )
        if changes.resources:
            result = await ops.patch_node_resources(state.client, name, changes.resources) or result
        if result is not None:
            state.overlay[name] = _slim_node(result)


async def sim_loop(state: SimState) -> None:
    await state.ready.wait()
    semaphore = asyncio.Semaphore(state.config.write_concurrency)
    last_config_check = 0.0
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(state.trigger.wait(), timeout=30)
        await asyncio.sleep(state.config.debounce_seconds)
        state.trigger.clear()
        try:
            if time.monotonic() - last_config_check > 5:
                last_config_check = time.monotonic()
                await _refresh_vgpu_config(state)
            pods = state.pods_by_node()
            work = []
            for name, node in state.nodes().items():
                changes = node_changes(
                    node, pods.get(name, {}), state.vgpu_config, state.config.pci_db
                )
                wants_runtime = bool(changes.configure_runtime)
                if state.runtime_configured.get(name) != wants_runtime:
                    configure_host_runtime(state.config.hosts_dir / name, wants_runtime)
                    state.runtime_configured[name] = wants_runtime
                if changes:
                    work.append(_apply(state, name, changes, semaphore))
            if work:
                await asyncio.gather(*work)
                state.trigger.set()
            state.passes += 1
        except ApiError as exc:
            log.warning("simulator pass failed: %s", exc.status.message)
            await asyncio.sleep(1)
            state.trigger.set()
        except Exception:
            log.exception("simulator pass failed")
            await asyncio.sleep(2)
            state.trigger.set()


def build_registry() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(memo: kopf.Memo, **_: Any) -> kopf.ConnectionInfo:
        config: SimConfig = memo["config"]
        return kopf_connection(config.kubeconfig, config.context)

    @kopf.on.startup(registry=registry)
    async def startup(memo: kopf.Memo, settings: kopf.OperatorSettings, **_: Any) -> None:
        watch_only(settings)
        state: SimState = memo["state"]
        config: SimConfig = memo["config"]
        state.client = async_client(config.kubeconfig, config.context)
        memo["task"] = asyncio.create_task(sim_loop(state))

    @kopf.on.cleanup(registry=registry)
    async def cleanup(memo: kopf.Memo, **_: Any) -> None:
        task = memo.get("task")
        if task is not None:
            task.cancel()

    @kopf.index("", "v1", "nodes", registry=registry, labels={SIM_LABEL: "true"}, id="sim_nodes")
    async def sim_nodes(name: str, body: kopf.Body, **_: Any) -> dict[str, Any]:
        return {name: _slim_node(body)}

    @kopf.index(
        "", "v1", "pods", registry=registry, labels={OPERAND_LABEL: kopf.PRESENT}, id="sim_pods"
    )
    async def sim_pods(
        body: kopf.Body, namespace: str | None, memo: Any, **_: Any
    ) -> dict[str, OperandPod] | None:
        if namespace != memo["config"].namespace:
            return None
        entry = _pod_entry(body)
        return None if entry is None else {entry[0]: entry[1]}

    async def poke(memo: kopf.Memo, **kwargs: Any) -> None:
        memo["state"].attach(sim_nodes=kwargs["sim_nodes"], sim_pods=kwargs["sim_pods"])

    kopf.on.event("", "v1", "nodes", registry=registry, labels={SIM_LABEL: "true"})(poke)
    kopf.on.event("", "v1", "pods", registry=registry, labels={OPERAND_LABEL: kopf.PRESENT})(poke)
    return registry


def run_simulator(config: SimConfig, stop_flag: Any = None) -> None:
    """Run until stopped (SIGINT/SIGTERM, or `stop_flag`)."""
    memo = kopf.Memo(config=config, state=SimState(config))
    run_watchers(build_registry(), memo, stop_flag)
