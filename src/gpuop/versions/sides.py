"""The two sides of `gpuop upgrade preview`, and what restarting each operand's pod does.

A side is an operator release from the matrix (its default operand versions) or a
ClusterPolicy (its pinned versions; unset ones follow the release it pins, else gpuop's
defaults). `OPERAND_IMPACT` is also rendered into docs/versions.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpuop.catalog import Operand, operand_table
from gpuop.catalog.versions import Release, VersionMatrix
from gpuop.policy import ResolvedPolicy
from gpuop.versions.release import Detection, detect_release, policy_version

Impact = Literal["gpu-workloads", "container-runtime", "new-pods-wait", "none"]
IMPACT_ORDER: Mapping[Impact, int] = {
    "none": 0,
    "new-pods-wait": 1,
    "container-runtime": 2,
    "gpu-workloads": 3,
}
IMPACT_TEXT: Mapping[Impact, str] = {
    "gpu-workloads": "GPU workloads disrupted",
    "container-runtime": "containerd restarts",
    "new-pods-wait": "new GPU pods wait",
    "none": "no workload impact",
}

# What restarting an operand's pod does to the node (gpu-operator-behaviour: each operand's
# effects in catalog/operands.yaml). The highest impact on a node is the node's disruption.
OPERAND_IMPACT: Mapping[str, tuple[Impact, str]] = {
    "driver": (
        "gpu-workloads",
        "the driver pod unloads and reloads the kernel modules: every GPU pod on the node is"
        " evicted and restarts, and the operands that wait for the driver validate again",
    ),
    "container-toolkit": (
        "container-runtime",
        "rewrites the containerd runtime configuration and restarts containerd: running"
        " containers keep running, new pods wait until containerd is back",
    ),
    "operator-validator": ("none", "re-runs the driver, toolkit, CUDA and plugin validations"),
    "device-plugin": (
        "new-pods-wait",
        "re-registers nvidia.com/gpu with the kubelet: running pods keep their GPUs, new GPU"
        " pods wait until it is back",
    ),
    "mps-control-daemon": (
        "gpu-workloads",
        "restarts the MPS control daemon: pods sharing GPUs through MPS lose their MPS server",
    ),
    "dcgm": ("none", "restarts the DCGM host engine: a gap in GPU metrics"),
    "dcgm-exporter": ("none", "a gap in GPU metrics"),
    "gpu-feature-discovery": ("none", "re-labels the node (GPU product, driver, CUDA)"),
    "mig-manager": (
        "none",
        "restarts; the MIG layout changes only when nvidia.com/mig.config does",
    ),
    "node-status-exporter": ("none", "a gap in node status metrics"),
    "vgpu-manager": (
        "gpu-workloads",
        "reinstalls the vGPU host driver: every VM using a vGPU on the node stops",
    ),
    "vgpu-device-manager": (
        "none",
        "restarts; vGPU devices change only when nvidia.com/vgpu.config does",
    ),
    "sandbox-validator": ("none", "re-runs the vfio-pci or vGPU device validations"),
    "vfio-manager": (
        "gpu-workloads",
        "unloads the driver and binds every GPU to vfio-pci again: VMs using the node's GPUs"
        " are disrupted",
    ),
    "sandbox-device-plugin": (
        "new-pods-wait",
        "re-registers the VM GPU resources with the kubelet: running VMs keep their devices,"
        " new VMs wait",
    ),
    "kata-sandbox-device-plugin": (
        "new-pods-wait",
        "re-registers nvidia.com/pgpu with the kubelet: running Kata pods keep their GPUs,"
        " new ones wait",
    ),
    "kata-manager": ("none", "deprecated and never deployed"),
    "cc-manager": ("none", "restarts; the CC mode changes only when nvidia.com/cc.mode does"),
}

SideKind = Literal["release", "policy"]


@dataclass(frozen=True)
class Side:
    """One side of the change: its policy (for placement), release and operand versions."""

    label: str
    kind: SideKind
    policy: ResolvedPolicy
    detection: Detection
    versions: Mapping[str, str | None]
    sources: Mapping[str, str]

    def enabled(self, operand: Operand) -> bool:
        return self.policy.operand_enabled(operand)

    def describe(self, matrix: VersionMatrix) -> str:
        if self.kind == "release":
            return f"operator release {self.label}"
        release = self.detection.describe(matrix)
        return f"ClusterPolicy {self.label} (operator release {release}; {self.detection.basis()})"

    def to_dict(self, matrix: VersionMatrix) -> dict[str, Any]:
        return {
            "source": self.label,
            "kind": self.kind,
            "operator_release": self.detection.describe(matrix),
            "release_candidates": list(self.detection.names),
            "release_basis": "release name" if self.kind == "release" else self.detection.basis(),
            "policy": self.policy.name or None,
        }


def side_from_release(release: Release, policy: ResolvedPolicy, matrix: VersionMatrix) -> Side:
    """A release name: its default operand versions; placement from `policy`."""
    detection = detect_release(matrix, None, release.version)
    versions: dict[str, str | None] = {}
    sources: dict[str, str] = {}
    for operand in operand_table().operands:
        key = operand.image.version_key
        if key is not None:
            versions[operand.name] = release.components.get(key)
            sources[operand.name] = f"release {release.version} default"
        else:
            versions[operand.name] = policy_version(policy, operand)
            sources[operand.name] = f"spec.{operand.spec_block}.version"
    return Side(release.version, "release", policy, detection, versions, sources)


def side_from_policy(policy: ResolvedPolicy, label: str, matrix: VersionMatrix) -> Side:
    """A ClusterPolicy: pinned versions; unset ones follow its release, else gpuop's defaults."""
    detection = detect_release(matrix, policy)
    release = detection.single
    defaults = operand_table().default_versions
    versions: dict[str, str | None] = {}
    sources: dict[str, str] = {}
    for operand in operand_table().operands:
        key = operand.image.version_key
        pinned = policy_version(policy, operand)
        if pinned:
            versions[operand.name] = pinned
            sources[operand.name] = f"spec.{operand.spec_block}.version"
        elif key is not None and release is not None:
            versions[operand.name] = release.components.get(key)
            sources[operand.name] = f"release {release.version} default (not pinned)"
        elif key is not None:
            versions[operand.name] = defaults.get(key)
            sources[operand.name] = "gpuop default (not pinned)"
        else:
            versions[operand.name] = None
            sources[operand.name] = "not set"
    return Side(label, "policy", policy, detection, versions, sources)


__all__ = [
    "IMPACT_ORDER",
    "IMPACT_TEXT",
    "OPERAND_IMPACT",
    "Impact",
    "Side",
    "SideKind",
    "side_from_policy",
    "side_from_release",
]
