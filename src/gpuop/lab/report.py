"""The lab report: JSON for machines, Markdown for reviews, one HTML page for people.

The HTML page is self-contained (inline CSS and SVG, no scripts, no external assets): a
picture of the three nodes with their operands and advertised resources, the placements
of the six workloads next to the explainer's predictions, the vGPU change, the silent
trap and the drift the checker found.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from gpuop.lab import dra, managers

_COLOURS = {"container": "#2e7d32", "vm-passthrough": "#1565c0", "vm-vgpu": "#6a1b9a"}


def write_reports(report: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out_dir / "lab-report.json",
        "markdown": out_dir / "lab-report.md",
        "html": out_dir / "lab-report.html",
    }
    paths["json"].write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    paths["markdown"].write_text(render_markdown(report), encoding="utf-8")
    paths["html"].write_text(render_html(report), encoding="utf-8")
    return paths


def _nodes(report: dict[str, Any]) -> list[dict[str, Any]]:
    return list((report.get("steps", {}).get("3") or {}).get("nodes") or [])


def _placements(report: dict[str, Any]) -> list[dict[str, Any]]:
    return list((report.get("steps", {}).get("4") or {}).get("placements") or [])


def _scheduled(sched: dict[str, Any], pending: str) -> str:
    """Where the scheduler put a workload (node and phase), or `pending` and its message."""
    if sched["node"]:
        return f"{sched['node']} ({sched['phase']})"
    return f"{pending}{sched['message']}"


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# gpuop lab report",
        "",
        f"- result: **{'passed' if report.get('ok') else 'failed'}**",
        f"- Kubernetes: {report.get('kubernetes', '?')}",
        f"- seed: {report.get('seed')}",
        f"- duration: {report.get('duration_seconds')} s",
        "",
        "## Nodes",
        "",
        "| node | workload config | operands | advertises |",
        "|---|---|---|---|",
    ]
    for node in _nodes(report):
        adv = ", ".join(f"`{k}`: {v}" for k, v in node["advertises"].items())
        lines.append(
            f"| {node['name']} | {node['workload']} | {', '.join(node['operands'])} | {adv} |"
        )
    lines += [
        "",
        "## Placements (real kube-scheduler vs `gpuop explain`)",
        "",
        "| workload | requests | scheduler | explain: feasible | agree |",
        "|---|---|---|---|---|",
    ]
    for item in _placements(report):
        where = _scheduled(item["scheduler"], "Pending: ")
        lines.append(
            f"| {item['name']} | {', '.join(item['requests'])} | {where} |"
            f" {', '.join(item['explain']['feasible']) or 'none'} | {'yes' if item['agrees'] else 'NO'} |"
        )
    rules = (report.get("steps", {}).get("4") or {}).get("rules") or []
    if rules:
        lines += [
            "",
            "## Spread and anti-affinity (real kube-scheduler vs `gpuop explain`)",
            "",
            "| pod | rule | scheduler | explain | agree |",
            "|---|---|---|---|---|",
        ]
        for item in rules:
            where = _scheduled(item["scheduler"], "Pending: ")
            said = ", ".join(item["explain"]["feasible"]) or item["explain"]["summary"]
            lines.append(
                f"| {item['name']} | {item['rule']} | {where} | {said} |"
                f" {'yes' if item['agrees'] else 'NO'} |"
            )
    vgpu = report.get("steps", {}).get("5") or {}
    if vgpu:
        lines += [
            "",
            "## vGPU profile change",
            "",
            f"`{vgpu.get('node')}`: {vgpu.get('before')} -> {vgpu.get('after')}",
        ]
    trap = report.get("steps", {}).get("6") or {}
    if trap:
        lines += ["", "## The silent trap", ""]
        for event in trap.get("warnings", []):
            lines.append(f"- {event['type']} on {event['node']}: {event['message']}")
    drift = report.get("steps", {}).get("7") or {}
    if drift:
        lines += ["", "## Drift", "", f"seed {drift.get('seed')}", ""]
        for item in drift.get("injected", []):
            lines.append(f"- {item['node']}: `{item['kind']}` ({item['imitates']})")
        lines += [
            "",
            f"checker found: {', '.join(drift.get('found_nodes', []))} (exact: {drift.get('exact')})",
        ]
        for finding in drift.get("findings", []):
            lines.append(
                f"- {finding['severity']} {finding['code']} {finding['name']}: {finding['message']}"
            )
    lines += dra.render_markdown(report.get("steps", {}).get("dra") or {})
    lines += managers.render_markdown(report.get("steps", {}).get("managers") or {})
    if report.get("failure"):
        lines += ["", "## Failure", "", f"```\n{report['failure']}\n```"]
    return "\n".join(lines) + "\n"


def _svg(report: dict[str, Any]) -> str:
    nodes = _nodes(report)
    width, box_w, box_h, gap = 960, 290, 300, 35
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {box_h + 40}" role="img" aria-label="three GPU nodes">'
    ]
    for index, node in enumerate(nodes):
        x = 20 + index * (box_w + gap)
        colour = _COLOURS.get(node["workload"], "#555")
        parts.append(
            f'<rect x="{x}" y="10" width="{box_w}" height="{box_h}" rx="12" fill="#fafafa" stroke="{colour}" stroke-width="3"/>'
        )
        parts.append(f'<rect x="{x}" y="10" width="{box_w}" height="44" rx="12" fill="{colour}"/>')
        parts.append(
            f'<text x="{x + 14}" y="38" fill="#fff" font-size="17" font-weight="bold">{html.escape(node["name"])}</text>'
        )
        parts.append(
            f'<text x="{x + 14}" y="76" font-size="13" fill="#333">workload: {html.escape(str(node["workload"]))}</text>'
        )
        y = 100
        for operand in node["operands"]:
            parts.append(
                f'<rect x="{x + 14}" y="{y - 14}" width="{box_w - 28}" height="20" rx="4" fill="#e8eaf6"/>'
            )
            parts.append(
                f'<text x="{x + 22}" y="{y}" font-size="12" fill="#222">{html.escape(operand)}</text>'
            )
            y += 24
        for resource, count in node["advertises"].items():
            parts.append(
                f'<text x="{x + 14}" y="{box_h - 4}" font-size="13" font-weight="bold" fill="{colour}">{html.escape(resource)}: {count}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def render_html(report: dict[str, Any]) -> str:
    rows = []
    for item in _placements(report):
        where = _scheduled(item["scheduler"], "Pending — ")
        rows.append(
            "<tr>"
            f"<td>{html.escape(item['name'])}</td><td><code>{html.escape(', '.join(item['requests']))}</code></td>"
            f"<td>{html.escape(where)}</td><td>{html.escape(', '.join(item['explain']['feasible']) or 'none')}</td>"
            f"<td class={'ok' if item['agrees'] else 'bad'}>{'yes' if item['agrees'] else 'no'}</td></tr>"
        )
    drift = report.get("steps", {}).get("7") or {}
    drift_items = "".join(
        f"<li><b>{html.escape(i['node'])}</b>: <code>{html.escape(i['kind'])}</code> — {html.escape(i['imitates'])}</li>"
        for i in drift.get("injected", [])
    )
    findings = "".join(
        f"<li>{html.escape(f['severity'])} <code>{html.escape(f['code'])}</code> {html.escape(f['name'])}: {html.escape(f['message'])}</li>"
        for f in drift.get("findings", [])
    )
    vgpu = report.get("steps", {}).get("5") or {}
    trap = report.get("steps", {}).get("6") or {}
    warnings = "".join(
        f"<li>{html.escape(e['type'])} on {html.escape(e['node'])}: {html.escape(e['message'])}</li>"
        for e in trap.get("warnings", [])
    )
    status = "passed" if report.get("ok") else "failed"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gpuop lab report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1000px; color: #222; }}
table {{ border-collapse: collapse; width: 100%; }} td, th {{ border-bottom: 1px solid #ddd; padding: .4rem; text-align: left; font-size: .9rem; }}
.ok {{ color: #2e7d32; font-weight: bold; }} .bad {{ color: #c62828; font-weight: bold; }}
code {{ background: #f3f3f3; padding: 0 .2rem; }}
</style></head><body>
<h1>gpuop lab report <span class="{"ok" if report.get("ok") else "bad"}">{status}</span></h1>
<p>Kubernetes {html.escape(str(report.get("kubernetes", "?")))} · seed {report.get("seed")} · {report.get("duration_seconds")} s</p>
<h2>The three nodes</h2>
{_svg(report)}
<h2>Placements: real kube-scheduler vs gpuop explain</h2>
<table><tr><th>workload</th><th>requests</th><th>scheduler</th><th>explain: feasible</th><th>agree</th></tr>{"".join(rows)}</table>
<h2>vGPU profile change</h2><p><code>{html.escape(str(vgpu.get("node", "")))}</code>: {html.escape(str(vgpu.get("before", "")))} → {html.escape(str(vgpu.get("after", "")))}</p>
<h2>The silent trap</h2><ul>{warnings}</ul>
<h2>Drift (seed {drift.get("seed")})</h2><ul>{drift_items}</ul>
<p>Checker findings (found exactly the drifted nodes: <b>{drift.get("exact")}</b>):</p><ul>{findings}</ul>
{dra.render_html(report.get("steps", {}).get("dra") or {})}
{managers.render_html(report.get("steps", {}).get("managers") or {})}
{f"<h2>Failure</h2><pre>{html.escape(str(report['failure']))}</pre>" if report.get("failure") else ""}
</body></html>
"""
