"""The two sides of `gpuop upgrade preview`, and how far an operand's restart reaches.

A side is an operator release from the matrix (its default operand versions) or a
ClusterPolicy (its pinned versions; unset ones follow the release it pins, else gpuop's
defaults). What restarting each operand's pod does is the operand table's `restart`
(catalog/operands.yaml); `IMPACT_ORDER` ranks those impacts (the highest on a node is the
node's disruption) and `IMPACT_TEXT` names them in text and in docs/versions.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpuop.catalog import Impact, Operand, operand_table
from gpuop.catalog.versions import Release, VersionMatrix
from gpuop.check.release import Detection, policy_version, release_in_use
from gpuop.policy import ResolvedPolicy

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
    detection = release_in_use(matrix, None, release.version)
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
    detection = release_in_use(matrix, policy)
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
    "Impact",
    "Side",
    "SideKind",
    "side_from_policy",
    "side_from_release",
]
