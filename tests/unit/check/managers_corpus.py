"""Dumps shaped as each GPU manager leaves its nodes, healthy and drifted (`tests/corpus/managers`).

Run as a script to rewrite the JSON files after changing a shape:

    .venv/bin/python tests/unit/check/managers_corpus.py

The shapes follow what each project documents (sources in `catalog/managers.yaml`): the
standalone device plugin's Helm chart (release `nvdp`, pods labelled
`app.kubernetes.io/name`), GPU feature discovery's labels (`nvidia.com/gpu.replicas`,
`nvidia.com/gpu.sharing-strategy` under time-slicing and MPS), AKS's device plugin manifest
(`name: nvidia-device-plugin-ds` in kube-system), GKE's `nvidia-gpu-device-plugin`
DaemonSet, Bottlerocket's NVIDIA variant (no plugin pod: the OS runs it), NVIDIA's KubeVirt
GPU device plugin, KubeVirt's own PCI and mediated-device plugins (`permittedHostDevices`
without `externalResourceProvider`), NVIDIA's DRA driver (ResourceSlices of
`gpu.nvidia.com`) and HAMi's sharing resources.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "managers"
NFD = "feature.node.kubernetes.io/pci-10de.present"


def _node(
    name: str,
    labels: dict[str, str],
    resources: dict[str, str],
    os_image: str = "Ubuntu 22.04.5 LTS",
) -> dict[str, Any]:
    allocatable = {"cpu": "32", "memory": "128Gi", "pods": "110", **resources}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "00000000-0000-0000-0000-000000000000",
                "containerRuntimeVersion": "containerd://1.7.23",
                "kernelVersion": "6.1.0",
                "kubeProxyVersion": "v1.31.4",
                "kubeletVersion": "v1.31.4",
                "machineID": "0" * 32,
                "operatingSystem": "linux",
                "osImage": os_image,
                "systemUUID": "00000000-0000-0000-0000-000000000000",
            },
        },
    }


def _pod(
    name: str,
    node: str,
    daemonset: str,
    labels: dict[str, str],
    image: str,
    namespace: str = "kube-system",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": daemonset,
                    "controller": True,
                }
            ],
        },
        "spec": {"nodeName": node, "containers": [{"name": "plugin", "image": image}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "plugin", "ready": True, "restartCount": 0}],
        },
    }


def _gfd(product: str, count: int, **extra: str) -> dict[str, str]:
    return {
        NFD: "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": "40960",
        "nvidia.com/gpu.family": "ampere",
        "nvidia.com/gpu.machine": "PowerEdge-R750xa",
        "nvidia.com/cuda.driver.major": "550",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        **extra,
    }


_NVDP = "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
# The operands the GPU Operator labels every container node for.
_OPERANDS = (
    "driver",
    "container-toolkit",
    "operator-validator",
    "device-plugin",
    "gpu-feature-discovery",
    "dcgm",
    "dcgm-exporter",
    "node-status-exporter",
)


def _deploy_labels(*more: str) -> dict[str, str]:
    """The GPU Operator's `nvidia.com/gpu.deploy.*=true` labels, with `more` operands'."""
    return {f"nvidia.com/gpu.deploy.{operand}": "true" for operand in (*_OPERANDS, *more)}


def _cluster_policy(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": spec,
    }


def _standalone(node: str) -> list[dict[str, Any]]:
    return [
        _pod(
            f"nvdp-nvidia-device-plugin-{node}",
            node,
            "nvdp-nvidia-device-plugin",
            {
                "app.kubernetes.io/name": "nvidia-device-plugin",
                "app.kubernetes.io/instance": "nvdp",
            },
            _NVDP,
            "nvidia-device-plugin",
        ),
        _pod(
            f"nvdp-gpu-feature-discovery-{node}",
            node,
            "nvdp-gpu-feature-discovery",
            {
                "app.kubernetes.io/name": "gpu-feature-discovery",
                "app.kubernetes.io/instance": "nvdp",
            },
            _NVDP,
            "nvidia-device-plugin",
        ),
    ]


def standalone(gpus: str = "4") -> list[dict[str, Any]]:
    node = _node("nvdp-1", _gfd("NVIDIA-A100-SXM4-40GB", 4), {"nvidia.com/gpu": gpus})
    return [node, *_standalone("nvdp-1")]


def _chart_daemonset(
    mig_strategy: str | None = None, default: str = "", configmap: str = "nvdp-configs"
) -> dict[str, Any]:
    """The plugin DaemonSet as the chart renders it with `config.map` (upstream's
    `templates/daemonset-device-plugin.yml`): a config-manager init container and sidecar
    with DEFAULT_CONFIG and FALLBACK_STRATEGIES, the plugin container with MIG_STRATEGY
    when `migStrategy` is set, the ConfigMap mounted as `available-configs`."""
    manager_env = [
        {"name": "NODE_LABEL", "value": "nvidia.com/device-plugin.config"},
        {"name": "DEFAULT_CONFIG", "value": default},
        {"name": "FALLBACK_STRATEGIES", "value": "named,single"},
    ]
    plugin_env = [{"name": "MPS_ROOT", "value": "/run/nvidia/mps"}]
    if mig_strategy is not None:
        plugin_env.append({"name": "MIG_STRATEGY", "value": mig_strategy})
    manager = {"image": _NVDP, "command": ["config-manager"], "env": manager_env}
    labels = {
        "app.kubernetes.io/name": "nvidia-device-plugin",
        "app.kubernetes.io/instance": "nvdp",
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvdp-nvidia-device-plugin", "namespace": "nvidia-device-plugin"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "initContainers": [{"name": "nvidia-device-plugin-init", **manager}],
                    "containers": [
                        {"name": "nvidia-device-plugin-sidecar", **manager},
                        {
                            "name": "nvidia-device-plugin-ctr",
                            "image": _NVDP,
                            "command": ["nvidia-device-plugin"],
                            "env": plugin_env,
                        },
                    ],
                    "volumes": [
                        {"name": "available-configs", "configMap": {"name": configmap}},
                        {"name": "config", "emptyDir": {}},
                    ],
                },
            },
        },
    }


def mig_flag() -> list[dict[str, Any]]:
    """MIG under the chart's `migStrategy=mixed` (the plugin's MIG_STRATEGY), with a config
    file that sets no strategy: the flag wins, so mixed names are right."""
    objects = mig(labelled="mixed")
    config = objects[-1]
    config["data"]["a100-mig"] = "version: v1\n"
    return [*objects, _chart_daemonset(mig_strategy="mixed")]


def default_config(renamed: bool = False) -> list[dict[str, Any]]:
    """A node without `nvidia.com/device-plugin.config`: the config-manager falls back to
    the ConfigMap's `default` key (the chart's `named` strategy), here time-slicing."""
    objects = time_slicing()
    node = objects[0]
    del node["metadata"]["labels"]["nvidia.com/device-plugin.config"]
    config = objects[-1]
    config["data"] = {
        "default": config["data"]["a100-ts"].replace(
            "renameByDefault: false", f"renameByDefault: {'true' if renamed else 'false'}"
        )
    }
    return [*objects, _chart_daemonset()]


def missing_config() -> list[dict[str, Any]]:
    """The node's config label names a key the plugin's ConfigMap does not have."""
    objects = time_slicing()
    objects[0]["metadata"]["labels"]["nvidia.com/device-plugin.config"] = "a100-ts8"
    return [*objects, _chart_daemonset()]


def hand_labelled() -> list[dict[str, Any]]:
    """Nodes alone from a standalone-plugin cluster whose guide had users set
    `nvidia.com/gpu.present=true` by hand (the label the operator's NFD rule sets too)."""
    labels = {**_gfd("Tesla-T4", 1), "nvidia.com/gpu.present": "true"}
    return [_node("t4-1", labels, {"nvidia.com/gpu": "1"})]


def _plugin_config(replicas: int, rename: bool) -> dict[str, Any]:
    """The chart's config ConfigMap (`config.map`), key `a100-ts`: time-slicing."""
    config = (
        "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n"
        f"    renameByDefault: {'true' if rename else 'false'}\n"
        f"    resources:\n    - name: nvidia.com/gpu\n      replicas: {replicas}\n"
    )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nvdp-configs", "namespace": "nvidia-device-plugin"},
        "data": {"default": "version: v1\n", "a100-ts": config},
    }


def time_slicing(
    gpus: str = "8", renamed: bool = False, applied: bool = True
) -> list[dict[str, Any]]:
    """Two GPUs shared four ways; `renamed`: `renameByDefault: true` (`nvidia.com/gpu.shared`);
    not `applied`: the plugin still runs without sharing (GFD reports 1 replica)."""
    labels = _gfd(
        "NVIDIA-A100-SXM4-40GB",
        2,
        **{
            "nvidia.com/device-plugin.config": "a100-ts",
            "nvidia.com/gpu.replicas": "4",
            "nvidia.com/gpu.sharing-strategy": "time-slicing",
        },
    )
    if not applied:
        labels["nvidia.com/gpu.replicas"] = "1"
        labels["nvidia.com/gpu.sharing-strategy"] = "none"
    resource = "nvidia.com/gpu.shared" if renamed else "nvidia.com/gpu"
    node = _node("ts-1", labels, {resource: gpus})
    return [node, *_standalone("ts-1"), _plugin_config(4, renamed)]


def _gfd_unaware(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GPU feature discovery installed by its own chart, without the plugin's config: it
    labels the shared GPUs as not shared (NVIDIA/k8s-device-plugin#732)."""
    node = objects[0]
    node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "1"
    node["metadata"]["labels"]["nvidia.com/gpu.sharing-strategy"] = "none"
    return objects


def _mig_config(strategy: str) -> dict[str, Any]:
    """The chart's config ConfigMap with key `a100-mig`: `flags.migStrategy: <strategy>`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nvdp-configs", "namespace": "nvidia-device-plugin"},
        "data": {
            "default": "version: v1\n",
            "a100-mig": f"version: v1\nflags:\n  migStrategy: {strategy}\n",
        },
    }


def mig(
    configured: str = "mixed", labelled: str = "mixed", mixed_names: bool = True
) -> list[dict[str, Any]]:
    """Two A100s in MIG mode, seven 1g.5gb each, under the standalone plugin whose config
    key `a100-mig` sets `configured`; GFD labels `labelled` (GFD, as upstream's
    `internal/lm/mig-strategy.go`, writes `nvidia.com/mig.strategy` for single and mixed
    only, and `nvidia.com/gpu.replicas=0` for the whole-GPU labels of MIG-enabled GPUs)."""
    labels = _gfd(
        "NVIDIA-A100-SXM4-40GB",
        2,
        **{
            "nvidia.com/device-plugin.config": "a100-mig",
            "nvidia.com/gpu.replicas": "0",
            "nvidia.com/mig.strategy": labelled,
            "nvidia.com/mig-1g.5gb.count": "14",
            "nvidia.com/mig-1g.5gb.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
        },
    )
    resources = {"nvidia.com/mig-1g.5gb": "14"} if mixed_names else {"nvidia.com/gpu": "14"}
    return [_node("mig-1", labels, resources), *_standalone("mig-1"), _mig_config(configured)]


def mps(gpus: str = "8", applied: bool = True) -> list[dict[str, Any]]:
    """Two GPUs shared four ways by MPS, the node labelled with the chart's config `a100-mps`;
    not `applied`: the plugin still runs without sharing (GFD reports 1 replica)."""
    labels = _gfd(
        "NVIDIA-A100-SXM4-40GB",
        2,
        **{
            "nvidia.com/device-plugin.config": "a100-mps",
            "nvidia.com/gpu.replicas": "4" if applied else "1",
            "nvidia.com/gpu.sharing-strategy": "mps" if applied else "none",
        },
    )
    config = (
        "version: v1\nflags:\n  migStrategy: none\nsharing:\n  mps:\n"
        "    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
    )
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nvdp-configs", "namespace": "nvidia-device-plugin"},
        "data": {"default": "version: v1\n", "a100-mps": config},
    }
    return [_node("mps-1", labels, {"nvidia.com/gpu": gpus}), *_standalone("mps-1"), configmap]


def bottlerocket(gpus: str = "1") -> list[dict[str, Any]]:
    labels = {
        "eks.amazonaws.com/nodegroup": "gpu",
        "node.kubernetes.io/instance-type": "g5.xlarge",
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-a10g",
    }
    image = "Bottlerocket OS 1.26.2 (aws-k8s-1.31-nvidia)"
    return [_node("br-1", labels, {"nvidia.com/gpu": gpus}, image)]


def eks_auto_mode(allocatable: str = "8", capacity: str | None = None) -> list[dict[str, Any]]:
    # Auto Mode's provisioner labels the node from the instance type; its device plugin runs
    # in the node runtime, with no pod.
    labels = {
        "eks.amazonaws.com/compute-type": "auto",
        "eks.amazonaws.com/instance-category": "p",
        "eks.amazonaws.com/instance-gpu-count": "8",
        "eks.amazonaws.com/instance-gpu-manufacturer": "nvidia",
        "eks.amazonaws.com/instance-gpu-name": "h100",
        "node.kubernetes.io/instance-type": "p5.48xlarge",
        "karpenter.sh/nodepool": "gpu",
    }
    node = _node("i-0a1b2c3d4e5f60718", labels, {"nvidia.com/gpu": allocatable}, "Bottlerocket")
    node["status"]["capacity"]["nvidia.com/gpu"] = capacity or allocatable
    return [node]


def karpenter_plugin(allocatable: str, capacity: str) -> list[dict[str, Any]]:
    # Karpenter on AWS with the plugin's Helm chart, no GPU feature discovery.
    labels = {
        "karpenter.k8s.aws/instance-gpu-count": "4",
        "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
        "karpenter.k8s.aws/instance-gpu-name": "a10g",
        "karpenter.sh/nodepool": "gpu",
        "node.kubernetes.io/instance-type": "g5.12xlarge",
    }
    node = _node("ip-10-0-12-34", labels, {"nvidia.com/gpu": allocatable})
    node["status"]["capacity"]["nvidia.com/gpu"] = capacity
    return [
        node,
        _pod(
            "nvdp-nvidia-device-plugin-q7m2x",
            "ip-10-0-12-34",
            "nvdp-nvidia-device-plugin",
            {"app.kubernetes.io/name": "nvidia-device-plugin"},
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
        ),
    ]


def gke() -> list[dict[str, Any]]:
    labels = {
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "cloud.google.com/gke-gpu": "true",
        "cloud.google.com/gke-gpu-driver-version": "default",
        "cloud.google.com/gke-nodepool": "l4-pool",
    }
    return [
        _node("gke-l4-1", labels, {"nvidia.com/gpu": "1"}, "Container-Optimized OS from Google"),
        _pod(
            "nvidia-gpu-device-plugin-small-cos-7xk2p",
            "gke-l4-1",
            "nvidia-gpu-device-plugin-small-cos",
            {"k8s-app": "nvidia-gpu-device-plugin"},
            "gke.gcr.io/nvidia-gpu-device-plugin@sha256:8a6e0b3e4c3c7ac4",
        ),
    ]


def _legacy_addon_plugin_pod(name: str, node: str, known_by_name: bool) -> dict[str, Any]:
    """A pod of Kubernetes' legacy nvidia-gpu addon DaemonSet (`kube-system/
    nvidia-gpu-device-plugin`), which OKE's and CCE's add-ons run; `known_by_name`: as
    `kubectl describe node` lists it."""
    if known_by_name:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"nodeName": node},
            "status": {"phase": "Running"},
        }
    return _pod(
        name,
        node,
        "nvidia-gpu-device-plugin",
        {"k8s-app": "nvidia-gpu-device-plugin"},
        "k8s.gcr.io/nvidia-gpu-device-plugin@sha256:0842734032018be1",
    )


def oke(gpus: str = "1", pod_known_by_name: bool = False) -> list[dict[str, Any]]:
    """An OKE VM.GPU.A10.1 node of Oracle's GPU image, served by the NvidiaGpuPlugin
    add-on's DaemonSet (Kubernetes' legacy addon, as GKE's: `kube-system/
    nvidia-gpu-device-plugin`, `k8s-app: nvidia-gpu-device-plugin`)."""
    labels = {
        "displayName": "oke-cq2l4-nvxk3-0",
        "node.kubernetes.io/instance-type": "VM.GPU.A10.1",
        "oci.oraclecloud.com/fault-domain": "FAULT-DOMAIN-2",
        "topology.kubernetes.io/region": "us-ashburn-1",
    }
    node = _node("10.0.10.57", labels, {"nvidia.com/gpu": gpus}, "Oracle Linux Server 8.10")
    return [
        node,
        _legacy_addon_plugin_pod("nvidia-gpu-device-plugin-4kq8n", "10.0.10.57", pod_known_by_name),
    ]


def cce(gpus: str = "1", pod_known_by_name: bool = False) -> list[dict[str, Any]]:
    """A Huawei Cloud CCE node-pool node with one T4, served by the CCE AI Suite (NVIDIA
    GPU) add-on, whose device plugin DaemonSet has the legacy addon's name
    (`kube-system/nvidia-gpu-device-plugin`, GKE's too); the node carries CCE's inherent
    labels (node pool, subnet, OS name)."""
    labels = {
        "cce.cloud.com/cce-nodepool": "gpu-pool-t4",
        "node.kubernetes.io/baremetal": "false",
        "node.kubernetes.io/container-engine": "containerd",
        "node.kubernetes.io/instance-type": "pi2.2xlarge.4",
        "node.kubernetes.io/subnetid": "53d4b9d9-ca3d-481d-b9f1-f2baa5839c01",
        "os.architecture": "amd64",
        "os.name": "Huawei_Cloud_EulerOS_2.0",
        "topology.kubernetes.io/region": "ap-southeast-3",
    }
    node = _node(
        "192.168.0.77", labels, {"nvidia.com/gpu": gpus}, "Huawei Cloud EulerOS 2.0 (x86_64)"
    )
    return [
        node,
        _legacy_addon_plugin_pod(
            "nvidia-gpu-device-plugin-x2k7d", "192.168.0.77", pod_known_by_name
        ),
    ]


def gke_shared(
    gpus: str, *, clients: str | None = None, partition: str | None = None, with_pod: bool = True
) -> list[dict[str, Any]]:
    """A GKE A100 node (a2-highgpu-2g: two cards) of a pool with GPU time-sharing by
    `clients` and/or MIG `partition`s, labelled as GKE labels such pools; without
    `with_pod`, a dump of the nodes alone (the pool's labels still name GKE)."""
    labels = {
        "cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
        "cloud.google.com/gke-gpu": "true",
        "cloud.google.com/gke-nodepool": "a100-shared",
        "node.kubernetes.io/instance-type": "a2-highgpu-2g",
    }
    if clients is not None:
        labels["cloud.google.com/gke-gpu-sharing-strategy"] = "time-sharing"
        labels["cloud.google.com/gke-max-shared-clients-per-gpu"] = clients
    if partition is not None:
        labels["cloud.google.com/gke-gpu-partition-size"] = partition
    node = _node("gke-a100-1", labels, {"nvidia.com/gpu": gpus}, "Container-Optimized OS")
    if not with_pod:
        return [node]
    pod = _pod(
        "nvidia-gpu-device-plugin-large-cos-9d2xq",
        "gke-a100-1",
        "nvidia-gpu-device-plugin-large-cos",
        {"k8s-app": "nvidia-gpu-device-plugin"},
        "gke.gcr.io/nvidia-gpu-device-plugin@sha256:8a6e0b3e4c3c7ac4",
    )
    return [node, pod]


def aks() -> list[dict[str, Any]]:
    labels = {
        "kubernetes.azure.com/accelerator": "nvidia",
        "kubernetes.azure.com/agentpool": "gpunp",
        "node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4",
    }
    return [
        _node("aks-gpunp-1", labels, {"nvidia.com/gpu": "1"}),
        _pod(
            "nvidia-device-plugin-daemonset-x9z8q",
            "aks-gpunp-1",
            "nvidia-device-plugin-daemonset",
            {"name": "nvidia-device-plugin-ds"},
            "nvcr.io/nvidia/k8s-device-plugin:v0.15.0",
        ),
    ]


def aks_managed(resources: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """A node of an AKS fully managed GPU node pool (`gpuProfile.nvidia.managementMode:
    Managed`): AKS runs the device plugin and DCGM's exporter itself and labels the node
    `kubernetes.azure.com/dcgm-exporter=enabled`; no plugin pod is in the dump."""
    labels = {
        "kubernetes.azure.com/accelerator": "nvidia",
        "kubernetes.azure.com/agentpool": "gpumanaged",
        "kubernetes.azure.com/dcgm-exporter": "enabled",
        "node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4",
    }
    return [
        _node(
            "aks-gpumanaged-1", labels, {"nvidia.com/gpu": "1"} if resources is None else resources
        )
    ]


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": "2026-11-30T08:00:00Z",
        "lastTransitionTime": "2026-11-30T07:00:00Z",
    }


def aks_h100(missing: bool = False) -> list[dict[str, Any]]:
    """An AKS ND H100 v5 node (8 GPUs) with the GPU conditions AKS's node problem detector
    keeps; with `missing`, nvidia-smi sees 7 and `GPUMissing` is True."""
    labels = {
        "kubernetes.azure.com/accelerator": "nvidia",
        "kubernetes.azure.com/agentpool": "ndh100",
        "node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5",
    }
    node = _node("aks-ndh100-1", labels, {"nvidia.com/gpu": "7" if missing else "8"})
    node["status"]["conditions"] = [
        _condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        _condition(
            "GPUMissing",
            "True" if missing else "False",
            "GPUMissing" if missing else "NoGPUMissing",
            "Observed GPU count 7 does not match expected GPU count 8"
            if missing
            else "GPU count matches the VM size",
        ),
        _condition("XIDErrors", "False", "NoXIDErrors", "no XID errors in the kernel log"),
        _condition("NVLinkStatusInactive", "False", "NVLinkStatusActive", "NVLink is active"),
    ]
    return [
        node,
        _pod(
            "nvidia-device-plugin-daemonset-7hq2x",
            "aks-ndh100-1",
            "nvidia-device-plugin-daemonset",
            {"name": "nvidia-device-plugin-ds"},
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
        ),
    ]


def _static_daemonset(mig_strategy: str) -> dict[str, Any]:
    """The plugin's static manifest (upstream's `deployments/static/nvidia-device-plugin.yml`,
    which AKS's guide applies in its own namespace): named as the operator's DaemonSet, told
    apart by its `name: nvidia-device-plugin-ds` pods; MIG's strategy is set as `--mig-strategy`."""
    labels = {"name": "nvidia-device-plugin-ds"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-device-plugin-daemonset", "namespace": "gpu-resources"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "nvidia-device-plugin-ctr",
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
                            "args": [
                                "--fail-on-init-error=false",
                                f"--mig-strategy={mig_strategy}",
                            ],
                        }
                    ],
                },
            },
        },
    }


def aks_mig(strategy: str = "mixed") -> list[dict[str, Any]]:
    """An AKS A100 node pool in MIG mode (1g.10gb, seven a card) under the static manifest
    with `--mig-strategy=<strategy>`: mixed names are right only under `mixed`."""
    labels = {
        "kubernetes.azure.com/accelerator": "nvidia",
        "kubernetes.azure.com/agentpool": "gpumig",
        "node.kubernetes.io/instance-type": "Standard_NC24ads_A100_v4",
    }
    return [
        _node("aks-gpumig-1", labels, {"nvidia.com/mig-1g.10gb": "7"}),
        _pod(
            "nvidia-device-plugin-daemonset-m4k7w",
            "aks-gpumig-1",
            "nvidia-device-plugin-daemonset",
            {"name": "nvidia-device-plugin-ds"},
            "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
            "gpu-resources",
        ),
        _static_daemonset(strategy),
    ]


def _kubevirt(section: str, entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
        "spec": {
            "configuration": {
                "developerConfiguration": {"featureGates": ["GPU", "HostDevices"]},
                "permittedHostDevices": {section: [entry]},
            }
        },
        "status": {"phase": "Deployed", "observedKubeVirtVersion": "v1.4.0"},
    }


def kubevirt_nvidia_plugin(count: str = "4") -> list[dict[str, Any]]:
    name = "nvidia.com/GA100_A100_SXM4_40GB"
    entry = {
        "pciVendorSelector": "10DE:20B0",
        "resourceName": name,
        "externalResourceProvider": True,
    }
    return [
        _node("kv-pt-1", {NFD: "true"}, {name: count}),
        _pod(
            "nvidia-kubevirt-gpu-dp-daemonset-4kq8w",
            "kv-pt-1",
            "nvidia-kubevirt-gpu-dp-daemonset",
            {"name": "nvidia-kubevirt-gpu-dp-ds"},
            "nvcr.io/nvidia/kubevirt-gpu-device-plugin:v1.2.10",
        ),
        _kubevirt("pciHostDevices", entry),
    ]


def kubevirt_own_pci(count: str = "2") -> list[dict[str, Any]]:
    """KubeVirt's own PCI plugin; with `count` 0, no card is bound to vfio-pci."""
    name = "nvidia.com/GA100_A100_SXM4_40GB"
    entry = {"pciVendorSelector": "10DE:20B0", "resourceName": name}
    return [_node("kv-pci-1", {NFD: "true"}, {name: count}), _kubevirt("pciHostDevices", entry)]


def kubevirt_own_mdev(count: str = "4") -> list[dict[str, Any]]:
    """KubeVirt's own mediated-device plugin; with `count` 0, no vGPU of the type exists."""
    name = "nvidia.com/NVIDIA_A10-12Q"
    entry = {"mdevNameSelector": "NVIDIA A10-12Q", "resourceName": name}
    return [_node("kv-mdev-1", {NFD: "true"}, {name: count}), _kubevirt("mediatedDevices", entry)]


def _virt_handler(node: str) -> dict[str, Any]:
    return _pod(
        "virt-handler-7m2xq",
        node,
        "virt-handler",
        {"kubevirt.io": "virt-handler"},
        "quay.io/kubevirt/virt-handler:v1.4.0",
        "kubevirt",
    )


def kubevirt_own_without_cr(count: str = "2") -> list[dict[str, Any]]:
    """KubeVirt's own PCI plugin, the dump without the KubeVirt CR: the node runs
    virt-handler and no NVIDIA plugin."""
    name = "nvidia.com/GA100_A100_SXM4_40GB"
    return [_node("kv-pci-2", {NFD: "true"}, {name: count}), _virt_handler("kv-pci-2")]


def kubevirt_own_custom_name(count: str = "1") -> list[dict[str, Any]]:
    """The nodes alone of a cluster whose KubeVirt CR permits a T4 under a name of its own
    choosing (`nvidia.com/T4`, as KubeVirt's host-devices guide lets it): no NVIDIA plugin
    gives a device that name; KubeVirt's `devices.kubevirt.io/*` resources are there."""
    resources = {"nvidia.com/T4": count, "devices.kubevirt.io/kvm": "1k"}
    return [_node("kv-t4-3", {NFD: "true", "kubevirt.io/schedulable": "true"}, resources)]


def dra_driver_publishing_nothing() -> list[dict[str, Any]]:
    """The DRA driver's kubelet plugin runs on the node, and the dump has the driver's
    DeviceClass but no ResourceSlice of the node."""
    node, _slice, pod = dra_driver()
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
    }
    return [node, pod, device_class]


def dra_driver() -> list[dict[str, Any]]:
    devices = [
        {
            "name": f"gpu-{index}",
            "attributes": {
                "type": {"string": "gpu"},
                "productName": {"string": "NVIDIA A100-SXM4-40GB"},
                "uuid": {"string": f"GPU-0000000{index}-aaaa-bbbb-cccc-000000000000"},
            },
            "capacity": {"memory": {"value": "40Gi"}},
        }
        for index in range(2)
    ]
    return [
        _node("dra-1", {NFD: "true", "nvidia.com/gpu.present": "true"}, {}),
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "dra-1-gpu.nvidia.com-abcde"},
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": "dra-1",
                "pool": {"name": "dra-1", "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        },
        _pod(
            "nvidia-dra-driver-gpu-kubelet-plugin-q7w2e",
            "dra-1",
            "nvidia-dra-driver-gpu-kubelet-plugin",
            {"app.kubernetes.io/name": "nvidia-dra-driver-gpu"},
            "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.8.0",
            "nvidia-dra-driver-gpu",
        ),
    ]


def dra_driver_sigs(published: bool = True) -> list[dict[str, Any]]:
    """The DRA driver from kubernetes-sigs/dra-driver-nvidia-gpu (v0.4 on): its chart's
    release `dra-driver-nvidia-gpu`, its image on registry.k8s.io; without `published`, the
    kubelet plugin runs and no ResourceSlice of the node is in the dump."""
    node, slice_, _ = dra_driver()
    pod = _pod(
        "dra-driver-nvidia-gpu-kubelet-plugin-h2k9d",
        "dra-1",
        "dra-driver-nvidia-gpu-kubelet-plugin",
        {"app.kubernetes.io/name": "dra-driver-nvidia-gpu"},
        "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1",
        "dra-driver-nvidia-gpu",
    )
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
    }
    return [node, slice_, pod, device_class] if published else [node, pod, device_class]


def dra_driver_missing_on_node() -> list[dict[str, Any]]:
    """Two nodes labelled for the DRA chart's kubelet plugin (`nvidia.com/dra-kubelet-plugin`,
    NVIDIA's guide); its pod and slice on the first only."""
    objects = dra_driver_sigs()
    objects[0]["metadata"]["labels"]["nvidia.com/dra-kubelet-plugin"] = "true"
    labels = {
        NFD: "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/dra-kubelet-plugin": "true",
    }
    return [*objects, _node("dra-2", labels, {})]


def dra_driver_nodes_only() -> list[dict[str, Any]]:
    """A node NVIDIA's DRA driver serves, labelled for its kubelet plugin as NVIDIA's
    install guide says (`nvidia.com/dra-kubelet-plugin=true`), in a dump of nodes alone."""
    node = dra_driver()[0]
    node["metadata"]["labels"]["nvidia.com/dra-kubelet-plugin"] = "true"
    return [node]


# The DRA stack's deploy labels, as the GPU Operator's GPUCluster sets them (dra.yaml).
_DRA_STACK = ("driver", "dra-driver", "dra-validator", "dcgm-dra", "dcgm-exporter-dra")


def gpu_operator_gpucluster(with_cr: bool = True, leftover: bool = False) -> list[dict[str, Any]]:
    """The GPU Operator's DRA stack (GPUCluster, v26.x): the node carries the DRA stack's
    deploy labels and none of the device plugin's, advertises no `nvidia.com/gpu`, and the
    operator's DRA kubelet plugin publishes its cards; with `leftover`, the device plugin's
    deploy label was left when the node joined the stack. Without `with_cr`, the node
    alone."""
    node, slice_, _ = dra_driver()
    labels = node["metadata"]["labels"]
    labels.update(_gfd("NVIDIA-A100-SXM4-40GB", 2))
    labels.update({f"nvidia.com/gpu.deploy.{key}": "true" for key in _DRA_STACK})
    if leftover:
        labels["nvidia.com/gpu.deploy.device-plugin"] = "true"
    if not with_cr:
        return [node]
    pod = _pod(
        "nvidia-dra-driver-kubelet-plugin-5xw2k",
        "dra-1",
        "nvidia-dra-driver-kubelet-plugin",
        {"app": "nvidia-dra-driver-kubelet-plugin"},
        "nvcr.io/nvidia/k8s-dra-driver-gpu:v25.12.0",
        "gpu-operator",
    )
    gpu_cluster = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "GPUCluster",
        "metadata": {"name": "gpu-cluster"},
        "spec": {
            "draDriver": {
                "repository": "nvcr.io/nvidia",
                "image": "k8s-dra-driver-gpu",
                "version": "v25.12.0",
                "computeDomains": {"enabled": True},
            },
            "dcgm": {"enabled": False},
            "dcgmExporter": {"enabled": True},
        },
    }
    return [node, slice_, pod, gpu_cluster]


def gpu_operator_with_dra_driver(
    nodes_only: bool = False, eviction_label: bool = True
) -> list[dict[str, Any]]:
    """NVIDIA's DRA driver installed by its Helm chart beside the GPU Operator, as NVIDIA's
    guide has it: the operator's device plugin turned off, its driver manager told to evict
    the pods of nodes labelled `nvidia.com/dra-kubelet-plugin=true` (without
    `eviction_label`, not), the node so labelled. The operator still sets every container
    deploy label, `device-plugin` too."""
    node, slice_, pod = dra_driver()
    labels = node["metadata"]["labels"]
    labels.update(_gfd("NVIDIA-A100-SXM4-40GB", 2))
    labels.update(_deploy_labels("mig-manager"))
    labels["nvidia.com/dra-kubelet-plugin"] = "true"
    if nodes_only:
        return [node]
    spec: dict[str, Any] = {"devicePlugin": {"enabled": False}, "cdi": {"enabled": True}}
    if eviction_label:
        env = [
            {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": "nvidia.com/dra-kubelet-plugin"}
        ]
        spec["driver"] = {"manager": {"env": env}}
    return [node, slice_, pod, _cluster_policy(spec)]


def gke_with_gpu_operator(device_plugin: bool = False) -> list[dict[str, Any]]:
    """GKE's driver and device plugin with NVIDIA's GPU Operator for the rest (GFD, DCGM),
    its own driver, toolkit and device plugin turned off (NVIDIA's GKE recipes' default);
    with `device_plugin`, the operator's plugin left on beside GKE's."""
    objects = gke()
    objects[0]["metadata"]["labels"].update(
        {
            **_gfd(
                "NVIDIA-L4",
                1,
                **{
                    "nvidia.com/mig.capable": "false",
                    "nvidia.com/gpu.memory": "23034",
                    "nvidia.com/gpu.family": "ada-lovelace",
                    "nvidia.com/gpu.machine": "Google-Compute-Engine",
                },
            ),
            "nvidia.com/gpu.present": "true",
            **_deploy_labels(),
        }
    )
    policy = _cluster_policy(
        {
            "driver": {"enabled": False},
            "toolkit": {"enabled": False},
            "devicePlugin": {"enabled": device_plugin},
        }
    )
    return [*objects, policy]


def bottlerocket_no_plugin() -> list[dict[str, Any]]:
    """A Karpenter-made g4dn node on Bottlerocket's nvidia variant that registers no GPU
    (the shape of bottlerocket-os/bottlerocket#4087), with the pods on it, none a plugin."""
    labels = {
        "karpenter.k8s.aws/instance-family": "g4dn",
        "karpenter.k8s.aws/instance-gpu-count": "1",
        "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
        "karpenter.k8s.aws/instance-gpu-name": "t4",
        "karpenter.sh/nodepool": "gpu",
        "node.kubernetes.io/instance-type": "g4dn.2xlarge",
    }
    node = _node("ip-192-168-164-242", labels, {}, "Bottlerocket OS 1.20.5 (aws-k8s-1.29-nvidia)")
    node["spec"] = {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}
    return [
        node,
        _pod("aws-node-kx2m8", "ip-192-168-164-242", "aws-node", {}, "amazon-k8s-cni:v1.18.2"),
    ]


def gke_no_driver() -> list[dict[str, Any]]:
    """A GKE T4 node of a pool made without a GPU driver version: GKE's plugin runs and
    waits for a driver nobody installed."""
    labels = {
        "cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
        "cloud.google.com/gke-gpu": "true",
        "cloud.google.com/gke-nodepool": "t4-pool",
        "node.kubernetes.io/instance-type": "n1-standard-8",
    }
    return [
        _node("gke-t4-1", labels, {}, "Container-Optimized OS from Google"),
        _pod(
            "nvidia-gpu-device-plugin-small-cos-2pq7d",
            "gke-t4-1",
            "nvidia-gpu-device-plugin-small-cos",
            {"k8s-app": "nvidia-gpu-device-plugin"},
            "gke.gcr.io/nvidia-gpu-device-plugin@sha256:8a6e0b3e4c3c7ac4",
        ),
    ]


def gke_dra_pool(with_slice: bool = True) -> list[dict[str, Any]]:
    """A GKE pool labelled for a DRA driver: GKE runs no plugin, the node advertises none."""
    labels = {
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "cloud.google.com/gke-nodepool": "dra-pool",
        "gke-no-default-nvidia-gpu-device-plugin": "true",
        "nvidia.com/gpu.present": "true",
    }
    node = _node("gke-dra-1", labels, {}, "Container-Optimized OS from Google")
    if not with_slice:
        return [node]
    dra = dra_driver()
    slice_, pod = dra[1], dra[2]
    slice_["metadata"]["name"] = "gke-dra-1-gpu.nvidia.com-x2k9q"
    slice_["spec"]["nodeName"] = "gke-dra-1"
    slice_["spec"]["pool"]["name"] = "gke-dra-1"
    pod["metadata"]["name"] = "nvidia-dra-driver-gpu-kubelet-plugin-m4n8v"
    pod["spec"]["nodeName"] = "gke-dra-1"
    return [node, slice_, pod]


def eks_no_plugin() -> list[dict[str, Any]]:
    """An EKS managed node group's GPU node on the accelerated AMI, no device plugin installed."""
    labels = {
        "eks.amazonaws.com/nodegroup": "gpu",
        "k8s.amazonaws.com/accelerator": "nvidia-tesla-a10g",
        "node.kubernetes.io/instance-type": "g5.xlarge",
    }
    return [_node("ip-10-0-7-21", labels, {}, "Amazon Linux 2")]


def aks_no_plugin() -> list[dict[str, Any]]:
    """An AKS GPU node pool's node before a device plugin is installed."""
    labels = {
        "kubernetes.azure.com/accelerator": "nvidia",
        "kubernetes.azure.com/agentpool": "gpunp",
        "node.kubernetes.io/instance-type": "Standard_NC4as_T4_v3",
    }
    return [_node("aks-gpunp-2", labels, {})]


def nfd_no_plugin() -> list[dict[str, Any]]:
    """NFD marks an NVIDIA PCI device; nothing on the node names a manager or advertises."""
    return [_node("gpu-7", {NFD: "true"}, {})]


def _hami_register(product: str, memory: int, cards: int) -> str:
    """`hami.io/node-nvidia-register` as HAMi's device plugin writes it: per card its UUID,
    split count, memory (MiB), cores (%), type, NUMA node and health, `:`-separated."""
    return "".join(
        f"GPU-0000000{index}-hami-4c1d-9e2a-{index:012d},10,{memory},100,NVIDIA-{product},0,true:"
        for index in range(cards)
    )


def hami_zero() -> list[dict[str, Any]]:
    """HAMi's plugin registered `nvidia.com/gpu: 0` (the shape of Project-HAMi/HAMi#314)."""
    objects = hami()
    for part in ("capacity", "allocatable"):
        objects[0]["status"][part]["nvidia.com/gpu"] = "0"
    return objects


def hami(gpu_operator: bool = False) -> list[dict[str, Any]]:
    """HAMi's device plugin: `nvidia.com/gpu` ten shares a card, the cards in its annotation
    (its scheduler's gpumem and gpucores are not node resources); with `gpu_operator`, beside
    NVIDIA's GPU Operator with the operator's device plugin off, as HAMi's guide asks."""
    labels = {NFD: "true", "gpu": "on"}
    objects = []
    if gpu_operator:
        labels.update(
            {
                **_gfd("NVIDIA-A100-PCIE-40GB", 2, **{"nvidia.com/mig.capable": "false"}),
                "nvidia.com/gpu.present": "true",
                **_deploy_labels(),
            }
        )
        objects.append(_cluster_policy({"devicePlugin": {"enabled": False}}))
    cards = 2 if gpu_operator else 1
    node = _node("hami-1", labels, {"nvidia.com/gpu": str(10 * cards)})
    node["metadata"]["annotations"] = {
        "hami.io/node-handshake": "Reported 2025-10-20 03:05:44.544397915 +0000 UTC",
        "hami.io/node-nvidia-register": _hami_register("NVIDIA A100-PCIE-40GB", 40960, cards),
    }
    return [
        node,
        _pod(
            "hami-device-plugin-8d7sx",
            "hami-1",
            "hami-device-plugin",
            {"app.kubernetes.io/component": "hami-device-plugin"},
            "projecthami/hami:v2.5.0",
        ),
        *objects,
    ]


def hami_nodes_only() -> list[dict[str, Any]]:
    """A HAMi node dumped alone: only its annotation names HAMi."""
    return hami()[:1]


def volcano_vgpu(registered: bool = True) -> list[dict[str, Any]]:
    """Volcano's vGPU device plugin: two cards under Volcano's own resource names; not
    `registered`: its pod runs and registered nothing."""
    resources = (
        {
            "volcano.sh/vgpu-number": "20",
            "volcano.sh/vgpu-memory": "49152",
            "volcano.sh/vgpu-cores": "200",
        }
        if registered
        else {}
    )
    return [
        _node("volcano-1", {NFD: "true"}, resources),
        _pod(
            "volcano-device-plugin-6xk2w",
            "volcano-1",
            "volcano-device-plugin",
            {"name": "volcano-device-plugin"},
            "docker.io/projecthami/volcano-vgpu-device-plugin:v1.10.0",
        ),
    ]


def volcano_gpu_share() -> list[dict[str, Any]]:
    """Volcano's GPU share plugin (volcano-sh/devices): a card's memory (MiB) and count under
    Volcano's names, as its user guide shows a node."""
    resources = {"volcano.sh/gpu-memory": "89424", "volcano.sh/gpu-number": "1"}
    return [
        _node("volcano-2", {NFD: "true"}, resources),
        _pod(
            "volcano-device-plugin-p8d4r",
            "volcano-2",
            "volcano-device-plugin",
            {"name": "volcano-device-plugin"},
            "docker.io/volcanosh/volcano-device-plugin:v1.1.0",
        ),
    ]


def tencent_gpu_manager(registered: bool = True) -> list[dict[str, Any]]:
    """Tencent's GPU Manager (tkestack/gpu-manager): two 24 GiB cards as 200 vcuda-core
    units and 192 vcuda-memory units of 256 MiB; not `registered`: its pod runs and
    registered nothing."""
    resources = (
        {"tencent.com/vcuda-core": "200", "tencent.com/vcuda-memory": "192"} if registered else {}
    )
    return [
        _node("tke-gpu-1", {NFD: "true", "nvidia-device-enable": "enable"}, resources),
        _pod(
            "gpu-manager-daemonset-q7x2m",
            "tke-gpu-1",
            "gpu-manager-daemonset",
            {"name": "gpu-manager-ds"},
            "tkestack/gpu-manager:v1.1.5",
        ),
    ]


def aliyun_gpushare(registered: bool = True) -> list[dict[str, Any]]:
    """Alibaba's gpushare device plugin (its `device-plugin-ds.yaml`) on a node labelled
    `gpushare=true`: GPU memory in GiB and the card count; not `registered`: none."""
    resources = {"aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"} if registered else {}
    return [
        _node("ack-gpu-1", {NFD: "true", "gpushare": "true"}, resources),
        _pod(
            "gpushare-device-plugin-ds-q2w7x",
            "ack-gpu-1",
            "gpushare-device-plugin-ds",
            {
                "component": "gpushare-device-plugin",
                "app": "gpushare",
                "name": "gpushare-device-plugin-ds",
            },
            "registry.cn-hangzhou.aliyuncs.com/acs/k8s-gpushare-plugin:v2-1.11-aff8a23",
        ),
    ]


def ack(
    resources: dict[str, str] | None = None,
    *,
    schedule: str | None = "default",
    plugin: str | None = "daemonset",
) -> list[dict[str, Any]]:
    """An Alibaba Cloud ACK GPU node with two A10s, as ACK's guides show it: the card's
    name, count and memory labels, and NVIDIA's device plugin rebuilt by ACK, as the
    `ack-nvidia-device-plugin` add-on's DaemonSet (`plugin="daemonset"`, Kubernetes 1.32
    on, on nodes labelled `ack.node.gpu.schedule=default`) or a static pod (`"static"`,
    1.20 to 1.31); `schedule` another of ACK's modes (`cgpu`: its GPU sharing registers
    `aliyun.com/gpu-mem`, and ACK sets `nvidia.com/gpu` to 0)."""
    name = "cn-hangzhou.10.0.1.7"
    labels = {
        "aliyun.accelerator/nvidia_count": "2",
        "aliyun.accelerator/nvidia_mem": "23028MiB",
        "aliyun.accelerator/nvidia_name": "NVIDIA-A10",
        "node.kubernetes.io/instance-type": "ecs.gn7i-c32g1.16xlarge",
    }
    if schedule is not None:
        labels["ack.node.gpu.schedule"] = schedule
    objects = [_node(name, labels, {"nvidia.com/gpu": "2"} if resources is None else resources)]
    image = "registry-cn-hangzhou-vpc.ack.aliyuncs.com/acs/k8s-device-plugin:v0.9.3-0dd4d5f5-aliyun"
    if plugin == "daemonset":
        objects.append(
            _pod(
                "ack-nvidia-device-plugin-7kq2x",
                name,
                "ack-nvidia-device-plugin",
                {"component": "nvidia-device-plugin"},
                image,
            )
        )
    elif plugin == "static":
        pod = _pod(
            f"nvidia-device-plugin-{name}", name, "", {"component": "nvidia-device-plugin"}, image
        )
        pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": name, "controller": True}
        ]
        objects.append(pod)
    elif plugin == "gpushare":
        objects.append(
            _pod(
                "gpushare-device-plugin-ds-5tq9n",
                name,
                "gpushare-device-plugin-ds",
                {"component": "gpushare-device-plugin", "name": "gpushare-device-plugin-ds"},
                "registry-cn-hangzhou-vpc.ack.aliyuncs.com/acs/k8s-gpushare-plugin:v2-1.11-aff8a23",
            )
        )
    return objects


def mixed() -> list[dict[str, Any]]:
    """The GPU Operator's deploy labels and the standalone plugin on one node."""
    labels = {
        **_gfd("NVIDIA-A100-SXM4-40GB", 4),
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.present": "true",
        **_deploy_labels("mig-manager", "client"),
    }
    return [_node("mixed-1", labels, {"nvidia.com/gpu": "4"}), *_standalone("mixed-1")]


# name -> (builder, the manager of each node, the expected findings as "CODE Node/NAME")
SCENARIOS: dict[str, tuple[Callable[[], list[dict[str, Any]]], dict[str, str], list[str]]] = {
    "cce": (cce, {"192.168.0.77": "cce"}, []),
    "cce-pod-by-name": (lambda: cce(pod_known_by_name=True), {"192.168.0.77": "cce"}, []),
    "cce-zero": (lambda: cce("0"), {"192.168.0.77": "cce"}, ["GPU211 Node/192.168.0.77"]),
    "oke": (oke, {"10.0.10.57": "oke"}, []),
    "oke-pod-by-name": (lambda: oke(pod_known_by_name=True), {"10.0.10.57": "oke"}, []),
    "oke-zero": (lambda: oke("0"), {"10.0.10.57": "oke"}, ["GPU211 Node/10.0.10.57"]),
    "standalone-plugin": (standalone, {"nvdp-1": "nvidia-device-plugin"}, []),
    "standalone-plugin-too-few": (
        lambda: standalone("3"),
        {"nvdp-1": "nvidia-device-plugin"},
        ["GPU206 Node/nvdp-1"],
    ),
    "standalone-plugin-zero": (
        lambda: standalone("0"),
        {"nvdp-1": "nvidia-device-plugin"},
        ["GPU211 Node/nvdp-1"],
    ),
    "standalone-time-slicing": (time_slicing, {"ts-1": "nvidia-device-plugin"}, []),
    "standalone-time-slicing-wrong-count": (
        lambda: time_slicing("6"),
        {"ts-1": "nvidia-device-plugin"},
        ["GPU206 Node/ts-1"],
    ),
    "standalone-time-slicing-renamed": (
        lambda: time_slicing(renamed=True),
        {"ts-1": "nvidia-device-plugin"},
        [],
    ),
    "standalone-time-slicing-renamed-wrong-count": (
        lambda: time_slicing("6", renamed=True),
        {"ts-1": "nvidia-device-plugin"},
        ["GPU206 Node/ts-1"],
    ),
    "standalone-time-slicing-gfd-unaware": (
        lambda: _gfd_unaware(time_slicing(renamed=True)),
        {"ts-1": "nvidia-device-plugin"},
        ["GPU216 Node/ts-1"],
    ),
    "standalone-time-slicing-gfd-unaware-plain": (
        lambda: _gfd_unaware(time_slicing()),
        {"ts-1": "nvidia-device-plugin"},
        ["GPU216 Node/ts-1"],
    ),
    "standalone-time-slicing-not-applied": (
        lambda: time_slicing("2", applied=False),
        {"ts-1": "nvidia-device-plugin"},
        ["GPU212 Node/ts-1"],
    ),
    "standalone-time-slicing-not-renamed": (
        lambda: [*time_slicing("8", renamed=False)[:-1], _plugin_config(4, True)],
        {"ts-1": "nvidia-device-plugin"},
        ["GPU212 Node/ts-1"],
    ),
    "standalone-mig-flag": (mig_flag, {"mig-1": "nvidia-device-plugin"}, []),
    "standalone-default-config": (default_config, {"ts-1": "nvidia-device-plugin"}, []),
    "standalone-default-config-not-renamed": (
        lambda: default_config(renamed=True),
        {"ts-1": "nvidia-device-plugin"},
        ["GPU212 Node/ts-1"],
    ),
    "standalone-config-label-names-no-config": (
        missing_config,
        {"ts-1": "nvidia-device-plugin"},
        ["GPU212 Node/ts-1"],
    ),
    "hand-labelled-gpu-present": (hand_labelled, {"t4-1": "nvidia-device-plugin"}, []),
    "standalone-mps": (mps, {"mps-1": "nvidia-device-plugin"}, []),
    "standalone-mps-not-applied": (
        lambda: mps("2", applied=False),
        {"mps-1": "nvidia-device-plugin"},
        ["GPU212 Node/mps-1"],
    ),
    "standalone-mig-mixed": (mig, {"mig-1": "nvidia-device-plugin"}, []),
    "standalone-mig-strategy-not-applied": (
        lambda: mig("mixed", labelled="single", mixed_names=False),
        {"mig-1": "nvidia-device-plugin"},
        ["GPU212 Node/mig-1"],
    ),
    "standalone-mig-names-under-single": (
        lambda: mig("single", labelled="single"),
        {"mig-1": "nvidia-device-plugin"},
        ["GPU212 Node/mig-1"],
    ),
    "bottlerocket": (bottlerocket, {"br-1": "bottlerocket"}, []),
    "bottlerocket-zero": (
        lambda: bottlerocket("0"),
        {"br-1": "bottlerocket"},
        ["GPU211 Node/br-1"],
    ),
    "eks-auto-mode": (eks_auto_mode, {"i-0a1b2c3d4e5f60718": "eks-auto-mode"}, []),
    "eks-auto-mode-unhealthy-gpu": (
        lambda: eks_auto_mode("7", "8"),
        {"i-0a1b2c3d4e5f60718": "eks-auto-mode"},
        ["GPU213 Node/i-0a1b2c3d4e5f60718"],
    ),
    "karpenter-plugin": (
        lambda: karpenter_plugin("4", "4"),
        {"ip-10-0-12-34": "nvidia-device-plugin"},
        [],
    ),
    "karpenter-plugin-time-slicing": (
        lambda: karpenter_plugin("16", "16"),
        {"ip-10-0-12-34": "nvidia-device-plugin"},
        [],
    ),
    "karpenter-plugin-lost-gpu": (
        lambda: karpenter_plugin("3", "3"),
        {"ip-10-0-12-34": "nvidia-device-plugin"},
        ["GPU213 Node/ip-10-0-12-34"],
    ),
    "gke": (gke, {"gke-l4-1": "gke"}, []),
    "gke-time-sharing": (lambda: gke_shared("6", clients="3"), {"gke-a100-1": "gke"}, []),
    "gke-time-sharing-nodes-only": (
        lambda: gke_shared("6", clients="3", with_pod=False),
        {"gke-a100-1": "gke"},
        [],
    ),
    "gke-time-sharing-lost-a-client": (
        lambda: gke_shared("5", clients="3"),
        {"gke-a100-1": "gke"},
        ["GPU212 Node/gke-a100-1"],
    ),
    "gke-mig-partitions": (lambda: gke_shared("14", partition="1g.5gb"), {"gke-a100-1": "gke"}, []),
    "gke-mig-partitions-shared": (
        lambda: gke_shared("28", clients="2", partition="1g.5gb"),
        {"gke-a100-1": "gke"},
        [],
    ),
    "gke-mig-partitions-too-few": (
        lambda: gke_shared("7", partition="1g.5gb"),
        {"gke-a100-1": "gke"},
        ["GPU212 Node/gke-a100-1"],
    ),
    "aks": (aks, {"aks-gpunp-1": "nvidia-device-plugin"}, []),
    "aks-h100-gpu-conditions": (aks_h100, {"aks-ndh100-1": "nvidia-device-plugin"}, []),
    "aks-h100-gpu-missing": (
        lambda: aks_h100(missing=True),
        {"aks-ndh100-1": "nvidia-device-plugin"},
        ["GPU215 Node/aks-ndh100-1"],
    ),
    "aks-static-manifest-mig": (aks_mig, {"aks-gpumig-1": "nvidia-device-plugin"}, []),
    "aks-static-manifest-mig-single": (
        lambda: aks_mig("single"),
        {"aks-gpumig-1": "nvidia-device-plugin"},
        ["GPU212 Node/aks-gpumig-1"],
    ),
    "kubevirt-nvidia-plugin": (
        kubevirt_nvidia_plugin,
        {"kv-pt-1": "nvidia-kubevirt-gpu-device-plugin"},
        [],
    ),
    "kubevirt-nvidia-plugin-zero": (
        lambda: kubevirt_nvidia_plugin("0"),
        {"kv-pt-1": "nvidia-kubevirt-gpu-device-plugin"},
        ["GPU211 Node/kv-pt-1"],
    ),
    "kubevirt-own-pci": (kubevirt_own_pci, {"kv-pci-1": "kubevirt"}, []),
    "kubevirt-own-mdev": (kubevirt_own_mdev, {"kv-mdev-1": "kubevirt"}, []),
    "kubevirt-own-without-cr": (kubevirt_own_without_cr, {"kv-pci-2": "kubevirt"}, []),
    "kubevirt-own-custom-name": (kubevirt_own_custom_name, {"kv-t4-3": "kubevirt"}, []),
    "kubevirt-own-custom-name-zero": (
        lambda: kubevirt_own_custom_name("0"),
        {"kv-t4-3": "kubevirt"},
        ["GPU211 Node/kv-t4-3"],
    ),
    "kubevirt-own-without-cr-zero": (
        lambda: kubevirt_own_without_cr("0"),
        {"kv-pci-2": "kubevirt"},
        ["GPU211 Node/kv-pci-2"],
    ),
    "kubevirt-own-pci-zero": (
        lambda: kubevirt_own_pci("0"),
        {"kv-pci-1": "kubevirt"},
        ["GPU211 Node/kv-pci-1"],
    ),
    "kubevirt-own-mdev-zero": (
        lambda: kubevirt_own_mdev("0"),
        {"kv-mdev-1": "kubevirt"},
        ["GPU211 Node/kv-mdev-1"],
    ),
    "dra-driver": (dra_driver, {"dra-1": "nvidia-dra-driver"}, []),
    "dra-driver-publishes-nothing": (
        dra_driver_publishing_nothing,
        {"dra-1": "nvidia-dra-driver"},
        ["GPU811 Node/dra-1"],
    ),
    "dra-driver-nodes-only": (dra_driver_nodes_only, {"dra-1": "nvidia-dra-driver"}, []),
    "dra-driver-sigs": (dra_driver_sigs, {"dra-1": "nvidia-dra-driver"}, []),
    "dra-driver-missing-on-node": (
        dra_driver_missing_on_node,
        {"dra-1": "nvidia-dra-driver", "dra-2": "nvidia-dra-driver"},
        ["GPU813 Node/dra-2"],
    ),
    "dra-driver-sigs-publishes-nothing": (
        lambda: dra_driver_sigs(published=False),
        {"dra-1": "nvidia-dra-driver"},
        ["GPU811 Node/dra-1"],
    ),
    "gpu-operator-gpucluster": (gpu_operator_gpucluster, {"dra-1": "gpu-operator"}, []),
    "gpu-operator-gpucluster-nodes-only": (
        lambda: gpu_operator_gpucluster(with_cr=False),
        {"dra-1": "gpu-operator"},
        [],
    ),
    "gpu-operator-gpucluster-leftover-label": (
        lambda: gpu_operator_gpucluster(leftover=True),
        {"dra-1": "gpu-operator"},
        ["GPU301 Node/dra-1"],
    ),
    "gpu-operator-with-dra-driver": (
        gpu_operator_with_dra_driver,
        {"dra-1": "gpu-operator"},
        [],
    ),
    "gpu-operator-with-dra-driver-no-eviction-label": (
        lambda: gpu_operator_with_dra_driver(eviction_label=False),
        {"dra-1": "gpu-operator"},
        ["GPU812 ClusterPolicy/cluster-policy"],
    ),
    "gpu-operator-with-dra-driver-nodes-only": (
        lambda: gpu_operator_with_dra_driver(nodes_only=True),
        {"dra-1": "gpu-operator"},
        [],
    ),
    "hami": (hami, {"hami-1": "hami"}, []),
    "hami-nodes-only": (hami_nodes_only, {"hami-1": "hami"}, []),
    "hami-zero": (hami_zero, {"hami-1": "hami"}, ["GPU211 Node/hami-1"]),
    "volcano-vgpu": (volcano_vgpu, {"volcano-1": "volcano-vgpu"}, []),
    "volcano-vgpu-registers-nothing": (
        lambda: volcano_vgpu(registered=False),
        {"volcano-1": "volcano-vgpu"},
        ["GPU214 Node/volcano-1"],
    ),
    "volcano-gpu-share": (volcano_gpu_share, {"volcano-2": "volcano-vgpu"}, []),
    "tencent-gpu-manager": (tencent_gpu_manager, {"tke-gpu-1": "tencent-gpu-manager"}, []),
    "tencent-gpu-manager-registers-nothing": (
        lambda: tencent_gpu_manager(registered=False),
        {"tke-gpu-1": "tencent-gpu-manager"},
        ["GPU214 Node/tke-gpu-1"],
    ),
    "ack": (ack, {"cn-hangzhou.10.0.1.7": "ack"}, []),
    "ack-static-pod": (
        lambda: ack(schedule=None, plugin="static"),
        {"cn-hangzhou.10.0.1.7": "ack"},
        [],
    ),
    "ack-nodes-only": (lambda: ack(plugin=None), {"cn-hangzhou.10.0.1.7": "ack"}, []),
    "ack-cgpu": (
        lambda: ack(
            {"nvidia.com/gpu": "0", "aliyun.com/gpu-mem": "44", "aliyun.com/gpu-count": "2"},
            schedule="cgpu",
            plugin="gpushare",
        ),
        {"cn-hangzhou.10.0.1.7": "aliyun-gpushare"},
        [],
    ),
    "ack-zero": (
        lambda: ack({"nvidia.com/gpu": "0"}),
        {"cn-hangzhou.10.0.1.7": "ack"},
        ["GPU211 Node/cn-hangzhou.10.0.1.7"],
    ),
    "ack-no-schedule-label": (
        lambda: ack({}, schedule=None, plugin=None),
        {"cn-hangzhou.10.0.1.7": "ack"},
        ["GPU214 Node/cn-hangzhou.10.0.1.7"],
    ),
    "aliyun-gpushare": (aliyun_gpushare, {"ack-gpu-1": "aliyun-gpushare"}, []),
    "aliyun-gpushare-registers-nothing": (
        lambda: aliyun_gpushare(registered=False),
        {"ack-gpu-1": "aliyun-gpushare"},
        ["GPU214 Node/ack-gpu-1"],
    ),
    "hami-with-gpu-operator": (lambda: hami(gpu_operator=True), {"hami-1": "gpu-operator"}, []),
    "gke-with-gpu-operator": (gke_with_gpu_operator, {"gke-l4-1": "gpu-operator"}, []),
    "gke-with-gpu-operator-plugin-on": (
        lambda: gke_with_gpu_operator(device_plugin=True),
        {"gke-l4-1": "gpu-operator"},
        ["GPU108 Node/gke-l4-1"],
    ),
    "bottlerocket-no-plugin": (
        bottlerocket_no_plugin,
        {"ip-192-168-164-242": "bottlerocket"},
        ["GPU214 Node/ip-192-168-164-242"],
    ),
    "gke-no-driver": (gke_no_driver, {"gke-t4-1": "gke"}, ["GPU214 Node/gke-t4-1"]),
    "gke-dra-pool": (gke_dra_pool, {"gke-dra-1": "nvidia-dra-driver"}, []),
    "gke-dra-pool-nodes-only": (lambda: gke_dra_pool(with_slice=False), {"gke-dra-1": "gke"}, []),
    "eks-no-plugin": (eks_no_plugin, {"ip-10-0-7-21": "eks"}, ["GPU214 Node/ip-10-0-7-21"]),
    "aks-managed": (aks_managed, {"aks-gpumanaged-1": "aks-managed-gpu"}, []),
    "aks-managed-mig-mixed": (
        lambda: aks_managed({"nvidia.com/mig-1g.10gb": "7"}),
        {"aks-gpumanaged-1": "aks-managed-gpu"},
        [],
    ),
    "aks-managed-registers-nothing": (
        lambda: aks_managed({}),
        {"aks-gpumanaged-1": "aks-managed-gpu"},
        ["GPU214 Node/aks-gpumanaged-1"],
    ),
    "aks-no-plugin": (aks_no_plugin, {"aks-gpunp-2": "aks"}, ["GPU214 Node/aks-gpunp-2"]),
    "nfd-no-plugin": (nfd_no_plugin, {}, ["GPU214 Node/gpu-7"]),
    "mixed-operator-and-standalone": (
        mixed,
        {"mixed-1": "gpu-operator"},
        ["GPU108 Node/mixed-1"],
    ),
}


def render(items: list[dict[str, Any]]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n"


def main() -> None:
    CORPUS.mkdir(parents=True, exist_ok=True)
    for old in CORPUS.glob("*.json"):
        old.unlink()
    for name, (build, _, _) in SCENARIOS.items():
        (CORPUS / f"{name}.json").write_text(render(build()))


if __name__ == "__main__":
    main()
