"""KubeVirt's `permittedHostDevices`, derived from what nodes actually advertise.

Every sandbox resource a node advertises needs an entry in the KubeVirt CR with
`externalResourceProvider: true` before a VMI may ask for it: `pciHostDevices` with the
card's `VENDOR:DEVICE` selector for passthrough resources, `mediatedDevices` with the mdev
type name for vGPU resources. This module builds those entries from Nodes (their advertised
resources and the cards in their inventory), and example VMIs that ask for a resource.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpuop.naming import (
    PciDatabase,
    classify_resource,
    mdev_type_name,
    passthrough_resource,
    vgpu_type_of_resource,
)
from gpuop.planner.inventory import learn_inventory

FEATURE_GATES = ("GPU", "DisableMDEVConfiguration")
"""Every gate a KubeVirt release has needed for NVIDIA's device plugins (the lab's old KubeVirt)."""

GPU_GATE_GA = (1, 4, 0)
"""From KubeVirt v1.4 `gpus[]` needs no `GPU` feature gate (it is GA)."""

MDEV_FIELD_SINCE = (1, 8, 0)
"""From KubeVirt v1.8 `mediatedDevicesConfiguration.enabled: false` replaces the deprecated
`DisableMDEVConfiguration` gate."""


@dataclass(frozen=True)
class GateAdvice:
    """What the KubeVirt CR needs for the devices: gates to add, the mdev switch, and notes."""

    gates: tuple[str, ...]
    disable_mdev_field: bool
    notes: tuple[str, ...]


def needed_gates(version: tuple[int, int, int] | None, vgpu: bool) -> GateAdvice:
    """The feature gates a KubeVirt release needs for NVIDIA's devices, none that it calls obsolete.

    `GPU` only before v1.4 (GA since); `DisableMDEVConfiguration` only when nodes advertise
    vGPU resources (KubeVirt must leave the mdevs to the vGPU device manager), and from
    v1.8 `mediatedDevicesConfiguration.enabled: false` instead. An unknown version (no
    KubeVirt CR with `status.observedKubeVirtVersion`) is taken as a current one, with a note.
    """
    gates: list[str] = []
    notes: list[str] = []
    if version is None:
        notes.append(
            "the KubeVirt version is unknown (no KubeVirt CR with status.observedKubeVirtVersion"
            " in the input): the patch is for v1.4 and later; before v1.4 also add the GPU"
            " feature gate"
        )
    elif version < GPU_GATE_GA:
        gates.append("GPU")
    field = False
    if vgpu:
        if version is not None and version >= MDEV_FIELD_SINCE:
            field = True
        else:
            gates.append("DisableMDEVConfiguration")
            if version is None:
                notes.append(
                    "from KubeVirt v1.8 set spec.configuration.mediatedDevicesConfiguration"
                    ".enabled: false instead of the DisableMDEVConfiguration gate"
                )
    return GateAdvice(tuple(gates), field, tuple(notes))


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def permitted_host_devices(
    nodes: Iterable[Mapping[str, Any]], pci_db: PciDatabase | None = None
) -> dict[str, list[dict[str, Any]]]:
    """`pciHostDevices` and `mediatedDevices` for every sandbox resource the nodes advertise."""
    database = pci_db or PciDatabase.builtin()
    pci: dict[str, dict[str, Any]] = {}
    mdev: dict[str, dict[str, Any]] = {}
    for node in nodes:
        meta = node.get("metadata") if isinstance(node.get("metadata"), Mapping) else {}
        status = node.get("status") if isinstance(node.get("status"), Mapping) else {}
        assert isinstance(meta, Mapping) and isinstance(status, Mapping)
        allocatable = _string_map(status.get("allocatable"))
        inventory = learn_inventory(
            _string_map(meta.get("labels")),
            _string_map(meta.get("annotations")),
            allocatable,
            capacity=_string_map(status.get("capacity")),
            pci_db=database,
        )
        for resource, quantity in allocatable.items():
            if not quantity.isdigit() or int(quantity) == 0:
                continue
            kind = classify_resource(resource)
            if kind == "passthrough" and resource not in pci:
                for card in inventory.cards:
                    if card.device_id is None:
                        continue
                    if passthrough_resource(card.device_id, database).resource == resource:
                        pci[resource] = {
                            "pciVendorSelector": f"{card.vendor_id}:{card.device_id}".upper(),
                            "resourceName": resource,
                            "externalResourceProvider": True,
                        }
                        break
            elif kind == "vgpu" and resource not in mdev:
                vgpu_type = vgpu_type_of_resource(resource)
                if vgpu_type:
                    mdev[resource] = {
                        "mdevNameSelector": mdev_type_name(vgpu_type),
                        "resourceName": resource,
                        "externalResourceProvider": True,
                    }
    return {
        "pciHostDevices": [pci[k] for k in sorted(pci)],
        "mediatedDevices": [mdev[k] for k in sorted(mdev)],
    }


def kubevirt_merge_patch(permitted: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """A merge patch for the KubeVirt CR: feature gates plus the permitted devices."""
    return {
        "spec": {
            "configuration": {
                "developerConfiguration": {"featureGates": list(FEATURE_GATES)},
                "permittedHostDevices": {k: v for k, v in permitted.items() if v},
            }
        }
    }


def vmi_example(name: str, resource: str, count: int = 1, memory: str = "8Gi") -> dict[str, Any]:
    """A VirtualMachineInstance that asks for `count` of `resource` through `gpus`."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name},
        "spec": {
            "domain": {
                "resources": {"requests": {"memory": memory}},
                "devices": {
                    "gpus": [{"name": f"gpu{i + 1}", "deviceName": resource} for i in range(count)],
                    "disks": [{"name": "rootdisk", "disk": {"bus": "virtio"}}],
                },
            },
            "volumes": [
                {
                    "name": "rootdisk",
                    "containerDisk": {"image": "quay.io/containerdisks/ubuntu:24.04"},
                }
            ],
        },
    }
