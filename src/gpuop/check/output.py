"""The report as text (grouped by node, coloured on a terminal) and as SARIF 2.1.0.

Every checker prints through here: `tool_name` heads the text and names the SARIF driver,
and a SARIF log lists the rules of the checker's family (`gpuop.check.families`).
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from collections.abc import Sequence
from typing import Any

import click

from gpuop import __version__
from gpuop.api.labels import IGNORE_ANNOTATION, INVENTORY_ANNOTATION, VGPU_CONFIG_LABEL
from gpuop.api.wording import listed
from gpuop.catalog.managers import GPU_OPERATOR
from gpuop.check.managers import DRA_DRIVER
from gpuop.check.model import Finding, NodeSummary, Report
from gpuop.check.rules import Rule, Severity, family, rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
SARIF_LEVELS: dict[Severity, str] = {"error": "error", "warning": "warning", "info": "note"}
_STYLES: dict[Severity, str] = {"error": "bold red", "warning": "yellow", "info": "cyan"}
# The words a style names: "bold", "dim", "underline" and the eight standard colours.
_EFFECTS = frozenset({"bold", "dim", "underline"})


# A width no terminal has: the text is not fitted (`-o wide`, a pipe).
_UNFITTED = 10_000
# Where an object's own name stood in a message or fix (see `_without_own_name`).
_PLACEHOLDER = "\x00"
_OWN_NAME = re.compile(re.escape(_PLACEHOLDER))


def _without_own_name(text: str, name: str) -> str:
    """`text` with the object's own name (a whole word) replaced by a placeholder."""
    if not name:
        return text
    return re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", _PLACEHOLDER, text)


def _group_key(finding: Finding) -> tuple[int, str, str, str]:
    if finding.node:
        return (0, "Node", "", finding.node)
    return (1, finding.kind, finding.namespace or "", finding.name)


def _node_title(name: str, summary: NodeSummary | None) -> str:
    if summary is None:
        return f"Node {name}"
    if not summary.gpu_node:
        return f"Node {name} (no GPU)"
    managers = summary.managers
    if managers and GPU_OPERATOR not in managers:
        parts = [f"managed by {' and '.join(managers)}"]
    else:
        dra = summary.workload is None and DRA_DRIVER in managers
        parts = [summary.workload or ("DRA stack" if dra else "?")]
    if summary.model:
        count = "?" if summary.gpus is None else str(summary.gpus)
        parts.append(f"{count}× {summary.model}{_SOURCES.get(summary.inventory_source or '', '')}")
    return f"Node {name} ({', '.join(parts)})"


def _managers_line(report: Report) -> str | None:
    """How many nodes each manager runs, when any is not the GPU Operator."""
    by_manager: dict[str, list[str]] = {}
    for node in report.nodes:
        for manager in node.managers:
            by_manager.setdefault(manager, []).append(node.name)
    if not by_manager or set(by_manager) == {GPU_OPERATOR}:
        return None
    shown = "; ".join(
        f"{manager} {len(names)} ({listed(names, 3)})"
        for manager, names in sorted(by_manager.items())
    )
    return f"GPUs managed by: {shown}"


# Where the GPUs in a node's title were learnt from.
_SOURCES = {
    "annotation": f" per {INVENTORY_ANNOTATION}",
    "gfd-labels": " per GFD",
    "advertised": " per its resources",
    "vgpu-config-label": f" per {VGPU_CONFIG_LABEL}",
    "nfd-device-label": " per NFD",
}


_SUPPRESSED_WORDS = {
    "below_severity": "below --severity",
    "ignored": "ignored (--ignore, .gpuop.yaml)",
    "annotation": f"ignored by {IGNORE_ANNOTATION} annotations",
}


class _Painter:
    """ANSI styling (standard colours, through click.style), or none."""

    def __init__(self, color: bool) -> None:
        self.color = color
        self._cache: dict[str, tuple[str, str]] = {}

    def __call__(self, text: str, style: str) -> str:
        if not self.color or not text:
            return text
        parts = self._cache.get(style)
        if parts is None:
            words = style.split()
            colours = [word for word in words if word not in _EFFECTS]
            styled = click.style(
                "\0",
                fg=colours[0] if colours else None,
                **{word: True for word in words if word in _EFFECTS},
            )
            start, _, end = styled.partition("\0")
            parts = self._cache[style] = (start, end)
        return parts[0] + text + parts[1]


def _wrap(text: str, width: int, indent: str) -> list[str]:
    # Wrapped as printed: a lone surrogate (a JSON escape in a name) prints as `\ud800`.
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        lines.extend(
            textwrap.wrap(
                paragraph,
                width=width,
                initial_indent=indent,
                subsequent_indent=indent,
                break_long_words=True,
                break_on_hyphens=False,
            )
            or [indent]
        )
    return lines


def render_text(
    report: Report,
    *,
    color: bool = False,
    width: int = 110,
    tool_name: str = "gpuop check",
    notes: Sequence[str] = (),
    all_nodes: bool = False,
) -> str:
    """Findings grouped by node (then by other object), the skipped checks and a summary.

    Plain text with a hanging indent; severity words and headings are coloured when
    `color` is set. `notes` are lines printed as they are under the heading; `all_nodes`
    adds a table of every node's managers and the first evidence of each.
    """
    paint = _Painter(color)
    width = max(width, 60)
    out: list[str] = []
    policy = report.policy.source if report.policy else "none usable"
    settings = ""
    if report.policy and report.policy.sandbox_enabled is not None:
        settings = f", sandbox workloads {'on' if report.policy.sandbox_enabled else 'off'}"
    if report.policy and report.policy.gpu_cluster is not None:
        settings += f", DRA stack per GPUCluster {report.policy.gpu_cluster}"
    summary = report.summary()
    checked = summary["nodes_checked"]
    out.append(
        paint(
            f"{tool_name}: {checked} node{'s' if checked != 1 else ''}"
            f" ({summary['gpu_nodes']} with GPUs), policy {policy}{settings}",
            "bold",
        )
    )
    out.extend(notes)
    if report.release is not None:
        out.extend(_wrap(f"operator release {report.release.describe()}", width, ""))
    managers = _managers_line(report)
    if managers is not None:
        out.extend(_wrap(managers, width, ""))
    groups: dict[tuple[int, str, str, str], list[Finding]] = {}
    for finding in report.findings:
        groups.setdefault(_group_key(finding), []).append(finding)
    nodes = {node.name: node for node in report.nodes}
    indent = " " * 17
    # Identical findings (same severity, code, wording and fix) on several objects print
    # once, under the first object, with a count and the others named.
    shown_as: dict[tuple[str, ...], list[str]] = {}
    entries: dict[tuple[int, str, str, str], list[tuple[tuple[str, ...], Finding, str]]] = {}
    for key in sorted(groups):
        _, kind, namespace, name = key
        short = f"{kind} {namespace + '/' if namespace else ''}{name}"
        for finding in groups[key]:
            message = finding.message
            if kind == "Node" and finding.kind != "Node":
                prefix = f"{finding.namespace}/" if finding.namespace else ""
                message = f"{finding.kind} {prefix}{finding.name}: {message}"
            # A finding that names its own object groups with the same one on other objects.
            identity: tuple[str, ...] = (
                finding.severity,
                finding.code,
                _without_own_name(message, name),
                _without_own_name(finding.hint, name),
            )
            places = shown_as.setdefault(identity, [])
            places.append(short)
            if len(places) == 1:
                entries.setdefault(key, []).append((identity, finding, message))
    for key in sorted(entries):
        _, kind, namespace, name = key
        if kind == "Node":
            title = _node_title(name, nodes.get(name))
        else:
            title = f"{kind} {namespace + '/' if namespace else ''}{name}"
        out.append("")
        out.append(paint(title, "bold underline"))
        for same, finding, message in entries[key]:
            lines = _wrap(message, width, indent)
            head = f"  {finding.severity:<8}{finding.code:<7}"
            lines[0] = (
                paint(f"  {finding.severity:<8}", _STYLES[finding.severity])
                + finding.code.ljust(7)
                + lines[0][len(head) :]
            )
            out.extend(lines)
            others = shown_as[same][1:]
            hint = finding.hint
            if others and kind == "Node":
                hint = _OWN_NAME.sub("the node", same[3])
            out.extend(paint(line, "dim") for line in _wrap("fix: " + hint, width, indent))
            if others:
                # Fitted text (a terminal) names three; unfitted (-o wide, a pipe), all.
                named = listed(others, 3 if width < _UNFITTED else len(others))
                out.extend(
                    paint(line, "dim")
                    for line in _wrap(f"×{len(others) + 1}: also on {named}", width, indent)
                )
    if all_nodes and report.nodes:
        out.append("")
        out.append(paint("Nodes:", "bold"))
        for node in sorted(report.nodes, key=lambda n: n.name):
            evidence = (node.management or {}).get("evidence") or []
            managers = ", ".join(node.managers) or "(no manager shown)"
            why = f": {evidence[0]['signal']}" if evidence else ""
            out.extend(_wrap(f"{node.name}  {managers}{why}", width, "    "))
    if report.skipped:
        out.append("")
        out.append(paint("Not checked:", "bold"))
        for skip in report.skipped:
            out.extend(_wrap(f"{skip.check}: {skip.reason}", width, "  "))
    counts = report.counts
    out.append("")
    if not report.findings:
        out.append(paint("No problems found.", "bold green"))
    out.append(
        paint(
            f"{counts['error']} error{'s' if counts['error'] != 1 else ''},"
            f" {counts['warning']} warning{'s' if counts['warning'] != 1 else ''},"
            f" {counts['info']} info",
            "bold red" if counts["error"] else "bold",
        )
    )
    if report.suppressed:
        parts = [
            f"{count} {_SUPPRESSED_WORDS.get(reason, reason)}"
            for reason, count in report.suppressed.items()
        ]
        total = sum(report.suppressed.values())
        out.extend(_wrap(f"{total} not shown: {', '.join(parts)}", width, ""))
    return "\n".join(out) + "\n"


def _fingerprint(finding: Finding) -> str:
    return hashlib.sha256(f"{finding.code}|{finding.subject}".encode()).hexdigest()[:32]


def _sarif_rule(found: Rule, tags: Sequence[str]) -> dict[str, Any]:
    return {
        "id": found.code,
        "name": found.name,
        "shortDescription": {"text": found.title},
        "fullDescription": {"text": found.meaning},
        "help": {
            "text": f"{found.fix}\n\nWhy it matters: {found.failure}",
            "markdown": f"{found.fix}\n\n**Why it matters:** {found.failure}",
        },
        "defaultConfiguration": {"level": SARIF_LEVELS[found.severity]},
        "properties": {"tags": list(tags)},
    }


def to_sarif(
    report: Report, *, prefix: str = "GPU", tool_name: str | None = None
) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one rule per code, one result per finding, located at `Kind/name`.

    The rules are the family's (`prefix`) and any other code a finding has; `tool_name`
    (default: the family's checker) names the driver.
    """
    checker = family(prefix)
    codes = sorted({found.code for found in checker.rules} | {f.code for f in report.findings})
    index = {code: position for position, code in enumerate(codes)}
    rules = [_sarif_rule(rule(code), checker.sarif_tags) for code in codes]
    results = []
    for finding in report.findings:
        location: dict[str, Any] = {
            "name": finding.name,
            "fullyQualifiedName": finding.subject,
            "kind": "resource",
        }
        results.append(
            {
                "ruleId": finding.code,
                "ruleIndex": index[finding.code],
                "level": SARIF_LEVELS[finding.severity],
                "message": {"text": f"{finding.message}. Fix: {finding.hint}"},
                "locations": [{"logicalLocations": [location]}],
                "partialFingerprints": {"gpuopFinding/v1": _fingerprint(finding)},
                "properties": {
                    "kind": finding.kind,
                    "name": finding.name,
                    **({"namespace": finding.namespace} if finding.namespace else {}),
                    **({"node": finding.node} if finding.node else {}),
                    "hint": finding.hint,
                },
            }
        )
    notifications = [
        {"level": "note", "message": {"text": f"{skip.check}: {skip.reason}"}}
        for skip in report.skipped
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": tool_name or checker.tool,
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "invocations": [
                    {"executionSuccessful": True, "toolExecutionNotifications": notifications}
                ],
                "results": results,
            }
        ],
    }


__all__ = ["SARIF_LEVELS", "SARIF_SCHEMA", "SARIF_VERSION", "render_text", "to_sarif"]
