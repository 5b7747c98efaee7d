"""The ClusterPolicy (`nvidia.com/v1`) as typed models, field for field with upstream.

Field names are the upstream CRD's own (camelCase), so an existing ClusterPolicy parses
unchanged. Unknown fields are errors here, as they are for `kubectl apply` with the
server's strict field validation, and so are values of the wrong type (never coerced).
`enabled` switches keep `None` for "not set"; the upstream nil-defaults are applied once,
by `gpuop.policy.parse`, into `ResolvedPolicy`.
The CRD schema is generated from these models (see `gpuop.policy.crd`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

IntOrString = Annotated[int | str, Field(json_schema_extra={"x-kubernetes-int-or-string": True})]
ShortString = Annotated[str, Field(max_length=1024)]
Name = Annotated[str, Field(max_length=253)]
ImagePullPolicy = Literal["Always", "Never", "IfNotPresent"]
WorkloadConfigName = Literal["container", "vm-passthrough", "vm-vgpu"]


class Spec(BaseModel):
    """Base for every block: unknown fields are rejected, names are upstream's.

    Strict, as the API server's schema is: `enabled: "yes"` or `hostPort: "80"` are type
    errors, never coerced.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class OpenObject(BaseModel):
    """A block whose inner structure gpuop passes through without interpreting it."""

    model_config = ConfigDict(
        extra="allow", json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}
    )


class EnvVar(Spec):
    name: Annotated[str, Field(min_length=1, max_length=253)]
    value: ShortString | None = None


class ResourceRequirements(Spec):
    limits: dict[str, IntOrString] | None = None
    requests: dict[str, IntOrString] | None = None


class Toleration(Spec):
    key: Name | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: Name | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: int | None = None


class ComponentSpec(Spec):
    """The image and pod block most operands share."""

    enabled: bool | None = None
    repository: ShortString | None = None
    image: ShortString | None = None
    version: ShortString | None = None
    imagePullPolicy: ImagePullPolicy | None = None
    imagePullSecrets: list[Name] | None = None
    resources: ResourceRequirements | None = None
    args: list[ShortString] | None = None
    env: list[EnvVar] | None = None
    hostNetwork: bool | None = None


class ConfigRef(Spec):
    name: Name | None = None
    default: Name | None = None


class ProbeSpec(Spec):
    initialDelaySeconds: Annotated[int, Field(ge=0)] | None = None
    timeoutSeconds: Annotated[int, Field(ge=1)] | None = None
    periodSeconds: Annotated[int, Field(ge=1)] | None = None
    successThreshold: Annotated[int, Field(ge=1)] | None = None
    failureThreshold: Annotated[int, Field(ge=1)] | None = None


class MetricsSpec(Spec):
    serviceMonitor: OpenObject | None = None


class OperatorSpec(Spec):
    defaultRuntime: Literal["docker", "crio", "containerd"] | None = None
    runtimeClass: Name | None = None
    initContainer: ComponentSpec | None = None
    labels: dict[str, ShortString] | None = None
    annotations: dict[str, ShortString] | None = None
    metrics: MetricsSpec | None = None
    use_ocp_driver_toolkit: bool | None = None


# A DaemonSet's maxUnavailable: a non-negative count or a percentage ("1" is read as 1, as
# upstream does). The bounds sit on the int-or-string node, where the API server applies
# `minimum` to integers and `pattern` to strings only.
MaxUnavailable = Annotated[
    Annotated[int, Field(ge=0)] | Annotated[str, Field(pattern=r"^[0-9]+%?$")],
    Field(
        json_schema_extra={
            "x-kubernetes-int-or-string": True,
            "minimum": 0,
            "pattern": "^[0-9]+%?$",
        }
    ),
]


class RollingUpdateSpec(Spec):
    maxUnavailable: MaxUnavailable | None = None


class DaemonsetsSpec(Spec):
    labels: dict[str, ShortString] | None = None
    annotations: dict[str, ShortString] | None = None
    tolerations: list[Toleration] | None = None
    priorityClassName: Name | None = None
    updateStrategy: Literal["RollingUpdate", "OnDelete"] | None = None
    rollingUpdate: RollingUpdateSpec | None = None
    podSecurityContext: OpenObject | None = None


class RdmaSpec(Spec):
    enabled: bool | None = None
    useHostMofed: bool | None = None


class LicensingConfig(Spec):
    configMapName: Name | None = None
    secretName: Name | None = None
    nlsEnabled: bool | None = None


class NamedConfig(Spec):
    name: Name | None = None


class RepoConfig(Spec):
    configMapName: Name | None = None


class VirtualTopologyConfig(Spec):
    config: Name | None = None


class DriverManagerSpec(Spec):
    repository: ShortString | None = None
    image: ShortString | None = None
    version: ShortString | None = None
    imagePullPolicy: ImagePullPolicy | None = None
    imagePullSecrets: list[Name] | None = None
    env: list[EnvVar] | None = None


class PodDeletionSpec(Spec):
    force: bool | None = None
    timeoutSeconds: Annotated[int, Field(ge=0)] | None = None
    deleteEmptyDir: bool | None = None


class WaitForCompletionSpec(Spec):
    podSelector: ShortString | None = None
    timeoutSeconds: Annotated[int, Field(ge=0)] | None = None


class DrainSpec(Spec):
    enable: bool | None = None
    force: bool | None = None
    podSelector: ShortString | None = None
    timeoutSeconds: Annotated[int, Field(ge=0)] | None = None
    deleteEmptyDir: bool | None = None


class DriverUpgradePolicySpec(Spec):
    """k8s-operator-libs' `DriverUpgradePolicySpec`, field for field."""

    autoUpgrade: bool | None = None
    maxParallelUpgrades: Annotated[int, Field(ge=0)] | None = None
    maxUnavailable: MaxUnavailable | None = None
    podDeletion: PodDeletionSpec | None = None
    waitForCompletion: WaitForCompletionSpec | None = None
    drain: DrainSpec | None = None


class DriverSpec(ComponentSpec):
    useNvidiaDriverCRD: bool | None = None
    usePrecompiled: bool | None = None
    useOpenKernelModules: bool | None = None
    kernelModuleType: Literal["auto", "open", "proprietary"] | None = None
    startupProbe: ProbeSpec | None = None
    livenessProbe: ProbeSpec | None = None
    readinessProbe: ProbeSpec | None = None
    rdma: RdmaSpec | None = None
    upgradePolicy: DriverUpgradePolicySpec | None = None
    manager: DriverManagerSpec | None = None
    repoConfig: RepoConfig | None = None
    certConfig: NamedConfig | None = None
    licensingConfig: LicensingConfig | None = None
    virtualTopology: VirtualTopologyConfig | None = None
    kernelModuleConfig: NamedConfig | None = None
    secretEnv: Name | None = None


class ToolkitSpec(ComponentSpec):
    installDir: ShortString | None = None


class MpsSpec(Spec):
    root: ShortString | None = None


class DevicePluginSpec(ComponentSpec):
    config: ConfigRef | None = None
    mps: MpsSpec | None = None


class DcgmSpec(ComponentSpec):
    hostPort: Annotated[int, Field(ge=0, le=65535)] | None = None


class ServiceSpec(Spec):
    type: Literal["ClusterIP", "NodePort", "LoadBalancer"] | None = None
    internalTrafficPolicy: Literal["Cluster", "Local"] | None = None


class HpcJobMapping(Spec):
    enabled: bool | None = None
    directory: ShortString | None = None


class DcgmExporterSpec(ComponentSpec):
    config: NamedConfig | None = None
    serviceMonitor: OpenObject | None = None
    service: ServiceSpec | None = None
    hostPID: bool | None = None
    hpcJobMapping: HpcJobMapping | None = None
    enablePodLabels: bool | None = None
    enablePodUID: bool | None = None
    podLabelAllowlistRegex: list[ShortString] | None = None
    annotations: dict[str, ShortString] | None = None


class MigSpec(Spec):
    strategy: Literal["none", "single", "mixed"] | None = None


class MigConfigRef(Spec):
    """Custom mig-parted configuration for the MIG manager."""

    name: Name | None = None
    # Upstream's CRD default, applied by the API server once `config` is set. Its enum
    # (`all-disabled` or `""`) is not enforced: another value writes no mig.config label,
    # as upstream's operator compares with `all-disabled`.
    default: Name | None = Field(default=None, json_schema_extra={"default": "all-disabled"})


class MigManagerSpec(ComponentSpec):
    config: MigConfigRef | None = None
    gpuClientsConfig: NamedConfig | None = None


class ValidatorComponent(Spec):
    env: list[EnvVar] | None = None


class ValidatorSpec(ComponentSpec):
    plugin: ValidatorComponent | None = None
    toolkit: ValidatorComponent | None = None
    driver: ValidatorComponent | None = None
    cuda: ValidatorComponent | None = None
    vfioPCI: ValidatorComponent | None = None
    vgpuManager: ValidatorComponent | None = None
    vgpuDevices: ValidatorComponent | None = None


class EnabledOnly(Spec):
    enabled: bool | None = None


class SandboxWorkloadsSpec(Spec):
    enabled: bool | None = None
    defaultWorkload: WorkloadConfigName | None = Field(
        default=None, json_schema_extra={"default": "container"}
    )
    mode: Literal["kubevirt", "kata"] | None = Field(
        default=None, json_schema_extra={"default": "kubevirt"}
    )


class VfioManagerSpec(ComponentSpec):
    driverManager: DriverManagerSpec | None = None


class VgpuManagerSpec(ComponentSpec):
    driverManager: DriverManagerSpec | None = None
    kernelModuleConfig: NamedConfig | None = None


class VgpuDeviceManagerSpec(ComponentSpec):
    config: ConfigRef | None = None


class CdiSpec(Spec):
    enabled: bool | None = None
    default: bool | None = None
    nriPluginEnabled: bool | None = None


class KataManagerSpec(ComponentSpec):
    config: OpenObject | None = None


class CcManagerSpec(ComponentSpec):
    defaultMode: Literal["on", "off", "devtools"] | None = None


class HostPathsSpec(Spec):
    rootFS: ShortString | None = None
    driverInstallDir: ShortString | None = None
    kubeletRootDir: ShortString | None = None


class ClusterPolicySpec(Spec):
    operator: OperatorSpec | None = None
    daemonsets: DaemonsetsSpec | None = None
    driver: DriverSpec | None = None
    toolkit: ToolkitSpec | None = None
    devicePlugin: DevicePluginSpec | None = None
    dcgm: DcgmSpec | None = None
    dcgmExporter: DcgmExporterSpec | None = None
    gfd: ComponentSpec | None = None
    mig: MigSpec | None = None
    migManager: MigManagerSpec | None = None
    nodeStatusExporter: ComponentSpec | None = None
    validator: ValidatorSpec | None = None
    psp: EnabledOnly | None = None
    psa: EnabledOnly | None = None
    gds: ComponentSpec | None = None
    gdrcopy: ComponentSpec | None = None
    sandboxWorkloads: SandboxWorkloadsSpec | None = None
    vfioManager: VfioManagerSpec | None = None
    sandboxDevicePlugin: ComponentSpec | None = None
    kataSandboxDevicePlugin: ComponentSpec | None = None
    vgpuManager: VgpuManagerSpec | None = None
    vgpuDeviceManager: VgpuDeviceManagerSpec | None = None
    cdi: CdiSpec | None = None
    kataManager: KataManagerSpec | None = None
    ccManager: CcManagerSpec | None = None
    hostPaths: HostPathsSpec | None = None


class Condition(Spec):
    type: Name
    status: Literal["True", "False", "Unknown"]
    reason: Annotated[str, Field(max_length=1024)]
    message: Annotated[str, Field(max_length=32768)] = ""
    lastTransitionTime: str | None = None
    observedGeneration: int | None = None


class NotReadyNode(Spec):
    """A GPU node that is not ready yet, and what it waits for (a gpuop addition)."""

    name: Name
    workload: ShortString = ""
    waitingFor: list[ShortString] = Field(default_factory=list)
    held: bool = False
    message: ShortString = ""


class NodesSummary(Spec):
    """Per-node bring-up at a glance (a gpuop addition to the upstream status)."""

    gpuNodes: int = 0
    readyNodes: int = 0
    byWorkload: dict[str, int] = Field(default_factory=dict)
    notReady: list[NotReadyNode] = Field(default_factory=list)


class ClusterPolicyStatus(Spec):
    state: Literal["ignored", "ready", "notReady"] | None = None
    namespace: Name | None = None
    conditions: list[Condition] | None = None
    nodes: NodesSummary | None = None


class ObjectMeta(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: Name = ""
    creationTimestamp: str | None = None
    generation: int | None = None
    uid: str | None = None
    resourceVersion: str | None = None


class ClusterPolicy(Spec):
    apiVersion: Literal["nvidia.com/v1"] = "nvidia.com/v1"
    kind: Literal["ClusterPolicy"] = "ClusterPolicy"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ClusterPolicySpec = Field(default_factory=ClusterPolicySpec)
    status: ClusterPolicyStatus | None = None


def drop_none(value: Any) -> Any:
    """A plain JSON-able copy without unset fields (for printing what the user wrote)."""
    if isinstance(value, dict):
        return {k: drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_none(v) for v in value]
    return value
