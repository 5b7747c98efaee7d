"""Build the `gpuop check` corpus: realistic cluster dumps made from `plan()` output.

Healthy nodes are what the operator and the device plugins would leave: NFD labels as
NVIDIA's default NFD configuration writes them (by vendor only), the deploy labels of the
plan, GPU feature discovery labels where GFD runs, and capacity and allocatable exactly as
the plan advertises. The cards are known while the dump is made (an inventory hint the
planner reads) and the hint is removed from the result, so the checker sees each node as
a real cluster presents it. Drifted
dumps take the three-node lab (three 2× A10 nodes, one per workload config) and change one
node the way `gpuop sim drift NODE KIND` does.

    python tests/unit/check/corpus_gen.py          # rewrite tests/corpus/check/

`EXPECTED` lists, per dump, the exact (code, Kind/name) pairs the checker must report.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpuop.api.labels import INVENTORY_ANNOTATION, WORKLOAD_LABEL
from gpuop.catalog import gpu_catalog, operand_table
from gpuop.naming import PciDatabase, mdev_type_name, passthrough_resource
from gpuop.planner import NodeFacts, NodePlan, plan
from gpuop.planner.inventory import GpuCard, encode_inventory
from gpuop.policy import ResolvedPolicy, default_policy_object, parse_cluster_policy

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "check"
OPERATOR_NAMESPACE = "gpu-operator"
DRIVER = "595.91.07"
CUDA = "13.1"
STAMP = "2026-08-01T10:00:00Z"
KUBEVIRT_VERSION = "v1.5.2"

Obj = dict[str, Any]


def _suffix(*parts: str, size: int = 5) -> str:
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return "".join(c for c in digest if c.isalpha())[:size].ljust(size, "x")


def policy_object(*, sandbox: bool, default_workload: str = "container", **spec: Any) -> Obj:
    obj = copy.deepcopy(default_policy_object())
    obj["metadata"] = {
        "name": "cluster-policy",
        "creationTimestamp": "2026-07-01T09:00:00Z",
        "generation": 1,
        "uid": "3f0b5c1e-1111-4a7e-9b1c-000000000001",
    }
    obj["spec"]["sandboxWorkloads"] = {
        "enabled": sandbox,
        "defaultWorkload": default_workload,
        "mode": "kubevirt",
    }
    obj["spec"].update(spec)
    obj["status"] = {"state": "ready", "namespace": OPERATOR_NAMESPACE}
    return obj


def resolved(policy: Obj) -> ResolvedPolicy:
    return parse_cluster_policy(policy)


def cards_of(model: str, count: int) -> list[GpuCard]:
    gpu = gpu_catalog().by_model(model)
    assert gpu is not None, model
    return [
        GpuCard(
            i,
            gpu.pci_device_id,
            model=gpu.model,
            memory_mib=gpu.memory_mib,
            bdf=f"0000:{0x17 + i * 0x10:02x}:00.0",
        )
        for i in range(count)
    ]


def _gfd_labels(model: str, count: int, name: str) -> dict[str, str]:
    gpu = gpu_catalog().by_model(model)
    assert gpu is not None
    major, minor = gpu.compute_capability.split(".")
    d_major, d_minor, d_rev = DRIVER.split(".")
    c_major, c_minor = CUDA.split(".")
    return {
        "nvidia.com/gpu.product": gpu.product,
        "nvidia.com/gpu.count": str(count),
        "nvidia.com/gpu.memory": str(gpu.memory_mib),
        "nvidia.com/gpu.family": gpu.family,
        "nvidia.com/gpu.compute.major": major,
        "nvidia.com/gpu.compute.minor": minor,
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.machine": "PowerEdge-R750xa",
        "nvidia.com/cuda.driver-version.major": d_major,
        "nvidia.com/cuda.driver-version.minor": d_minor,
        "nvidia.com/cuda.driver-version.revision": d_rev,
        "nvidia.com/cuda.driver-version.full": DRIVER,
        "nvidia.com/cuda.runtime-version.major": c_major,
        "nvidia.com/cuda.runtime-version.minor": c_minor,
        "nvidia.com/cuda.runtime-version.full": CUDA,
        "nvidia.com/mig.capable": str(gpu.mig_capable).lower(),
        "nvidia.com/mps.capable": "false",
        "nvidia.com/vgpu.present": "false",
        "nvidia.com/gfd.timestamp": str(
            1754000000 + int(_suffix(name, size=4).encode().hex(), 16) % 100000
        ),
    }


def _facts(obj: Mapping[str, Any]) -> NodeFacts:
    return NodeFacts.from_object(obj)


def node_object(
    name: str,
    policy: ResolvedPolicy,
    *,
    model: str | None = "A10",
    count: int = 2,
    workload: str | None = None,
    extra_labels: Mapping[str, str] | None = None,
) -> tuple[Obj, NodePlan]:
    """A Node as the operator and plugins leave it under `policy`, and its plan."""
    labels: dict[str, str] = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64",
        "feature.node.kubernetes.io/kernel-version.full": "6.8.0-60-generic",
        "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04",
    }
    annotations = {
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    if model is not None:
        cards = cards_of(model, count)
        device = cards[0].device_id
        labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
        labels["feature.node.kubernetes.io/pci-10de.sriov.capable"] = "true"
        labels["feature.node.kubernetes.io/iommu-enabled"] = "true"
        assert device
        annotations[INVENTORY_ANNOTATION] = encode_inventory(cards)
    else:
        labels["node-role.kubernetes.io/control-plane"] = ""
    if workload is not None:
        labels[WORKLOAD_LABEL] = workload
    labels.update(extra_labels or {})
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"node-{_suffix(name, size=12)}",
            "resourceVersion": "4242",
            "creationTimestamp": "2026-07-01T08:00:00Z",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
        "status": {},
    }
    first = plan(policy, _facts(obj))
    for key, value in first.label_changes.items():
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
    node_plan = plan(policy, _facts(obj))
    assert not node_plan.label_changes, node_plan.label_changes
    running = {op.name for op in node_plan.operands if op.runs}
    if model is not None and "gpu-feature-discovery" in running:
        labels.update(_gfd_labels(model, count, name))
    if "vgpu-device-manager" in running:
        labels["nvidia.com/vgpu.config.state"] = "success"
    node_plan = plan(policy, _facts(obj))
    assert not node_plan.label_changes, node_plan.label_changes
    resources = {
        "cpu": "64",
        "ephemeral-storage": "937234648Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "527946516Ki",
        "pods": "110",
    }
    resources.update({key: str(value) for key, value in node_plan.advertises.items()})
    obj["status"] = {
        "capacity": dict(resources),
        "allocatable": dict(resources, cpu="63500m", memory="527329300Ki"),
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": STAMP,
                "lastTransitionTime": "2026-07-01T08:01:00Z",
            }
        ],
        "addresses": [
            {
                "type": "InternalIP",
                "address": f"10.0.0.{int(_suffix(name, size=2).encode().hex(), 16) % 200 + 10}",
            },
            {"type": "Hostname", "address": name},
        ],
        "nodeInfo": {
            "architecture": "amd64",
            "containerRuntimeVersion": "containerd://2.1.3",
            "kernelVersion": "6.8.0-60-generic",
            "kubeProxyVersion": "",
            "kubeletVersion": "v1.33.2",
            "operatingSystem": "linux",
            "osImage": "Ubuntu 24.04.2 LTS",
            "machineID": _suffix(name, "machine", size=32),
            "systemUUID": _suffix(name, "uuid", size=32),
            "bootID": _suffix(name, "boot", size=32),
        },
        "images": [
            {"names": [f"nvcr.io/nvidia/{image}"], "sizeBytes": size}
            for image, size in (
                ("k8s-device-plugin:v0.20.0", 161234567),
                ("cloud-native/gpu-operator-validator:v26.7.0", 198765432),
                ("k8s/container-toolkit:v1.20.0", 143210987),
                ("kubevirt-gpu-device-plugin:v1.6.0", 65432109),
                ("k8s/dcgm-exporter:4.6.0-4.8.3-ubuntu22.04", 387654321),
            )
        ],
    }
    annotations.pop(INVENTORY_ANNOTATION, None)
    return obj, node_plan


def operand_pods(node: Obj, node_plan: NodePlan) -> list[Obj]:
    """Running, Ready pods of every operand the plan runs on the node."""
    name = node["metadata"]["name"]
    pods = []
    for op in node_plan.operands:
        if not op.runs:
            continue
        pod_name = f"{op.daemonset}-{_suffix(op.daemonset, name)}"
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": OPERATOR_NAMESPACE,
                    "labels": {"app": op.daemonset},
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "DaemonSet",
                            "name": op.daemonset,
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "nodeName": name,
                    "containers": [{"name": op.name, "image": "nvcr.io/nvidia/x"}],
                },
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [
                        {"name": op.name, "ready": True, "state": {"running": {"startedAt": STAMP}}}
                    ],
                },
            }
        )
    return pods


def daemonsets(policy: ResolvedPolicy, plans: list[NodePlan]) -> list[Obj]:
    out = []
    for operand in operand_table().operands:
        if not policy.operand_enabled(operand):
            continue
        placed = sum(
            1 for p in plans if any(op.name == operand.name and op.runs for op in p.operands)
        )
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": operand.daemonset, "namespace": OPERATOR_NAMESPACE},
                "spec": {
                    "template": {
                        "spec": {
                            "nodeSelector": {
                                f"nvidia.com/gpu.deploy.{operand.deploy_label}": "true"
                            }
                        }
                    }
                },
                "status": {
                    "desiredNumberScheduled": placed,
                    "currentNumberScheduled": placed,
                    "numberReady": placed,
                    "numberAvailable": placed,
                    "numberMisscheduled": 0,
                },
            }
        )
    return out


def kubevirt_object(
    nodes: list[Obj],
    *,
    gates: tuple[str, ...] = ("HostDevices", "DisableMDEVConfiguration"),
    version: str = KUBEVIRT_VERSION,
    permitted: Obj | None = None,
    pci_db: PciDatabase | None = None,
) -> Obj:
    """The KubeVirt CR, permitting exactly what the nodes advertise."""
    if permitted is None:
        database = pci_db or PciDatabase.builtin()
        pci: dict[str, Obj] = {}
        mdev: dict[str, Obj] = {}
        for node in nodes:
            for resource, value in node["status"]["allocatable"].items():
                if not resource.startswith("nvidia.com/") or value == "0":
                    continue
                for gpu in gpu_catalog().gpus:
                    if passthrough_resource(gpu.pci_device_id, database).resource == resource:
                        pci[resource] = {
                            "pciVendorSelector": f"10DE:{gpu.pci_device_id.upper()}",
                            "resourceName": resource,
                            "externalResourceProvider": True,
                        }
                    for vgpu_type in gpu.vgpu_types:
                        mdev_name = mdev_type_name(vgpu_type)
                        if "nvidia.com/" + mdev_name.replace(" ", "_") == resource:
                            mdev[resource] = {
                                "mdevNameSelector": mdev_name,
                                "resourceName": resource,
                                "externalResourceProvider": True,
                            }
        permitted = {}
        if pci:
            permitted["pciHostDevices"] = [pci[k] for k in sorted(pci)]
        if mdev:
            permitted["mediatedDevices"] = [mdev[k] for k in sorted(mdev)]
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
        "spec": {
            "configuration": {
                "developerConfiguration": {"featureGates": list(gates)},
                "permittedHostDevices": permitted,
            }
        },
        "status": {
            "phase": "Deployed",
            "observedKubeVirtVersion": version,
            "targetKubeVirtVersion": version,
        },
    }


def gpu_pod(name: str, resource: str, count: int, node: str | None, namespace: str = "ml") -> Obj:
    running = node is not None
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            **({"nodeName": node} if node else {}),
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/nvidia/cuda:13.1.0-base-ubuntu24.04",
                    "resources": {"limits": {resource: str(count)}},
                }
            ],
        },
        "status": {
            "phase": "Running" if running else "Pending",
            "conditions": [
                {"type": "Ready", "status": "True"}
                if running
                else {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
            ],
        },
    }


def vmi(name: str, device: str, section: str, node: str | None, namespace: str = "vms") -> Obj:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": namespace, "uid": f"vmi-{_suffix(name, size=10)}"},
        "spec": {
            "domain": {
                "devices": {section: [{"name": "gpu1", "deviceName": device}]},
                "resources": {"requests": {"memory": "8Gi"}},
            }
        },
        "status": {"phase": "Running", "nodeName": node} if node else {"phase": "Pending"},
    }


def launcher_pod(vmi_obj: Obj, device: str) -> Obj:
    name = vmi_obj["metadata"]["name"]
    node = vmi_obj["status"].get("nodeName")
    pod = gpu_pod(
        f"virt-launcher-{name}-{_suffix(name, 'launcher')}",
        device,
        1,
        node,
        vmi_obj["metadata"]["namespace"],
    )
    pod["metadata"]["labels"] = {
        "kubevirt.io": "virt-launcher",
        "kubevirt.io/created-by": vmi_obj["metadata"]["uid"],
    }
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "name": name,
            "controller": True,
        }
    ]
    return pod


def event(kind: str, namespace: str, name: str, reason: str, message: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{_suffix(name, reason, size=8)}", "namespace": namespace},
        "involvedObject": {"kind": kind, "namespace": namespace, "name": name},
        "reason": reason,
        "message": message,
        "type": "Warning",
        "lastTimestamp": STAMP,
        "count": 3,
    }


def as_list(items: list[Obj]) -> Obj:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


# The mixed fleet the benchmarks use: (workload config, GPU model, cards per node).
FLEET_SHAPES = (
    ("container", "A10", 2),
    ("vm-passthrough", "A10", 2),
    ("vm-vgpu", "A10", 2),
    ("container", "L40S", 4),
    ("vm-passthrough", "L40S", 4),
    ("vm-vgpu", "L40S", 4),
)


def fleet(
    policy: ResolvedPolicy, count: int, shapes: tuple[tuple[str, str, int], ...] = FLEET_SHAPES
) -> list[Obj]:
    """`count` healthy Nodes of these shapes in turn, each with its own name and identity."""
    templates = [
        node_object("shape", policy, workload=workload, model=model, count=cards)[0]
        for workload, model, cards in shapes
    ]
    nodes = []
    for index in range(count):
        node = copy.deepcopy(templates[index % len(templates)])
        name = f"gpu-{index:05d}"
        meta = node["metadata"]
        meta["name"] = name
        meta["uid"] = f"node-{index:012d}"
        meta["labels"]["kubernetes.io/hostname"] = name
        if "nvidia.com/gfd.timestamp" in meta["labels"]:
            meta["labels"]["nvidia.com/gfd.timestamp"] = str(1754000000 + index)
        node["status"]["addresses"] = [
            {
                "type": "InternalIP",
                "address": f"10.{index // 65536}.{index // 256 % 256}.{index % 256}",
            },
            {"type": "Hostname", "address": name},
        ]
        node["status"]["nodeInfo"]["machineID"] = f"{index:032x}"
        node["status"]["nodeInfo"]["systemUUID"] = f"{index + 7:032x}"
        node["status"]["nodeInfo"]["bootID"] = f"{index + 13:032x}"
        nodes.append(node)
    return nodes


# --- clusters ------------------------------------------------------------------------


class Cluster:
    """A dump under construction: nodes with their plans, and everything else."""

    def __init__(self, policy_obj: Obj | None, *, include_policy: bool = True) -> None:
        self.policy_obj = policy_obj
        self.policy = resolved(policy_obj) if policy_obj else resolved(policy_object(sandbox=False))
        self.include_policy = include_policy and policy_obj is not None
        self.nodes: dict[str, Obj] = {}
        self.plans: dict[str, NodePlan] = {}
        self.extra: list[Obj] = []
        self.operands = True
        self.kubevirt: Obj | None = None

    def node(self, name: str, **kwargs: Any) -> Obj:
        obj, node_plan = node_object(name, self.policy, **kwargs)
        self.nodes[name] = obj
        self.plans[name] = node_plan
        return obj

    def objects(self) -> list[Obj]:
        items: list[Obj] = []
        if self.include_policy and self.policy_obj is not None:
            items.append(self.policy_obj)
        items.extend(self.nodes.values())
        if self.operands:
            plans = [self.plans[n] for n in self.nodes]
            items.extend(daemonsets(self.policy, plans))
            for name, obj in self.nodes.items():
                items.extend(operand_pods(obj, self.plans[name]))
        if self.kubevirt is not None:
            items.append(self.kubevirt)
        items.extend(self.extra)
        return items


def lab_policy() -> Obj:
    return policy_object(sandbox=True, default_workload="container")


def lab(*, policy_obj: Obj | None = None, include_policy: bool = True, vms: bool = True) -> Cluster:
    """The lab: three 2× A10 nodes, one per workload config, with KubeVirt and workloads."""
    cluster = Cluster(policy_obj or lab_policy(), include_policy=include_policy)
    cluster.node("lab-1", workload="container")
    cluster.node("lab-2", workload="vm-passthrough")
    cluster.node("lab-3", workload="vm-vgpu")
    cluster.kubevirt = kubevirt_object(list(cluster.nodes.values()))
    cluster.extra.append(gpu_pod("cuda-train-0", "nvidia.com/gpu", 1, "lab-1"))
    if vms:
        passthrough = vmi("vm-passthrough-0", "nvidia.com/GA102GL_A10", "gpus", "lab-2")
        vgpu = vmi("vm-vgpu-0", "nvidia.com/NVIDIA_A10-12Q", "hostDevices", "lab-3")
        cluster.extra += [passthrough, launcher_pod(passthrough, "nvidia.com/GA102GL_A10")]
        cluster.extra += [vgpu, launcher_pod(vgpu, "nvidia.com/NVIDIA_A10-12Q")]
    return cluster


def _set(node: Obj, resource: str, value: str | None) -> None:
    for section in ("allocatable", "capacity"):
        if value is None:
            node["status"][section].pop(resource, None)
        else:
            node["status"][section][resource] = value


# Drifts as `gpuop sim drift NODE KIND` makes them, applied to a lab dump.
def drift(cluster: Cluster, node: str, kind: str) -> None:
    obj = cluster.nodes[node]
    labels = obj["metadata"]["labels"]
    if kind == "stale-resource":
        _set(obj, "nvidia.com/gpu", "2")
    elif kind == "wrong-vgpu-count":
        _set(obj, "nvidia.com/NVIDIA_A10-12Q", "3")
    elif kind == "wrong-vgpu-type":
        _set(obj, "nvidia.com/NVIDIA_A10-12Q", None)
        _set(obj, "nvidia.com/NVIDIA_A10-8Q", "6")
    elif kind == "label-flip":
        labels[WORKLOAD_LABEL] = "vm-passthrough"
    elif kind == "two-kinds":
        _set(obj, "nvidia.com/GA102GL_A10", "2")
    elif kind == "deploy-label-edited":
        labels["nvidia.com/gpu.deploy.device-plugin"] = "true"
    elif kind == "vgpu-config-failed":
        labels["nvidia.com/vgpu.config.state"] = "failed"
    elif kind == "non-gpu-advertising":
        for key in list(labels):
            if key.startswith("feature.node.kubernetes.io/pci-"):
                del labels[key]
    elif kind == "too-many-devices":
        # Nothing a real node carries counts its cards apart from what the plugin
        # advertises: only a hardware description (the optional hint) reveals this drift.
        obj["metadata"]["annotations"][INVENTORY_ANNOTATION] = encode_inventory(cards_of("A10", 2))
        _set(obj, "nvidia.com/GA102GL_A10", "4")
    else:
        raise ValueError(kind)


DRIFTS = {
    # kind: (node, expected (code, subject) pairs)
    "stale-resource": ("lab-2", {("GPU202", "Node/lab-2")}),
    # 3 A10-12Q devices are one and a half cards: not whole cards (with a hint: GPU204).
    "wrong-vgpu-count": ("lab-3", {("GPU107", "Node/lab-3")}),
    "wrong-vgpu-type": (
        "lab-3",
        {("GPU203", "Node/lab-3"), ("GPU501", "KubeVirt/kubevirt/kubevirt")},
    ),
    "label-flip": ("lab-1", {("GPU201", "Node/lab-1"), ("GPU301", "Node/lab-1")}),
    "two-kinds": ("lab-1", {("GPU202", "Node/lab-1")}),
    "deploy-label-edited": ("lab-3", {("GPU301", "Node/lab-3")}),
    "vgpu-config-failed": ("lab-3", {("GPU305", "Node/lab-3")}),
    "non-gpu-advertising": ("lab-1", {("GPU401", "Node/lab-1"), ("GPU402", "Node/lab-1")}),
    "too-many-devices": ("lab-2", {("GPU205", "Node/lab-2")}),
}


def _drifted(kind: str) -> Callable[[], list[Obj]]:
    def build() -> list[Obj]:
        cluster = lab()
        drift(cluster, DRIFTS[kind][0], kind)
        return cluster.objects()

    return build


# --- scenarios -----------------------------------------------------------------------


def healthy_container() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=False))
    cluster.node("gpu-1")
    cluster.node("gpu-2")
    cluster.node("cpu-1", model=None)
    cluster.extra.append(gpu_pod("cuda-train-0", "nvidia.com/gpu", 2, "gpu-1"))
    return cluster.objects()


def healthy_vm_passthrough() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=True, default_workload="vm-passthrough"))
    cluster.node("pt-1")
    cluster.node("pt-2", workload="vm-passthrough")
    cluster.node("pt-3", model="L40S", count=4)
    cluster.kubevirt = kubevirt_object(list(cluster.nodes.values()))
    machine = vmi("win11-gpu", "nvidia.com/GA102GL_A10", "gpus", "pt-1")
    cluster.extra += [machine, launcher_pod(machine, "nvidia.com/GA102GL_A10")]
    return cluster.objects()


def healthy_vm_vgpu() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=True, default_workload="vm-vgpu"))
    cluster.node("vgpu-1")
    cluster.node("vgpu-2", extra_labels={"nvidia.com/vgpu.config": "A10-4Q"})
    cluster.kubevirt = kubevirt_object(list(cluster.nodes.values()))
    machine = vmi("desktop-0", "nvidia.com/NVIDIA_A10-4Q", "hostDevices", "vgpu-2")
    cluster.extra += [machine, launcher_pod(machine, "nvidia.com/NVIDIA_A10-4Q")]
    return cluster.objects()


def healthy_lab() -> list[Obj]:
    return lab().objects()


def non_gpu_advertising_cpu_node() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=False))
    cluster.node("gpu-1")
    cpu = cluster.node("cpu-1", model=None)
    _set(cpu, "nvidia.com/gpu", "2")
    return cluster.objects()


def sandbox_disabled_trap() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=False))
    cluster.node("gpu-1")
    cluster.node("gpu-2", workload="vm-vgpu")
    return cluster.objects()


def invalid_workload_label() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=True))
    cluster.node("gpu-1", workload="vm_passthrough")
    return cluster.objects()


def no_cluster_policy() -> list[Obj]:
    return lab(include_policy=False).objects()


def invalid_cluster_policy() -> list[Obj]:
    cluster = lab()
    assert cluster.policy_obj is not None
    cluster.policy_obj["spec"]["sandboxWorkloads"]["enabled"] = "yes"
    return cluster.objects()


def unknown_policy_field() -> list[Obj]:
    cluster = lab()
    assert cluster.policy_obj is not None
    cluster.policy_obj["spec"]["driver"]["futureOption"] = "open"
    return cluster.objects()


def two_cluster_policies() -> list[Obj]:
    cluster = lab()
    second = copy.deepcopy(cluster.policy_obj)
    assert second is not None
    second["metadata"] = {"name": "gpu-cluster-policy", "creationTimestamp": "2026-07-20T09:00:00Z"}
    second["spec"]["sandboxWorkloads"]["enabled"] = False
    cluster.extra.append(second)
    return cluster.objects()


def operand_paused() -> list[Obj]:
    cluster = lab(vms=False)
    labels = cluster.nodes["lab-1"]["metadata"]["labels"]
    labels["nvidia.com/gpu.deploy.device-plugin"] = "paused-for-mig-change"
    objects = cluster.objects()
    return [
        o
        for o in objects
        if not (
            o["kind"] == "Pod"
            and o["metadata"]["name"].startswith("nvidia-device-plugin-daemonset-")
            and o["spec"].get("nodeName") == "lab-1"
        )
    ]


def operand_not_ready() -> list[Obj]:
    objects = lab().objects()
    for obj in objects:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("nvidia-driver-daemonset-"):
            obj["status"] = {
                "phase": "Pending",
                "conditions": [
                    {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}
                ],
                "initContainerStatuses": [
                    {
                        "name": "k8s-driver-manager",
                        "ready": False,
                        "restartCount": 7,
                        "state": {
                            "waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}
                        },
                    }
                ],
            }
    return objects


def daemonset_not_ready() -> list[Obj]:
    cluster = lab()
    cluster.operands = False
    objects = cluster.objects()
    sets = daemonsets(cluster.policy, list(cluster.plans.values()))
    for ds in sets:
        if ds["metadata"]["name"] == "nvidia-sandbox-device-plugin-daemonset":
            ds["status"].update(numberReady=1, numberAvailable=1, numberUnavailable=1)
    return [
        o
        for o in objects
        if o["kind"] != "Pod"
        or "virt-launcher" in o["metadata"]["name"]
        or o["metadata"]["namespace"] != OPERATOR_NAMESPACE
    ] + sets


def vgpu_config_infeasible() -> list[Obj]:
    cluster = lab()
    labels = cluster.nodes["lab-3"]["metadata"]["labels"]
    labels["nvidia.com/vgpu.config"] = "A10-5Q"
    labels["nvidia.com/vgpu.config.state"] = "failed"
    return cluster.objects()


def kubevirt_case_mismatch() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=True, default_workload="vm-passthrough"))
    cluster.node("t4-1", model="T4", count=1)
    cluster.kubevirt = kubevirt_object(
        list(cluster.nodes.values()),
        permitted={
            "pciHostDevices": [
                {
                    "pciVendorSelector": "10DE:1EB8",
                    "resourceName": "nvidia.com/TU104GL_Tesla_T4",
                    "externalResourceProvider": True,
                }
            ]
        },
    )
    machine = vmi("t4-vm", "nvidia.com/TU104GL_Tesla_T4", "gpus", None)
    cluster.extra += [
        machine,
        event(
            "VirtualMachineInstance",
            "vms",
            "t4-vm",
            "FailedScheduling",
            "0/1 nodes are available: 1 Insufficient nvidia.com/TU104GL_Tesla_T4.",
        ),
    ]
    return cluster.objects()


def kubevirt_not_permitted() -> list[Obj]:
    cluster = lab()
    assert cluster.kubevirt is not None
    cluster.kubevirt["spec"]["configuration"]["permittedHostDevices"].pop("mediatedDevices")
    cluster.extra.append(vmi("vm-vgpu-1", "nvidia.com/NVIDIA_A10-12Q", "gpus", None))
    return cluster.objects()


def kubevirt_external_provider() -> list[Obj]:
    cluster = lab()
    assert cluster.kubevirt is not None
    entry = cluster.kubevirt["spec"]["configuration"]["permittedHostDevices"]["pciHostDevices"][0]
    entry.pop("externalResourceProvider")
    return cluster.objects()


def kubevirt_feature_gates() -> list[Obj]:
    cluster = lab()
    cluster.kubevirt = kubevirt_object(list(cluster.nodes.values()), gates=(), version="v1.2.0")
    return cluster.objects()


def kubevirt_no_permitted() -> list[Obj]:
    cluster = lab(vms=False)
    assert cluster.kubevirt is not None
    del cluster.kubevirt["spec"]["configuration"]["permittedHostDevices"]
    return cluster.objects()


def stranded_capacity() -> list[Obj]:
    cluster = lab(vms=False)
    passthrough = vmi("vm-passthrough-0", "nvidia.com/GA102GL_A10", "gpus", "lab-2")
    cluster.extra += [passthrough, launcher_pod(passthrough, "nvidia.com/GA102GL_A10")]
    cluster.extra.append(gpu_pod("cuda-train-1", "nvidia.com/gpu", 1, "lab-1"))
    for index in range(2):
        cluster.extra.append(gpu_pod(f"cuda-batch-{index}", "nvidia.com/gpu", 1, None))
        cluster.extra.append(
            event(
                "Pod",
                "ml",
                f"cuda-batch-{index}",
                "FailedScheduling",
                "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
            )
        )
    return cluster.objects()


def unadvertised_request() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=False))
    cluster.node("gpu-1")
    cluster.node("gpu-2")
    cluster.extra.append(gpu_pod("cuda-train-0", "nvidia.com/gpu", 2, "gpu-1"))
    cluster.extra.append(gpu_pod("passthrough-test", "nvidia.com/GA102GL_A10", 1, None))
    return cluster.objects()


def driver_drift() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=False))
    for index in range(1, 5):
        cluster.node(f"gpu-{index}")
    labels = cluster.nodes["gpu-4"]["metadata"]["labels"]
    labels["nvidia.com/cuda.driver-version.full"] = "580.82.07"
    labels["nvidia.com/cuda.driver-version.major"] = "580"
    cluster.nodes["gpu-2"]["metadata"]["labels"]["nvidia.com/gpu-driver-upgrade-state"] = (
        "upgrade-failed"
    )
    return cluster.objects()


def malformed_objects() -> list[Obj]:
    cluster = Cluster(policy_object(sandbox=False))
    node = cluster.node("gpu-1")
    _set(node, "nvidia.com/gpu", "two")
    _set(node, "nvidia.com/-bad-", "1")
    objects = cluster.objects()
    objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"labels": {"a": "b"}}})
    objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": "not-a-mapping"})
    return objects


SCENARIOS: dict[str, tuple[Callable[[], list[Obj]], set[tuple[str, str]]]] = {
    "healthy-container": (healthy_container, set()),
    "healthy-vm-passthrough": (healthy_vm_passthrough, set()),
    "healthy-vm-vgpu": (healthy_vm_vgpu, set()),
    "healthy-lab": (healthy_lab, set()),
    **{f"drift-{kind}": (_drifted(kind), expected) for kind, (_, expected) in DRIFTS.items()},
    "drift-non-gpu-advertising-cpu-node": (
        non_gpu_advertising_cpu_node,
        {("GPU401", "Node/cpu-1")},
    ),
    "policy-sandbox-disabled-trap": (sandbox_disabled_trap, {("GPU101", "Node/gpu-2")}),
    "policy-invalid-workload-label": (invalid_workload_label, {("GPU102", "Node/gpu-1")}),
    # Without a ClusterPolicy the vm-* nodes are checked as if sandbox workloads were on.
    "policy-missing": (no_cluster_policy, {("GPU001", "ClusterPolicy/(default)")}),
    "policy-invalid": (invalid_cluster_policy, {("GPU003", "ClusterPolicy/cluster-policy")}),
    "policy-unknown-field": (unknown_policy_field, {("GPU005", "ClusterPolicy/cluster-policy")}),
    "policy-two": (two_cluster_policies, {("GPU002", "ClusterPolicy/gpu-cluster-policy")}),
    "operand-paused": (operand_paused, {("GPU303", "Node/lab-1")}),
    "operand-not-ready": (
        operand_not_ready,
        {
            (
                "GPU307",
                f"Pod/{OPERATOR_NAMESPACE}/nvidia-driver-daemonset-{_suffix('nvidia-driver-daemonset', 'lab-1')}",
            ),
        },
    ),
    "operand-daemonset-not-ready": (
        daemonset_not_ready,
        {("GPU308", f"DaemonSet/{OPERATOR_NAMESPACE}/nvidia-sandbox-device-plugin-daemonset")},
    ),
    "vgpu-config-infeasible": (
        vgpu_config_infeasible,
        {("GPU105", "Node/lab-3"), ("GPU305", "Node/lab-3")},
    ),
    "kubevirt-case-mismatch": (
        kubevirt_case_mismatch,
        {
            ("GPU502", "KubeVirt/kubevirt/kubevirt"),
            ("GPU508", "KubeVirt/kubevirt/kubevirt"),
            ("GPU601", "VirtualMachineInstance/vms/t4-vm"),
        },
    ),
    "kubevirt-not-permitted": (
        kubevirt_not_permitted,
        {
            ("GPU501", "KubeVirt/kubevirt/kubevirt"),
            ("GPU506", "VirtualMachineInstance/vms/vm-vgpu-0"),
            ("GPU506", "VirtualMachineInstance/vms/vm-vgpu-1"),
        },
    ),
    "kubevirt-external-provider": (
        kubevirt_external_provider,
        {("GPU503", "KubeVirt/kubevirt/kubevirt")},
    ),
    "kubevirt-feature-gates": (
        kubevirt_feature_gates,
        {("GPU504", "KubeVirt/kubevirt/kubevirt"), ("GPU505", "KubeVirt/kubevirt/kubevirt")},
    ),
    "kubevirt-no-permitted": (kubevirt_no_permitted, {("GPU507", "KubeVirt/kubevirt/kubevirt")}),
    "workloads-stranded-capacity": (stranded_capacity, {("GPU602", "Node/lab-3")}),
    "workloads-unadvertised-request": (
        unadvertised_request,
        {("GPU601", "Pod/ml/passthrough-test"), ("GPU602", "Node/gpu-2")},
    ),
    "drift-driver-version": (driver_drift, {("GPU701", "Node/gpu-4"), ("GPU702", "Node/gpu-2")}),
    "input-malformed": (
        malformed_objects,
        {
            ("GPU004", "Node/item 16"),
            ("GPU004", "Pod/item 17"),
            ("GPU208", "Node/gpu-1"),
            ("GPU210", "Node/gpu-1"),
        },
    ),
}


def render(objects: list[Obj]) -> str:
    return json.dumps(as_list(objects), indent=1, sort_keys=False) + "\n"


def expected_document() -> str:
    data = {
        name: sorted([list(pair) for pair in expected])
        for name, (_, expected) in sorted(SCENARIOS.items())
    }
    return json.dumps(data, indent=1) + "\n"


def write(directory: Path = CORPUS) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (build, _) in sorted(SCENARIOS.items()):
        path = directory / f"{name}.json"
        path.write_text(render(build()), encoding="utf-8")
        written.append(path)
    (directory / "expected.json").write_text(expected_document(), encoding="utf-8")
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS):
        print(path)
