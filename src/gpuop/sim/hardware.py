"""Simulated GPU hardware: kwok Nodes that look like freshly discovered GPU servers.

A simulated node carries what NVIDIA's default node feature discovery configuration
writes on a real one (PCI labels by vendor only: `pci-10de.present` and the SR-IOV hint,
never the device id; IOMMU; OS release and kernel), realistic CPU/memory capacity, and
kwok's markers so the kwok controller keeps it Ready. It starts without any `nvidia.com/*`
resource: those appear only when the simulated operands run.

The cards themselves (PCI ids, bus addresses, memory) are the machine's, not the Node's:
they live in the simulator's hardware ConfigMap (`gpuop-sim-hardware`, one key per node),
which only the simulator reads, the way node-side software reads the PCI bus. Nothing on
the Node says what the cards are beyond what real discovery would write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gpuop.api.cards import GpuCard, encode_inventory
from gpuop.api.labels import (
    ARCH_LABEL,
    HOSTNAME_LABEL,
    KWOK_NODE_ANNOTATION,
    NFD_IOMMU_LABEL,
    NFD_KERNEL,
    NFD_KERNEL_MAJOR,
    NFD_KERNEL_MINOR,
    NFD_KERNEL_REVISION,
    NFD_NVIDIA_PCI_LABEL,
    NFD_OS_ID,
    NFD_OS_VERSION_ID,
    NFD_OS_VERSION_MAJOR,
    NFD_OS_VERSION_MINOR,
    NFD_PREFIX,
    NFD_SRIOV_LABEL,
    OS_LABEL,
    SIM_LABEL,
)
from gpuop.catalog import gpu_catalog
from gpuop.catalog.managers import GPU_OPERATOR
from gpuop.sim.managers import (
    managers,
    shape_annotations,
    shape_labels,
    shape_of,
    shape_resources,
)

HARDWARE_CONFIGMAP = "gpuop-sim-hardware"
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class SimError(ValueError):
    """Bad simulator input: unknown GPU model, bad count, bad name, duplicate node."""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    gpu: str
    count: int
    labels: dict[str, str] = field(default_factory=dict)
    cpu: str = "32"
    memory: str = "256Gi"
    pods: str = "110"
    # What manages its GPUs: the GPU Operator (the simulator plays its node side), or a
    # shape of `catalog/managed-shapes.yaml` (made as that manager leaves it, not played).
    managed_by: str = GPU_OPERATOR


def validate_spec(spec: NodeSpec) -> None:
    if not _DNS_NAME.match(spec.name) or len(spec.name) > 253:
        raise SimError(f"{spec.name!r} is not a valid node name (lower-case DNS name)")
    if gpu_catalog().by_model(spec.gpu) is None:
        known = ", ".join(g.model for g in gpu_catalog().gpus)
        raise SimError(f"unknown GPU model {spec.gpu!r}; known models: {known}")
    if spec.count < 1:
        raise SimError(f"--count must be at least 1 (got {spec.count})")
    if spec.count > 16:
        raise SimError(f"--count must be at most 16 GPUs per node (got {spec.count})")
    if spec.managed_by not in managers():
        raise SimError(f"unknown manager {spec.managed_by!r}; known: {', '.join(managers())}")


def cards_for(spec: NodeSpec) -> list[GpuCard]:
    model = gpu_catalog().by_model(spec.gpu)
    assert model is not None
    return [
        GpuCard(
            index=i,
            device_id=model.pci_device_id,
            model=model.model,
            memory_mib=model.memory_mib,
            # Eight slots per PCI domain: a bus number is one byte.
            bdf=f"{i // 8:04x}:{0x17 + 0x20 * (i % 8):02x}:00.0",
        )
        for i in range(spec.count)
    ]


def node_manifest(spec: NodeSpec) -> dict[str, Any]:
    """The Node object for a simulated GPU server (status included: nodes keep it on create)."""
    validate_spec(spec)
    labels = {
        HOSTNAME_LABEL: spec.name,
        OS_LABEL: "linux",
        ARCH_LABEL: "amd64",
        "type": "kwok",
        SIM_LABEL: "true",
        NFD_NVIDIA_PCI_LABEL: "true",
        NFD_SRIOV_LABEL: "true",
        NFD_IOMMU_LABEL: "true",
        NFD_OS_ID: "ubuntu",
        NFD_OS_VERSION_ID: "24.04",
        NFD_OS_VERSION_MAJOR: "24",
        NFD_OS_VERSION_MINOR: "04",
        NFD_KERNEL: "6.8.0-51-generic",
        NFD_KERNEL_MAJOR: "6",
        NFD_KERNEL_MINOR: "8",
        NFD_KERNEL_REVISION: "0",
    }
    resources = {
        "cpu": spec.cpu,
        "memory": spec.memory,
        "pods": spec.pods,
        "ephemeral-storage": "500Gi",
    }
    annotations = {KWOK_NODE_ANNOTATION: "fake"}
    shape = shape_of(spec.managed_by)
    if shape is not None:
        if not shape.nfd:
            labels = {k: v for k, v in labels.items() if not k.startswith(NFD_PREFIX)}
        # Not `true`: `gpuop sim run` leaves the node as made.
        labels[SIM_LABEL] = spec.managed_by
        labels.update(shape_labels(shape, spec.gpu, spec.count))
        resources.update(shape_resources(shape, spec.gpu, spec.count))
        annotations.update(shape_annotations(shape, spec.name, cards_for(spec)))
    labels.update(spec.labels)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "osImage": (shape.os_image if shape is not None else "") or "Ubuntu 24.04.1 LTS",
                "kernelVersion": "6.8.0-51-generic",
                "containerRuntimeVersion": "containerd://1.7.24",
                "kubeletVersion": "v1.37.2",
                "kubeProxyVersion": "",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        },
    }


def hardware_entries(specs: list[NodeSpec]) -> dict[str, str]:
    """The hardware ConfigMap's data for these nodes: node name -> JSON card list."""
    for spec in specs:
        validate_spec(spec)
    return {spec.name: encode_inventory(cards_for(spec)) for spec in specs}


# Twenty times Kubernetes' supported 5,000 nodes: more is a typo, not a cluster to simulate.
MAX_SIM_NODES = 100_000


def parse_cluster_spec(obj: Any) -> list[NodeSpec]:
    """Read a simulated cluster description.

    \b
    nodes:
      - {name: gpu-container, gpu: A10, count: 2, labels: {nvidia.com/gpu.workload.config: container}}
      - {namePrefix: pool-a-, replicas: 1000, gpu: A10, count: 2}
      - {name: gke-l4, gpu: L4, count: 1, managedBy: gke}
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list):
        raise SimError("a cluster spec is a mapping with a `nodes` list")
    specs: list[NodeSpec] = []
    for position, item in enumerate(obj["nodes"]):
        where = f"nodes[{position}]"
        if not isinstance(item, dict):
            raise SimError(f"{where}: expected a mapping")
        unknown = set(item) - {
            "name",
            "namePrefix",
            "replicas",
            "gpu",
            "count",
            "labels",
            "cpu",
            "memory",
            "managedBy",
        }
        if unknown:
            raise SimError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        gpu = item.get("gpu")
        count = item.get("count", 1)
        labels = item.get("labels") or {}
        if not isinstance(gpu, str):
            raise SimError(f"{where}.gpu: a GPU model name is required")
        if not isinstance(count, int) or isinstance(count, bool):
            raise SimError(f"{where}.count: expected an integer")
        if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise SimError(f"{where}.labels: expected a mapping of strings")
        extra = {k: str(item[k]) for k in ("cpu", "memory") if k in item}
        if "managedBy" in item:
            extra["managed_by"] = str(item["managedBy"])
        if "name" in item:
            names = [str(item["name"])]
        else:
            prefix = item.get("namePrefix")
            replicas = item.get("replicas")
            if not isinstance(prefix, str) or not isinstance(replicas, int) or replicas < 1:
                raise SimError(f"{where}: give `name`, or `namePrefix` with `replicas` >= 1")
            if len(specs) + replicas > MAX_SIM_NODES:
                raise SimError(
                    f"{where}.replicas: {replicas} would make more than {MAX_SIM_NODES}"
                    " simulated nodes"
                )
            width = len(str(replicas))
            names = [f"{prefix}{i:0{width}d}" for i in range(replicas)]
        for name in names:
            spec = NodeSpec(name=name, gpu=gpu, count=count, labels=dict(labels), **extra)
            try:
                validate_spec(spec)
            except SimError as exc:
                raise SimError(f"{where}: {exc}") from None
            specs.append(spec)
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise SimError(f"node {spec.name} is listed twice")
        seen.add(spec.name)
    return specs
