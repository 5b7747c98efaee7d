"""`gpuop sim run`: the node side of simulated GPU servers, as a controller against the API.

It watches simulated Nodes and the operand pods on them (informers, relisting after
expired watches), and whenever they change, computes each node's simulated state with
`gpuop.sim.effects` and patches only what differs: the node labels GPU feature discovery and
the vGPU device manager write, and the extended resources in the node's status (as a
device plugin's registration would). The machines' cards come from the hardware ConfigMap
(`gpuop.sim.registry`); the host side (which driver owns the cards, which vGPU devices
exist) is the simulator's own memory, so the Nodes carry nothing a real node would not. The
container toolkit's effect is real: the nvidia runtime is registered in that node's
containerd configuration under `<hosts-dir>/<node>/`, with the same writer
`gpuop toolkit configure-runtime` uses. The operator cannot tell these nodes apart from
real ones: the simulator acts only where node-side software would.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpuop.api.cards import GpuCard
from gpuop.api.labels import OPERAND_LABEL, SIM_LABEL
from gpuop.kube import API_ERRORS, async_client, describe_api_error, ops
from gpuop.kube.informer import Informer
from gpuop.kube.running import run_controller, supervise
from gpuop.naming import PciDatabase
from gpuop.sim.effects import NodeChanges, OperandPod, node_changes
from gpuop.sim.hardware import HARDWARE_CONFIGMAP
from gpuop.sim.hostroot import configure_host_runtime
from gpuop.sim.registry import parse_hardware
from gpuop.vgpu import VgpuConfigError, VgpuConfigFile, default_vgpu_config, parse_vgpu_config

log = logging.getLogger("gpuop.sim")
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


def _slim_node(body: dict[str, Any]) -> dict[str, Any]:
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


def _pod_entry(body: dict[str, Any]) -> tuple[str, OperandPod] | None:
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
            elif "valueFrom" not in item and item.get("name"):
                env[str(item["name"])] = ""  # the API leaves out an empty value
    containers = spec.get("containers") or [{}]
    return node, OperandPod(str(operand), ready, env, str(containers[0].get("image") or ""))


class SimState:
    """Informers, written-state overlays and which nodes changed since the last pass."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.trigger = asyncio.Event()
        self.client: Any = None
        self.nodes: Informer[dict[str, Any]] | None = None
        self.pods: Informer[tuple[str, OperandPod]] | None = None
        self.overlay: dict[str, dict[str, Any]] = {}
        self.runtime_configured: dict[str, bool] = {}
        self.vgpu_config: VgpuConfigFile = default_vgpu_config()
        self.vgpu_config_text: str | None = None
        self.dirty: set[str] = set()
        self.everything_dirty = True
        self.passes = 0
        self.pods_by_node: dict[str, dict[str, OperandPod]] = {}
        self.pod_nodes: dict[str, str] = {}
        self.hardware: dict[str, tuple[GpuCard, ...]] = {}
        self.host: dict[str, dict[str, str]] = {}

    def watch(self, client: Any) -> list[Informer[Any]]:
        self.nodes = Informer(
            client, "Node", _slim_node, self._node_changed, labels={SIM_LABEL: "true"}
        )
        self.pods = Informer(
            client,
            "Pod",
            _pod_entry,
            self._pod_changed,
            labels={OPERAND_LABEL: None},
            namespace=self.config.namespace,
        )
        return [self.nodes, self.pods]

    def _node_changed(self, name: str, _node: object) -> None:
        self.dirty.add(name)
        self.trigger.set()

    def _pod_changed(self, key: str, entry: tuple[str, OperandPod] | None) -> None:
        was_on = self.pod_nodes.pop(key, None)
        if was_on is not None:
            pods = self.pods_by_node[was_on]
            del pods[key]
            if not pods:
                del self.pods_by_node[was_on]
            self.dirty.add(was_on)
        if entry is not None:
            node, pod = entry
            self.pod_nodes[key] = node
            self.pods_by_node.setdefault(node, {})[key] = pod
            self.dirty.add(node)
        self.trigger.set()

    def take_dirty(self) -> set[str] | None:
        """The nodes to look at in this pass; None means all of them."""
        names = None if self.everything_dirty else self.dirty
        self.dirty = set()
        self.everything_dirty = False
        return names

    def node(self, name: str) -> dict[str, Any] | None:
        node = None if self.nodes is None else self.nodes.store.get(name)
        overlay = self.overlay.get(name)
        if node is None:
            self.overlay.pop(name, None)
            return None
        if overlay is not None and _rv(overlay) > _rv(node):
            return overlay
        self.overlay.pop(name, None)
        return dict(node)

    def node_names(self) -> list[str]:
        return [] if self.nodes is None else list(self.nodes.store)

    def pods_on(self, node: str) -> dict[str, OperandPod]:
        result: dict[str, OperandPod] = {}
        for pod in (self.pods_by_node.get(node) or {}).values():
            existing = result.get(pod.operand)
            if existing is None or (pod.ready and not existing.ready):
                result[pod.operand] = pod
        return result


async def _refresh_vgpu_config(state: SimState) -> bool:
    """Re-read the vGPU device config the operator publishes; True when it changed."""
    data = await ops.configmap_data(state.client, VGPU_CONFIGMAP, state.config.namespace)
    text = (data or {}).get("config.yaml")
    if text is None or text == state.vgpu_config_text:
        return False
    state.vgpu_config_text = text
    try:
        state.vgpu_config = parse_vgpu_config(yaml.safe_load(text))
    except (VgpuConfigError, yaml.YAMLError) as exc:
        log.warning("ConfigMap %s is not a valid vGPU config: %s", VGPU_CONFIGMAP, exc)
    return True


async def _apply(
    state: SimState, name: str, changes: NodeChanges, semaphore: asyncio.Semaphore
) -> None:
    async with semaphore:
        result = None
        if changes.labels:
            result = await ops.patch_node(state.client, name, labels=changes.labels)
        if changes.resources:
            result = await ops.patch_node_resources(state.client, name, changes.resources) or result
        if result is not None:
            state.overlay[name] = _slim_node(result)


async def _refresh_hardware(state: SimState) -> None:
    data = await ops.configmap_data(state.client, HARDWARE_CONFIGMAP, state.config.namespace)
    state.hardware = parse_hardware(data)


async def sim_loop(state: SimState) -> None:
    await asyncio.gather(*(i.synced.wait() for i in (state.nodes, state.pods) if i is not None))
    log.info("ready: simulating %d nodes", len(state.node_names()))
    semaphore = asyncio.Semaphore(state.config.write_concurrency)
    last_config_check = 0.0
    while True:
        try:
            await asyncio.wait_for(state.trigger.wait(), timeout=30)
        except TimeoutError:
            state.everything_dirty = True
        await asyncio.sleep(state.config.debounce_seconds)
        state.trigger.clear()
        try:
            if time.monotonic() - last_config_check > 5:
                last_config_check = time.monotonic()
                if await _refresh_vgpu_config(state):
                    state.everything_dirty = True
            names = state.take_dirty()
            work = []
            hardware_read = False
            host_changed = False
            for name in sorted(state.node_names() if names is None else names):
                node = state.node(name)
                if node is None:
                    state.host.pop(name, None)
                    continue
                if name not in state.hardware and not hardware_read:
                    await _refresh_hardware(state)
                    hardware_read = True
                host = state.host.get(name, {})
                changes = node_changes(
                    node,
                    state.hardware.get(name, ()),
                    host,
                    state.pods_on(name),
                    state.vgpu_config,
                    state.config.pci_db,
                )
                if changes.host != host:
                    state.host[name] = changes.host
                    state.dirty.add(name)
                    host_changed = True
                wants_runtime = bool(changes.configure_runtime)
                if state.runtime_configured.get(name) != wants_runtime:
                    configure_host_runtime(state.config.hosts_dir / name, wants_runtime)
                    state.runtime_configured[name] = wants_runtime
                if changes:
                    work.append(_apply(state, name, changes, semaphore))
            if work:
                await asyncio.gather(*work)
            if host_changed:
                state.trigger.set()
            state.passes += 1
        except API_ERRORS as exc:
            log.warning("simulator pass failed: %s", describe_api_error(exc))
            state.everything_dirty = True
            await asyncio.sleep(1)
            state.trigger.set()
        except Exception:
            log.exception("simulator pass failed")
            state.everything_dirty = True
            await asyncio.sleep(2)
            state.trigger.set()


async def serve(config: SimConfig) -> None:
    """Start the informers and the loop; run until cancelled."""
    state = SimState(config)
    state.client = async_client(config.kubeconfig, config.context)
    try:
        informers = state.watch(state.client)
        await supervise(sim_loop(state), *(informer.run() for informer in informers))
    finally:
        await state.client.close()


def run_simulator(config: SimConfig) -> None:
    """Run until stopped (SIGINT/SIGTERM)."""
    run_controller(serve(config))
