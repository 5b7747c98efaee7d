"""The simulated machines' hardware, kept where only the simulator looks.

A real GPU server's cards are on its PCI bus, not on its Node object: the device plugins,
GPU feature discovery and the vGPU device manager find them there and publish what they
find. The simulator's PCI bus is the `gpuop-sim-hardware` ConfigMap in its namespace, one
key per node holding the node's cards as JSON. `add_nodes` registers a machine's cards
there before creating its Node, so the simulator never sees a node without hardware.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpuop.api.cards import GpuCard, decode_cards
from gpuop.kube import ops
from gpuop.sim.hardware import HARDWARE_CONFIGMAP, NodeSpec, hardware_entries, node_manifest

DEFAULT_NAMESPACE = "gpu-operator"


def parse_hardware(data: Mapping[str, str] | None) -> dict[str, tuple[GpuCard, ...]]:
    """node name -> cards, from the ConfigMap's data (unreadable entries are left out)."""
    machines: dict[str, tuple[GpuCard, ...]] = {}
    for name, text in (data or {}).items():
        cards, _problem = decode_cards(text)
        if cards is not None:
            machines[name] = cards
    return machines


def register_hardware(client: Any, specs: Sequence[NodeSpec], namespace: str) -> None:
    """Record the cards of these machines (one write for all of them)."""
    if specs:
        ops.ensure_namespace_sync(client, namespace)
        ops.merge_configmap_data_sync(
            client, HARDWARE_CONFIGMAP, namespace, hardware_entries(list(specs))
        )


def forget_hardware(client: Any, names: Sequence[str], namespace: str) -> None:
    if names:
        ops.merge_configmap_data_sync(client, HARDWARE_CONFIGMAP, namespace, dict.fromkeys(names))


def hardware_of(client: Any, namespace: str) -> dict[str, tuple[GpuCard, ...]]:
    """Every registered machine's cards."""
    return parse_hardware(ops.configmap_data_sync(client, HARDWARE_CONFIGMAP, namespace))


def add_nodes(
    client: Any,
    specs: Sequence[NodeSpec],
    namespace: str = DEFAULT_NAMESPACE,
    progress: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Register the machines' cards, then create their Nodes; the created Nodes."""
    register_hardware(client, specs, namespace)
    created = []
    for done, spec in enumerate(specs, 1):
        created.append(ops.create_node(client, node_manifest(spec)))
        if progress is not None:
            progress(done)
    return created


__all__ = [
    "DEFAULT_NAMESPACE",
    "add_nodes",
    "forget_hardware",
    "hardware_of",
    "parse_hardware",
    "register_hardware",
]
