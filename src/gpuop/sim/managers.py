"""Simulated nodes as managers other than the GPU Operator leave them (`--managed-by`).

A node of `gpuop sim node add --managed-by gke` carries what GKE's node pool and device
plugin leave on a real node (`catalog/managed-shapes.yaml`): the platform's labels, the
extended resources the plugin registered for the node's cards, and the plugin's pod bound
to the node (for NVIDIA's DRA driver, the ResourceSlice `gpuop.dra.publish` makes, as the
driver publishes it; for KubeVirt's own plugin, the KubeVirt CR's permitted entry for the
cards). `gpuop sim run` does not play such a node: its `gpuop.io/simulated`
label names the manager instead of `true`, so it stays as made, as a node whose plugin
gpuop does not run.
"""

from __future__ import annotations

from string import Template
from typing import Any, Final

from gpuop.api.cards import GpuCard
from gpuop.api.names import stable_suffix
from gpuop.api.resources import CONTAINER_RESOURCE
from gpuop.catalog import GpuModel, gpu_catalog, operand_table
from gpuop.catalog.managers import GPU_OPERATOR, ManagedShape, managed_shapes
from gpuop.dra.publish import gpu_uuid, publish
from gpuop.naming import PciDatabase, passthrough_resource

# What HAMi (and Volcano's vGPU plugin, HAMi's sibling) registers per card: shares, and
# cores in percent.
_HAMI_SHARES: Final = 10
_HAMI_CORES: Final = 100
# Tencent's GPU Manager registers a card as 100 vcuda-core units.
_TENCENT_CORES: Final = 100


def managers() -> tuple[str, ...]:
    """The managers a simulated node can be made as: the GPU Operator and each shape."""
    return (GPU_OPERATOR, *managed_shapes().shapes)


def shape_of(manager: str) -> ManagedShape | None:
    """The shape of `manager`'s nodes; None for the GPU Operator (the simulator's own)."""
    return managed_shapes().shapes.get(manager)


def _model(name: str) -> GpuModel:
    found = gpu_catalog().by_model(name)
    assert found is not None, name
    return found


def shape_labels(shape: ManagedShape, model: str, count: int) -> dict[str, str]:
    """The manager's node labels with the node's count, model and GKE accelerator."""
    accelerator = managed_shapes().gke_accelerators.get(model, f"nvidia-{model.lower()}")
    values = {"count": str(count), "model": model.lower(), "accelerator": accelerator}
    return {key: Template(value).safe_substitute(values) for key, value in shape.labels.items()}


def shape_resources(shape: ManagedShape, model: str, count: int) -> dict[str, str]:
    """The extended resources the manager's plugin registers for `count` cards."""
    if shape.resource == "container":
        return {CONTAINER_RESOURCE: str(count)}
    if shape.resource == "passthrough":
        name = passthrough_resource(_model(model).pci_device_id, PciDatabase.builtin())
        return {name.resource: str(count)}
    if shape.resource == "hami":
        return {CONTAINER_RESOURCE: str(count * _HAMI_SHARES)}
    if shape.resource == "volcano":
        return {
            "volcano.sh/vgpu-number": str(count * _HAMI_SHARES),
            "volcano.sh/vgpu-memory": str(count * _model(model).memory_mib),
            "volcano.sh/vgpu-cores": str(count * _HAMI_CORES),
        }
    if shape.resource == "aliyun":
        return {
            "aliyun.com/gpu-mem": str(count * (_model(model).memory_mib // 1024)),
            "aliyun.com/gpu-count": str(count),
        }
    if shape.resource == "tencent":
        return {
            "tencent.com/vcuda-core": str(count * _TENCENT_CORES),
            "tencent.com/vcuda-memory": str(count * (_model(model).memory_mib // 256)),
        }
    return {}


def _nvml_name(card: GpuCard) -> str:
    """The card's name as NVML gives it (`NVIDIA A10`; GFD's product label hyphenates it)."""
    return _model(card.model or "").product.replace("-", " ", 1)


def shape_annotations(shape: ManagedShape, node: str, cards: list[GpuCard]) -> dict[str, str]:
    """The manager's node annotations, with each card as HAMi registers it filled in: its
    UUID, shares, memory (MiB), cores (%), type, NUMA node and health."""
    register = "".join(
        f"{gpu_uuid(node, card)},{_HAMI_SHARES},{card.memory_mib},{_HAMI_CORES},"
        f"NVIDIA-{_nvml_name(card)},0,true:"
        for card in cards
    )
    values = {"count": str(len(cards)), "hami_register": register}
    return {k: Template(v).safe_substitute(values) for k, v in shape.annotations.items()}


def permitted_entry(shape: ManagedShape, model: str) -> tuple[str, dict[str, str]] | None:
    """(section, entry) of the KubeVirt CR's `permittedHostDevices` that lets KubeVirt's own
    plugin serve the node's cards (no `externalResourceProvider`); None for other managers."""
    if not shape.kubevirt_permits:
        return None
    card = _model(model)
    name = passthrough_resource(card.pci_device_id, PciDatabase.builtin())
    selector = card.pci_id.upper()
    return shape.kubevirt_permits, {"pciVendorSelector": selector, "resourceName": name.resource}


def shape_objects(
    shape: ManagedShape, node: str, cards: list[GpuCard], node_uid: str | None = None
) -> list[dict[str, Any]]:
    """The objects the manager runs for the node: its plugin's pod, and (NVIDIA's DRA
    driver) the ResourceSlice the driver publishes for the cards, owned by the Node
    `node_uid` names as the driver's kubelet plugin owns it."""
    objects: list[dict[str, Any]] = []
    if shape.pod is not None:
        pod = shape.pod
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{pod.daemonset}-{stable_suffix(f'{node}/{pod.daemonset}')}",
                    "namespace": pod.namespace,
                    "labels": dict(pod.labels),
                },
                "spec": {
                    "nodeName": node,
                    "containers": [{"name": "plugin", "image": pod.image}],
                    "tolerations": [{"operator": "Exists"}],
                },
            }
        )
    if shape.resource_slice:
        # The driver as it is by default: a `gpu-<minor>` device per card, no counters.
        objects += publish(
            node,
            cards,
            ("gpu",),
            shared_counters=False,
            # The driver version of the operator release gpuop renders by default.
            driver_version=operand_table().default_versions.get("driver") or "",
            node_uid=node_uid,
        )
    return objects


__all__ = [
    "managers",
    "permitted_entry",
    "shape_annotations",
    "shape_labels",
    "shape_objects",
    "shape_of",
    "shape_resources",
]
