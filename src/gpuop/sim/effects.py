"""What the node-side software would have done, given which operand pods are Ready.

Pure: a simulated Node, its machine's cards, the host's state and the operand pods on it
in; the node's simulated state out: GPU resources in status, GPU feature discovery labels
and the vGPU config state on the Node (what real node-side software writes there), and the
host side kept by the simulator itself (which driver owns the cards, which vGPU devices
exist), never written on the Node.
An operand takes effect when its pod is Ready and the operands it waits for (per the operand
table) have taken effect, if they run there. Names and counts come from the planner's
naming and vGPU modules, never from a second copy of the rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuop.api.cards import GpuCard
from gpuop.api.labels import (
    CUDA_RUNTIME_LABEL,
    CUDA_RUNTIME_MAJOR_LABEL,
    CUDA_RUNTIME_MINOR_LABEL,
    DRIVER_VERSION_LABEL,
    DRIVER_VERSION_MAJOR_LABEL,
    DRIVER_VERSION_MINOR_LABEL,
    DRIVER_VERSION_REVISION_LABEL,
    GFD_LABELS,
    GPU_COMPUTE_MAJOR_LABEL,
    GPU_COMPUTE_MINOR_LABEL,
    GPU_COUNT_LABEL,
    GPU_FAMILY_LABEL,
    GPU_MEMORY_LABEL,
    GPU_MODE_LABEL,
    GPU_PRODUCT_LABEL,
    GPU_REPLICAS_LABEL,
    GPU_SHARING_STRATEGY_LABEL,
    MIG_CAPABLE_LABEL,
    VGPU_CONFIG_LABEL,
    VGPU_CONFIG_STATE_LABEL,
)
from gpuop.api.resources import CONTAINER_RESOURCE, KATA_RESOURCE, RESOURCE_PREFIX
from gpuop.catalog import gpu_catalog, operand_table
from gpuop.naming import (
    PciDatabase,
    is_gpu_resource,
    mdev_type_name,
    normalise_pci_name_kata,
    passthrough_resource,
    vgpu_resource,
)
from gpuop.vgpu import DEFAULT_CONFIG_NAME, Card, VgpuConfigFile, apply_vgpu_config

# Keys of the host state the simulator keeps per node.
DRIVER_ANNOTATION = "gpu-driver"
VGPU_HOST_ANNOTATION = "vgpu-host-driver"
VGPU_DEVICES_ANNOTATION = "vgpu-devices"
VGPU_APPLYING_ANNOTATION = "vgpu-applying"
TOOLKIT_ANNOTATION = "container-runtime"
DRIVER_VERSION_ANNOTATION = "driver-version"
DRIVER_VERSION = "595.91.07"
CUDA_VERSION = "13.2"
SIM_ANNOTATIONS = (
    DRIVER_ANNOTATION,
    VGPU_HOST_ANNOTATION,
    VGPU_DEVICES_ANNOTATION,
    VGPU_APPLYING_ANNOTATION,
    TOOLKIT_ANNOTATION,
    DRIVER_VERSION_ANNOTATION,
)


@dataclass(frozen=True)
class OperandPod:
    operand: str
    ready: bool
    env: Mapping[str, str] = field(default_factory=dict)
    image: str = ""


def driver_version(image: str) -> str:
    """The driver version a driver image installs: its tag's leading `595.91.07` (tags are
    `<version>-<os>`); the default version for an image named by digest or odd tag."""
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    match = re.match(r"^(\d+\.\d+\.\d+)(?:-|$)", tag)
    return match.group(1) if match else DRIVER_VERSION


@dataclass
class NodeChanges:
    """Patches to bring a node to its simulated state; empty when it is there."""

    labels: dict[str, str | None] = field(default_factory=dict)
    resources: dict[str, str | None] = field(default_factory=dict)
    # The host state after the change (the simulator's own record, not a patch).
    host: dict[str, str] = field(default_factory=dict)
    configure_runtime: bool | None = None

    def __bool__(self) -> bool:
        """Whether the Node needs a write (host state changes are the simulator's own)."""
        return bool(self.labels or self.resources)


def effective_operands(pods: Mapping[str, OperandPod]) -> set[str]:
    """Operands whose pods are Ready and whose dependencies on this node took effect."""
    table = operand_table()
    effective: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, pod in pods.items():
            if name in effective or not pod.ready:
                continue
            try:
                waits = table.operand(name).waits_for
            except KeyError:
                continue
            if all(dep in effective or dep not in pods for dep in waits):
                effective.add(name)
                changed = True
    return effective


def _gfd_labels(cards: tuple[GpuCard, ...], version: str) -> dict[str, str]:
    model = gpu_catalog().by_model(cards[0].model) if cards and cards[0].model else None
    if model is None:
        return {}
    major, minor = model.compute_capability.split(".")
    drv_major, drv_minor, drv_rev = version.split(".")
    cuda_major, cuda_minor = CUDA_VERSION.split(".")
    return {
        GPU_PRODUCT_LABEL: model.product,
        GPU_COUNT_LABEL: str(len(cards)),
        GPU_MEMORY_LABEL: str(model.memory_mib),
        GPU_FAMILY_LABEL: model.family,
        GPU_COMPUTE_MAJOR_LABEL: major,
        GPU_COMPUTE_MINOR_LABEL: minor,
        GPU_REPLICAS_LABEL: "1",
        GPU_SHARING_STRATEGY_LABEL: "none",
        GPU_MODE_LABEL: "compute",
        MIG_CAPABLE_LABEL: str(model.mig_capable).lower(),
        DRIVER_VERSION_MAJOR_LABEL: drv_major,
        DRIVER_VERSION_MINOR_LABEL: drv_minor,
        DRIVER_VERSION_REVISION_LABEL: drv_rev,
        DRIVER_VERSION_LABEL: version,
        CUDA_RUNTIME_MAJOR_LABEL: cuda_major,
        CUDA_RUNTIME_MINOR_LABEL: cuda_minor,
        CUDA_RUNTIME_LABEL: CUDA_VERSION,
    }


def node_changes(
    node: Mapping[str, Any],
    cards: tuple[GpuCard, ...],
    host: Mapping[str, str],
    pods: Mapping[str, OperandPod],
    vgpu_config: VgpuConfigFile,
    pci_db: PciDatabase,
) -> NodeChanges:
    """The patches that make `node` show what its Ready operands would have done."""
    meta = node.get("metadata") or {}
    labels: dict[str, str] = dict(meta.get("labels") or {})
    annotations: Mapping[str, str] = host
    allocatable: dict[str, str] = {
        str(k): str(v) for k, v in ((node.get("status") or {}).get("allocatable") or {}).items()
    }
    cards = tuple(card for card in cards if card.device_id is not None)
    effective = effective_operands(pods)

    want_labels: dict[str, str] = {}
    want_annotations: dict[str, str] = {}
    want_resources: dict[str, str] = {}

    # The module stays loaded while its pod restarts; a new pod brings its own version.
    if "driver" in effective:
        want_annotations[DRIVER_VERSION_ANNOTATION] = driver_version(pods["driver"].image)
    elif host.get(DRIVER_VERSION_ANNOTATION) and "driver" not in pods:
        want_annotations[DRIVER_VERSION_ANNOTATION] = host[DRIVER_VERSION_ANNOTATION]
    if "driver" in effective:
        want_annotations[DRIVER_ANNOTATION] = "nvidia"
    elif "vfio-manager" in effective:
        want_annotations[DRIVER_ANNOTATION] = "vfio-pci"
    elif "vgpu-manager" in effective:
        want_annotations[DRIVER_ANNOTATION] = "nvidia-vgpu"
    if "vgpu-manager" in effective:
        want_annotations[VGPU_HOST_ANNOTATION] = DRIVER_VERSION
    if "container-toolkit" in effective:
        want_annotations[TOOLKIT_ANNOTATION] = "nvidia runtime registered in /etc/containerd"
    if "gpu-feature-discovery" in effective:
        version = want_annotations.get(DRIVER_VERSION_ANNOTATION, DRIVER_VERSION)
        want_labels.update(_gfd_labels(cards, version))
    if "device-plugin" in effective and cards:
        want_resources[CONTAINER_RESOURCE] = str(len(cards))

    vgpu_totals: dict[str, int] = {}
    if "vgpu-manager" in effective:
        # vGPU devices live on the host as long as the vGPU host driver is loaded.
        previous = annotations.get(VGPU_DEVICES_ANNOTATION)
        if previous:
            want_annotations[VGPU_DEVICES_ANNOTATION] = previous
            vgpu_totals = _decode_devices(previous)
        if annotations.get(VGPU_APPLYING_ANNOTATION):
            want_annotations[VGPU_APPLYING_ANNOTATION] = annotations[VGPU_APPLYING_ANNOTATION]
    dm_pod = pods.get("vgpu-device-manager")
    if dm_pod is not None and "vgpu-device-manager" in effective and "vgpu-manager" in effective:
        wanted_name = labels.get(VGPU_CONFIG_LABEL) or dm_pod.env.get(
            "DEFAULT_VGPU_CONFIG", DEFAULT_CONFIG_NAME
        )
        applying = annotations.get(VGPU_APPLYING_ANNOTATION)
        state = labels.get(VGPU_CONFIG_STATE_LABEL)
        if applying != wanted_name:
            want_labels[VGPU_CONFIG_STATE_LABEL] = "pending"
            want_annotations[VGPU_APPLYING_ANNOTATION] = wanted_name
        else:
            result = apply_vgpu_config(
                vgpu_config,
                wanted_name,
                [Card(c.index, c.device_id or "", c.vendor_id, None, c.model) for c in cards],
            )
            want_annotations[VGPU_APPLYING_ANNOTATION] = wanted_name
            want_labels[VGPU_CONFIG_STATE_LABEL] = result.state if state else "pending"
            if state:
                vgpu_totals = dict(result.totals) if result.ok else {}
                want_annotations.pop(VGPU_DEVICES_ANNOTATION, None)
                if vgpu_totals:
                    want_annotations[VGPU_DEVICES_ANNOTATION] = json.dumps(
                        vgpu_totals, sort_keys=True, separators=(",", ":")
                    )
    elif dm_pod is not None and labels.get(VGPU_CONFIG_STATE_LABEL):
        want_labels[VGPU_CONFIG_STATE_LABEL] = labels[VGPU_CONFIG_STATE_LABEL]

    if "sandbox-device-plugin" in effective:
        if want_annotations.get(DRIVER_ANNOTATION) == "vfio-pci":
            for card in cards:
                name = passthrough_resource(card.device_id or "", pci_db).resource
                want_resources[name] = str(int(want_resources.get(name, "0")) + 1)
        for vgpu_type, count in vgpu_totals.items():
            want_resources[vgpu_resource(mdev_type_name(vgpu_type))] = str(count)
    if (
        "kata-sandbox-device-plugin" in effective
        and want_annotations.get(DRIVER_ANNOTATION) == "vfio-pci"
    ):
        kata = pods["kata-sandbox-device-plugin"]
        alias = kata.env.get("P_GPU_ALIAS", KATA_RESOURCE.removeprefix(RESOURCE_PREFIX))
        if alias:
            want_resources[RESOURCE_PREFIX + alias] = str(len(cards))
        else:
            # P_GPU_ALIAS="": each model registers under its pci.ids name (kept `-`).
            for card in cards:
                pci_name = pci_db.name_of(card.device_id or "")
                name = RESOURCE_PREFIX + (
                    normalise_pci_name_kata(pci_name) if pci_name else "UNKNOWN_DEVICE"
                )
                want_resources[name] = str(int(want_resources.get(name, "0")) + 1)

    changes = NodeChanges()
    for key in (*GFD_LABELS, VGPU_CONFIG_STATE_LABEL):
        if labels.get(key) != want_labels.get(key):
            changes.labels[key] = want_labels.get(key)
    changes.host = {
        key: want_annotations[key] for key in SIM_ANNOTATIONS if key in want_annotations
    }
    for key in set(allocatable) | set(want_resources):
        if not is_gpu_resource(key):
            continue
        if allocatable.get(key) != want_resources.get(key):
            changes.resources[key] = want_resources.get(key)
    changes.configure_runtime = "container-toolkit" in effective
    return changes


def _decode_devices(value: str) -> dict[str, int]:
    try:
        raw = json.loads(value)
    except json.JSONDecodeError:
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): int(v) for k, v in raw.items() if isinstance(v, int)}
