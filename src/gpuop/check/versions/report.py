"""What `gpuop versions check` returns and prints: the checker's report, plus the release.

Text, JSON and SARIF are `gpuop.check`'s, named `gpuop versions check`: the text is headed
with the release and Kubernetes version the checks used, the JSON carries them under
`versions`, and the SARIF log lists the VER rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from typing import Any

from gpuop.catalog.versions import VersionMatrix
from gpuop.check.model import Finding, Report
from gpuop.check.output import render_text, to_sarif
from gpuop.check.release.pinned import Detection

TOOL_NAME = "gpuop versions check"


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
        data = self.report.to_dict(tool_name=TOOL_NAME)
        return {
            "schema_version": data["schema_version"],
            "tool": data["tool"],
            "policy": data["policy"],
            "versions": self.versions_summary(),
            "summary": data["summary"],
            "findings": data["findings"],
        }

    def notes(self) -> list[str]:
        """The lines under the text heading: the release, the matrix's date, Kubernetes."""
        lines = [
            f"operator release {self.detection.describe(self.matrix)}"
            f" ({self.detection.basis()}); version matrix as of {self.matrix.as_of},"
            f" end-of-life dates as of {self.today.isoformat()}"
        ]
        if self.kubernetes:
            lines.append(f"Kubernetes {self.kubernetes} ({self.kubernetes_source})")
        return lines


def render_versions_text(result: VersionReport, *, color: bool = False, width: int = 110) -> str:
    """The checker's text report, headed with the release the checks used."""
    return render_text(
        result.report, color=color, width=width, tool_name=TOOL_NAME, notes=result.notes()
    )


def to_json(result: VersionReport, indent: int | None = 2) -> str:
    return json.dumps(result.to_dict(), indent=indent, ensure_ascii=False)


def to_versions_sarif(result: VersionReport) -> dict[str, Any]:
    """SARIF 2.1.0: every VER rule and any other code used, one result per finding."""
    return to_sarif(result.report, prefix="VER", tool_name=TOOL_NAME)


__all__ = ["TOOL_NAME", "VersionReport", "render_versions_text", "to_json", "to_versions_sarif"]
