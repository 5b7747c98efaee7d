"""The GPUs a node's machine has, by what provisioned it rather than by anything on the node.

Cloud provisioners label a node with its machine's GPU count (Karpenter on AWS and Azure,
EKS Auto Mode, GKE: `catalog/instance-gpus.yaml`), GKE's accelerator-optimized machine
types name it (`a3-highgpu-8g`), and the clouds' accelerator labels say a machine has NVIDIA
GPUs without counting them. A device plugin that registers fewer, or none, is what
`gpuop check` (GPU213, GPU214) and `gpuop explain` (a pod no node can take) point at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from gpuop.api.labels import INSTANCE_TYPE_LABEL, OS_LABEL
from gpuop.api.resources import RESOURCE_PREFIX
from gpuop.catalog.managers import gke_contract, instance_gpus, manager_catalog
from gpuop.manifests import QuantityError, parse_quantity
from gpuop.planner import gpu_detection


@cache
def _gke_machine_types() -> re.Pattern[str]:
    return re.compile(gke_contract().gpu_count_machine_types)


def machine_gpus(labels: Mapping[str, str]) -> tuple[int, str] | None:
    """(NVIDIA GPUs the node's machine has, the label that says so), or None."""
    table = instance_gpus()
    for entry in table.count_labels:
        raw = labels.get(entry.count)
        if raw is None:
            continue
        if entry.accelerator and not labels.get(entry.accelerator, "").startswith(table.nvidia):
            continue  # another accelerator's count (GKE's TPU nodes)
        maker = labels.get(entry.manufacturer) if entry.manufacturer else None
        if maker is not None and maker.lower() != table.nvidia:
            return None
        if raw.isdigit() and int(raw) > 0:
            return int(raw), f"{entry.count}={raw}"
        return None
    if gke_contract().labels.accelerator in labels:
        machine = _gke_machine_types().match(labels.get(INSTANCE_TYPE_LABEL, ""))
        if machine is not None:
            return int(machine.group("gpus")), f"machine type {machine.group(0)}"
    return None


def gpu_hardware(labels: Mapping[str, str]) -> tuple[int | None, str] | None:
    """(NVIDIA GPUs the node's machine has, None where uncounted; the label that says so),
    by what provisioned it, or None where nothing does or a device plugin is not wanted."""
    if labels.get(gke_contract().labels.no_default_plugin) == "true":
        return None  # GKE's pool for a DRA driver or the GPU Operator's plugin
    found = machine_gpus(labels)
    if found is not None:
        return found
    table = instance_gpus()
    for label in table.presence_labels:
        value = labels.get(label, "")
        if value.lower().startswith(table.nvidia):
            return None, f"{label}={value}"
    return None


@cache
def other_vendors_resources() -> frozenset[str]:
    """The resources other vendors' GPU sharing plugins register instead of NVIDIA's names
    (Volcano's `volcano.sh/vgpu-number`, Alibaba's `aliyun.com/gpu-mem`: managers.yaml)."""
    return frozenset(
        resource
        for spec in manager_catalog().managers.values()
        for resource in spec.strong.resources
        if not resource.startswith(RESOURCE_PREFIX)
    )


def shared_gpu_resources(resources: Mapping[str, Any]) -> dict[str, Any]:
    """The resources of `resources` (a node's allocatable) that another vendor's sharing
    plugin registers the cards under (`other_vendors_resources`) with a count above 0: its
    GPUs are served there, whatever NVIDIA's names say (ACK's sharing modes set
    `nvidia.com/gpu` to 0; Volcano's and Tencent's plugins register none)."""
    others = other_vendors_resources()
    return {
        name: value
        for name, value in resources.items()
        if name in others and positive_quantity(value)
    }


def positive_quantity(raw: Any) -> bool:
    """Whether a quantity as a node's status gives it is above 0 (False where it is none)."""
    try:
        return parse_quantity(raw) > 0
    except QuantityError:
        return False


def unadvertised_gpus(
    labels: Mapping[str, str],
    resources: Iterable[str],
    hardware: tuple[int | None, str] | None,
) -> tuple[int | None, str] | None:
    """(GPUs, the label that says so) where the node's machine has NVIDIA GPUs (`hardware`,
    the node's `gpu_hardware`, or NFD's label) and the node advertises no GPU resource at
    all, not NVIDIA's and not another vendor's; None otherwise, and on Windows nodes, where
    no Linux device plugin runs (AKS's Windows pools use DirectX's)."""
    if labels.get(OS_LABEL) == "windows":
        return None
    others = other_vendors_resources()
    if any(name.startswith(RESOURCE_PREFIX) or name in others for name in resources):
        return None
    if hardware is not None:
        return hardware
    nfd = gpu_detection(labels)
    return (None, f"{nfd}=true") if nfd is not None else None


__all__ = [
    "gpu_hardware",
    "machine_gpus",
    "other_vendors_resources",
    "positive_quantity",
    "shared_gpu_resources",
    "unadvertised_gpus",
]
