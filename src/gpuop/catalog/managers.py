"""What can manage a node's GPUs, and the signals that name it (`managers.yaml`).

NVIDIA's GPU Operator is one of several: the standalone device plugin, NVIDIA's KubeVirt
plugin, the DRA driver, the managed clouds' stacks and other vendors' sharing plugins all
leave GPU nodes behind. Which one a node shows is a fact of those projects, kept in one
data file with its sources; this module only loads and types it.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import Field

from gpuop.catalog import CatalogModel, load_data_file
from gpuop.catalog.mig import instances_filling_a_card


class Signals(CatalogModel):
    """What on a node (or a pod on it) names a manager."""

    images: tuple[str, ...] = ()
    pod_labels: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    node_labels: tuple[str, ...] = ()
    node_label_prefixes: tuple[str, ...] = ()
    node_annotations: tuple[str, ...] = ()
    os_image: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    # Patterns of `<namespace>/<owner>` for pods known by name alone.
    pod_names: tuple[str, ...] = ()


class ManagerSpec(CatalogModel):
    title: str
    # Why a GPU node it manages advertises no GPU at all, and what to do (GPU214).
    no_gpu_resource: str = ""
    # Whether its plugin registers `nvidia.com/gpu` (two such on a node fight over it).
    serves_nvidia_gpu: bool
    source: str
    strong: Signals = Field(default_factory=Signals)
    weak: Signals = Field(default_factory=Signals)
    # Another manager whose plugin pods this one runs unchanged: on a node carrying one of
    # this manager's weak node labels (its platform's), those pods name this one.
    same_plugin_as: str | None = None


class ManagerCatalog(CatalogModel):
    schema_version: int
    no_manager_no_gpu_resource: str
    managers: dict[str, ManagerSpec]


@cache
def manager_catalog() -> ManagerCatalog:
    """The managers of `managers.yaml`, in the file's order."""
    return ManagerCatalog.model_validate(load_data_file("managers.yaml"))


class GkeLabels(CatalogModel):
    accelerator: str
    sharing_strategy: str
    max_shared_clients: str
    partition_size: str
    # On a pool whose GPUs a DRA driver or the GPU Operator's plugin serves instead.
    no_default_plugin: str


class GkeContract(CatalogModel):
    """How GKE's own device plugin counts `nvidia.com/gpu` from its node pool's labels."""

    schema_version: int
    labels: GkeLabels
    gpu_count_machine_types: str
    # The PCI device (mig-parted's device filter) of each MIG-capable accelerator label.
    accelerators: dict[str, str]

    def partitions(self, accelerator: str, profile: str) -> int | None:
        """How many `profile` partitions GKE makes of one `accelerator` card, or None when
        the accelerator or the profile is unknown."""
        device = self.accelerators.get(accelerator)
        return instances_filling_a_card(device, profile) if device is not None else None


@cache
def gke_contract() -> GkeContract:
    """`gke.yaml`."""
    return GkeContract.model_validate(load_data_file("gke.yaml"))


class InstanceGpuLabel(CatalogModel):
    count: str
    # A label whose value, where set, must be `nvidia`.
    manufacturer: str = ""
    # A label that must name an NVIDIA GPU (start with `nvidia`) for the count to be read.
    accelerator: str = ""


class InstanceGpus(CatalogModel):
    """The labels a provisioner sets with the GPU count of a node's machine."""

    schema_version: int
    count_labels: tuple[InstanceGpuLabel, ...]
    # Labels whose value (starting with `nvidia`) says the machine has NVIDIA GPUs, uncounted.
    presence_labels: tuple[str, ...]
    nvidia: str


@cache
def instance_gpus() -> InstanceGpus:
    """`instance-gpus.yaml`."""
    return InstanceGpus.model_validate(load_data_file("instance-gpus.yaml"))


class ShapePod(CatalogModel):
    daemonset: str
    namespace: str
    labels: dict[str, str]
    image: str


class ManagedShape(CatalogModel):
    """How a node another manager serves looks (`managed-shapes.yaml`)."""

    nfd: bool
    labels: dict[str, str]
    resource: str
    annotations: dict[str, str] = Field(default_factory=dict)
    pod: ShapePod | None = None
    resource_slice: bool = False
    # status.nodeInfo.osImage, where the OS carries the plugin (Bottlerocket's variants).
    os_image: str = ""
    # KubeVirt's own plugin: the KubeVirt CR's `permittedHostDevices` section that permits
    # the node's cards without an external provider, so KubeVirt's plugin serves them.
    kubevirt_permits: str = ""


class ManagedShapes(CatalogModel):
    schema_version: int
    shapes: dict[str, ManagedShape]
    gke_accelerators: dict[str, str]


@cache
def managed_shapes() -> ManagedShapes:
    """`managed-shapes.yaml`: the simulator's nodes of managers other than the GPU Operator."""
    return ManagedShapes.model_validate(load_data_file("managed-shapes.yaml"))


class GpuCondition(CatalogModel):
    platform: str
    severity: Literal["error", "warning"]
    says: str
    fix: str


class GpuConditions(CatalogModel):
    """Node conditions a platform's problem detector sets True for GPU faults."""

    schema_version: int
    conditions: dict[str, GpuCondition]


@cache
def gpu_conditions() -> GpuConditions:
    """`gpu-conditions.yaml`."""
    return GpuConditions.model_validate(load_data_file("gpu-conditions.yaml"))


GPU_OPERATOR = "gpu-operator"
DEVICE_PLUGIN = "nvidia-device-plugin"

__all__ = [
    "DEVICE_PLUGIN",
    "GPU_OPERATOR",
    "GkeContract",
    "GpuCondition",
    "GpuConditions",
    "InstanceGpus",
    "ManagedShape",
    "ManagedShapes",
    "ManagerCatalog",
    "ManagerSpec",
    "Signals",
    "gke_contract",
    "gpu_conditions",
    "instance_gpus",
    "managed_shapes",
    "manager_catalog",
]
