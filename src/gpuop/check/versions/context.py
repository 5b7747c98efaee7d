"""What the version checks share: the nodes as they read them, and the context they add to.

`VersionContext` is a `gpuop.check` finding log (one `add`, one registry for the VER
rules' severities and titles) plus what the version checks decided: the matrix, the
release in use (`Detection`) and today's date for end-of-life checks.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from gpuop.api.labels import (
    CUDA_RUNTIME_LABEL,
    DRIVER_VERSION_LABEL,
    GPU_PRODUCT_LABEL,
    LEGACY_DRIVER_LABELS,
    LEGACY_RUNTIME_LABELS,
    NFD_OS_ID,
    NFD_OS_VERSION_ID,
)
from gpuop.catalog.versions import VersionMatrix
from gpuop.check.context import FindingLog
from gpuop.check.model import Finding, Skip
from gpuop.check.release.pinned import Detection
from gpuop.check.state import string_map
from gpuop.manifests.fields import mapping, text
from gpuop.planner import gpu_detection
from gpuop.policy import ResolvedPolicy

_SHAPE_LABELS = (
    NFD_OS_ID,
    NFD_OS_VERSION_ID,
    DRIVER_VERSION_LABEL,
    CUDA_RUNTIME_LABEL,
    *LEGACY_DRIVER_LABELS,
    *LEGACY_RUNTIME_LABELS,
)


@dataclass(frozen=True)
class NodeVersions:
    """The parts of a Node the version checks read."""

    name: str
    labels: Mapping[str, str]
    kubelet: str
    os_image: str
    runtime: str
    has_node_info: bool

    @property
    def gpu(self) -> bool:
        return gpu_detection(self.labels) is not None

    @property
    def product(self) -> str | None:
        return self.labels.get(GPU_PRODUCT_LABEL) or None

    @property
    def driver(self) -> str | None:
        """The driver version GPU feature discovery reports (new label, then the old ones)."""
        value = self.labels.get(DRIVER_VERSION_LABEL, "").strip()
        if value:
            return value
        parts = [self.labels.get(key, "").strip() for key in LEGACY_DRIVER_LABELS]
        return ".".join(part for part in parts if part) if parts[0] and parts[1] else None

    @property
    def cuda_runtime(self) -> str | None:
        value = self.labels.get(CUDA_RUNTIME_LABEL, "").strip()
        if value:
            return value
        major, minor = (self.labels.get(key, "").strip() for key in LEGACY_RUNTIME_LABELS)
        return f"{major}.{minor}" if major and minor else None

    @property
    def shape(self) -> tuple[Any, ...]:
        """Everything the per-node checks read (not the name, not the GPU product)."""
        return (
            self.kubelet,
            self.os_image,
            self.runtime,
            self.has_node_info,
            tuple(self.labels.get(key) for key in _SHAPE_LABELS),
        )


def read_node(obj: Mapping[str, Any]) -> NodeVersions:
    info = mapping(obj, "status", "nodeInfo")
    return NodeVersions(
        name=text(obj, "metadata", "name"),
        labels=string_map(mapping(obj, "metadata").get("labels")),
        kubelet=text(info, "kubeletVersion"),
        os_image=text(info, "osImage"),
        runtime=text(info, "containerRuntimeVersion"),
        has_node_info=bool(info),
    )


def read_nodes(objects: Iterable[Any]) -> list[NodeVersions]:
    nodes: dict[str, NodeVersions] = {}
    for obj in objects:
        if not isinstance(obj, Mapping) or obj.get("kind") != "Node":
            continue
        node = read_node(obj)
        if node.name and node.name not in nodes:
            nodes[node.name] = node
    return list(nodes.values())


def end_of_life_day(month: str) -> date:
    """The last day of support for an end-of-life month (`2026-06` -> 2026-06-30)."""
    year, number = (int(part) for part in month.split("-"))
    return date(year, number, calendar.monthrange(year, number)[1])


@dataclass
class VersionContext(FindingLog):
    matrix: VersionMatrix
    today: date
    detection: Detection
    policy: ResolvedPolicy | None
    policy_name: str
    driver_in_container: bool
    findings: list[Finding] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)

    @property
    def release_text(self) -> str:
        return self.detection.describe(self.matrix)


__all__ = ["NodeVersions", "VersionContext", "end_of_life_day", "read_node", "read_nodes"]
