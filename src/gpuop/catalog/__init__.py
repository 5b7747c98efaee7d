"""The data gpuop decides with: the operand table and the GPU model catalog.

The YAML files beside this module are the single source of facts about operands, deploy
labels, GPU models and vGPU types. This module only loads and types them; every rule that
uses them lives in the planner and naming modules. Loaded once per process. The other
modules here (the version matrix, DRA, MIG, release labels) type their files on
`CatalogModel` and read them through `load_data_file`.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

WorkloadConfig = Literal["container", "vm-passthrough", "vm-vgpu"]
WORKLOAD_CONFIGS: tuple[WorkloadConfig, ...] = ("container", "vm-passthrough", "vm-vgpu")
SandboxMode = Literal["kubevirt", "kata"]
Advertises = Literal["gpu", "sandbox", "pgpu"]
Impact = Literal["gpu-workloads", "container-runtime", "new-pods-wait", "none"]


class CatalogModel(BaseModel):
    """The base of every catalog type: frozen, and a field the type does not name is an error."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class HostPath(CatalogModel):
    path: str
    writable: bool
    note: str | None = None


class HostFootprint(CatalogModel):
    privileged: bool
    host_pid: bool
    host_ipc: bool
    host_paths: tuple[HostPath, ...]
    writes: tuple[str, ...]
    kernel_modules: bool
    reboots_node: bool


class Restart(CatalogModel):
    """What restarting an operand's pod does to the node, and how far that reaches."""

    impact: Impact
    effect: str


class ImageDefaults(CatalogModel):
    repository: str | None
    image: str
    version_key: str | None


class Operand(CatalogModel):
    name: str
    state: str
    daemonset: str
    deploy_label: str
    policy_field: str | None
    enabled_default: bool
    image_block: str | None = None
    requires_sandbox: bool = False
    requires_mode: SandboxMode | None = None
    deprecated: bool = False
    extra_node_selector: dict[str, str] = Field(default_factory=dict)
    image_env: str
    image: ImageDefaults
    waits_for: tuple[str, ...]
    gate_files: tuple[str, ...]
    advertises: Advertises | None = None
    effects: tuple[str, ...]
    restart: Restart
    host: HostFootprint

    @property
    def spec_block(self) -> str | None:
        """The ClusterPolicy spec block holding this operand's image settings."""
        return self.image_block or self.policy_field


class PassthroughLabels(CatalogModel):
    kubevirt: tuple[str, ...]
    kata: tuple[str, ...]


class DeployLabelsByWorkload(CatalogModel):
    container: tuple[str, ...]
    vm_passthrough: PassthroughLabels = Field(alias="vm-passthrough")
    vm_vgpu: tuple[str, ...] = Field(alias="vm-vgpu")


class DeployLabels(CatalogModel):
    prefix: str
    by_workload: DeployLabelsByWorkload
    mig_manager_key: str
    dra_keys: tuple[str, ...]
    opt_out_key: str

    def keys_for(self, workload: WorkloadConfig, mode: SandboxMode) -> tuple[str, ...]:
        """The deploy-label keys (without prefix) a workload config sets."""
        if workload == "container":
            return self.by_workload.container
        if workload == "vm-passthrough":
            return getattr(self.by_workload.vm_passthrough, mode)  # type: ignore[no-any-return]
        return self.by_workload.vm_vgpu

    @property
    def known_keys(self) -> frozenset[str]:
        """Every deploy-label key the operator manages (and so may remove)."""
        keys = set(self.by_workload.container) | set(self.by_workload.vm_vgpu)
        keys |= set(self.by_workload.vm_passthrough.kubevirt)
        keys |= set(self.by_workload.vm_passthrough.kata)
        keys |= {self.mig_manager_key, *self.dra_keys}
        return frozenset(keys)


class GpuClusterOperand(CatalogModel):
    """An operand of the DRA stack (GPUCluster): never part of a ClusterPolicy's plan."""

    name: str
    stack: Literal["dra"]
    state: str
    daemonset: str
    app_label: str
    pod_labels: dict[str, str]
    service_account: str
    deploy_label: str
    spec_field: str | None
    enabled_default: bool
    image_env: str
    image: ImageDefaults
    default_version: str | None = None
    waits_for: tuple[str, ...]
    gate_files: tuple[str, ...]
    effects: tuple[str, ...]
    host: HostFootprint


class OperandTable(CatalogModel):
    schema_version: int
    deploy_labels: DeployLabels
    # The ClusterPolicy (device-plugin) stack's operands.
    operands: tuple[Operand, ...]
    # The GPUCluster (DRA) stack's operands.
    gpucluster_operands: tuple[GpuClusterOperand, ...] = ()
    default_versions: dict[str, str | None]

    def operand(self, name: str) -> Operand:
        for operand in self.operands:
            if operand.name == name:
                return operand
        raise KeyError(name)

    def gpucluster_operand(self, name: str) -> GpuClusterOperand:
        for operand in self.gpucluster_operands:
            if operand.name == name:
                return operand
        raise KeyError(name)

    def operand_for_daemonset(self, daemonset: str) -> str | None:
        """The operand a DaemonSet of this name runs, or None.

        This is how an operand pod is known, from its owner: the DaemonSet names are the
        same under NVIDIA's operator and gpuop, so pods of either are found alike. The
        precompiled driver's DaemonSets are named `<driver DaemonSet>-<kernel>-<os>`, the
        driver's and vGPU manager's on OpenShift `<DaemonSet>-<RHCOS version>`, and those an
        NVIDIADriver resource makes `nvidia-<driver type>-driver-<os>-<hash>`.
        """
        if self is operand_table():
            # Every pod event of a large cluster asks: the shipped table answers from an index.
            found = _operand_of_daemonset().get(daemonset)
            if found is not None:
                return found
        else:
            for operand in self.operands:
                if daemonset == operand.daemonset:
                    return operand.name
        for operand in self.operands:
            if operand.name in _PER_KERNEL_OPERANDS and daemonset.startswith(
                operand.daemonset + "-"
            ):
                return operand.name
        for prefix, operand_name in _DRIVER_RESOURCE_PREFIXES:
            if daemonset.startswith(prefix):
                return operand_name
        return None


# Operands whose DaemonSet upstream renders once per kernel version (precompiled drivers)
# or per RHCOS version (OpenShift's driver toolkit): `transformOpenShiftDriverToolkitContainer`.
_PER_KERNEL_OPERANDS = ("driver", "vgpu-manager")
# The DaemonSets of an NVIDIADriver resource (`getDriverAppName` in upstream's
# internal/state/driver.go), by its driver type: gpu, vgpu (guest) and vgpu-host-manager.
_DRIVER_RESOURCE_PREFIXES = (
    ("nvidia-gpu-driver-", "driver"),
    ("nvidia-vgpu-driver-", "driver"),
    ("nvidia-vgpu-host-manager-driver-", "vgpu-manager"),
)


@cache
def _operand_of_daemonset() -> dict[str, str]:
    return {operand.daemonset: operand.name for operand in operand_table().operands}


class VgpuTypeSpec(CatalogModel):
    framebuffer_mib: int
    max_per_gpu: int
    mig_backed: bool = False


class GpuModel(CatalogModel):
    model: str
    pci_device_id: str
    pci_name: str
    product: str
    memory_mib: int
    family: str
    compute_capability: str
    mig_capable: bool
    vgpu_name_prefix: str
    vgpu_types: dict[str, VgpuTypeSpec]
    default_vgpu_type: str

    @property
    def pci_id(self) -> str:
        """`10de:xxxx`, lower case."""
        return f"10de:{self.pci_device_id}"


class GpuCatalog(CatalogModel):
    schema_version: int
    gpus: tuple[GpuModel, ...]

    def by_model(self, model: str) -> GpuModel | None:
        wanted = model.strip().lower()
        for gpu in self.gpus:
            if gpu.model.lower() == wanted:
                return gpu
        return None

    def by_device_id(self, device_id: str) -> tuple[GpuModel, ...]:
        """Models with this PCI device id (several boards can share one, e.g. A2 and A16)."""
        wanted = device_id.lower().removeprefix("0x")
        return tuple(gpu for gpu in self.gpus if gpu.pci_device_id == wanted)

    def by_product(self, product: str) -> GpuModel | None:
        """The model whose GPU feature discovery product label is `product` (suffixes ignored)."""
        for gpu in self.gpus:
            if product == gpu.product or product.startswith(gpu.product + "-"):
                return gpu
        return None

    def model_for_vgpu_type(self, vgpu_type: str) -> GpuModel | None:
        for gpu in self.gpus:
            if vgpu_type in gpu.vgpu_types:
                return gpu
        return None


class VgpuDevice(CatalogModel):
    board: str
    default_type: str
    default_count: int


class VgpuFamily(CatalogModel):
    """vGPU types that share a name stem (`A10-12Q`, `A10-4C`: family `A10`), and the cards."""

    name: str
    mdev_prefix: Literal["NVIDIA", "GRID"]
    devices: dict[str, VgpuDevice] = Field(default_factory=dict)
    types: dict[str, int] = Field(default_factory=dict)

    @property
    def device_ids(self) -> tuple[str, ...]:
        return tuple(self.devices)


class VgpuFamilies(CatalogModel):
    """Every vGPU type NVIDIA's default vGPU config knows, by family (`vgpu-boards.yaml`)."""

    schema_version: int
    families: dict[str, VgpuFamily]

    def for_device(self, device_id: str) -> tuple[VgpuFamily, ...]:
        """Families whose types a card with this PCI device id takes (A2 and A16 share one)."""
        wanted = device_id.lower().removeprefix("0x")
        return tuple(f for f in self.families.values() if wanted in f.device_ids)

    def for_type(self, vgpu_type: str) -> VgpuFamily | None:
        if self is vgpu_families():
            return _family_of_type().get(vgpu_type)
        return next((f for f in self.families.values() if vgpu_type in f.types), None)


@cache
def _family_of_type() -> dict[str, VgpuFamily]:
    families = vgpu_families().families.values()
    return {name: family for family in families for name in family.types}


def load_data_yaml(text: str) -> object:
    """A shipped data file's YAML, with libyaml's safe loader where PyYAML has it.

    The pure-Python loader takes most of a short command's run on these files; the C one
    reads them alike (a unit test compares the two on every file here).
    """
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def load_data_file(name: str) -> object:
    """The YAML of the data file `name` beside this module."""
    return load_data_yaml(resources.files(__name__).joinpath(name).read_text(encoding="utf-8"))


@cache
def operand_table() -> OperandTable:
    """The operand table from `operands.yaml`."""
    return OperandTable.model_validate(load_data_file("operands.yaml"))


@cache
def vgpu_families() -> VgpuFamilies:
    """The vGPU type families from `vgpu-boards.yaml`."""
    raw = load_data_file("vgpu-boards.yaml")
    assert isinstance(raw, dict)
    families = {name: {"name": name, **body} for name, body in (raw.get("families") or {}).items()}
    return VgpuFamilies.model_validate({**raw, "families": families})


@cache
def gpu_catalog() -> GpuCatalog:
    """The GPU model catalog from `gpus.yaml`."""
    return GpuCatalog.model_validate(load_data_file("gpus.yaml"))
