"""The VER1xx rules: Kubernetes, the operating system and the container runtime.

Each is compared with the ranges of every candidate release (`Detection.candidates`); a
version outside them all, but listed by the release line's newest documentation, is
VER102 rather than unsupported. Facts that cannot be read are VER004.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gpuop.catalog.versions import LineDocs, Release, VersionMatrix
from gpuop.check.release.pinned import describe_releases
from gpuop.check.rules import Severity
from gpuop.check.versions.context import NodeVersions, VersionContext
from gpuop.check.versions.parse import (
    Key,
    OsInfo,
    VersionError,
    in_range,
    kubernetes_minor,
    minor_text,
    os_listed,
    parse_runtime,
)


def _kube_range(platform: Release | LineDocs, os: OsInfo | None) -> tuple[str, str, str]:
    """(min, max, where) for a node's OS: its own row, else the range over every OS."""
    if os is not None and os.version is not None:
        for row in platform.kubernetes.by_os:
            if row.os == os.id and os_listed(os.version, row.versions):
                return row.min, row.max, f" on {os.id} {os.version}"
    return platform.kubernetes.min, platform.kubernetes.max, ""


_SUPPORTING: dict[tuple[int, Key, OsInfo | None], tuple[str, ...]] = {}


def releases_supporting_kubernetes(
    matrix: VersionMatrix, minor: Key, os: OsInfo | None
) -> tuple[str, ...]:
    """Releases whose range (for the OS's row, if it has one) holds the Kubernetes minor."""
    key = (id(matrix), minor[:2], os)
    found = _SUPPORTING.get(key)
    if found is None:
        found = _SUPPORTING[key] = _supporting(matrix, minor, os)
    return found


def _supporting(matrix: VersionMatrix, minor: Key, os: OsInfo | None) -> tuple[str, ...]:
    return tuple(
        release.version
        for release in matrix.releases
        if in_range(minor, *_kube_range(release, os)[:2])
    )


def _later_docs(ctx: VersionContext) -> Iterable[tuple[Release, LineDocs]]:
    seen: set[str] = set()
    for release in ctx.detection.candidates:
        line = ctx.matrix.line(release.line)
        if line is not None and line.line not in seen:
            seen.add(line.line)
            yield release, line.latest_docs


def _approximate(releases: Sequence[Release]) -> str:
    return (
        " (the platform data of this release is approximate)"
        if any(r.platform_approximate for r in releases)
        else ""
    )


def check_kubernetes(
    ctx: VersionContext,
    kind: str,
    name: str,
    version: str,
    source: str,
    os: OsInfo | None,
) -> None:
    """VER101/VER102/VER004 for one Kubernetes version against the release(s) in use."""
    try:
        minor = kubernetes_minor(version)
    except VersionError as exc:
        ctx.add(
            "VER004",
            kind,
            name,
            f"{source} {exc}: the Kubernetes range was not checked",
            "fix the version, or pass --kubernetes-version",
        )
        return
    if os is not None and os.id == "rhcos":
        return  # OpenShift: the OS check compares the OpenShift minor with the release's list
    shown = minor_text(minor)
    ranges = []
    for release in ctx.detection.candidates:
        low, high, where = _kube_range(release, os)
        if in_range(minor, low, high):
            return
        ranges.append(f"{release.version}: {low}–{high}{where}")
    for release, docs in _later_docs(ctx):
        low, high, where = _kube_range(docs, os)
        if in_range(minor, low, high):
            ctx.add(
                "VER102",
                kind,
                name,
                f"Kubernetes {shown} ({source} {version}) is not in {release.version}'s"
                f" documented range as released, but the {release.line} line's newest"
                f" documentation ({docs.date}) lists {low}–{high}{where}",
                f"upgrade to the {release.line} line's latest patch release",
            )
            return
    supporting = releases_supporting_kubernetes(ctx.matrix, minor, os)
    where_os = f" on {os}" if os is not None and os.version else ""
    release_hint = (
        f", or run an operator release that supports {shown}{where_os}"
        f" ({describe_releases(ctx.matrix, supporting)})"
        if supporting
        else f" (no release in gpuop's matrix supports Kubernetes {shown}{where_os})"
    )
    if len(ranges) == 1:
        text_range = ranges[0].split(": ", 1)[1]
        message = (
            f"Kubernetes {shown} ({source} {version}) is outside operator release"
            f" {ctx.release_text}'s supported range {text_range}"
        )
    else:
        message = (
            f"Kubernetes {shown} ({source} {version}) is outside the range of every"
            f" candidate release ({'; '.join(ranges)})"
        )
    ctx.add(
        "VER101",
        kind,
        name,
        message + _approximate(ctx.detection.candidates),
        f"move Kubernetes into the range in its own maintenance window{release_hint}",
    )


def _os_versions(platform: Release | LineDocs, os_id: str) -> tuple[str, ...] | None:
    return platform.operating_systems.get(os_id)


def _os_supported(platform: Release | LineDocs, os: OsInfo) -> bool | None:
    versions = _os_versions(platform, os.id)
    if versions is None:
        return False
    if os.version is None:
        return None
    return os_listed(os.version, versions)


def check_os(ctx: VersionContext, node: NodeVersions, os: OsInfo | None) -> None:
    """VER103/VER102/VER004 for a node's operating system."""
    if os is None:
        ctx.add(
            "VER004",
            "Node",
            node.name,
            "the node's OS is unknown (no NFD os_release labels, no status.nodeInfo.osImage"
            f"{' gpuop can read: ' + repr(node.os_image) if node.os_image else ''})",
            "let NFD label the node, or check the OS against the release's list by hand",
        )
        return
    verdicts = [_os_supported(release, os) for release in ctx.detection.candidates]
    if any(verdict is True for verdict in verdicts):
        return
    if any(verdict is None for verdict in verdicts):
        ctx.add(
            "VER004",
            "Node",
            node.name,
            f"the node runs {os.id} (from {os.source}) but its version is unknown, so it was"
            " not compared with the release's OS list",
            f"let NFD set {os.id}'s VERSION_ID label on the node",
        )
        return
    for release, docs in _later_docs(ctx):
        if _os_supported(docs, os):
            ctx.add(
                "VER102",
                "Node",
                node.name,
                f"{os} is not in {release.version}'s documented OS list as released, but the"
                f" {release.line} line's newest documentation ({docs.date}) lists it",
                f"upgrade to the {release.line} line's latest patch release",
            )
            return
    newest = ctx.detection.candidates[-1]
    listed = _os_versions(newest, os.id)
    if listed is not None:
        detail = f"{os.id} versions it supports: {', '.join(sorted(listed, key=_version_sort))}"
    else:
        detail = f"it supports {', '.join(sorted(newest.operating_systems))}"
    supporting = [
        release.version
        for release in ctx.matrix.releases
        if os.version is not None and _os_supported(release, os)
    ]
    where = (
        f"; releases that list {os}: {describe_releases(ctx.matrix, supporting)}"
        if supporting
        else ""
    )
    severity: Severity = "error" if ctx.driver_in_container else "warning"
    driver_note = (
        "the driver container has no image for it"
        if ctx.driver_in_container
        else "the driver is not deployed by the operator, so only support is lost"
    )
    ctx.add(
        "VER103",
        "Node",
        node.name,
        f"{os} (from {os.source}) is not supported by operator release {ctx.release_text}"
        f" ({detail}): {driver_note}" + _approximate(ctx.detection.candidates),
        f"move the node to a supported OS version{where}",
        severity=severity,
    )


def _version_sort(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in version.split("."))
    except ValueError:
        return (0,)


def check_runtime(ctx: VersionContext, node: NodeVersions) -> None:
    """VER104/VER102/VER004 for the node's container runtime."""
    runtime = parse_runtime(node.runtime)
    if runtime is None:
        ctx.add(
            "VER004",
            "Node",
            node.name,
            "the container runtime is unknown (status.nodeInfo.containerRuntimeVersion is"
            f" {node.runtime!r})",
            "check the runtime against the release's range by hand",
        )
        return
    if runtime.name == "cri-o":
        ctx.add(
            "VER004",
            "Node",
            node.name,
            f"the node runs CRI-O {runtime.version}: NVIDIA publishes no CRI-O version range,"
            " only which OSes were validated, so the version was not checked",
            "compare with the release's platform-support page",
        )
        return
    if runtime.name != "containerd":
        ctx.add(
            "VER104",
            "Node",
            node.name,
            f"the node runs {runtime.name} {runtime.version}; operator release"
            f" {ctx.release_text} lists containerd and CRI-O only",
            "run containerd (or CRI-O) on GPU nodes",
        )
        return
    if runtime.minor is None:
        ctx.add(
            "VER004",
            "Node",
            node.name,
            f"the containerd version {runtime.version!r} cannot be read",
            "check the runtime against the release's range by hand",
        )
        return
    ranges = []
    for release in ctx.detection.candidates:
        if release.containerd is None:
            ctx.add(
                "VER004",
                "Node",
                node.name,
                f"operator release {release.version} publishes no containerd range",
                "compare with the release's platform-support page",
            )
            return
        if in_range(runtime.minor, release.containerd.min, release.containerd.max):
            return
        ranges.append(f"{release.containerd.min}–{release.containerd.max}")
    for release, docs in _later_docs(ctx):
        if docs.containerd and in_range(runtime.minor, docs.containerd.min, docs.containerd.max):
            ctx.add(
                "VER102",
                "Node",
                node.name,
                f"containerd {runtime.version} is not in {release.version}'s documented range"
                f" as released, but the {release.line} line's newest documentation"
                f" ({docs.date}) lists {docs.containerd.min}–{docs.containerd.max}",
                f"upgrade to the {release.line} line's latest patch release",
            )
            return
    ctx.add(
        "VER104",
        "Node",
        node.name,
        f"containerd {runtime.version} is outside operator release {ctx.release_text}'s"
        f" validated range {' / '.join(sorted(set(ranges)))}",
        "move containerd into the range (in its own maintenance window), or the operator to"
        " a release that validates this containerd",
    )


__all__ = ["check_kubernetes", "check_os", "check_runtime", "releases_supporting_kubernetes"]
