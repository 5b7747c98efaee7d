"""`gpuop versions check`: the cluster against the version matrix.

Pure: it reads Kubernetes objects already loaded and returns a `VersionReport` built on the
checker's `Report`, so text, JSON and SARIF come out in `gpuop check`'s format. The release
in use comes from the ClusterPolicy's operand versions (`release.detect_release`) or
`--operator-release`; every range is the matrix's (`gpuop.catalog.versions`), never a rule
of its own. Facts the input does not give, or the matrix does not know, become "unknown"
findings (VER001, VER004) rather than guesses.

    report = check_versions(objects, today=date.today())
    report.findings, report.exit_code, report.to_dict()
"""

from __future__ import annotations

import calendar
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from gpuop import __version__
from gpuop.api.labels import (
    CUDA_RUNTIME_LABEL,
    DRIVER_VERSION_LABEL,
    GPU_COUNT_LABEL,
    GPU_PRODUCT_LABEL,
    LEGACY_DRIVER_LABELS,
    LEGACY_RUNTIME_LABELS,
    NFD_OS_ID,
    NFD_OS_VERSION_ID,
)
from gpuop.catalog import operand_table
from gpuop.catalog.versions import (
    DriverBranch,
    LineDocs,
    Release,
    VersionMatrix,
    version_matrix,
)
from gpuop.check.model import SCHEMA_VERSION, Finding, NodeSummary, PolicyInfo, Report, Skip
from gpuop.check.policy import choose_policy
from gpuop.check.rules import Severity
from gpuop.check.state import ClusterState, string_map
from gpuop.manifests.fields import mapping, text
from gpuop.planner import decide_workload, gpu_detection
from gpuop.policy import ResolvedPolicy, default_policy
from gpuop.versions.parse import (
    Key,
    OsInfo,
    VersionError,
    cuda_minor,
    driver_branch,
    driver_key,
    in_range,
    kubernetes_minor,
    minor_text,
    node_os,
    os_listed,
    parse_runtime,
)
from gpuop.versions.release import Detection, describe_releases, detect_release
from gpuop.versions.rules import VERSION_RULES, VersionFinding

_SHAPE_LABELS = (
    NFD_OS_ID,
    NFD_OS_VERSION_ID,
    DRIVER_VERSION_LABEL,
    CUDA_RUNTIME_LABEL,
    *LEGACY_DRIVER_LABELS,
    *LEGACY_RUNTIME_LABELS,
)
NEAR_END_OF_LIFE_DAYS = 90
CLUSTER_KIND = "Cluster"
CONTROL_PLANE = "control-plane"
# Checker findings about the input that matter here too (the policy used, unusable items).
_KEPT_POLICY_CODES = frozenset({"GPU002", "GPU003", "GPU005"})
_BRANCH_TYPES = {
    "long_term_support": "long-term support",
    "production": "production",
    "new_feature": "new feature",
}


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


def _nodes(objects: Iterable[Any]) -> list[NodeVersions]:
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


@dataclass(frozen=True)
class VersionReport:
    """The checker's report plus what the version checks decided about the release."""

    report: Report
    detection: Detection
    matrix: VersionMatrix
    today: date
    kubernetes: str | None = None
    kubernetes_source: str | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.report.findings

    @property
    def exit_code(self) -> int:
        return self.report.exit_code

    def codes(self) -> set[tuple[str, str]]:
        return self.report.codes()

    def versions_summary(self) -> dict[str, Any]:
        return {
            "operator_release": self.detection.describe(self.matrix),
            **self.detection.to_dict(self.matrix),
            "kubernetes": self.kubernetes,
            "kubernetes_source": self.kubernetes_source,
            "matrix_as_of": self.matrix.as_of,
            "today": self.today.isoformat(),
        }

    def to_dict(self) -> dict[str, Any]:
        data = self.report.to_dict()
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "gpuop versions check", "version": __version__},
            "policy": data["policy"],
            "versions": self.versions_summary(),
            "summary": data["summary"],
            "findings": data["findings"],
        }


@dataclass
class _Context:
    matrix: VersionMatrix
    today: date
    detection: Detection
    policy: ResolvedPolicy | None
    policy_name: str
    driver_in_container: bool
    findings: list[VersionFinding] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)

    def add(
        self,
        code: str,
        kind: str,
        name: str,
        message: str,
        hint: str,
        *,
        severity: Severity | None = None,
        node: str | None = None,
    ) -> None:
        self.findings.append(
            VersionFinding(
                code,
                severity or VERSION_RULES[code].severity,
                kind,
                name,
                message,
                hint,
                node=node if node is not None else (name if kind == "Node" else None),
            )
        )

    @property
    def release_text(self) -> str:
        return self.detection.describe(self.matrix)


# --- Kubernetes, OS, runtime -------------------------------------------------------------


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


def _later_docs(ctx: _Context) -> Iterable[tuple[Release, LineDocs]]:
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
    ctx: _Context,
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


def check_os(ctx: _Context, node: NodeVersions, os: OsInfo | None) -> None:
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


def check_runtime(ctx: _Context, node: NodeVersions) -> None:
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


# --- Drivers and CUDA ----------------------------------------------------------------------


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


def _documented(ctx: _Context, driver: str) -> tuple[str, str] | None:
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


def _driver_checks(ctx: _Context, kind: str, name: str, driver: str) -> None:
    for code, message, hint in branch_findings(ctx.matrix, ctx.today, driver):
        ctx.add(code, kind, name, message, hint)
    if ctx.detection.known:
        documented = _documented(ctx, driver)
        if documented is not None:
            ctx.add("VER205", kind, name, *documented)


def check_node_driver(ctx: _Context, node: NodeVersions) -> None:
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
    _driver_checks(ctx, "Node", node.name, driver)
    runtime = node.cuda_runtime
    if runtime:
        for code, message, hint in cuda_findings(ctx.matrix, driver, runtime):
            ctx.add(code, "Node", node.name, message, hint)


def check_drift(ctx: _Context, nodes: Sequence[NodeVersions]) -> None:
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

        def rank(version: str, versions: dict[str, list[str]] = versions) -> tuple[Any, ...]:
            try:
                key: tuple[int, ...] = driver_key(version)
            except VersionError:
                key = ()
            return (len(versions[version]), key, version)

        reference = max(versions, key=rank)
        count = len(versions[reference])
        summary = ", ".join(
            f"{version} on {len(names)}" for version, names in sorted(versions.items())
        )
        for version, names in sorted(versions.items()):
            if version == reference:
                continue
            for name in sorted(names):
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


# --- The ClusterPolicy and the release ------------------------------------------------------


def _mixed_text(ctx: _Context, name: str) -> tuple[str, str]:
    """(message, hint) for VER002: the pinned versions grouped by the releases shipping them."""
    detection = ctx.detection
    order = {release: index for index, release in enumerate(ctx.matrix.release_names)}
    groups: dict[tuple[str, ...], list[str]] = {}
    release = detection.single if detection.source == "option" else None
    pinned = detection.mismatched() if release is not None else detection.pinned
    for item in pinned:
        groups.setdefault(detection.shipping(item), []).append(f"{item.label} ({item.field})")
    parts = [
        f"from {describe_releases(ctx.matrix, shipping)}: {', '.join(items)}"
        for shipping, items in sorted(
            groups.items(), key=lambda entry: -max(order.get(n, -1) for n in entry[0])
        )
    ]
    if release is not None:
        message = (
            f"ClusterPolicy {name} pins operand versions that operator release"
            f" {release.version} does not ship ({'; '.join(parts)})"
        )
    else:
        message = (
            f"ClusterPolicy {name} mixes operator releases, no release ships these versions"
            f" together ({'; '.join(parts)}); the checks use {ctx.release_text}, the release"
            " most of them come from"
        )
    target = detection.candidates[-1].version if detection.candidates else "X.Y.Z"
    hint = (
        f"set every operand to one release's versions (`gpuop upgrade preview POLICY.yaml"
        f" {target}` lists them), or remove the pinned versions so the operator's defaults"
        " apply"
    )
    return message, hint


def _release_findings(ctx: _Context, unknown_reason: str | None) -> None:
    detection = ctx.detection
    name = ctx.policy_name
    if not detection.known:
        ctx.add(
            "VER001",
            "ClusterPolicy",
            name,
            unknown_reason or "the operator release could not be determined",
            "pass --operator-release X.Y.Z, or add the ClusterPolicy with its operand versions",
        )
        ctx.skips.append(
            Skip(
                "kubernetes, os, container runtime",
                "the operator release is unknown: there is no range to compare with",
            )
        )
    if detection.source == "default" and detection.single is not None:
        ctx.add(
            "VER006",
            "ClusterPolicy",
            name,
            f"ClusterPolicy {name} pins no operand version: gpuop's operator deploys its"
            f" {detection.single.version} defaults, and the checks assume"
            f" {detection.single.version}",
            "pass --operator-release X.Y.Z if another operator release reconciles the policy",
        )
    for pinned in detection.unknown:
        what = "a digest" if pinned.version.startswith("sha256:") else "not the default of"
        ctx.add(
            "VER003",
            "ClusterPolicy",
            name,
            f"{pinned.label} ({pinned.field}) is {what}"
            f"{' of' if what == 'a digest' else ''} any release in gpuop's matrix"
            f" ({describe_releases(ctx.matrix, ctx.matrix.release_names)})",
            "check the operand's release notes against the operator release in use",
        )
    if detection.mixed:
        ctx.add("VER002", "ClusterPolicy", name, *_mixed_text(ctx, name))
    statuses = {release.status for release in detection.candidates}
    if detection.candidates and "supported" not in statuses:
        worst = "deprecated" if "deprecated" in statuses else "end_of_support"
        newest = ctx.matrix.newest
        ctx.add(
            "VER005",
            "ClusterPolicy",
            name,
            f"operator release {ctx.release_text} is"
            f" {'deprecated' if worst == 'deprecated' else 'past end of support'} (NVIDIA's"
            f" lifecycle as of {ctx.matrix.as_of}: the newest line is supported, the previous"
            " one deprecated, older ones out of support)",
            f"upgrade one release line at a time towards {newest.version}, each in its own"
            " maintenance window (`gpuop upgrade preview` shows what each step moves)",
            severity="info" if worst == "deprecated" else "warning",
        )
    driver = detection.driver
    if driver is not None:
        try:
            driver_key(driver.version)
        except VersionError as exc:
            ctx.add(
                "VER004",
                "ClusterPolicy",
                name,
                f"{driver.field}: {exc}; the driver was not checked",
                "set spec.driver.version to a driver version such as 595.91.07",
            )
        else:
            _driver_checks(ctx, "ClusterPolicy", name, driver.version)


def _check_node(ctx: _Context, node: NodeVersions, cluster_version: bool) -> None:
    """Kubernetes, OS, runtime (against the release) and driver/CUDA of one GPU node."""
    os = node_os(node.labels, node.os_image)
    if ctx.detection.known:
        if not node.has_node_info and not cluster_version:
            ctx.add(
                "VER004",
                "Node",
                node.name,
                "the node has no status.nodeInfo: its Kubernetes version, OS image and"
                " container runtime are unknown",
                "dump nodes with their status (`kubectl get nodes -o json`)",
            )
        else:
            if node.kubelet:
                check_kubernetes(ctx, "Node", node.name, node.kubelet, "kubelet", os)
            if node.has_node_info or os is not None:
                check_os(ctx, node, os)
            if node.has_node_info:
                check_runtime(ctx, node)
    check_node_driver(ctx, node)


def _summary(node: NodeVersions, policy: ResolvedPolicy) -> NodeSummary:
    gpu = node.gpu
    workload = decide_workload(policy, node.labels, gpu).config
    count_text = node.labels.get(GPU_COUNT_LABEL, "")
    count = int(count_text) if count_text.isdigit() and len(count_text) < 4 else None
    return NodeSummary(node.name, gpu, workload, count, node.product)


def check_versions(
    objects: Iterable[Any],
    *,
    today: date,
    policy: ResolvedPolicy | None = None,
    policy_source: str = "--policy",
    operator_release: str | None = None,
    kubernetes_version: str | None = None,
    kubernetes_source: str = "--kubernetes-version",
    matrix: VersionMatrix | None = None,
) -> VersionReport:
    """Check nodes and the ClusterPolicy in `objects` against the version matrix.

    `operator_release` and `kubernetes_version` must already be well-formed (the CLI checks
    them); an operator release missing from the matrix is reported (VER001), not raised.
    """
    table = matrix or version_matrix()
    items = list(objects)
    state = ClusterState.from_objects(items)
    choice = choose_policy(state.cluster_policies, policy, policy_source)
    # A ClusterPolicy being deleted is none: the operator reconciles nothing then.
    has_policy = policy is not None or not choice.assumed
    used = choice.policy if has_policy else None
    detection = detect_release(table, used, operator_release)
    planning_policy = choice.policy or default_policy()
    driver_operand = operand_table().operand("driver")
    policy_name = (used.name or "(unnamed)") if used is not None else "(none)"
    ctx = _Context(
        matrix=table,
        today=today,
        detection=detection,
        policy=used,
        policy_name=policy_name,
        driver_in_container=planning_policy.operand_enabled(driver_operand),
    )
    ctx.skips.extend(choice.skips)
    findings: list[Any] = [f for f in choice.findings if f.code in _KEPT_POLICY_CODES]
    for item in state.ignored:
        findings.append(
            VersionFinding(
                "GPU004",
                "warning",
                item.kind or "Object",
                item.name or f"item {item.position}",
                item.reason,
                "regenerate the dump with `kubectl get ... -o json` or `gpuop collect`",
            )
        )
    if operator_release is not None and not detection.known:
        reason = (
            f"operator release {operator_release} is not in gpuop's version matrix"
            f" ({describe_releases(table, table.release_names)}, as of {table.as_of})"
        )
    elif not has_policy:
        reason = (
            "no live ClusterPolicy in the input, so its operand versions cannot name the release"
            if state.cluster_policies
            else "no ClusterPolicy in the input, so its operand versions cannot name the release"
        )
    elif detection.unknown and not detection.pinned:
        reason = (
            "no operand version pinned in the ClusterPolicy is the default of a release in"
            " gpuop's matrix"
        )
    else:
        reason = None
    _release_findings(ctx, reason)

    if kubernetes_version is not None and detection.known:
        check_kubernetes(
            ctx, CLUSTER_KIND, CONTROL_PLANE, kubernetes_version, kubernetes_source, None
        )
    nodes = _nodes(items)
    gpu_nodes = [node for node in nodes if node.gpu]
    if not nodes:
        ctx.skips.append(Skip("nodes", "no Nodes in the input"))
    elif not gpu_nodes:
        ctx.skips.append(Skip("nodes", "no GPU nodes (no NFD label marks an NVIDIA GPU)"))
    # Nodes of one shape get the same findings: check each shape once (large clusters are
    # made of a few node images).
    shapes: dict[tuple[Any, ...], list[VersionFinding]] = {}
    for node in gpu_nodes:
        seen = shapes.get(node.shape)
        if seen is None:
            before = len(ctx.findings)
            _check_node(ctx, node, kubernetes_version is not None)
            shapes[node.shape] = ctx.findings[before:]
            continue
        for finding in seen:
            ctx.findings.append(dataclasses.replace(finding, name=node.name, node=node.name))
    check_drift(ctx, gpu_nodes)

    findings.extend(ctx.findings)
    unique: dict[tuple[str, ...], Any] = {}
    for finding in findings:
        unique.setdefault((finding.code, finding.subject, finding.message), finding)
    ordered = tuple(sorted(unique.values(), key=lambda f: f.sort_key()))
    info = choice.info if has_policy else PolicyInfo("none", None, None, None)
    summaries = tuple(_summary(node, planning_policy) for node in nodes)
    report = Report(ordered, tuple(ctx.skips), info, dict(state.counts), summaries)
    return VersionReport(
        report,
        detection,
        table,
        today,
        kubernetes_version,
        kubernetes_source if kubernetes_version is not None else None,
    )


__all__ = [
    "CLUSTER_KIND",
    "CONTROL_PLANE",
    "NodeVersions",
    "VersionReport",
    "branch_findings",
    "branch_text",
    "check_versions",
    "cuda_findings",
    "end_of_life_day",
    "read_node",
    "releases_supporting_kubernetes",
    "supported_branches",
]
