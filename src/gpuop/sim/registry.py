"""The simulated machines' hardware, kept where only the simulator looks.

A real GPU server's cards are on its PCI bus, not on its Node object: the device plugins,
GPU feature discovery and the vGPU device manager find them there and publish what they
find. The simulator's PCI bus is the `gpuop-sim-hardware` ConfigMaps in its namespace, one
key per node holding the node's cards as JSON. A ConfigMap holds at most 1 MiB (about
5,000 two-card machines), so the machines are spread over `HARDWARE_SHARDS` of them by a
hash of the node name: `gpuop-sim-hardware` and `gpuop-sim-hardware-1` to `-15`.
`add_nodes` registers a machine's cards there before creating its Node, so the simulator
never sees a node without hardware.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from gpuop.api.cards import GpuCard, decode_cards
from gpuop.kube import ops
from gpuop.kube.client import KubeClient, SyncKubeClient
from gpuop.kube.errors import NotFound
from gpuop.sim.hardware import (
    HARDWARE_CONFIGMAP,
    NodeSpec,
    SimError,
    cards_for,
    hardware_entries,
    node_manifest,
)
from gpuop.sim.managers import permitted_entry, shape_objects, shape_of

DEFAULT_NAMESPACE = "gpu-operator"
# 16 MiB in all: ninety thousand two-card machines, twenty thousand of eight cards.
HARDWARE_SHARDS = 16


def hardware_configmap(node: str) -> str:
    """The ConfigMap that holds `node`'s cards."""
    shard = zlib.crc32(node.encode()) % HARDWARE_SHARDS
    return HARDWARE_CONFIGMAP if shard == 0 else f"{HARDWARE_CONFIGMAP}-{shard}"


def hardware_configmaps() -> list[str]:
    return [HARDWARE_CONFIGMAP, *(f"{HARDWARE_CONFIGMAP}-{i}" for i in range(1, HARDWARE_SHARDS))]


def _by_configmap(entries: Mapping[str, str | None]) -> dict[str, dict[str, str | None]]:
    shards: dict[str, dict[str, str | None]] = {}
    for node, value in entries.items():
        shards.setdefault(hardware_configmap(node), {})[node] = value
    return shards


def parse_hardware(data: Mapping[str, str] | None) -> dict[str, tuple[GpuCard, ...]]:
    """node name -> cards, from the ConfigMap's data (unreadable entries are left out)."""
    machines: dict[str, tuple[GpuCard, ...]] = {}
    for name, text in (data or {}).items():
        cards, _problem = decode_cards(text)
        if cards is not None:
            machines[name] = cards
    return machines


def register_hardware(client: SyncKubeClient, specs: Sequence[NodeSpec], namespace: str) -> None:
    """Record the cards of these machines (one write per ConfigMap they land in)."""
    if specs:
        ops.ensure_namespace_sync(client, namespace)
        entries: dict[str, str | None] = dict(hardware_entries(list(specs)))
        for name, data in sorted(_by_configmap(entries).items()):
            ops.merge_configmap_data_sync(client, name, namespace, data)


def forget_hardware(client: SyncKubeClient, names: Sequence[str], namespace: str) -> None:
    for name, data in sorted(_by_configmap(dict.fromkeys(names)).items()):
        ops.merge_configmap_data_sync(client, name, namespace, data)


def hardware_of(client: SyncKubeClient, namespace: str) -> dict[str, tuple[GpuCard, ...]]:
    """Every registered machine's cards."""
    return _merged(
        ops.configmap_data_sync(client, name, namespace) for name in hardware_configmaps()
    )


async def read_hardware(client: KubeClient, namespace: str) -> dict[str, tuple[GpuCard, ...]]:
    """Every registered machine's cards (the simulator's asynchronous read)."""
    return _merged(
        await asyncio.gather(
            *(ops.configmap_data(client, name, namespace) for name in hardware_configmaps())
        )
    )


def _merged(parts: Iterable[Mapping[str, str] | None]) -> dict[str, tuple[GpuCard, ...]]:
    """The machines of every hardware ConfigMap (None: one that does not exist yet)."""
    data: dict[str, str] = {}
    for part in parts:
        data.update(part or {})
    return parse_hardware(data)


def add_nodes(
    client: SyncKubeClient,
    specs: Sequence[NodeSpec],
    namespace: str = DEFAULT_NAMESPACE,
    progress: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Register the machines' cards, then create their Nodes (and, for a node another
    manager serves, that manager's objects for it: `gpuop.sim.managers`); the created Nodes.
    Nodes of KubeVirt's own plugin have their cards permitted in the KubeVirt CR first."""
    permitted: dict[str, list[dict[str, str]]] = {}
    for spec in specs:
        shape = shape_of(spec.managed_by)
        entry = permitted_entry(shape, spec.gpu) if shape is not None else None
        if entry is not None and entry[1] not in permitted.get(entry[0], []):
            permitted.setdefault(entry[0], []).append(entry[1])
    if permitted:
        # Before any node: a cluster that does not serve KubeVirt's CRD refuses it here.
        try:
            ops.permit_host_devices_sync(client, permitted)
        except NotFound as exc:
            raise SimError(
                "nodes managed by kubevirt need KubeVirt's CRD (kubevirts.kubevirt.io), which"
                " the cluster does not serve: install KubeVirt first"
            ) from exc
    register_hardware(client, specs, namespace)
    created = []
    namespaces: set[str] = set()
    for done, spec in enumerate(specs, 1):
        node = ops.create_object_sync(client, node_manifest(spec))
        created.append(node)
        shape = shape_of(spec.managed_by)
        if shape is not None:
            uid = (node.get("metadata") or {}).get("uid")
            for obj in shape_objects(shape, spec.name, cards_for(spec), uid):
                where = (obj.get("metadata") or {}).get("namespace")
                if where and where not in namespaces:
                    ops.ensure_namespace_sync(client, where)
                    namespaces.add(where)
                ops.create_object_sync(client, obj)
        if progress is not None:
            progress(done)
    return created


__all__ = [
    "DEFAULT_NAMESPACE",
    "add_nodes",
    "forget_hardware",
    "hardware_configmap",
    "hardware_configmaps",
    "hardware_of",
    "parse_hardware",
    "read_hardware",
    "register_hardware",
]
