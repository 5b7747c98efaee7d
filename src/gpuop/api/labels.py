"""Every label and annotation key gpuop reads or writes, spelled once.

Why this module exists: the same keys were written out in the planner, the operator, the
renderer, the simulator, the checker, the version checks and the lab, and a typo in one of
them is a rule that silently never fires. Import the constant instead of spelling the key.

Keys are grouped by who owns them: gpuop itself (`gpuop.io/`), the GPU Operator and its
operands (`nvidia.com/`), NFD (`feature.node.kubernetes.io/`), KubeVirt and Kubernetes.
The deploy labels' keys (`nvidia.com/gpu.deploy.<key>`) come from the operand table;
only their prefix is here, and a unit test keeps it equal to the table's.
"""

from __future__ import annotations

from typing import Final

# --- gpuop's own (gpuop.io/) -------------------------------------------------------------

GPUOP_PREFIX: Final = "gpuop.io/"
# On every object gpuop renders for an operand: the operand's name in the operand table.
OPERAND_LABEL: Final = "gpuop.io/operand"
# On a simulated (kwok) node.
SIM_LABEL: Final = "gpuop.io/simulated"
# Node annotation: a JSON card list describing the node's GPUs (an optional hint).
INVENTORY_ANNOTATION: Final = "gpuop.io/gpu-inventory"
# Node or ClusterPolicy annotation: `true` switches a workload config (or applies a vGPU
# config) although pods still use the node's GPUs.
FORCE_SWITCH_ANNOTATION: Final = "gpuop.io/force-workload-switch"
# On any object in a dump: checker codes (globs too) not to report for that object.
IGNORE_ANNOTATION: Final = "gpuop.io/ignore"

# --- the GPU Operator's (nvidia.com/) ----------------------------------------------------

NVIDIA_PREFIX: Final = "nvidia.com/"
# On every object the operator applies: the hash of what it applied.
HASH_ANNOTATION: Final = "nvidia.com/last-applied-hash"
# Not a label: the env var of a driver pod's containers that carries the hash of its
# install settings (the driver upgrade restarts in place while it is unchanged).
DRIVER_CONFIG_DIGEST_ENV: Final = "DRIVER_CONFIG_DIGEST"
# Not a label: the name of the Lease NVIDIA's operator leads under (its leader election
# ID), in its namespace; gpuop takes the same one.
LEADER_ELECTION_ID: Final = "53822513.nvidia.com"
# Not a label: the ConfigMap NVIDIA's operator ships its default vGPU device config in (in
# its namespace), and the name the ClusterPolicy's vgpuDeviceManager.config defaults to.
DEFAULT_VGPU_CONFIGMAP: Final = "default-vgpu-devices-config"
# `nvidia.com/gpu.deploy.<key>`: which operands run on a node (keys: the operand table).
DEPLOY_LABEL_PREFIX: Final = "nvidia.com/gpu.deploy."
WORKLOAD_LABEL: Final = "nvidia.com/gpu.workload.config"
GPU_PRESENT_LABEL: Final = "nvidia.com/gpu.present"
VGPU_CONFIG_LABEL: Final = "nvidia.com/vgpu.config"
VGPU_CONFIG_STATE_LABEL: Final = "nvidia.com/vgpu.config.state"
VGPU_HOST_DRIVER_LABEL: Final = "nvidia.com/vgpu.host-driver-version"
MIG_CONFIG_LABEL: Final = "nvidia.com/mig.config"
MIG_CONFIG_STATE_LABEL: Final = "nvidia.com/mig.config.state"
PRECOMPILED_LABEL: Final = "nvidia.com/precompiled"
# The taint GPU nodes may carry; operand pods tolerate it.
GPU_TAINT_KEY: Final = "nvidia.com/gpu"

# GPU feature discovery's labels.
GPU_PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
GPU_COUNT_LABEL: Final = "nvidia.com/gpu.count"
GPU_MEMORY_LABEL: Final = "nvidia.com/gpu.memory"
GPU_FAMILY_LABEL: Final = "nvidia.com/gpu.family"
GPU_COMPUTE_MAJOR_LABEL: Final = "nvidia.com/gpu.compute.major"
GPU_COMPUTE_MINOR_LABEL: Final = "nvidia.com/gpu.compute.minor"
GPU_REPLICAS_LABEL: Final = "nvidia.com/gpu.replicas"
GPU_SHARING_STRATEGY_LABEL: Final = "nvidia.com/gpu.sharing-strategy"
GPU_MODE_LABEL: Final = "nvidia.com/gpu.mode"
MIG_CAPABLE_LABEL: Final = "nvidia.com/mig.capable"
MPS_CAPABLE_LABEL: Final = "nvidia.com/mps.capable"
DRIVER_VERSION_MAJOR_LABEL: Final = "nvidia.com/cuda.driver-version.major"
DRIVER_VERSION_MINOR_LABEL: Final = "nvidia.com/cuda.driver-version.minor"
DRIVER_VERSION_REVISION_LABEL: Final = "nvidia.com/cuda.driver-version.revision"
DRIVER_VERSION_LABEL: Final = "nvidia.com/cuda.driver-version.full"
CUDA_RUNTIME_MAJOR_LABEL: Final = "nvidia.com/cuda.runtime-version.major"
CUDA_RUNTIME_MINOR_LABEL: Final = "nvidia.com/cuda.runtime-version.minor"
CUDA_RUNTIME_LABEL: Final = "nvidia.com/cuda.runtime-version.full"
# Spellings of GPU feature discovery before the `-version` labels.
LEGACY_DRIVER_LABELS: Final = (
    "nvidia.com/cuda.driver.major",
    "nvidia.com/cuda.driver.minor",
    "nvidia.com/cuda.driver.rev",
)
LEGACY_RUNTIME_LABELS: Final = ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor")
# Per node and per run of GPU feature discovery: never part of what a node is.
GFD_TIMESTAMP_LABEL: Final = "nvidia.com/gfd.timestamp"
# Every label GPU feature discovery writes from the cards and the driver, in its order.
GFD_LABELS: Final = (
    GPU_PRODUCT_LABEL,
    GPU_COUNT_LABEL,
    GPU_MEMORY_LABEL,
    GPU_FAMILY_LABEL,
    GPU_COMPUTE_MAJOR_LABEL,
    GPU_COMPUTE_MINOR_LABEL,
    GPU_REPLICAS_LABEL,
    GPU_SHARING_STRATEGY_LABEL,
    GPU_MODE_LABEL,
    MIG_CAPABLE_LABEL,
    DRIVER_VERSION_MAJOR_LABEL,
    DRIVER_VERSION_MINOR_LABEL,
    DRIVER_VERSION_REVISION_LABEL,
    DRIVER_VERSION_LABEL,
    CUDA_RUNTIME_MAJOR_LABEL,
    CUDA_RUNTIME_MINOR_LABEL,
    CUDA_RUNTIME_LABEL,
)

# The driver upgrade controller's (upstream's `k8s-operator-libs` upgrade package).
UPGRADE_STATE_LABEL: Final = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_SKIP_LABEL: Final = "nvidia.com/gpu-driver-upgrade.skip"
DRAIN_SKIP_LABEL: Final = "nvidia.com/gpu-driver-upgrade-drain.skip"
UPGRADE_ENABLED_ANNOTATION: Final = "nvidia.com/gpu-driver-upgrade-enabled"
UPGRADE_REQUESTED_ANNOTATION: Final = "nvidia.com/gpu-driver-upgrade-requested"
INITIAL_UNSCHEDULABLE_ANNOTATION: Final = (
    "nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable"
)
WAIT_FOR_COMPLETION_ANNOTATION: Final = (
    "nvidia.com/gpu-driver-upgrade-wait-for-pod-completion-start-time"
)
VALIDATION_START_ANNOTATION: Final = "nvidia.com/gpu-driver-upgrade-validation-start-time"
SAFE_LOAD_ANNOTATION: Final = "nvidia.com/gpu-driver-upgrade.driver-wait-for-safe-load"

# --- NFD's (feature.node.kubernetes.io/) ----------------------------------------------

NFD_PREFIX: Final = "feature.node.kubernetes.io/"
NFD_PCI_PREFIX: Final = "feature.node.kubernetes.io/pci-"
# A node has NVIDIA GPUs when one of these is `true` (NVIDIA's default NFD rules write the
# first; the class-qualified ones come from other NFD configurations).
NFD_NVIDIA_PCI_LABEL: Final = "feature.node.kubernetes.io/pci-10de.present"
NFD_GPU_LABELS: Final = (
    NFD_NVIDIA_PCI_LABEL,
    "feature.node.kubernetes.io/pci-0302_10de.present",
    "feature.node.kubernetes.io/pci-0300_10de.present",
)
NFD_SRIOV_LABEL: Final = "feature.node.kubernetes.io/pci-10de.sriov.capable"
NFD_IOMMU_LABEL: Final = "feature.node.kubernetes.io/iommu-enabled"
NFD_OS_ID: Final = "feature.node.kubernetes.io/system-os_release.ID"
# Set by OpenShift's machine-config daemon on every node it manages (`rhcos`, `rhel`).
OPENSHIFT_OS_LABEL: Final = "node.openshift.io/os_id"
NFD_OS_VERSION_ID: Final = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
NFD_OS_VERSION_MAJOR: Final = "feature.node.kubernetes.io/system-os_release.VERSION_ID.major"
NFD_OS_VERSION_MINOR: Final = "feature.node.kubernetes.io/system-os_release.VERSION_ID.minor"
NFD_KERNEL: Final = "feature.node.kubernetes.io/kernel-version.full"
NFD_KERNEL_MAJOR: Final = "feature.node.kubernetes.io/kernel-version.major"
NFD_KERNEL_MINOR: Final = "feature.node.kubernetes.io/kernel-version.minor"
NFD_KERNEL_REVISION: Final = "feature.node.kubernetes.io/kernel-version.revision"

# Labels whose change may change a node's plan: the planner reads nothing else.
PLANNED_LABEL_PREFIXES: Final = (NVIDIA_PREFIX, NFD_PREFIX)

# --- Kubernetes' and the ecosystem's ----------------------------------------------------

MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
# The value of MANAGED_BY_LABEL on the objects gpuop applies (their own metadata).
MANAGED_BY: Final = "gpuop"
# The value of MANAGED_BY_LABEL in operand pod templates: NVIDIA's operator's, so that the
# templates of both operators are the same and a change of operator rolls no pod.
OPERAND_POD_MANAGED_BY: Final = "gpu-operator"
APP_NAME_LABEL: Final = "app.kubernetes.io/name"
APP_COMPONENT_LABEL: Final = "app.kubernetes.io/component"
APP_VERSION_LABEL: Final = "app.kubernetes.io/version"
APP_PART_OF_LABEL: Final = "app.kubernetes.io/part-of"
HELM_CHART_LABEL: Final = "helm.sh/chart"
# The cloud machine type the kubelet reports (`a2-highgpu-2g`, `Standard_NC24ads_A100_v4`).
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"
# OLM labels what it installs from a ClusterServiceVersion with the CSV's name
# (`gpu-operator-certified.v25.10.0` on OpenShift) and kind.
OLM_OWNER_LABEL: Final = "olm.owner"
OLM_OWNER_KIND_LABEL: Final = "olm.owner.kind"
# Upstream's operand pods are found by their `app` label.
APP_LABEL: Final = "app"
# A DaemonSet pod's revision.
REVISION_LABEL: Final = "controller-revision-hash"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
OS_LABEL: Final = "kubernetes.io/os"
ARCH_LABEL: Final = "kubernetes.io/arch"
# A static (mirror) pod: never evicted.
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
# KubeVirt's: a node virt-handler runs on, and a launcher pod's VMI and domain.
KUBEVIRT_SCHEDULABLE_LABEL: Final = "kubevirt.io/schedulable"
KUBEVIRT_CREATED_BY_LABEL: Final = "kubevirt.io/created-by"
KUBEVIRT_DOMAIN_ANNOTATION: Final = "kubevirt.io/domain"
KUBEVIRT_LABEL: Final = "kubevirt.io"
# kwok's: the nodes its controller keeps Ready.
KWOK_NODE_ANNOTATION: Final = "kwok.x-k8s.io/node"


def deploy_label(key: str) -> str:
    """`device-plugin` -> `nvidia.com/gpu.deploy.device-plugin`."""
    return DEPLOY_LABEL_PREFIX + key


VGPU_DEVICE_MANAGER_DEPLOY_LABEL: Final = deploy_label("vgpu-device-manager")
DEVICE_PLUGIN_DEPLOY_LABEL: Final = deploy_label("device-plugin")
DRIVER_DEPLOY_LABEL: Final = deploy_label("driver")

# The DRA stack's (GPUCluster) deploy labels, as upstream's state_manager.go spells them.
DRA_DRIVER_DEPLOY_LABEL: Final = deploy_label("dra-driver")
DRA_VALIDATOR_DEPLOY_LABEL: Final = deploy_label("dra-validator")
DCGM_DRA_DEPLOY_LABEL: Final = deploy_label("dcgm-dra")
DCGM_EXPORTER_DRA_DEPLOY_LABEL: Final = deploy_label("dcgm-exporter-dra")
DRA_DEPLOY_LABELS: Final = (
    DRA_DRIVER_DEPLOY_LABEL,
    DRA_VALIDATOR_DEPLOY_LABEL,
    DCGM_DRA_DEPLOY_LABEL,
    DCGM_EXPORTER_DRA_DEPLOY_LABEL,
)
# gpuop's extension: which stack a node runs when a ClusterPolicy and a GPUCluster both
# exist (`device-plugin` or `dra`; see docs/gpucluster.md). Under `nvidia.com/` so that a
# change of it re-plans the node like every other planned label.
GPU_STACK_LABEL: Final = "nvidia.com/gpu.stack"
# The label NVIDIA's install guide has users put on the nodes its DRA driver's kubelet plugin
# serves: the chart's nodeSelector, and the driver manager's NODE_LABEL_FOR_GPU_POD_EVICTION.
DRA_PLUGIN_NODE_LABEL: Final = "nvidia.com/dra-kubelet-plugin"
# The namespace label kube-scheduler requires before it admits adminAccess claims.
DRA_ADMIN_ACCESS_NAMESPACE_LABEL: Final = "resource.kubernetes.io/admin-access"
