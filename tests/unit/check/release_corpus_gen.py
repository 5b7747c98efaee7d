"""Healthy node dumps as each GPU Operator release leaves them (tests/corpus/releases/).

The rules here are written from upstream, independently of gpuop's planner and of
`catalog/release_labels.yaml`: the deploy labels per workload config from
`controllers/state_manager.go` (`gpuStateLabels`) at each tag, GFD's labels from
k8s-device-plugin's `internal/lm` (product, count, memory, family, compute capability,
CUDA driver and runtime versions, replicas, sharing strategy, MIG strategy), NFD's labels
as the operator's default NFD worker config writes them (`pci-10de.present`, vendor only),
and the sandbox device plugins' resource names (kubevirt-gpu-device-plugin: pci.ids names
and mdev type names; Kata's sandbox-device-plugin: `nvidia.com/pgpu`). Sandbox nodes never
run GFD. No object carries a gpuop label or annotation.

Each dump is a kubectl `List`: the Nodes, the ClusterPolicy, the operator Deployment and
the validator DaemonSet (whose image tags carry the release).

    python tests/unit/check/release_corpus_gen.py     # rewrite the files
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "releases"
NAMESPACE = "gpu-operator"
DEPLOY = "nvidia.com/gpu.deploy."

# gpuStateLabels at each tag (the client key is new in v26.7.0; kata-manager and cc-manager
# in v23.6.0; the Kata device plugin key replaces the sandbox one in kata mode from v26.3.0).
_CONTAINER = ["driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm",
              "dcgm-exporter", "node-status-exporter", "operator-validator"]  # fmt: skip
_PASSTHROUGH = ["sandbox-device-plugin", "sandbox-validator", "vfio-manager", "kata-manager",
                "cc-manager"]  # fmt: skip
_VGPU = ["sandbox-device-plugin", "vgpu-manager", "vgpu-device-manager", "sandbox-validator",
         "cc-manager"]  # fmt: skip


@dataclass(frozen=True)
class Release:
    version: str  # "25.10.1"
    driver: str  # the chart's default driver
    cuda: str  # the CUDA driver API version that driver reports
    gfd: str  # GFD (k8s-device-plugin) version

    @property
    def line(self) -> tuple[int, int]:
        major, minor, _ = self.version.split(".")
        return int(major), int(minor)

    @property
    def tag(self) -> str:
        return f"v{self.version}"

    def deploy_keys(self, workload: str, mode: str = "kubevirt") -> list[str]:
        if workload == "container":
            keys = list(_CONTAINER)
        elif workload == "vm-vgpu":
            keys = list(_VGPU)
        else:
            keys = list(_PASSTHROUGH)
            if mode == "kata" and self.line >= (26, 3):
                keys[0] = "kata-sandbox-device-plugin"
        if self.line >= (26, 7):
            keys.append("client")
        return keys


# Chart defaults (deployments/gpu-operator/values.yaml) of one release per line.
RELEASES = [
    Release("24.9.2", "550.144.03", "12.4", "v0.17.0"),
    Release("25.3.4", "580.82.07", "13.0", "v0.17.4"),
    Release("25.10.1", "580.105.08", "13.0", "v0.18.1"),
    Release("26.3.0", "580.126.20", "13.0", "v0.19.0"),
    Release("26.7.0", "595.91.07", "13.2", "v0.20.0"),
]


@dataclass(frozen=True)
class Card:
    product: str  # NVML name as GFD writes it
    memory: int  # MiB
    family: str
    compute: tuple[int, int]
    mig_capable: bool
    pci_name: str  # kubevirt-gpu-device-plugin resource (pci.ids 2025.07.11)


A10 = Card("NVIDIA-A10", 23028, "ampere", (8, 6), False, "GA102GL_A10")
A100 = Card("NVIDIA-A100-SXM4-40GB", 40960, "ampere", (8, 0), True, "GA100_A100_SXM4_40GB")
H100 = Card("NVIDIA-H100-80GB-HBM3", 81559, "hopper", (9, 0), True, "GH100_H100_SXM5_80GB")


def _os_labels(name: str) -> dict[str, str]:
    return {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "feature.node.kubernetes.io/kernel-version.full": "5.15.0-119-generic",
        "feature.node.kubernetes.io/kernel-version.major": "5",
        "feature.node.kubernetes.io/kernel-version.minor": "15",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "22",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.minor": "04",
        # The operator's NFD worker config: PCI classes 0300/0302 with labelFields [vendor].
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.present": "true",
    }


def _gfd(release: Release, card: Card, count: int) -> dict[str, str]:
    driver = release.driver.split(".")
    cuda = release.cuda.split(".")
    major, minor = card.compute
    return {
        "nvidia.com/gfd.timestamp": "1767225600",
        "nvidia.com/gpu.product": card.product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": str(card.memory),
        "nvidia.com/gpu.family": card.family,
        "nvidia.com/gpu.compute.major": str(major),
        "nvidia.com/gpu.compute.minor": str(minor),
        "nvidia.com/gpu.machine": "PowerEdge-R750xa",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/cuda.driver-version.major": driver[0],
        "nvidia.com/cuda.driver-version.minor": driver[1],
        "nvidia.com/cuda.driver-version.revision": driver[2],
        "nvidia.com/cuda.driver-version.full": release.driver,
        "nvidia.com/cuda.driver.major": driver[0],
        "nvidia.com/cuda.driver.minor": driver[1],
        "nvidia.com/cuda.driver.rev": driver[2],
        "nvidia.com/cuda.runtime-version.major": cuda[0],
        "nvidia.com/cuda.runtime-version.minor": cuda[1],
        "nvidia.com/cuda.runtime-version.full": release.cuda,
        "nvidia.com/cuda.runtime.major": cuda[0],
        "nvidia.com/cuda.runtime.minor": cuda[1],
        "nvidia.com/mig.capable": "true" if card.mig_capable else "false",
        "nvidia.com/mps.capable": "false",
        "nvidia.com/vgpu.present": "false",
    }


def _deploy(release: Release, workload: str, mode: str = "kubevirt") -> dict[str, str]:
    return {DEPLOY + key: "true" for key in release.deploy_keys(workload, mode)}


def _node(name: str, labels: dict[str, str], resources: dict[str, str]) -> Obj:
    capacity = {
        "cpu": "64",
        "memory": "527958552Ki",
        "ephemeral-storage": "1844284980Ki",
        "pods": "110",
        **resources,
    }
    allocatable = dict(capacity, cpu="63500m", memory="526807576Ki")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": dict(sorted(labels.items())),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "nfd.node.kubernetes.io/feature-labels": "pci-10de.present",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "status": {"capacity": capacity, "allocatable": allocatable},
    }


def container_node(release: Release, name: str, card: Card, count: int) -> Obj:
    labels = {**_os_labels(name), **_gfd(release, card, count), **_deploy(release, "container")}
    if card.mig_capable:
        # Container nodes with a MIG-capable GPU get the MIG manager and the MIG default.
        labels[DEPLOY + "mig-manager"] = "true"
        labels["nvidia.com/mig.config"] = "all-disabled"
        labels["nvidia.com/mig.config.state"] = "success"
    return _node(name, labels, {"nvidia.com/gpu": str(count)})


def _mig_node(release: Release, name: str, strategy: str) -> Obj:
    labels = {**_os_labels(name), **_gfd(release, A100, 1), **_deploy(release, "container")}
    labels[DEPLOY + "mig-manager"] = "true"
    labels["nvidia.com/mig.config"] = "all-1g.5gb"
    labels["nvidia.com/mig.config.state"] = "success"
    labels["nvidia.com/mig.strategy"] = strategy
    profile = {
        "count": "7",
        "memory": "4864",
        "multiprocessors": "14",
        "slices.gi": "1",
        "slices.ci": "1",
        "engines.copy": "1",
        "engines.decoder": "0",
        "engines.encoder": "0",
        "engines.jpeg": "0",
        "engines.ofa": "0",
        "replicas": "1",
        "sharing-strategy": "none",
    }
    if strategy == "single":
        for key, value in profile.items():
            labels[f"nvidia.com/gpu.{key}"] = value
        labels["nvidia.com/gpu.product"] = f"{A100.product}-MIG-1g.5gb"
        return _node(name, labels, {"nvidia.com/gpu": "7"})
    # mixed: the full-GPU labels stay, with replicas 0 (built without a sharing config).
    labels["nvidia.com/gpu.replicas"] = "0"
    for key, value in profile.items():
        labels[f"nvidia.com/mig-1g.5gb.{key}"] = value
    labels["nvidia.com/mig-1g.5gb.product"] = f"{A100.product}-MIG-1g.5gb"
    return _node(name, labels, {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.5gb": "7"})


def _sandbox_node(
    release: Release, name: str, workload: str, extra: dict[str, str], resources: dict[str, str],
    mode: str = "kubevirt",
) -> Obj:  # fmt: skip
    labels = {**_os_labels(name), **_deploy(release, workload, mode), **extra}
    labels["nvidia.com/gpu.workload.config"] = workload
    return _node(name, labels, resources)


def policy(release: Release, *, sandbox: bool = False, mode: str = "kubevirt", **spec: Any) -> Obj:
    """The ClusterPolicy the release's chart renders (the fields that matter here)."""
    body: Obj = {
        "operator": {"defaultRuntime": "containerd", "runtimeClass": "nvidia"},
        "daemonsets": {"priorityClassName": "system-node-critical", "updateStrategy": "RollingUpdate"},
        "driver": {"enabled": True},
        "toolkit": {"enabled": True},
        "devicePlugin": {"enabled": True},
        "dcgm": {"enabled": False},
        "dcgmExporter": {"enabled": True},
        "gfd": {"enabled": True},
        "mig": {"strategy": "single"},
        "migManager": {"enabled": True, "config": {"name": "default-mig-parted-config", "default": "all-disabled"}},
        "nodeStatusExporter": {"enabled": False},
        "validator": {"version": release.tag},
        "psa": {"enabled": False},
        "cdi": {"enabled": release.line >= (25, 10)},
        "sandboxWorkloads": {"enabled": sandbox, "defaultWorkload": "container"},
        "vgpuManager": {"enabled": sandbox},
        "vgpuDeviceManager": {"enabled": True, "config": {"name": "", "default": "default"}},
        "vfioManager": {"enabled": True},
        "sandboxDevicePlugin": {"enabled": True},
        "kataManager": {"enabled": False},
        "ccManager": {"enabled": False, "defaultMode": "off"},
    }  # fmt: skip
    if release.line >= (26, 3):
        body["sandboxWorkloads"]["mode"] = mode
        body["kataSandboxDevicePlugin"] = {"enabled": True}
    for key, value in spec.items():
        body[key] = value
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {
            "name": "cluster-policy",
            "labels": {
                "app.kubernetes.io/component": "gpu-operator",
                "app.kubernetes.io/managed-by": "Helm",
                "app.kubernetes.io/name": "gpu-operator",
                "app.kubernetes.io/version": release.tag,
                "helm.sh/chart": f"gpu-operator-{release.tag}",
            },
        },
        "spec": body,
        "status": {"namespace": NAMESPACE, "state": "ready"},
    }


def operator_deployment(release: Release) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "gpu-operator",
            "namespace": NAMESPACE,
            "labels": {
                "app": "gpu-operator",
                "app.kubernetes.io/component": "gpu-operator",
                "app.kubernetes.io/managed-by": "Helm",
                "app.kubernetes.io/name": "gpu-operator",
                "app.kubernetes.io/version": release.tag,
                "helm.sh/chart": f"gpu-operator-{release.tag}",
            },
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "gpu-operator"}},
            "template": {
                "metadata": {"labels": {"app": "gpu-operator"}},
                "spec": {
                    "serviceAccountName": "gpu-operator",
                    "containers": [
                        {
                            "name": "gpu-operator",
                            "image": f"nvcr.io/nvidia/gpu-operator:{release.tag}",
                            "command": ["gpu-operator"],
                        }
                    ],
                },
            },
        },
        "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
    }


def validator_daemonset(release: Release, name: str, ready: int) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "nvidia-operator-validator" if "operator" in name else "nvidia-sandbox-validator",
                            "image": f"nvcr.io/nvidia/cloud-native/gpu-operator-validator:{release.tag}",
                        }
                    ]
                },
            },
        },
        "status": {
            "desiredNumberScheduled": ready,
            "currentNumberScheduled": ready,
            "numberReady": ready,
            "numberAvailable": ready,
            "numberMisscheduled": 0,
        },
    }  # fmt: skip


def dump(release: Release, cluster_policy: Obj, nodes: list[Obj]) -> Obj:
    container = sum(1 for n in nodes if DEPLOY + "operator-validator" in n["metadata"]["labels"])
    sandbox = sum(1 for n in nodes if DEPLOY + "sandbox-validator" in n["metadata"]["labels"])
    items = [*nodes, cluster_policy, operator_deployment(release)]
    if container:
        items.append(validator_daemonset(release, "nvidia-operator-validator", container))
    if sandbox:
        items.append(validator_daemonset(release, "nvidia-sandbox-validator", sandbox))
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


# --- scenarios --------------------------------------------------------------------------


def container(release: Release) -> Obj:
    nodes = [
        container_node(release, "gpu-a10-0", A10, 2),
        container_node(release, "gpu-h100-0", H100, 8),
    ]
    return dump(release, policy(release), nodes)  # fmt: skip


def mig_single(release: Release) -> Obj:
    return dump(release, policy(release), [_mig_node(release, "gpu-a100-0", "single")])


def mig_mixed(release: Release) -> Obj:
    return dump(
        release,
        policy(release, mig={"strategy": "mixed"}),
        [_mig_node(release, "gpu-a100-0", "mixed")],
    )


def time_slicing(release: Release) -> Obj:
    node = container_node(release, "gpu-a10-0", A10, 1)
    labels = node["metadata"]["labels"]
    # renameByDefault false: the product gets -SHARED and nvidia.com/gpu counts replicas.
    labels["nvidia.com/gpu.product"] = A10.product + "-SHARED"
    labels["nvidia.com/gpu.replicas"] = "4"
    labels["nvidia.com/gpu.sharing-strategy"] = "time-slicing"
    labels["nvidia.com/device-plugin.config"] = "a10"
    for section in ("capacity", "allocatable"):
        node["status"][section]["nvidia.com/gpu"] = "4"
    plugin = {"enabled": True, "config": {"name": "time-slicing-config", "default": "a10"}}
    return dump(release, policy(release, devicePlugin=plugin), [node])


def vm_passthrough(release: Release) -> Obj:
    node = _sandbox_node(
        release, "vm-a10-0", "vm-passthrough", {}, {f"nvidia.com/{A10.pci_name}": "2"}
    )
    return dump(release, policy(release, sandbox=True), [node])  # fmt: skip


def vm_vgpu(release: Release) -> Obj:
    extra = {
        "nvidia.com/vgpu.config": "A10-12Q",
        "nvidia.com/vgpu.config.state": "success",
        "nvidia.com/vgpu.host-driver-version": release.driver,
    }
    node = _sandbox_node(
        release, "vgpu-a10-0", "vm-vgpu", extra, {"nvidia.com/NVIDIA_A10-12Q": "4"}
    )
    return dump(release, policy(release, sandbox=True), [node])  # fmt: skip


def kata(release: Release) -> Obj:
    node = _sandbox_node(
        release, "kata-h100-0", "vm-passthrough", {}, {"nvidia.com/pgpu": "8"}, mode="kata"
    )
    spec = {"kataManager": {"enabled": True}}
    return dump(release, policy(release, sandbox=True, mode="kata", **spec), [node])  # fmt: skip


SCENARIOS: dict[str, Callable[[Release], Obj]] = {
    "container": container,
    "mig-single": mig_single,
    "mig-mixed": mig_mixed,
    "time-slicing": time_slicing,
    "vm-passthrough": vm_passthrough,
    "vm-vgpu": vm_vgpu,
    "kata": kata,
}
# Scenarios that need a release feature (Kata mode: v26.3.0).
_SINCE = {"kata": (26, 3)}


def cases() -> dict[str, Obj]:
    """`v25.10.1-container` -> the dump."""
    out: dict[str, Obj] = {}
    for release in RELEASES:
        for name, build in SCENARIOS.items():
            if release.line >= _SINCE.get(name, (0, 0)):
                out[f"{release.tag}-{name}"] = build(release)
    return out


def render(document: Obj) -> str:
    return json.dumps(document, indent=1) + "\n"


def main() -> None:
    CORPUS.mkdir(parents=True, exist_ok=True)
    for path in CORPUS.glob("*.json"):
        path.unlink()
    for name, document in cases().items():
        (CORPUS / f"{name}.json").write_text(render(document), encoding="utf-8")


if __name__ == "__main__":
    main()
