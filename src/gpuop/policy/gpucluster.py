"""The GPUCluster (`nvidia.com/v1alpha1`) as typed models, field for field with upstream.

GPUCluster is NVIDIA GPU Operator's second stack (v26.7.0): the DRA driver and DRA-aware
validator and DCGM operands instead of the device plugin. It does not manage the driver
(host-installed, an NVIDIADriver CR, or a ClusterPolicy's driver on the same node). It is
a cluster-scoped singleton named `gpu-cluster`. The blocks it reuses from ClusterPolicy
(dcgm, dcgmExporter, daemonsets) are the ClusterPolicy models; the CRD gpuop ships is
upstream's own (`deploy/helm/gpuop/crds/gpuclusters.nvidia.com.yaml`), and a unit test
keeps these models' field tree equal to its schema.

Defaults are upstream's controller's, applied once by `parse_gpu_cluster` into
`ResolvedGpuCluster`: dcgm off and dcgm-exporter on when `enabled` is unset,
computeDomains on when its block is given (the CRD's default) and off without it, health checks on ports 51516 (gpus) and 51515
(computeDomains), driverInstallDir `/run/nvidia/driver`, kubeletRootDir `/var/lib/kubelet`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from gpuop.catalog import load_data_yaml, operand_table
from gpuop.policy import PolicyError, validation_problems
from gpuop.policy.models import (
    Condition,
    DaemonsetsSpec,
    DcgmExporterSpec,
    DcgmSpec,
    EnvVar,
    Name,
    ObjectMeta,
    ResourceRequirements,
    ShortString,
    Spec,
)

GROUP = "nvidia.com"
VERSION = "v1alpha1"
KIND = "GPUCluster"
PLURAL = "gpuclusters"
API_VERSION = f"{GROUP}/{VERSION}"
# Upstream's CRD: `self.metadata.name == 'gpu-cluster'`.
SINGLETON_NAME = "gpu-cluster"

GPUS_HEALTHCHECK_PORT = 51516
COMPUTE_DOMAINS_HEALTHCHECK_PORT = 51515
DEFAULT_DRIVER_INSTALL_DIR = "/run/nvidia/driver"
DEFAULT_KUBELET_ROOT_DIR = "/var/lib/kubelet"


class DraHealthcheckSpec(Spec):
    enabled: bool | None = None
    port: Annotated[int, Field(ge=1, le=65535)] | None = None


class DraKubeletPluginSpec(Spec):
    env: list[EnvVar] | None = None
    resources: ResourceRequirements | None = None
    healthcheck: DraHealthcheckSpec | None = None


class DraControllerSpec(Spec):
    env: list[EnvVar] | None = None
    resources: ResourceRequirements | None = None


class DraGpusSpec(Spec):
    kubeletPlugin: DraKubeletPluginSpec | None = None


class DraComputeDomainsSpec(Spec):
    enabled: bool | None = None
    controller: DraControllerSpec | None = None
    kubeletPlugin: DraKubeletPluginSpec | None = None


class DraDriverSpec(Spec):
    repository: ShortString | None = None
    image: Annotated[str, Field(pattern=r"^[a-zA-Z0-9\-]+$")] | None = None
    version: ShortString | None = None
    imagePullPolicy: ShortString | None = None
    imagePullSecrets: list[Name] | None = None
    featureGates: dict[str, bool] | None = None
    gpus: DraGpusSpec | None = None
    computeDomains: DraComputeDomainsSpec | None = None


class GpuClusterHostPaths(Spec):
    """Upstream's v1alpha1 HostPathsSpec: no rootFS (the DRA stack's host root is `/`)."""

    driverInstallDir: ShortString | None = None
    kubeletRootDir: ShortString | None = None


class GpuClusterSpec(Spec):
    draDriver: DraDriverSpec
    dcgm: DcgmSpec | None = None
    dcgmExporter: DcgmExporterSpec | None = None
    hostPaths: GpuClusterHostPaths | None = None
    daemonsets: DaemonsetsSpec | None = None


class GpuClusterStatus(Spec):
    state: Literal["ready", "notReady", "disabled"]
    namespace: Name | None = None
    conditions: list[Condition] | None = None


class GpuCluster(Spec):
    apiVersion: Literal["nvidia.com/v1alpha1"] = "nvidia.com/v1alpha1"
    kind: Literal["GPUCluster"] = "GPUCluster"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: GpuClusterSpec
    status: GpuClusterStatus | None = None


class GpuClusterError(PolicyError):
    """A GPUCluster that does not validate: every problem, its field path named."""

    def __init__(self, problems: list[str], source: str = "GPUCluster") -> None:
        super().__init__(problems, source)


@dataclass(frozen=True)
class ResolvedGpuCluster:
    """A GPUCluster with upstream's controller defaults applied."""

    model: GpuCluster
    dcgm_enabled: bool
    dcgm_exporter_enabled: bool
    compute_domains_enabled: bool
    gpus_healthcheck_port: int | None
    compute_domains_healthcheck_port: int | None
    driver_install_dir: str
    kubelet_root_dir: str

    @property
    def name(self) -> str:
        return self.model.metadata.name

    @property
    def spec(self) -> GpuClusterSpec:
        return self.model.spec

    def operand_enabled(self, name: str) -> bool:
        """Whether this GPUCluster deploys the DRA-stack operand `name` (operand table)."""
        if name == "dcgm-dra":
            return self.dcgm_enabled
        if name == "dcgm-exporter-dra":
            return self.dcgm_exporter_enabled
        return True

    def enabled_operands(self) -> tuple[str, ...]:
        return tuple(
            op.name for op in operand_table().gpucluster_operands if self.operand_enabled(op.name)
        )


def _healthcheck_port(plugin: DraKubeletPluginSpec | None, default: int) -> int | None:
    """Upstream resolveHealthcheckPort: None when disabled (no probes)."""
    check = plugin.healthcheck if plugin else None
    if check is not None and check.enabled is False:
        return None
    if check is not None and check.port is not None:
        return check.port
    return default


def resolve_gpu_cluster(model: GpuCluster) -> ResolvedGpuCluster:
    spec = model.spec
    driver = spec.draDriver
    domains = driver.computeDomains
    host = spec.hostPaths or GpuClusterHostPaths()
    return ResolvedGpuCluster(
        model=model,
        # Upstream dcgmEnabled(): nil means off on the DRA stack.
        dcgm_enabled=bool(spec.dcgm and spec.dcgm.enabled),
        dcgm_exporter_enabled=not (spec.dcgmExporter and spec.dcgmExporter.enabled is False),
        # The CRD defaults computeDomains.enabled to true where computeDomains is given;
        # without the block IsComputeDomainsEnabled is false.
        compute_domains_enabled=domains is not None and domains.enabled is not False,
        gpus_healthcheck_port=_healthcheck_port(
            driver.gpus.kubeletPlugin if driver.gpus else None, GPUS_HEALTHCHECK_PORT
        ),
        compute_domains_healthcheck_port=_healthcheck_port(
            domains.kubeletPlugin if domains else None, COMPUTE_DOMAINS_HEALTHCHECK_PORT
        ),
        driver_install_dir=host.driverInstallDir or DEFAULT_DRIVER_INSTALL_DIR,
        kubelet_root_dir=host.kubeletRootDir or DEFAULT_KUBELET_ROOT_DIR,
    )


def parse_gpu_cluster(obj: Any, source: str = "GPUCluster") -> ResolvedGpuCluster:
    """Validate a GPUCluster object (a dict) and apply the controller's defaults."""
    if not isinstance(obj, dict):
        raise GpuClusterError(["expected a mapping (a GPUCluster object)"], source)
    kind = obj.get("kind")
    if kind is not None and kind != KIND:
        raise GpuClusterError([f"kind: expected {KIND}, got {kind!r}"], source)
    try:
        model = GpuCluster.model_validate(obj)
    except ValidationError as error:
        raise GpuClusterError(validation_problems(error), source) from None
    name = model.metadata.name
    if name and name != SINGLETON_NAME:
        raise GpuClusterError(
            [
                f"metadata.name: GPUCluster is a singleton, metadata.name must be"
                f" {SINGLETON_NAME!r} (got {name!r})"
            ],
            source,
        )
    return resolve_gpu_cluster(model)


def default_gpu_cluster_object() -> dict[str, Any]:
    """The GPUCluster the Helm chart of upstream's 26.7.0 creates with `gpuCluster.deployCR`."""
    driver = operand_table().gpucluster_operand("dra-driver")
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": SINGLETON_NAME},
        "spec": {
            "draDriver": {
                "repository": driver.image.repository,
                "image": driver.image.image,
                "version": driver.default_version,
                "imagePullPolicy": "IfNotPresent",
                "computeDomains": {"enabled": True},
            },
            "dcgm": {"enabled": False},
            "dcgmExporter": {"enabled": True},
            "hostPaths": {"driverInstallDir": DEFAULT_DRIVER_INSTALL_DIR},
            "daemonsets": {
                "priorityClassName": "system-node-critical",
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                ],
                "updateStrategy": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "1"},
            },
        },
    }


@cache
def _crd_document() -> dict[str, Any]:
    path = resources.files("gpuop.catalog").joinpath("deploy", "gpucluster-crd.yaml")
    loaded = load_data_yaml(path.read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def gpu_cluster_crd_manifest() -> dict[str, Any]:
    """Upstream's GPUCluster CustomResourceDefinition, as a new object."""
    import copy

    return copy.deepcopy(_crd_document())
