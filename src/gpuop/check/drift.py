"""Drift between nodes that should match: driver versions on container nodes (GPU701).

The reference version is the one most container nodes run (ties go to the newest, the
likely upgrade target); every container node on another version is reported. `drifted`
makes that choice for the version checks' driver pools too (VER301).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from gpuop.api.labels import DRIVER_VERSION_LABEL
from gpuop.check.context import CheckContext

_PARTS = re.compile(r"\d+")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part[:9]) for part in _PARTS.findall(version)[:6])


def drifted(
    versions: Mapping[str, Sequence[str]], version_key: Callable[[str], tuple[int, ...]]
) -> tuple[str, list[tuple[str, str]]]:
    """The reference version, and (version, node) for each node on another one, in order.

    `versions` maps a version to the nodes that run it; the reference is the one most
    nodes run, ties going to the newest by `version_key`.
    """
    reference = max(versions, key=lambda v: (len(versions[v]), version_key(v), v))
    off = [
        (version, node)
        for version, nodes in sorted(versions.items())
        if version != reference
        for node in sorted(nodes)
    ]
    return reference, off


def check_driver_drift(ctx: CheckContext) -> None:
    versions: dict[str, list[str]] = {}
    for info in ctx.nodes:
        plan = info.plan
        if plan is None or not plan.gpu_node or plan.workload.config != "container":
            continue
        version = info.view.labels.get(DRIVER_VERSION_LABEL)
        if version:
            versions.setdefault(version, []).append(info.name)
    if len(versions) < 2:
        return
    reference, off = drifted(versions, _version_key)
    others = len(versions[reference])
    for version, node in off:
        ctx.add(
            "GPU701",
            "Node",
            node,
            f"{DRIVER_VERSION_LABEL}={version}, while {others} other container node"
            f"{'s' if others != 1 else ''} run {reference}",
            f"check nvidia.com/gpu-driver-upgrade-state and the driver pod on {node};"
            " a finished upgrade leaves every node on one version",
        )


__all__ = ["check_driver_drift", "drifted"]
