"""resource.k8s.io/v1 objects as NVIDIA's DRA driver and kube-scheduler write them.

Device names and attributes follow the driver's kubelet plugin
(cmd/gpu-kubelet-plugin/deviceinfo.go): `gpu-<minor>` with type, uuid, productName, brand,
architecture, cudaComputeCapability, driverVersion, cudaDriverVersion and the standard
`resource.kubernetes.io/pciBusID` / `pcieRoot`, capacity `memory`; with PassthroughSupport
also `gpu-vfio-<index>` with type, uuid (its own: a name-based UUID of the PCI address),
deviceID, vendorID, numa, productName, iommuFDEnabled and capacity `addressableMemory`. DeviceClasses are the operator's
manifests/state-dra-driver/04*.yaml.
"""

from __future__ import annotations

import hashlib
import uuid as uuid_module
from typing import Any

Obj = dict[str, Any]
DRIVER = "gpu.nvidia.com"
A10_MEMORY = "23028Mi"


def card_uuid(node: str, index: int) -> str:
    digest = hashlib.sha256(f"{node}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def pci_bus_id(index: int) -> str:
    return f"0000:{0x3B + index * 0x40:02x}:00.0"


def gpu_device(node: str, index: int, *, uuid: str | None = None) -> Obj:
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": uuid or card_uuid(node, index)},
            "productName": {"string": "NVIDIA A10"},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Ampere"},
            "cudaComputeCapability": {"version": "8.6.0"},
            "driverVersion": {"version": "580.95.5"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "resource.kubernetes.io/pciBusID": {"string": pci_bus_id(index)},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{0x3A + index * 0x40:02x}"},
        },
        "capacity": {"memory": {"value": A10_MEMORY}},
    }


def vfio_uuid(index: int) -> str:
    """The driver's uuid for a VFIO device: name-based, of the PCI address (nvlib.go)."""
    return str(uuid_module.uuid5(uuid_module.NAMESPACE_DNS, pci_bus_id(index)))


def vfio_device(node: str, index: int, *, uuid: str | None = None) -> Obj:
    return {
        "name": f"gpu-vfio-{index}",
        "attributes": {
            "type": {"string": "vfio"},
            "uuid": {"string": uuid or vfio_uuid(index)},
            "deviceID": {"string": "0x2236"},
            "vendorID": {"string": "0x10de"},
            "numa": {"int": 0},
            "productName": {"string": "NVIDIA A10"},
            "iommuFDEnabled": {"bool": False},
            "resource.kubernetes.io/pciBusID": {"string": pci_bus_id(index)},
            "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{0x3A + index * 0x40:02x}"},
        },
        "capacity": {"addressableMemory": {"value": "32Gi"}},
    }


def counter_set(index: int) -> str:
    return f"gpu-{index}-counter-set"


def with_counters(device: Obj, index: int) -> Obj:
    device["consumesCounters"] = [
        {"counterSet": counter_set(index), "counters": {"memory": {"value": A10_MEMORY}}}
    ]
    return device


def resource_slice(
    node: str,
    devices: list[Obj] | None = None,
    *,
    counters: list[int] | None = None,
    name: str | None = None,
    pool: str | None = None,
    generation: int = 1,
    slice_count: int = 1,
    driver: str = DRIVER,
) -> Obj:
    spec: Obj = {
        "driver": driver,
        "nodeName": node,
        "pool": {
            "name": pool or node,
            "generation": generation,
            "resourceSliceCount": slice_count,
        },
    }
    if counters is not None:
        spec["sharedCounters"] = [
            {"name": counter_set(i), "counters": {"memory": {"value": A10_MEMORY}}}
            for i in counters
        ]
    else:
        spec["devices"] = devices or []
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node}-{driver}-x7k2q"},
        "spec": spec,
    }


def nvidia_slices(
    node: str, cards: int, *, passthrough: bool = True, shared_counters: bool = False
) -> list[Obj]:
    """What the driver publishes for a node of `cards` A10s (with gpuop's counters, or not)."""
    devices = []
    for index in range(cards):
        faces = [gpu_device(node, index)]
        if passthrough:
            faces.append(vfio_device(node, index))
        if shared_counters:
            faces = [with_counters(face, index) for face in faces]
        devices.extend(faces)
    if not shared_counters:
        return [resource_slice(node, devices)]
    return [
        resource_slice(node, counters=list(range(cards)), name=f"{node}-counters", slice_count=2),
        resource_slice(node, devices, name=f"{node}-devices", slice_count=2),
    ]


def device_class(name: str, device_type: str) -> Obj:
    expression = (
        f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{device_type}'"
    )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def nvidia_classes() -> list[Obj]:
    return [
        device_class("gpu.nvidia.com", "gpu"),
        device_class("mig.nvidia.com", "mig"),
        device_class("vfio.gpu.nvidia.com", "vfio"),
    ]


def claim(
    name: str,
    device_class_name: str = "gpu.nvidia.com",
    *,
    namespace: str = "ml",
    request: str = "gpu",
    count: int | None = None,
    selectors: list[str] | None = None,
    allocated: list[tuple[str, str]] | None = None,
    pod: str | None = None,
) -> Obj:
    """A claim; `allocated` is [(node/pool, device)] as the scheduler writes the result."""
    exactly: Obj = {"deviceClassName": device_class_name}
    if count is not None:
        exactly["allocationMode"] = "ExactCount"
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    obj: Obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": request, "exactly": exactly}]}},
    }
    if allocated is not None:
        pools = sorted({pool for pool, _ in allocated})
        obj["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": request, "driver": DRIVER, "pool": pool, "device": device}
                        for pool, device in allocated
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": pools}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": pod or f"{name}-pod", "uid": "u-1"}],
        }
    return obj


def node(
    name: str, *, capacity: dict[str, str] | None = None, labels: dict[str, str] | None = None
) -> Obj:
    extended = {"cpu": "32", "memory": "256Gi", "pods": "110", **(capacity or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "feature.node.kubernetes.io/pci-10de.present": "true",
                "nvidia.com/gpu.present": "true",
                **(labels or {}),
            },
        },
        "status": {"capacity": extended, "allocatable": dict(extended)},
    }
