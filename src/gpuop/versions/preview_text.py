"""`gpuop upgrade preview` as text: the sides, the operands that change, nodes, findings.

Deterministic (golden tests compare it), wrapped at the width the command line gives.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from gpuop.api.wording import listed
from gpuop.versions.sides import IMPACT_ORDER, IMPACT_TEXT
from gpuop.versions.upgrade import UpgradePreview

TEXT_WIDTH = 100
NAMES_SHOWN = 12
# A width no terminal has: the text is not fitted (`-o wide`, a pipe).
UNFITTED_WIDTH = 10_000


def _version_cell(value: str | None, enabled: bool) -> str:
    if not enabled:
        return "(not deployed)"
    return value or "(unset)"


def _wrap(text: str, indent: str, hanging: int | None = None, width: int = TEXT_WIDTH) -> str:
    """`text` wrapped at `width` columns, later lines indented to `hanging` (default: indent)."""
    later = " " * hanging if hanging is not None else indent
    return textwrap.fill(
        text,
        width=max(width, 40),
        initial_indent=indent,
        subsequent_indent=later,
        break_long_words=True,
        break_on_hyphens=False,
    )


def _names(names: Sequence[str], shown: int = NAMES_SHOWN) -> str:
    return listed(sorted(names), shown)


def render_preview_text(preview: UpgradePreview, width: int = TEXT_WIDTH) -> str:
    """The preview as plain text wrapped at `width` (deterministic: golden tests compare it)."""

    def wrap(text: str, indent: str, hanging: int | None = None) -> str:
        return _wrap(text, indent, hanging, width)

    matrix = preview.matrix
    out: list[str] = []
    add = out.append
    add(wrap(f"gpuop upgrade preview: {preview.old.label} → {preview.new.label}", "", 2))
    add(wrap(f"old: {preview.old.describe(matrix)}", "  ", 4))
    add(wrap(f"new: {preview.new.describe(matrix)}", "  ", 4))
    if preview.kubernetes:
        add(f"  Kubernetes: {preview.kubernetes[0]} → {preview.kubernetes[1]}")
    moves = ", ".join(move.what for move in preview.moves) or "none of driver, toolkit,"
    if not preview.moves:
        moves += " operator release, Kubernetes"
    add(f"  moves: {moves}")
    add(
        wrap(
            f"version matrix as of {matrix.as_of}; end-of-life dates as of {preview.today}", "  ", 4
        )
    )
    add("")
    changed = preview.changed
    add(wrap(f"Operands ({len(changed)} of {len(preview.operands)} deployed operands change)", ""))
    for change in changed:
        old = _version_cell(change.old, change.old_enabled)
        new = _version_cell(change.new, change.new_enabled)
        add(wrap(f"{change.operand:<27} {old} → {new}", "  ", 6))
        add(wrap(f"{IMPACT_TEXT[change.impact]}: {change.effect}", "      "))
    same = [c for c in preview.operands if not c.changed]
    if same:
        unchanged = ", ".join(f"{c.operand} {c.new or '(unset)'}" for c in same)
        add(wrap(f"unchanged: {unchanged}", "  ", 4))
    for note in preview.notes:
        add(wrap(f"note: {note}", "  ", 4))
    add("")
    nodes = preview.nodes
    if nodes is None:
        add(wrap("Nodes: none given (--dump FILES or --live shows which nodes restart what);", ""))
        add(
            wrap(
                "every node that runs a changed operand restarts its pod, with the effect above.",
                "  ",
            )
        )
    else:
        gpu = sum(1 for node in nodes if node.gpu_node)
        add(f"Nodes ({len(nodes)}, {gpu} with GPUs)")
        groups: dict[tuple[Any, ...], list[str]] = {}
        for node in nodes:
            groups.setdefault(node.shape, []).append(node.node)
        ordered = sorted(
            groups.items(),
            key=lambda item: (-IMPACT_ORDER[item[0][5]], not item[0][0], sorted(item[1])),
        )
        for shape, names in ordered:
            gpu_node, workload, restarts, starts, stops, disruption = shape
            # Text that is not fitted (`-o wide`, a pipe) names every node: nothing elided.
            listed = _names(names, len(names) if width >= UNFITTED_WIDTH else NAMES_SHOWN)
            if not gpu_node:
                add(wrap(f"{listed} (no GPU): nothing restarts", "  ", 4))
                continue
            add(wrap(f"{listed} ({workload}): {IMPACT_TEXT[disruption]}", "  ", 4))
            if restarts:
                add(wrap(f"restart: {', '.join(restarts)}", "      ", 8))
            if starts:
                add(wrap(f"start: {', '.join(starts)}", "      ", 8))
            if stops:
                add(wrap(f"stop: {', '.join(stops)}", "      ", 8))
            if not (restarts or starts or stops):
                add("      no operand pod changes")
    add("")
    if preview.findings:
        add("Findings")
        for finding in preview.findings:
            add(wrap(f"{finding.severity:<8}{finding.code}  {finding.message}", "  ", 18))
            add(wrap(f"fix: {finding.hint}", " " * 18))
        add("")
    summary = preview.summary()
    changed_count = summary["operands_changed"]
    parts = [f"{changed_count} operand{'s' if changed_count != 1 else ''} change"]
    if nodes is not None:
        by = summary["gpu_nodes_by_disruption"]
        parts.append(
            f"GPU nodes: {by['gpu-workloads']} with GPU workloads disrupted,"
            f" {by['container-runtime']} with containerd restarting,"
            f" {by['new-pods-wait']} where new GPU pods wait, {by['none']} unaffected"
        )
    parts.append(f"{summary['warnings']} warning{'s' if summary['warnings'] != 1 else ''}")
    add(wrap("; ".join(parts), ""))
    return "\n".join(out) + "\n"


__all__ = ["TEXT_WIDTH", "render_preview_text"]
