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

import logging
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from gpuop.api.cards import GpuCard
from gpuop.api.labels import DEFAULT_VGPU_CONFIGMAP, SIM_LABEL
from gpuop.catalog import operand_table
from gpuop.kube import KubeconfigSource, async_client, ops
from gpuop.kube.client import KubeClient
from gpuop.kube.controller import (
    BoundedWriter,
    ControllerLoop,
    LoopSettings,
    Outcome,
    Trigger,
    WriteOverlay,
    replace,
    resource_version,
    wait_synced,
)
from gpuop.kube.informer import Informer
from gpuop.kube.running import run_controller, supervise
from gpuop.naming import PciDatabase
from gpuop.sim.dra_loop import DraState, dra_loop
from gpuop.sim.effects import NodeChanges, OperandPod, node_changes
from gpuop.sim.hostroot import configure_host_runtime
from gpuop.sim.registry import read_hardware
from gpuop.vgpu import VgpuConfigError, VgpuConfigFile, default_vgpu_config, parse_vgpu_config

log = logging.getLogger("gpuop.sim")


@dataclass
class SimConfig:
    namespace: str
    hosts_dir: Path
    kubeconfig: KubeconfigSource = None
    context: str | None = None
    pci_db: PciDatabase = field(default_factory=PciDatabase.builtin)
    debounce_seconds: float = 0.1
    write_concurrency: int = 32
    # The DRA driver's publication: gpuop's race-free one, or NVIDIA's two-faced one.
    dra_shared_counters: bool = True


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
    owner = next(
        (o for o in meta.get("ownerReferences") or [] if o.get("kind") == "DaemonSet"), None
    )
    # Known by the DaemonSet that runs it, whichever operator made the DaemonSet.
    operand = operand_table().operand_for_daemonset(str(owner.get("name") or "")) if owner else None
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
        self.trigger = Trigger()
        self.client: Any = None
        self.nodes: Informer[dict[str, Any]] | None = None
        self.pods: Informer[tuple[str, OperandPod]] | None = None
        self.overlay: WriteOverlay[dict[str, Any], dict[str, Any]] = WriteOverlay(replace)
        self.writer = BoundedWriter(config.write_concurrency)
        self.last_config_check = 0.0
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

    def watch(self, client: KubeClient) -> list[Informer[Any]]:
        self.nodes = Informer(
            client, "Node", _slim_node, self._node_changed, labels={SIM_LABEL: "true"}
        )
        self.pods = Informer(
            client,
            "Pod",
            _pod_entry,
            self._pod_changed,
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
        """The node as the informer has it, or as this simulator last wrote it if newer."""
        node = None if self.nodes is None else self.nodes.store.get(name)
        if node is None:
            self.overlay.forget(name)
            return None
        return self.overlay.view(name, dict(node), resource_version(node))

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
    data = await ops.configmap_data(state.client, DEFAULT_VGPU_CONFIGMAP, state.config.namespace)
    text = (data or {}).get("config.yaml")
    if text is None or text == state.vgpu_config_text:
        return False
    state.vgpu_config_text = text
    try:
        state.vgpu_config = parse_vgpu_config(yaml.safe_load(text))
    except (VgpuConfigError, yaml.YAMLError) as exc:
        log.warning("ConfigMap %s is not a valid vGPU config: %s", DEFAULT_VGPU_CONFIGMAP, exc)
    return True


async def _apply(state: SimState, name: str, changes: NodeChanges) -> None:
    result = None
    if changes.labels:
        result = await ops.patch_node(state.client, name, labels=changes.labels)
    if changes.resources:
        result = await ops.patch_node_resources(state.client, name, changes.resources) or result
    if result is not None:
        state.overlay.wrote(name, resource_version(result), _slim_node(result))


async def _refresh_hardware(state: SimState) -> None:
    state.hardware = await read_hardware(state.client, state.config.namespace)


CONFIG_CHECK_SECONDS = 5.0
RESYNC_SECONDS = 30.0


@dataclass(frozen=True)
class SimSnapshot:
    """The nodes a pass looks at (None: deleted), with what the simulator knows of them."""

    nodes: dict[str, dict[str, Any] | None]
    hardware: dict[str, tuple[GpuCard, ...]]
    host: dict[str, dict[str, str]]
    pods: dict[str, dict[str, OperandPod]]
    vgpu_config: VgpuConfigFile


@dataclass(frozen=True)
class NodeWork:
    name: str
    host_before: dict[str, str]
    changes: NodeChanges


@dataclass
class SimDecision:
    gone: list[str] = field(default_factory=list)
    work: list[NodeWork] = field(default_factory=list)


class SimPasses:
    """The simulator's part of the controller loop: the changed nodes, their effects, writes."""

    def __init__(self, state: SimState) -> None:
        self.state = state

    async def snapshot(self, resync: bool) -> SimSnapshot:
        state = self.state
        if resync:
            state.everything_dirty = True
        if time.monotonic() - state.last_config_check > CONFIG_CHECK_SECONDS:
            state.last_config_check = time.monotonic()
            if await _refresh_vgpu_config(state):
                state.everything_dirty = True
        names = state.take_dirty()
        nodes = {
            name: state.node(name)
            for name in sorted(state.node_names() if names is None else names)
        }
        # A machine registers its cards before its Node is made: read them again for new nodes.
        if any(node is not None and name not in state.hardware for name, node in nodes.items()):
            await _refresh_hardware(state)
        present = [name for name, node in nodes.items() if node is not None]
        return SimSnapshot(
            nodes=nodes,
            hardware={n: state.hardware.get(n, ()) for n in present},
            host={n: state.host.get(n, {}) for n in present},
            pods={n: state.pods_on(n) for n in present},
            vgpu_config=state.vgpu_config,
        )

    def decide(self, snapshot: SimSnapshot) -> SimDecision:
        decision = SimDecision()
        for name, node in snapshot.nodes.items():
            if node is None:
                decision.gone.append(name)
                continue
            changes = node_changes(
                node,
                snapshot.hardware[name],
                snapshot.host[name],
                snapshot.pods[name],
                snapshot.vgpu_config,
                self.state.config.pci_db,
            )
            decision.work.append(NodeWork(name, snapshot.host[name], changes))
        return decision

    async def execute(self, decision: SimDecision) -> Outcome:
        state = self.state
        for name in decision.gone:
            state.host.pop(name, None)
        host_changed = False
        for item in decision.work:
            name, changes = item.name, item.changes
            if changes.host != item.host_before:
                # The host moved on (a driver loaded, devices made): look at the node again.
                state.host[name] = changes.host
                state.dirty.add(name)
                host_changed = True
            wants_runtime = bool(changes.configure_runtime)
            if state.runtime_configured.get(name) != wants_runtime:
                configure_host_runtime(state.config.hosts_dir / name, wants_runtime)
                state.runtime_configured[name] = wants_runtime
        await state.writer.gather(
            partial(_apply, state, item.name, item.changes)
            for item in decision.work
            if item.changes
        )
        state.passes += 1
        return Outcome(again=host_changed)

    def failed(self, error: BaseException) -> None:
        # The nodes this pass took are not done: look at every node again.
        self.state.everything_dirty = True


async def sim_loop(state: SimState) -> None:
    await wait_synced(i for i in (state.nodes, state.pods) if i is not None)
    log.info("ready: simulating %d nodes", len(state.node_names()))
    settings = LoopSettings(
        what="simulator pass",
        resync_seconds=RESYNC_SECONDS,
        debounce_seconds=state.config.debounce_seconds,
    )
    await ControllerLoop(SimPasses(state), state.trigger, settings, log).run()


async def serve(config: SimConfig) -> None:
    """Start the informers and the loop; run until cancelled."""
    state = SimState(config)
    state.client = async_client(config.kubeconfig, config.context)
    dra = DraState(config.namespace, config.dra_shared_counters, config.write_concurrency)
    dra.client = state.client
    try:
        informers = state.watch(state.client) + dra.watch(state.client)
        await supervise(sim_loop(state), dra_loop(dra), *(informer.run() for informer in informers))
    finally:
        await state.client.close()


def run_simulator(config: SimConfig) -> None:
    """Run until stopped (SIGINT/SIGTERM)."""
    run_controller(serve(config))
