"""The report as text (grouped by node, coloured on a terminal) and as SARIF 2.1.0."""

from __future__ import annotations

import hashlib
import io
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpuop import __version__
from gpuop.check.model import Finding, NodeSummary, Report
from gpuop.check.rules import RULES, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
SARIF_LEVELS: dict[Severity, str] = {"error": "error", "warning": "warning", "info": "note"}
_STYLES: dict[Severity, str] = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _group_key(finding: Finding) -> tuple[int, str, str, str]:
    if finding.node:
        return (0, "Node", "", finding.node)
    return (1, finding.kind, finding.namespace or "", finding.name)


def _node_title(name: str, summary: NodeSummary | None) -> str:
    if summary is None:
        return f"Node {name}"
    if not summary.gpu_node:
        return f"Node {name} (no GPU)"
    parts = [summary.workload or "?"]
    if summary.model:
        count = "?" if summary.gpus is None else str(summary.gpus)
        parts.append(f"{count}× {summary.model}")
    return f"Node {name} ({', '.join(parts)})"


def render_text(report: Report, *, color: bool = False, width: int = 110) -> str:
    """A table per node (then per other object), the skipped checks and a summary line."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        no_color=not color,
        color_system="standard" if color else None,
        width=width,
        highlight=False,
        emoji=False,
    )
    policy = report.policy.source if report.policy else "none usable"
    sandbox = ""
    if report.policy and report.policy.sandbox_enabled is not None:
        sandbox = f", sandbox workloads {'on' if report.policy.sandbox_enabled else 'off'}"
    summary = report.summary()
    console.print(
        Text(
            f"gpuop check: {summary['nodes_checked']} node{'s' if summary['nodes_checked'] != 1 else ''}"
            f" ({summary['gpu_nodes']} with GPUs),"
            f" policy {policy}{sandbox}",
            style="bold",
        )
    )
    groups: dict[tuple[int, str, str, str], list[Finding]] = {}
    for finding in report.findings:
        groups.setdefault(_group_key(finding), []).append(finding)
    nodes = {node.name: node for node in report.nodes}
    for key in sorted(groups):
        _, kind, namespace, name = key
        if kind == "Node":
            title = _node_title(name, nodes.get(name))
        else:
            title = f"{kind} {namespace + '/' if namespace else ''}{name}"
        console.print()
        console.print(Text(title, style="bold"))
        table = Table(box=box.SIMPLE, show_header=False, pad_edge=False, expand=False)
        table.add_column("severity", no_wrap=True)
        table.add_column("code", no_wrap=True)
        table.add_column("finding", overflow="fold")
        for finding in groups[key]:
            body = Text()
            if kind == "Node" and finding.kind != "Node":
                prefix = f"{finding.namespace}/" if finding.namespace else ""
                body.append(f"{finding.kind} {prefix}{finding.name}: ")
            body.append(finding.message)
            body.append("\nfix: " + finding.hint, style="dim")
            table.add_row(
                Text(finding.severity, style=_STYLES[finding.severity]), finding.code, body
            )
        console.print(table)
    if report.skipped:
        console.print()
        console.print(Text("Not checked:", style="bold"))
        for skip in report.skipped:
            console.print(Text(f"  {skip.check}: {skip.reason}"))
    counts = report.counts
    console.print()
    if not report.findings:
        console.print(Text("No problems found.", style="bold green"))
    console.print(
        Text(
            f"{counts['error']} error{'s' if counts['error'] != 1 else ''},"
            f" {counts['warning']} warning{'s' if counts['warning'] != 1 else ''},"
            f" {counts['info']} info",
            style="bold red" if counts["error"] else "bold",
        )
    )
    return buffer.getvalue()


def _fingerprint(finding: Finding) -> str:
    return hashlib.sha256(f"{finding.code}|{finding.subject}".encode()).hexdigest()[:32]


def to_sarif(report: Report) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one rule per code, one result per finding, located at `Kind/name`."""
    codes = sorted(RULES)
    index = {code: position for position, code in enumerate(codes)}
    rules = []
    for code in codes:
        rule = RULES[code]
        rules.append(
            {
                "id": code,
                "name": rule.name,
                "shortDescription": {"text": rule.title},
                "fullDescription": {"text": rule.meaning},
                "help": {
                    "text": f"{rule.fix}\n\nWhy it matters: {rule.failure}",
                    "markdown": f"{rule.fix}\n\n**Why it matters:** {rule.failure}",
                },
                "defaultConfiguration": {"level": SARIF_LEVELS[rule.severity]},
                "properties": {"tags": ["kubernetes", "gpu"]},
            }
        )
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
                        "name": "gpuop check",
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
