"""KubeVirt's `permittedHostDevices`, derived from what nodes actually advertise.

Every sandbox resource a node advertises needs an entry in the KubeVirt CR with
`externalResourceProvider: true` before a VMI may ask for it: `pciHostDevices` with the
card's `VENDOR:DEVICE` selector for passthrough resources, `mediatedDevices` with the mdev
type name for vGPU resources. This module builds those entries from Nodes (their advertised
resources and the cards in their inventory), and example VMIs that ask for a resource.

:func:`build_permitted` plans the whole change to a KubeVirt (or HyperConverged) CR: the
entries merged with those the CR already has (a merge patch replaces lists whole), the
feature gates the CR's KubeVirt release needs, and what cannot be permitted and why;
:func:`permitted_patch` and :func:`permitted_snippet` write it out.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml

from gpuop.api.resources import normalised
from gpuop.api.wording import listed
from gpuop.manifests.fields import get, mapping, sequence, text
from gpuop.naming import (
    PciDatabase,
    classify_resource,
    mdev_type_name,
    passthrough_resource,
    vgpu_type_of_resource,
)
from gpuop.planner.inventory import learn_inventory

SANDBOX_KINDS: Final = ("passthrough", "vgpu")
SECTIONS: Final = ("pciHostDevices", "mediatedDevices", "usb")
_VERSION: Final = re.compile(r"^v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,6}))?")

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


def parse_version(value: str) -> tuple[int, int, int] | None:
    """`v1.4.0`, `1.8`, `v1.5.2-rc.1` as (major, minor, patch); None when not a version."""
    match = _VERSION.match(value)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def resource_count(raw: Any) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) < 19:
        return int(raw)
    return 0


def sandbox_resources(node: Mapping[str, Any]) -> dict[str, int]:
    """Passthrough and vGPU resources a node advertises above zero (allocatable)."""
    found: dict[str, int] = {}
    for resource, raw in mapping(node, "status", "allocatable").items():
        amount = resource_count(raw)
        if amount > 0 and classify_resource(str(resource)) in SANDBOX_KINDS:
            found[str(resource)] = amount
    return found


def advertised_sandbox(nodes: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for node in nodes:
        for resource in sandbox_resources(node):
            found.setdefault(resource, []).append(text(node, "metadata", "name"))
    return found


def _nodes_text(names: Sequence[str]) -> str:
    return listed(sorted(names), 3)


def _merge_entries(
    existing: Any, computed: Sequence[Mapping[str, Any]], notes: list[str]
) -> list[dict[str, Any]]:
    """Existing entries for other resources, in order, then ours (a merge patch replaces lists).

    An existing entry whose name differs from one of ours only by case or form is the same
    device misspelled: ours replaces it.
    """
    ours = {
        normalised(text(entry, "resourceName")): text(entry, "resourceName") for entry in computed
    }
    kept = []
    for entry in existing if isinstance(existing, list) else []:
        if not isinstance(entry, Mapping):
            continue
        name = text(entry, "resourceName")
        replacement = ours.get(normalised(name))
        if replacement is None:
            kept.append(copy.deepcopy(dict(entry)))
        elif replacement != name:
            notes.append(f"replaces {name}: nodes advertise it as {replacement}")
    return kept + [dict(entry) for entry in computed]


@dataclass(frozen=True)
class PermittedPlan:
    """What `permitted-devices` computed: the entries, the gates and what to tell the user.

    `gates` is the CR's feature gates with those the devices need added, or None when
    nothing is added (the patch then leaves them alone); `disable_mdev` sets
    `mediatedDevicesConfiguration.enabled: false` (KubeVirt v1.8 and later).
    """

    permitted: dict[str, Any]
    gates: list[str] | None
    problems: list[str]
    notes: list[str]
    disable_mdev: bool = False


def build_permitted(
    nodes: Sequence[Mapping[str, Any]],
    kubevirt_cr: Mapping[str, Any] | None,
    pci_db: PciDatabase | None = None,
    *,
    hyperconverged: bool = False,
) -> PermittedPlan:
    """permittedHostDevices and feature gates for the nodes, keeping an existing CR's others."""
    computed = permitted_host_devices(nodes, pci_db)
    problems: list[str] = []
    notes: list[str] = []
    listed = {text(e, "resourceName") for entries in computed.values() for e in entries}
    for resource, names in sorted(advertised_sandbox(nodes).items()):
        if resource not in listed:
            problems.append(
                f"{resource} (advertised by {_nodes_text(names)}): its PCI vendor:device id is"
                " unknown (no inventory on the node, not in the PCI database); add"
                f" {{pciVendorSelector: 'VVVV:DDDD', resourceName: {resource},"
                " externalResourceProvider: true}} to pciHostDevices by hand"
                " (--pci-ids FILE may know it)"
            )
    existing = mapping(kubevirt_cr, "spec", "configuration", "permittedHostDevices")
    permitted: dict[str, Any] = {}
    for section in SECTIONS:
        entries = _merge_entries(existing.get(section), computed.get(section, []), notes)
        if entries:
            permitted[section] = entries
    existing_gates = [
        g
        for g in sequence(
            kubevirt_cr, "spec", "configuration", "developerConfiguration", "featureGates"
        )
        if isinstance(g, str)
    ]
    version = parse_version(text(kubevirt_cr, "status", "observedKubeVirtVersion"))
    advice = needed_gates(version, bool(permitted.get("mediatedDevices")))
    added = [gate for gate in advice.gates if gate not in existing_gates]
    gates = [*existing_gates, *added] if added else None
    mdev_off = (
        get(kubevirt_cr, "spec", "configuration", "mediatedDevicesConfiguration", "enabled")
        is False
    )
    disable_mdev = advice.disable_mdev_field and not mdev_off
    if disable_mdev and "DisableMDEVConfiguration" in existing_gates:
        notes.append(
            "KubeVirt v1.8 deprecates the DisableMDEVConfiguration gate the CR has: the patch"
            " sets spec.configuration.mediatedDevicesConfiguration.enabled: false"
        )
    if not hyperconverged:  # HCO sets KubeVirt's gates itself
        notes.extend(advice.notes)
    return PermittedPlan(permitted, gates, problems, notes, disable_mdev)


def permitted_patch(
    permitted: Mapping[str, Any],
    gates: Sequence[str] | None,
    kind: str = "KubeVirt",
    disable_mdev: bool = False,
) -> dict[str, Any]:
    """A JSON merge patch for the KubeVirt CR (lists are replaced whole, so they are complete).

    Feature gates only when one is added (`gates` is then the whole list); the mdev switch
    with `disable_mdev`. For a HyperConverged CR: its `spec.permittedHostDevices` (HCO
    sets KubeVirt's gates).
    """
    if kind == "HyperConverged":
        return {"spec": {"permittedHostDevices": dict(permitted)}}
    configuration: dict[str, Any] = {}
    if gates is not None:
        configuration["developerConfiguration"] = {"featureGates": list(gates)}
    if disable_mdev:
        configuration["mediatedDevicesConfiguration"] = {"enabled": False}
    configuration["permittedHostDevices"] = dict(permitted)
    return {"spec": {"configuration": configuration}}


def permitted_snippet(permitted: Mapping[str, Any], kind: str = "KubeVirt") -> str:
    """The YAML block to paste under the KubeVirt CR's `spec.configuration`."""
    body = yaml.safe_dump(
        {"permittedHostDevices": dict(permitted)}, sort_keys=False, default_flow_style=False
    )
    where = (
        "spec of the HyperConverged CR"
        if kind == "HyperConverged"
        else ("spec.configuration of the KubeVirt CR")
    )
    return f"# under {where}\n" + body


def kubevirt_cr(objects: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for obj in objects:
        if obj.get("kind") == "KubeVirt":
            return obj
    return None


def hyperconverged_cr(objects: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for obj in objects:
        if obj.get("kind") == "HyperConverged":
            return obj
    return None


def as_kubevirt_shape(hco: Mapping[str, Any]) -> dict[str, Any]:
    """A HyperConverged CR's permittedHostDevices where `build_permitted` reads them."""
    permitted = mapping(hco, "spec", "permittedHostDevices")
    return {"spec": {"configuration": {"permittedHostDevices": dict(permitted)}}}


class ExampleError(ValueError):
    """A VMI example that cannot be made from the input (no such node, no resource)."""


def node_resource(nodes: Sequence[Mapping[str, Any]], name: str) -> str:
    """The one sandbox resource node `name` advertises (ExampleError: none, or several)."""
    node = next((n for n in nodes if text(n, "metadata", "name") == name), None)
    if node is None:
        raise ExampleError(f"no node {name!r} in the input (a resource name has a '/')")
    found = sandbox_resources(node)
    if len(found) == 1:
        return next(iter(found))
    if found:
        listed = ", ".join(f"{r} ({n})" for r, n in sorted(found.items()))
        raise ExampleError(f"node {name} advertises several sandbox resources: {listed}; name one")
    others = [
        f"{r} ({classify_resource(str(r))})"
        for r, raw in mapping(node, "status", "allocatable").items()
        if str(r).startswith("nvidia.com/") and resource_count(raw) > 0
    ]
    what = f"it advertises {', '.join(sorted(others))}" if others else "it advertises no GPU"
    raise ExampleError(
        f"node {name} advertises no passthrough or vGPU resource for VMs ({what}); label it"
        " nvidia.com/gpu.workload.config=vm-passthrough or vm-vgpu"
    )


def resource_warnings(
    resource: str, count: int, nodes: Sequence[Mapping[str, Any]] | None
) -> list[str]:
    """Why a VMI asking for `count` of `resource` would not run (on these nodes)."""
    warnings: list[str] = []
    kind = classify_resource(resource)
    if kind == "container":
        warnings.append(
            f"{resource} is a container resource (NVIDIA's device plugin): KubeVirt cannot"
            " pass it to a VM; use a vm-passthrough or vm-vgpu node's resource"
        )
    elif kind not in (*SANDBOX_KINDS, "kata"):
        warnings.append(f"{resource} is not a name an NVIDIA sandbox device plugin advertises")
    if nodes is not None:
        most = max(
            (resource_count(get(n, "status", "allocatable", resource)) for n in nodes), default=0
        )
        if most == 0:
            warnings.append(f"no node in the input advertises {resource}")
        elif count > most:
            warnings.append(f"asks for {count}, but no node advertises more than {most}")
    return warnings


_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_LABEL_MAX = 63


def dns_label_problem(value: str) -> str | None:
    """Why `value` is not an RFC 1123 label (a VMI's name becomes its guest's hostname)."""
    if len(value) > DNS_LABEL_MAX:
        return f"must be no more than {DNS_LABEL_MAX} characters"
    if not _DNS_LABEL.fullmatch(value):
        return (
            "must consist of lower case alphanumeric characters or '-', and must start and"
            " end with an alphanumeric character (an RFC 1123 label)"
        )
    return None
