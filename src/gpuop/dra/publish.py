"""What a node's DRA driver publishes from its cards: ResourceSlice manifests.

Why this module exists: the simulator plays NVIDIA's DRA kubelet plugin
(`gpu.nvidia.com`, k8s-dra-driver-gpu), the tests feed the real kube-scheduler, and the
checkers and `explain` read what a real driver writes. All of them need the same answer to
"which devices does this node offer, named and described how?", written once, here, as
plain `resource.k8s.io/v1` manifests.

Two publications:

- `shared_counters=False` is NVIDIA's driver as it is, with `PassthroughSupport` on and
  dynamic MIG off (`publishResources` in cmd/gpu-kubelet-plugin/driver.go): one slice
  holding, for every card, a `gpu-<minor>` device and a `gpu-vfio-<index>` device, and
  no counters. The scheduler sees two independent devices for one card, so a container
  claim and a VFIO claim allocated before either is prepared can both get it (the race).
- `shared_counters=True` is gpuop's race-free publication (KEP-4815, partitionable
  devices): one counter set per card, `gpu-<minor>-counter-set`, holding the card's
  memory, and every device of the card (each role it can take) consuming it. Once one
  role is allocated the counter set is empty and the allocator cannot hand out another.
  The layout follows the driver's own split publication for Kubernetes 1.35 and later
  (`generateSplitResourceSlices`): the counter sets first, then one devices-only slice per
  card, all in one pool named after the node.

Roles: `gpu` (a container gets the card), `vfio` (the card is passed through to a VM) and
`vgpu`, gpuop's own extension: the card's default vGPU type (catalog/gpus.yaml) as
`gpu-<minor>-vgpu-<n>` devices, each consuming an equal share of the card's counter set,
published only where the model has a time-sliced default type whose instances split the
counter set exactly, and only in the race-free publication (without counters nothing
would stop a vGPU instance and the whole card from being handed out together).

MIG (`mig=True`, off by default) is the driver's DynamicMIG on MIG-capable cards
(gpuop.dra.mig): every MIG profile and placement as a `type: mig` device, the card's
counter set becoming the driver's (engines, memory and memory slices), the full GPU (on
Hopper and later) consuming all of it. The driver publishes no VFIO device for such a card;
the race-free publication does, consuming the whole counter set, so a MIG partition and a
VFIO claim never share a card. Cards it partitions publish no vGPU devices.

Attributes and capacities are the driver's (deviceinfo.go). What a simulated machine
cannot report is derived and deterministic: the GPU UUID (a name-based UUID of the node and
the PCI address), the PCIe root (the bus above the card), NUMA (first half of the cards on
node 0), the VFIO device's addressable memory (BAR1, the next power of two above the
framebuffer, plus BAR0 and BAR3). The VFIO device's UUID is exactly the driver's: a SHA-1
name-based UUID of the PCI address in the DNS namespace; so one card's two devices carry
different `uuid`s and the same `resource.kubernetes.io/pciBusID`.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpuop.api.cards import GpuCard
from gpuop.api.names import stable_suffix
from gpuop.catalog import GpuModel, gpu_catalog
from gpuop.catalog.dra import dra_catalog
from gpuop.catalog.mig import MigProfileSpec, mig_catalog
from gpuop.catalog.versions import version_matrix
from gpuop.dra import mig as migpart

DRIVER = dra_catalog().driver
API_VERSION = dra_catalog().api_version
ROLES = ("gpu", "vfio", "vgpu")
DEFAULT_ROLES = ("gpu", "vfio")
PCI_BUS_ID_ATTRIBUTE = "resource.kubernetes.io/pciBusID"
PCIE_ROOT_ATTRIBUTE = "resource.kubernetes.io/pcieRoot"

# Limits of resource.k8s.io/v1 (k8s.io/api/resource/v1/types.go).
MAX_DEVICES_PER_SLICE = 128
MAX_DEVICES_PER_SLICE_WITH_COUNTERS = 64
MAX_COUNTER_SETS_PER_SLICE = 8
_GENERATED_PREFIX_MAX = 58  # apiserver's generateName keeps 58 characters, adds 5
_ARCHITECTURES = {
    "kepler": "Kepler",
    "maxwell": "Maxwell",
    "pascal": "Pascal",
    "volta": "Volta",
    "turing": "Turing",
    "ampere": "Ampere",
    "ada-lovelace": "Ada Lovelace",
    "hopper": "Hopper",
    "blackwell": "Blackwell",
}
# Architectures that switch MIG mode without a GPU reset (nvlib.go supportsMIGModeToggle).
_MIG_MODE_TOGGLES = frozenset({"hopper", "blackwell"})
_BDF = re.compile(r"^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$")


class PublishError(ValueError):
    """Cards or roles a driver could not publish (unknown role, card without PCI address)."""


@dataclass(frozen=True)
class CardDevice:
    """One published device and the physical card behind it."""

    name: str
    role: str
    pci_bus_id: str
    uuid: str


def quantity(value: int) -> str:
    """A byte count as Kubernetes writes a BinarySI quantity (`23028Mi`, `24Gi`, `1`)."""
    if value == 0:
        return "0"
    for suffix, exponent in (
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ):
        if value % (1 << exponent) == 0:
            return f"{value >> exponent}{suffix}"
    return str(value)


def semver(version: str) -> str:
    """A dotted version as the driver's semver.MustParse(...).String() writes it."""
    parts = [str(int(part)) for part in version.split(".")]
    while len(parts) < 3:
        parts.append("0")
    return ".".join(parts[:3])


def cuda_driver_version(driver_version: str) -> str:
    """The CUDA version a driver reports: the newest CUDA minor whose GA driver it meets."""
    wanted = tuple(int(p) for p in driver_version.split("."))
    best = "11.0"
    for minor in version_matrix().cuda.minors:
        if minor.min_driver is None:
            continue
        if tuple(int(p) for p in minor.min_driver.split(".")) <= wanted:
            best = minor.cuda
    return best


def gpu_uuid(node: str, card: GpuCard) -> str:
    """The card's NVML UUID as the simulated machine reports it (stable per node and slot)."""
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"gpuop-sim:{node}/{card.bdf}"))


def vfio_uuid(pci_bus_id: str) -> str:
    """The VFIO device's UUID exactly as the driver makes it (nvlib.go getVfioDeviceInfo)."""
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, pci_bus_id))


def counter_set_name(card: GpuCard) -> str:
    return f"gpu-{card.index}-counter-set"


def slice_name(node: str, index: int, slice_count: int) -> str:
    """The name the driver's ResourceSlice controller gets from the API server, made stable.

    The controller sends `generateName: <index in hex>-<driver>-<node>-` (the index padded to
    at least five digits) and the API server keeps 58 characters of it and appends five
    random ones; the suffix here is a hash instead, so a republication updates in place.
    """
    width = max(5, len(f"{max(slice_count - 1, 0):x}"))
    prefix = f"{index:0{width}x}-{DRIVER}-{node}-"[:_GENERATED_PREFIX_MAX]
    return prefix + stable_suffix(f"{node}/{index}")


def _pci(card: GpuCard) -> tuple[str, str]:
    """(pciBusID, pcieRoot) of a card."""
    match = _BDF.match((card.bdf or "").lower())
    if match is None:
        raise PublishError(f"card {card.index}: no PCI address (bdf {card.bdf!r})")
    domain, bus = match.group(1), int(match.group(2), 16)
    return match.group(0), f"pci{domain}:{max(bus - 1, 0):02x}"


def _model(card: GpuCard) -> GpuModel | None:
    if card.model:
        found = gpu_catalog().by_model(card.model)
        if found is not None:
            return found
    if card.device_id:
        models = gpu_catalog().by_device_id(card.device_id)
        return models[0] if models else None
    return None


def _memory_bytes(card: GpuCard, model: GpuModel | None) -> int | None:
    mib = card.memory_mib if card.memory_mib is not None else (model.memory_mib if model else None)
    return None if mib is None else mib << 20


def _product_name(card: GpuCard, model: GpuModel | None) -> str:
    """NVML's name: GPU feature discovery's product label with its first dash a space."""
    if model is None:
        return card.describe()
    return model.product.replace("-", " ", 1)


def _string(value: str) -> dict[str, Any]:
    return {"string": value}


def _gpu_device(
    node: str, card: GpuCard, model: GpuModel | None, driver_version: str
) -> dict[str, Any]:
    bus_id, root = _pci(card)
    capability = model.compute_capability if model else "0.0"
    attributes: dict[str, Any] = {
        "type": _string("gpu"),
        "uuid": _string(gpu_uuid(node, card)),
        "productName": _string(_product_name(card, model)),
        "brand": _string("Nvidia"),
        "architecture": _string(
            _ARCHITECTURES.get(model.family, "Unknown") if model else "Unknown"
        ),
        "cudaComputeCapability": {"version": semver(capability)},
        "driverVersion": {"version": semver(driver_version)},
        "cudaDriverVersion": {"version": semver(cuda_driver_version(driver_version))},
        PCI_BUS_ID_ATTRIBUTE: _string(bus_id),
        PCIE_ROOT_ATTRIBUTE: _string(root),
    }
    device: dict[str, Any] = {"name": f"gpu-{card.index}", "attributes": attributes}
    memory = _memory_bytes(card, model)
    if memory is not None:
        device["capacity"] = {"memory": {"value": quantity(memory)}}
    return device


def _addressable_memory(memory: int | None) -> int:
    """BAR1 (the framebuffer's next power of two) plus BAR0 (16 MiB) and BAR3 (32 MiB)."""
    bar1 = 1 << ((memory or 1 << 28) - 1).bit_length()
    return bar1 + (16 << 20) + (32 << 20)


def _vfio_device(
    card: GpuCard, position: int, total: int, model: GpuModel | None
) -> dict[str, Any]:
    bus_id, root = _pci(card)
    return {
        "name": f"gpu-vfio-{position}",
        "attributes": {
            "type": _string("vfio"),
            "uuid": _string(vfio_uuid(bus_id)),
            "deviceID": _string(f"0x{card.device_id or '0000'}"),
            "vendorID": _string(f"0x{card.vendor_id}"),
            "numa": {"int": 0 if position < (total + 1) // 2 else 1},
            "productName": _string(model.pci_name if model else card.describe()),
            "iommuFDEnabled": {"bool": False},
            PCI_BUS_ID_ATTRIBUTE: _string(bus_id),
            PCIE_ROOT_ATTRIBUTE: _string(root),
        },
        "capacity": {
            "addressableMemory": {
                "value": quantity(_addressable_memory(_memory_bytes(card, model)))
            }
        },
    }


def vgpu_share(card: GpuCard) -> tuple[str, int] | None:
    """(default vGPU type, instances per card) where the vGPU role fits the card cleanly."""
    model = _model(card)
    memory = _memory_bytes(card, model)
    if model is None or memory is None or not model.default_vgpu_type:
        return None
    spec = model.vgpu_types.get(model.default_vgpu_type)
    if spec is None or spec.mig_backed or spec.max_per_gpu < 1:
        return None
    if spec.max_per_gpu > MAX_DEVICES_PER_SLICE_WITH_COUNTERS - 2 or memory % spec.max_per_gpu:
        return None
    return model.default_vgpu_type, spec.max_per_gpu


def _vgpu_devices(node: str, card: GpuCard, model: GpuModel | None) -> list[dict[str, Any]]:
    share = vgpu_share(card)
    memory = _memory_bytes(card, model)
    if share is None or model is None or memory is None:
        return []
    vgpu_type, count = share
    bus_id, root = _pci(card)
    framebuffer = model.vgpu_types[vgpu_type].framebuffer_mib << 20
    return [
        {
            "name": f"gpu-{card.index}-vgpu-{n}",
            "attributes": {
                "type": _string("vgpu"),
                "uuid": _string(gpu_uuid(node, card)),
                "vgpuType": _string(vgpu_type),
                "productName": _string(_product_name(card, model)),
                PCI_BUS_ID_ATTRIBUTE: _string(bus_id),
                PCIE_ROOT_ATTRIBUTE: _string(root),
            },
            "capacity": {"memory": {"value": quantity(framebuffer)}},
            "consumesCounters": [
                {
                    "counterSet": counter_set_name(card),
                    "counters": {"memory": {"value": quantity(memory // count)}},
                }
            ],
        }
        for n in range(count)
    ]


def _check_inputs(cards: Sequence[GpuCard], roles: Sequence[str], shared_counters: bool) -> None:
    unknown = [role for role in roles if role not in ROLES]
    if unknown:
        raise PublishError(f"unknown role(s) {', '.join(unknown)}; known: {', '.join(ROLES)}")
    if "vgpu" in roles and not shared_counters:
        raise PublishError("the vgpu role is published only with shared counters")
    indexes = [card.index for card in cards]
    if len(set(indexes)) != len(indexes):
        raise PublishError(f"card indexes repeat: {indexes}")
    for card in cards:
        _pci(card)


def _slice(
    node: str,
    node_uid: str | None,
    name: str,
    generation: int,
    count: int,
    body: dict[str, Any],
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if node_uid:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": metadata,
        "spec": {
            "driver": DRIVER,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": count},
            "nodeName": node,
            **body,
        },
    }


def _chunks(items: list[dict[str, Any]], size: int) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def mig_profiles(card: GpuCard) -> tuple[MigProfileSpec, ...]:
    """The MIG profiles a card offers (catalog/mig-profiles.yaml); empty unless MIG-capable."""
    model = _model(card)
    if model is None or not model.mig_capable:
        return ()
    return mig_catalog().profiles(model.model)


def _counter_values(counts: dict[str, int]) -> dict[str, dict[str, str]]:
    return {name: {"value": quantity(value)} for name, value in counts.items()}


def _whole_card_use(card: GpuCard, counts: dict[str, int]) -> list[dict[str, Any]]:
    return [{"counterSet": counter_set_name(card), "counters": _counter_values(counts)}]


def _mig_devices(
    node: str,
    card: GpuCard,
    model: GpuModel | None,
    driver_version: str,
    profiles: Sequence[MigProfileSpec],
) -> list[dict[str, Any]]:
    """One device per MIG profile and placement (CommonAttributesMig, PartConsumesCounters)."""
    parent = _gpu_device(node, card, model, driver_version)["attributes"]
    common = {key: value for key, value in parent.items() if key not in ("type", "uuid")}
    devices: list[dict[str, Any]] = []
    for profile, start in migpart.placements(profiles):
        capacity = migpart.capacities(profile)
        devices.append(
            {
                "name": migpart.device_name(card.index, profile, start),
                "attributes": {
                    "type": _string("mig"),
                    "parentUUID": parent["uuid"],
                    "profile": _string(profile.name),
                    **common,
                },
                "capacity": _counter_values(capacity),
                "consumesCounters": _whole_card_use(
                    card, migpart.counters(capacity, start, profile.size)
                ),
            }
        )
    return devices


def _mig_card(
    node: str,
    card: GpuCard,
    position: int,
    total: int,
    roles: Sequence[str],
    *,
    shared_counters: bool,
    driver_version: str,
    profiles: Sequence[MigProfileSpec],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A MIG-capable card with DynamicMIG: its counter set and its devices.

    The full GPU is published on Hopper and later only (Ampere cannot leave MIG mode
    without a reset, isDynamicMIGCapable). The driver publishes no VFIO device for a card
    it partitions; gpuop's race-free publication does, consuming the whole card.
    """
    model = _model(card)
    whole = migpart.whole_card(profiles)
    devices: list[dict[str, Any]] = []
    if "gpu" in roles and model is not None and model.family in _MIG_MODE_TOGGLES:
        gpu = _gpu_device(node, card, model, driver_version)
        gpu["capacity"] = _counter_values(migpart.max_capacities(profiles))
        gpu["consumesCounters"] = _whole_card_use(card, whole)
        devices.append(gpu)
    devices.extend(_mig_devices(node, card, model, driver_version, profiles))
    if "vfio" in roles and shared_counters:
        vfio = _vfio_device(card, position, total, model)
        vfio["consumesCounters"] = _whole_card_use(card, whole)
        devices.append(vfio)
    devices.sort(key=lambda d: str(d["name"]))
    return {"name": counter_set_name(card), "counters": _counter_values(whole)}, devices


def _race_free_card(
    node: str,
    card: GpuCard,
    position: int,
    total: int,
    roles: Sequence[str],
    driver_version: str,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A card in gpuop's race-free publication: its memory counter set and its roles."""
    model = _model(card)
    memory = _memory_bytes(card, model)
    if memory is None:
        raise PublishError(f"card {card.index}: memory unknown, nothing to count")
    whole = _whole_card_use(card, {"memory": memory})
    devices: list[dict[str, Any]] = []
    if "gpu" in roles:
        devices.append(_gpu_device(node, card, model, driver_version))
    if "vfio" in roles:
        devices.append(_vfio_device(card, position, total, model))
    for device in devices:
        device["consumesCounters"] = whole
    if "vgpu" in roles:
        devices.extend(_vgpu_devices(node, card, model))
    devices.sort(key=lambda d: str(d["name"]))
    return {
        "name": counter_set_name(card),
        "counters": _counter_values({"memory": memory}),
    }, devices


def _two_faced_devices(
    node: str, card: GpuCard, position: int, total: int, roles: Sequence[str], driver_version: str
) -> list[dict[str, Any]]:
    model = _model(card)
    devices: list[dict[str, Any]] = []
    if "gpu" in roles:
        devices.append(_gpu_device(node, card, model, driver_version))
    if "vfio" in roles:
        devices.append(_vfio_device(card, position, total, model))
    return devices


def publish(
    node: str,
    cards: Sequence[GpuCard],
    roles: Sequence[str] = DEFAULT_ROLES,
    *,
    shared_counters: bool,
    driver_version: str,
    generation: int = 1,
    node_uid: str | None = None,
    mig: bool = False,
) -> list[dict[str, Any]]:
    """The ResourceSlices `node`'s DRA driver writes for `cards` (empty when no cards).

    `mig=True` is the driver's DynamicMIG: MIG-capable cards also offer every MIG profile
    and placement as a device, all sharing the card's counter set (see gpuop.dra.mig).
    """
    _check_inputs(cards, roles, shared_counters)
    ordered = sorted(cards, key=lambda c: c.index)
    if not ordered:
        return []
    partitioned = {card.index: mig_profiles(card) for card in ordered} if mig else {}
    bodies: list[dict[str, Any]] = []
    if not shared_counters and not any(partitioned.values()):
        devices: list[dict[str, Any]] = []
        for position, card in enumerate(ordered):
            devices.extend(
                _two_faced_devices(node, card, position, len(ordered), roles, driver_version)
            )
        devices.sort(key=lambda d: str(d["name"]))
        bodies = [{"devices": chunk} for chunk in _chunks(devices, MAX_DEVICES_PER_SLICE)]
    else:
        counter_sets: list[dict[str, Any]] = []
        per_card: list[dict[str, Any]] = []
        for position, card in enumerate(ordered):
            profiles = partitioned.get(card.index, ())
            if profiles:
                counter_set, card_devices = _mig_card(
                    node,
                    card,
                    position,
                    len(ordered),
                    roles,
                    shared_counters=shared_counters,
                    driver_version=driver_version,
                    profiles=profiles,
                )
                counter_sets.append(counter_set)
            elif shared_counters:
                counter_set, card_devices = _race_free_card(
                    node, card, position, len(ordered), roles, driver_version
                )
                counter_sets.append(counter_set)
            else:
                card_devices = _two_faced_devices(
                    node, card, position, len(ordered), roles, driver_version
                )
                card_devices.sort(key=lambda d: str(d["name"]))
            per_card.append({"devices": card_devices})
        bodies = [
            {"sharedCounters": chunk} for chunk in _chunks(counter_sets, MAX_COUNTER_SETS_PER_SLICE)
        ]
        bodies.extend(per_card)
    count = len(bodies)
    return [
        _slice(node, node_uid, slice_name(node, i, count), generation, count, body)
        for i, body in enumerate(bodies)
    ]


def card_devices(slices: Iterable[dict[str, Any]]) -> list[CardDevice]:
    """Every published device with its role and card (by PCI address), from slices above."""
    found: list[CardDevice] = []
    for manifest in slices:
        for device in (manifest.get("spec") or {}).get("devices") or []:
            attributes = device.get("attributes") or {}
            role = str((attributes.get("type") or {}).get("string", ""))
            bus_id = str((attributes.get(PCI_BUS_ID_ATTRIBUTE) or {}).get("string", ""))
            card_uuid = str((attributes.get("uuid") or {}).get("string", ""))
            found.append(CardDevice(str(device.get("name", "")), role, bus_id, card_uuid))
    return found


__all__ = [
    "API_VERSION",
    "DEFAULT_ROLES",
    "DRIVER",
    "PCI_BUS_ID_ATTRIBUTE",
    "ROLES",
    "CardDevice",
    "PublishError",
    "card_devices",
    "counter_set_name",
    "cuda_driver_version",
    "gpu_uuid",
    "mig_profiles",
    "publish",
    "quantity",
    "slice_name",
    "vfio_uuid",
    "vgpu_share",
]
