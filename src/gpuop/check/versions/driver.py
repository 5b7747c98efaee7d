"""The VER2xx and VER3xx rules: driver branches, CUDA against the driver, driver drift.

The lifecycle of a branch and the CUDA floors are the matrix's (`gpuop.catalog.versions`);
`branch_findings` and `cuda_findings` return (code, message, hint) so that
`gpuop upgrade preview` reports a target driver with the same words.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from gpuop.api.labels import DRIVER_VERSION_LABEL
from gpuop.catalog.versions import DriverBranch, VersionMatrix
from gpuop.check.drift import drifted
from gpuop.check.versions.context import NodeVersions, VersionContext, end_of_life_day
from gpuop.check.versions.parse import VersionError, cuda_minor, driver_branch, driver_key

NEAR_END_OF_LIFE_DAYS = 90
_BRANCH_TYPES = {
    "long_term_support": "long-term support",
    "production": "production",
    "new_feature": "new feature",
}


def supported_branches(matrix: VersionMatrix, today: date) -> list[DriverBranch]:
    return [
        branch
        for branch in matrix.driver_branches
        if branch.end_of_life is not None and end_of_life_day(branch.end_of_life) >= today
    ]


def branch_text(branch: DriverBranch) -> str:
    kind = _BRANCH_TYPES.get(branch.type or "", "")
    until = f", end of life {branch.end_of_life}" if branch.end_of_life else ""
    return f"{branch.name} ({kind + ' branch' if kind else 'branch'}{until})"


def branch_findings(matrix: VersionMatrix, today: date, driver: str) -> list[tuple[str, str, str]]:
    """(code, message, hint) about a driver's branch lifecycle; empty when it is fine."""
    try:
        number = driver_branch(driver)
    except VersionError as exc:
        return [("VER004", f"{exc}: the driver branch was not checked", "fix the version")]
    branch = matrix.branch(number)
    alive = supported_branches(matrix, today)
    options = ", ".join(branch_text(b) for b in alive) or "none in gpuop's data"
    hint = f"plan a move to a supported branch in its own maintenance window: {options}"
    if branch is None:
        return [
            (
                "VER004",
                f"driver {driver}: branch R{number} is not in gpuop's driver lifecycle data",
                "check the branch against NVIDIA's data center driver lifecycle by hand",
            )
        ]
    if branch.end_of_life is not None:
        last = end_of_life_day(branch.end_of_life)
        if today > last:
            return [
                (
                    "VER201",
                    f"driver {driver} is on {branch_text(branch)}: past end of life since"
                    f" {last.isoformat()}",
                    hint,
                )
            ]
        if (last - today).days < NEAR_END_OF_LIFE_DAYS:
            return [
                (
                    "VER202",
                    f"driver {driver} is on {branch_text(branch)}: support ends"
                    f" {last.isoformat()}, {(last - today).days} days from {today.isoformat()}",
                    hint,
                )
            ]
        return []
    if not branch.in_lifecycle_tables:
        return [
            (
                "VER201",
                f"driver {driver} is on {branch.name}, which NVIDIA's 2026 data center driver"
                " lifecycle tables no longer list: out of support (its end-of-life date is"
                " not in gpuop's data)",
                hint,
            )
        ]
    return []


def cuda_findings(matrix: VersionMatrix, driver: str, cuda: str) -> list[tuple[str, str, str]]:
    """(code, message, hint) when the CUDA version needs a newer driver than `driver`."""
    try:
        have = driver_key(driver)
        major, minor = cuda_minor(cuda)
    except VersionError as exc:
        return [("VER004", f"{exc}: CUDA and driver were not compared", "fix the label")]
    wanted = f"{major}.{minor}"
    family = matrix.cuda.family(major)
    if family is None:
        return [
            (
                "VER004",
                f"CUDA {wanted}: gpuop has no minimum driver for CUDA {major}.x",
                "compare with NVIDIA's CUDA compatibility guide by hand",
            )
        ]
    floor_driver = driver_key(family.min_driver) if family.min_driver else None
    if have[0] < family.min_driver_branch or (floor_driver is not None and have < floor_driver):
        floor = family.min_driver or f"branch R{family.min_driver_branch}"
        return [
            (
                "VER203",
                f"CUDA {wanted} needs driver {floor} or newer (CUDA {major}.x minor-version"
                f" compatibility); the node's driver is {driver}",
                f"upgrade the driver to R{family.min_driver_branch} or newer, or keep workloads"
                f" on a CUDA the driver runs",
            )
        ]
    entry = matrix.cuda.minor(wanted)
    if entry is None or entry.min_driver is None:
        return [
            (
                "VER004",
                f"CUDA {wanted}: the driver packaged with it is not in gpuop's data, so only"
                f" the CUDA {major}.x floor (R{family.min_driver_branch}) was checked",
                "compare with the CUDA toolkit release notes by hand",
            )
        ]
    if have < driver_key(entry.min_driver):
        return [
            (
                "VER204",
                f"CUDA {wanted}'s packaged driver is {entry.min_driver}; the node's driver"
                f" {driver} runs CUDA {major}.x through minor-version compatibility, without"
                f" the features that need the newer driver",
                f"upgrade the driver to {entry.min_driver} or newer (its own maintenance"
                " window), or avoid PTX JIT and newer-driver APIs",
            )
        ]
    return []


def _documented(ctx: VersionContext, driver: str) -> tuple[str, str] | None:
    """(message, hint) when no candidate release documents the driver; None otherwise."""
    lists = [r.documented_drivers for r in ctx.detection.candidates]
    if not lists or any(found is None for found in lists):
        return None
    documented = {version for found in lists if found for version in found}
    if driver in documented:
        return None
    try:
        have = driver_key(driver)
    except VersionError:
        return None
    same_branch = sorted(
        (v for v in documented if driver_key(v)[0] == have[0]), key=driver_key, reverse=True
    )
    nearest = (
        f"documented {have[0]} drivers: {', '.join(same_branch)}"
        if same_branch
        else "no documented driver of its branch; documented: "
        + ", ".join(sorted(documented, key=driver_key, reverse=True))
    )
    return (
        f"driver {driver} is not among operator release {ctx.release_text}'s documented"
        f" drivers ({nearest})",
        "pick a documented driver for the release",
    )


def driver_checks(ctx: VersionContext, kind: str, name: str, driver: str) -> None:
    for code, message, hint in branch_findings(ctx.matrix, ctx.today, driver):
        ctx.add(code, kind, name, message, hint)
    if ctx.detection.known:
        documented = _documented(ctx, driver)
        if documented is not None:
            ctx.add("VER205", kind, name, *documented)


def check_node_driver(ctx: VersionContext, node: NodeVersions) -> None:
    driver = node.driver
    if driver is None:
        return
    try:
        driver_key(driver)
    except VersionError as exc:
        ctx.add(
            "VER004",
            "Node",
            node.name,
            f"{DRIVER_VERSION_LABEL}: {exc}; the driver was not checked",
            "check GPU feature discovery on the node",
        )
        return
    driver_checks(ctx, "Node", node.name, driver)
    runtime = node.cuda_runtime
    if runtime:
        for code, message, hint in cuda_findings(ctx.matrix, driver, runtime):
            ctx.add(code, "Node", node.name, message, hint)


def check_drift(ctx: VersionContext, nodes: Sequence[NodeVersions]) -> None:
    """VER301: within a pool (same GPU product), nodes off the pool's usual driver."""
    pools: dict[str, dict[str, list[str]]] = {}
    for node in nodes:
        driver = node.driver
        if not node.gpu or not node.product or not driver:
            continue
        pools.setdefault(node.product, {}).setdefault(driver, []).append(node.name)
    for product, versions in sorted(pools.items()):
        if len(versions) < 2:
            continue
        reference, off = drifted(versions, _drift_key)
        count = len(versions[reference])
        summary = ", ".join(
            f"{version} on {len(names)}" for version, names in sorted(versions.items())
        )
        for version, name in off:
            ctx.add(
                "VER301",
                "Node",
                name,
                f"driver {version}, while {count} other {product}"
                f" {'nodes run' if count != 1 else 'node runs'} {reference}"
                f" (pool {product}: {summary})",
                f"bring the {product} pool to one driver ({reference}): let the operator"
                " manage it, or rebuild the node from the pool's image",
            )


def _drift_key(version: str) -> tuple[int, ...]:
    try:
        return driver_key(version)
    except VersionError:
        return ()


__all__ = [
    "NEAR_END_OF_LIFE_DAYS",
    "branch_findings",
    "branch_text",
    "check_drift",
    "check_node_driver",
    "cuda_findings",
    "driver_checks",
    "supported_branches",
]
