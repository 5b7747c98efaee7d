"""`gpuop versions check` output: the checker's text and JSON, and SARIF with the VER rules.

Text and JSON go through `gpuop.check`'s renderers unchanged (a `VersionFinding` carries its
own title). SARIF needs the rule table: the checker's `to_sarif` builds the envelope (tool,
invocation, checks that did not run), and the rules and results are filled in here, in the
same shape, from both rule tables.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from gpuop.check.model import Report
from gpuop.check.output import SARIF_LEVELS, render_text, to_sarif
from gpuop.check.rules import RULES, Rule
from gpuop.versions.checks import VersionReport
from gpuop.versions.rules import VERSION_RULES, version_rule

TOOL_NAME = "gpuop versions check"


def render_versions_text(result: VersionReport, *, color: bool = False, width: int = 110) -> str:
    """The checker's text report, headed with the release the checks used."""
    body = render_text(result.report, color=color, width=width)
    first, _, rest = body.partition("\n")
    first = first.replace("gpuop check:", f"{TOOL_NAME}:", 1)
    detection = result.detection
    lines = [
        first,
        f"operator release {detection.describe(result.matrix)} ({detection.basis()});"
        f" version matrix as of {result.matrix.as_of}, end-of-life dates as of"
        f" {result.today.isoformat()}",
    ]
    if result.kubernetes:
        lines.append(f"Kubernetes {result.kubernetes} ({result.kubernetes_source})")
    return "\n".join(lines) + "\n" + rest


def to_json(result: VersionReport, indent: int | None = 2) -> str:
    return json.dumps(result.to_dict(), indent=indent, ensure_ascii=False)


def _sarif_rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.meaning},
        "help": {
            "text": f"{rule.fix}\n\nWhy it matters: {rule.failure}",
            "markdown": f"{rule.fix}\n\n**Why it matters:** {rule.failure}",
        },
        "defaultConfiguration": {"level": SARIF_LEVELS[rule.severity]},
        "properties": {"tags": ["kubernetes", "gpu", "versions"]},
    }


def to_versions_sarif(result: VersionReport) -> dict[str, Any]:
    """SARIF 2.1.0: the checker's envelope, one rule per code used, one result per finding."""
    report = result.report
    envelope = to_sarif(Report((), report.skipped, report.policy, report.objects, report.nodes))
    used = sorted({finding.code for finding in report.findings} | set(VERSION_RULES))
    codes = [code for code in used if code in VERSION_RULES or code in RULES]
    index = {code: position for position, code in enumerate(codes)}
    results = []
    for finding in report.findings:
        location = {"name": finding.name, "fullyQualifiedName": finding.subject, "kind": "resource"}
        fingerprint = hashlib.sha256(f"{finding.code}|{finding.subject}".encode()).hexdigest()
        results.append(
            {
                "ruleId": finding.code,
                "ruleIndex": index[finding.code],
                "level": SARIF_LEVELS[finding.severity],
                "message": {"text": f"{finding.message}. Fix: {finding.hint}"},
                "locations": [{"logicalLocations": [location]}],
                "partialFingerprints": {"gpuopFinding/v1": fingerprint[:32]},
                "properties": {
                    "kind": finding.kind,
                    "name": finding.name,
                    **({"namespace": finding.namespace} if finding.namespace else {}),
                    **({"node": finding.node} if finding.node else {}),
                    "hint": finding.hint,
                },
            }
        )
    run = envelope["runs"][0]
    run["tool"]["driver"]["name"] = TOOL_NAME
    run["tool"]["driver"]["rules"] = [_sarif_rule(version_rule(code)) for code in codes]
    run["results"] = results
    return envelope


__all__ = ["TOOL_NAME", "render_versions_text", "to_json", "to_versions_sarif"]
