"""`gpuop upgrade preview OLD NEW`: what a change of ClusterPolicy or operator release moves.

Each side is an operator release from the matrix or a ClusterPolicy (its pinned operand
versions; unset ones follow the release it pins, else gpuop's defaults). The preview lists
every operand's version change; per node, which operand pods restart (the operands
`gpuop.planner.plan` places there under each side's policy) and whether GPU workloads are
disrupted; and it warns when one change moves more than one of driver, toolkit, operator
release and Kubernetes: if something breaks after such a window, nobody can tell which
move broke it. The sides are `sides.Side`; the text is `preview_text.render_preview_text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from gpuop import __version__
from gpuop.catalog import Restart, operand_table
from gpuop.catalog.versions import Release, VersionMatrix, version_matrix
from gpuop.check.model import SCHEMA_VERSION, Finding
from gpuop.check.release.pinned import describe_releases
from gpuop.check.rules import rule
from gpuop.check.state import planned_labels, string_map
from gpuop.check.versions.driver import branch_findings, branch_text
from gpuop.check.versions.parse import (
    OsInfo,
    VersionError,
    driver_branch,
    in_range,
    kubernetes_minor,
    minor_text,
    node_os,
    os_listed,
)
from gpuop.check.versions.platform import releases_supporting_kubernetes
from gpuop.manifests.fields import mapping, text
from gpuop.planner import NodeFacts, NodePlan, gpu_detection, plan
from gpuop.policy import ResolvedPolicy
from gpuop.versions.sides import (
    IMPACT_ORDER,
    Impact,
    Side,
    side_from_policy,
    side_from_release,
)

UPGRADE_KIND = "Upgrade"


@dataclass(frozen=True)
class OperandChange:
    operand: str
    old: str | None
    new: str | None
    old_enabled: bool
    new_enabled: bool

    @property
    def changed(self) -> bool:
        return self.old_enabled != self.new_enabled or (self.new_enabled and self.old != self.new)

    @property
    def restart(self) -> Restart:
        return operand_table().operand(self.operand).restart

    @property
    def impact(self) -> Impact:
        return self.restart.impact

    @property
    def effect(self) -> str:
        return self.restart.effect

    def to_dict(self) -> dict[str, Any]:
        return {
            "operand": self.operand,
            "old": self.old if self.old_enabled else None,
            "new": self.new if self.new_enabled else None,
            "deployed": {"old": self.old_enabled, "new": self.new_enabled},
            "changed": self.changed,
            "impact": self.impact,
            "effect": self.effect,
        }


@dataclass(frozen=True)
class Move:
    """One of driver, toolkit, operator release, Kubernetes moving in this change."""

    what: str
    old: str
    new: str

    def __str__(self) -> str:
        article = "" if self.what == "Kubernetes" else "the "
        return f"{article}{self.what} ({self.old} → {self.new})"

    def to_dict(self) -> dict[str, str]:
        return {"what": self.what, "old": self.old, "new": self.new}


@dataclass(frozen=True)
class NodeImpact:
    node: str
    gpu_node: bool
    workload: str | None
    restarts: tuple[str, ...]
    starts: tuple[str, ...]
    stops: tuple[str, ...]
    disruption: Impact

    @property
    def shape(self) -> tuple[Any, ...]:
        return (
            self.gpu_node,
            self.workload,
            self.restarts,
            self.starts,
            self.stops,
            self.disruption,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "gpu_node": self.gpu_node,
            "workload": self.workload,
            "restarts": list(self.restarts),
            "starts": list(self.starts),
            "stops": list(self.stops),
            "disruption": self.disruption,
        }


@dataclass(frozen=True)
class UpgradePreview:
    old: Side
    new: Side
    operands: tuple[OperandChange, ...]
    moves: tuple[Move, ...]
    nodes: tuple[NodeImpact, ...] | None
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]
    matrix: VersionMatrix
    today: date
    kubernetes: tuple[str, str] | None = None

    @property
    def changed(self) -> tuple[OperandChange, ...]:
        return tuple(change for change in self.operands if change.changed)

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity == "error" for f in self.findings) else 0

    def summary(self) -> dict[str, Any]:
        counts: dict[str, int] = dict.fromkeys(IMPACT_ORDER, 0)
        for node in self.nodes or ():
            if node.gpu_node:
                counts[node.disruption] += 1
        return {
            "operands_changed": len(self.changed),
            "moves": len(self.moves),
            "nodes": None if self.nodes is None else len(self.nodes),
            "gpu_nodes": None
            if self.nodes is None
            else sum(1 for node in self.nodes if node.gpu_node),
            "gpu_nodes_by_disruption": None if self.nodes is None else counts,
            "warnings": sum(1 for f in self.findings if f.severity == "warning"),
            "errors": sum(1 for f in self.findings if f.severity == "error"),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "gpuop upgrade preview", "version": __version__},
            "old": self.old.to_dict(self.matrix),
            "new": self.new.to_dict(self.matrix),
            "kubernetes": (
                {"old": self.kubernetes[0], "new": self.kubernetes[1]} if self.kubernetes else None
            ),
            "matrix_as_of": self.matrix.as_of,
            "today": self.today.isoformat(),
            "operands": [change.to_dict() for change in self.operands],
            "moves": [move.to_dict() for move in self.moves],
            "nodes": None if self.nodes is None else [node.to_dict() for node in self.nodes],
            "notes": list(self.notes),
            "findings": [finding.to_dict() for finding in self.findings],
            "summary": self.summary(),
        }


def _subject(old: Side, new: Side) -> str:
    return f"{old.label} → {new.label}"


def _finding(code: str, old: Side, new: Side, message: str, hint: str) -> Finding:
    return Finding(code, rule(code).severity, UPGRADE_KIND, _subject(old, new), message, hint)


def _operand_changes(old: Side, new: Side) -> tuple[OperandChange, ...]:
    changes = []
    for operand in operand_table().operands:
        old_on, new_on = old.enabled(operand), new.enabled(operand)
        if not old_on and not new_on:
            continue
        changes.append(
            OperandChange(
                operand.name,
                old.versions.get(operand.name),
                new.versions.get(operand.name),
                old_on,
                new_on,
            )
        )
    return tuple(changes)


def _moves(
    old: Side,
    new: Side,
    changes: Sequence[OperandChange],
    kubernetes: tuple[str, str] | None,
    matrix: VersionMatrix,
) -> tuple[Move, ...]:
    moves: list[Move] = []
    old_names, new_names = set(old.detection.names), set(new.detection.names)
    if old_names and new_names and not old_names & new_names:
        moves.append(
            Move("operator release", old.detection.describe(matrix), new.detection.describe(matrix))
        )
    by_name = {change.operand: change for change in changes}
    for operand, what in (("driver", "driver"), ("container-toolkit", "container toolkit")):
        change = by_name.get(operand)
        if change is not None and change.changed and change.old_enabled and change.new_enabled:
            moves.append(Move(what, change.old or "unset", change.new or "unset"))
    if kubernetes is not None and kubernetes[0].lstrip("v") != kubernetes[1].lstrip("v"):
        moves.append(Move("Kubernetes", kubernetes[0], kubernetes[1]))
    return tuple(moves)


def _join(parts: Sequence[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _supports(releases: Sequence[Release], version: str) -> bool:
    try:
        minor = kubernetes_minor(version)
    except VersionError:
        return False
    return any(in_range(minor, r.kubernetes.min, r.kubernetes.max) for r in releases)


def _split_hint(
    old: Side,
    new: Side,
    moves: Sequence[Move],
    kubernetes: tuple[str, str] | None,
    matrix: VersionMatrix,
) -> str:
    what = {move.what: move for move in moves}
    steps: list[str] = []
    pin_block = "ClusterPolicy" if new.kind == "policy" else "new release's ClusterPolicy"
    if "operator release" in what:
        pins = []
        if "driver" in what:
            pins.append(f"spec.driver.version: {what['driver'].old}")
        if "container toolkit" in what:
            pins.append(f"spec.toolkit.version: {what['container toolkit'].old}")
        if pins:
            steps.append(
                f"move the operator alone by pinning {' and '.join(pins)} in the {pin_block}"
                " (Helm: --set driver.version=…, --set toolkit.version=…), then unpin each in"
                " a window of its own"
            )
    elif "driver" in what and "container toolkit" in what:
        steps.append("change the driver and the toolkit in separate windows")
    if "Kubernetes" in what and kubernetes is not None:
        old_releases, new_releases = old.detection.candidates, new.detection.candidates
        if old_releases and _supports(old_releases, kubernetes[1]):
            order = (
                f"Kubernetes {kubernetes[1]} is in {old.detection.describe(matrix)}'s"
                " range, so Kubernetes can move first"
            )
        elif new_releases and _supports(new_releases, kubernetes[0]):
            order = (
                f"Kubernetes {kubernetes[0]} is in {new.detection.describe(matrix)}'s"
                " range, so the operator can move first"
            )
        else:
            order = "no order keeps both in range: go through an intermediate release"
        steps.append(f"move Kubernetes in its own window ({order})")
    steps.append("check the cluster between windows (`gpuop versions check`, `gpuop check`)")
    return "; ".join(steps)


def _kubernetes_findings(
    old: Side,
    new: Side,
    kubernetes: tuple[str, str] | None,
    node_facts: Sequence[tuple[str, OsInfo | None, str]],
    matrix: VersionMatrix,
) -> list[Finding]:
    """VER403: the Kubernetes the nodes will run, against the new release's ranges."""
    releases = new.detection.candidates
    if not releases:
        return []
    groups: dict[tuple[str, str], list[str]] = {}
    details: dict[tuple[str, str], str] = {}
    targets: list[tuple[str, OsInfo | None, str]] = []
    if kubernetes is not None:
        if node_facts:
            targets = [(name, os, kubernetes[1]) for name, os, _ in node_facts]
        else:
            targets = [("", None, kubernetes[1])]
    else:
        targets = [(name, os, kubelet) for name, os, kubelet in node_facts if kubelet]
    for name, os, version in targets:
        if os is not None and os.id == "rhcos":
            continue
        try:
            minor = kubernetes_minor(version)
        except VersionError:
            continue
        ranges = []
        supported = False
        for release in releases:
            low, high = release.kubernetes.min, release.kubernetes.max
            where = ""
            if os is not None and os.version is not None:
                for row in release.kubernetes.by_os:
                    if row.os == os.id and os_listed(os.version, row.versions):
                        low, high, where = row.min, row.max, f" on {os}"
                        break
            if in_range(minor, low, high):
                supported = True
                break
            ranges.append(f"{low}–{high}{where}")
        if supported:
            continue
        key = (minor_text(minor), "; ".join(ranges))
        groups.setdefault(key, []).append(name)
        supporting = releases_supporting_kubernetes(matrix, minor, os)
        details[key] = describe_releases(matrix, supporting) if supporting else "none"
    findings = []
    for (minor_shown, ranges_text), names in sorted(groups.items()):
        named = [n for n in names if n]
        who = (
            f"{len(named)} node{'s' if len(named) != 1 else ''} ({', '.join(sorted(named))})"
            if named
            else "the cluster"
        )
        findings.append(
            _finding(
                "VER403",
                old,
                new,
                f"after the change {who} run Kubernetes {minor_shown}, outside operator"
                f" release {new.detection.describe(matrix)}'s range {ranges_text}",
                f"releases that support Kubernetes {minor_shown} there:"
                f" {details[(minor_shown, ranges_text)]}; or move Kubernetes first, in its"
                " own window",
            )
        )
    return findings


def _line_findings(old: Side, new: Side, matrix: VersionMatrix) -> list[Finding]:
    """VER402: an upgrade that crosses more than one release line."""
    if not old.detection.candidates or not new.detection.candidates:
        return []
    lines = [line.line for line in matrix.lines]
    old_line = old.detection.candidates[-1].line
    new_line = new.detection.candidates[-1].line
    if old_line not in lines or new_line not in lines:
        return []
    step = lines.index(new_line) - lines.index(old_line)
    if step <= 1:
        return []
    between = lines[lines.index(old_line) + 1 : lines.index(new_line)]
    path = [
        (line.releases[-1] if line.releases else line.line)
        for line in matrix.lines
        if line.line in between
    ]
    return [
        _finding(
            "VER402",
            old,
            new,
            f"the upgrade goes from the {old_line} line to the {new_line} line, skipping"
            f" {', '.join(between)}: NVIDIA supports upgrades {matrix.upgrade_rule}",
            f"upgrade through {' → '.join(path)} first, one line per maintenance window",
        )
    ]


def _branch_note(driver: str | None, matrix: VersionMatrix) -> str:
    if not driver:
        return "unset"
    try:
        number = driver_branch(driver)
    except VersionError:
        return f"{driver} (unreadable)"
    branch = matrix.branch(number)
    if branch is None:
        return f"R{number} (not in gpuop's lifecycle data)"
    return branch_text(branch)


def _node_records(nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    records = []
    seen: set[str] = set()
    for node in nodes:
        if not isinstance(node, Mapping) or node.get("kind") != "Node":
            continue
        name = text(node, "metadata", "name")
        if not name or name in seen:
            continue
        seen.add(name)
        labels = string_map(mapping(node, "metadata").get("labels"))
        info = mapping(node, "status", "nodeInfo")
        records.append(
            {
                "name": name,
                "labels": labels,
                "os": node_os(labels, text(info, "osImage")),
                "kubelet": text(info, "kubeletVersion"),
            }
        )
    return records


def _plan_for(
    policy: ResolvedPolicy, labels: Mapping[str, str], cache: dict[Any, NodePlan]
) -> NodePlan:
    planned = planned_labels(labels)
    key = (id(policy), frozenset(planned.items()))
    found = cache.get(key)
    if found is None:
        found = plan(policy, NodeFacts("node", planned))
        cache[key] = found
    return found


def _node_impacts(
    old: Side, new: Side, changes: Sequence[OperandChange], records: Sequence[Mapping[str, Any]]
) -> tuple[NodeImpact, ...]:
    changed = {change.operand for change in changes if change.changed}
    cache: dict[Any, NodePlan] = {}
    impacts = []
    for record in records:
        labels = record["labels"]
        before = _plan_for(old.policy, labels, cache)
        after = _plan_for(new.policy, labels, cache)
        ran = {op.name for op in before.running_operands()}
        runs = {op.name for op in after.running_operands()}
        order = [operand.name for operand in operand_table().operands]
        restarts = tuple(name for name in order if name in runs & ran and name in changed)
        starts = tuple(name for name in order if name in runs - ran)
        stops = tuple(name for name in order if name in ran - runs)
        disruption: Impact = "none"
        for name in (*restarts, *starts, *stops):
            impact = operand_table().operand(name).restart.impact
            if IMPACT_ORDER[impact] > IMPACT_ORDER[disruption]:
                disruption = impact
        impacts.append(
            NodeImpact(
                record["name"],
                after.gpu_node,
                after.workload.config,
                restarts,
                starts,
                stops,
                disruption,
            )
        )
    return tuple(impacts)


def preview_upgrade(
    old: Side,
    new: Side,
    nodes: Sequence[Mapping[str, Any]] | None = None,
    *,
    today: date,
    kubernetes: tuple[str, str] | None = None,
    matrix: VersionMatrix | None = None,
) -> UpgradePreview:
    """What moving from `old` to `new` changes; `nodes` (Node objects) for the per-node part.

    `kubernetes` is (from, to), already well-formed (the CLI checks them).
    """
    table = matrix or version_matrix()
    changes = _operand_changes(old, new)
    moves = _moves(old, new, changes, kubernetes, table)
    findings: list[Finding] = []
    notes: list[str] = []
    if len(moves) >= 2:
        findings.append(
            _finding(
                "VER401",
                old,
                new,
                f"this change moves {_join([str(move) for move in moves])} in one maintenance"
                " window: if a node breaks afterwards, you cannot tell which move broke it",
                _split_hint(old, new, moves, kubernetes, table),
            )
        )
    findings.extend(_line_findings(old, new, table))
    records = _node_records(nodes) if nodes is not None else []
    gpu_records = [r for r in records if gpu_detection(r["labels"]) is not None]
    findings.extend(
        _kubernetes_findings(
            old,
            new,
            kubernetes,
            [(r["name"], r["os"], r["kubelet"]) for r in gpu_records],
            table,
        )
    )
    by_name = {change.operand: change for change in changes}
    driver = by_name.get("driver")
    if driver is not None and driver.changed and driver.new_enabled and driver.new:
        old_branch = _branch_note(driver.old if driver.old_enabled else None, table)
        new_branch = _branch_note(driver.new, table)
        if old_branch != new_branch:
            notes.append(f"driver branch: {old_branch} → {new_branch}")
        for code, message, hint in branch_findings(table, today, driver.new):
            if code in ("VER201", "VER202"):
                findings.append(_finding(code, old, new, f"new {message}", hint))
    if not old.detection.known or not new.detection.known:
        unknown = [side.label for side in (old, new) if not side.detection.known]
        notes.append(
            f"operator release unknown for {', '.join(unknown)}: release moves and ranges"
            " were not checked for it"
        )
    if new.detection.mixed:
        parts = [
            f"{pinned.label} ships with {describe_releases(table, new.detection.shipping(pinned))}"
            for pinned in new.detection.pinned
        ]
        findings.append(
            _finding(
                "VER002",
                old,
                new,
                f"the new ClusterPolicy {new.label} mixes operator releases: {'; '.join(parts)}",
                "set every operand to one release's versions, or remove the pinned versions",
            )
        )
    impacts = _node_impacts(old, new, changes, records) if nodes is not None else None
    return UpgradePreview(
        old,
        new,
        changes,
        moves,
        impacts,
        tuple(findings),
        tuple(notes),
        table,
        today,
        kubernetes,
    )


__all__ = [
    "IMPACT_ORDER",
    "Impact",
    "Move",
    "NodeImpact",
    "OperandChange",
    "Side",
    "UpgradePreview",
    "preview_upgrade",
    "side_from_policy",
    "side_from_release",
]
