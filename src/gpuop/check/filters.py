"""Which findings a report shows and which ones fail the run: severity, ignores, annotations.

A team adopting `gpuop check` in CI needs to accept a known finding without turning the
whole rule off, and to decide whether warnings fail the build. The rules here are pure and
shared by every checker (`gpuop check`, `gpuop kubevirt check`, `gpuop versions check`):

* `minimum` severity: findings below it are not shown and do not count;
* `fail_on`: the lowest severity that makes the exit status 1 (`error` by default);
* ignores, `CODE[:KIND/NAME]`, each part a shell glob (`GPU2*`, `GPU201:Node/gpu-*`,
  `*:Pod/ml/*`); KIND matches case-insensitively, and `KIND/NAME` also matches a namespaced
  object of any namespace;
* the `gpuop.io/ignore` annotation on an object (`GPU201,GPU305`, globs too) suppresses
  those codes for findings about that object.

Suppressed findings are counted, never silently lost: the report says how many.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from gpuop.api.labels import IGNORE_ANNOTATION
from gpuop.check.model import Finding, Report
from gpuop.check.rules import SEVERITIES, Severity

FAIL_ON_CHOICES: tuple[Severity, ...] = ("error", "warning", "info")
_RANK = {severity: position for position, severity in enumerate(SEVERITIES)}


class FilterError(ValueError):
    """An ignore pattern or a severity that cannot be used."""


@dataclass(frozen=True)
class IgnoreRule:
    """One `CODE[:KIND/NAME]` pattern."""

    code: str
    subject: str | None = None

    @classmethod
    def parse(cls, text: str) -> IgnoreRule:
        raw = text.strip()
        code, sep, subject = raw.partition(":")
        code = code.strip().upper()
        if not code:
            raise FilterError(f"ignore {text!r}: expected CODE or CODE:KIND/NAME (e.g. GPU201)")
        if not sep:
            return cls(code)
        subject = subject.strip()
        kind, slash, name = subject.partition("/")
        if not slash or not kind or not name:
            raise FilterError(
                f"ignore {text!r}: expected CODE:KIND/NAME or CODE:KIND/NAMESPACE/NAME"
                " (e.g. GPU201:Node/gpu-1)"
            )
        return cls(code, f"{kind.lower()}/{name}")

    def matches(self, finding: Finding) -> bool:
        if not fnmatchcase(finding.code.upper(), self.code):
            return False
        if self.subject is None:
            return True
        kind = finding.kind.lower()
        candidates = [f"{kind}/{finding.name}"]
        if finding.namespace:
            candidates.insert(0, f"{kind}/{finding.namespace}/{finding.name}")
        return any(fnmatchcase(candidate, self.subject) for candidate in candidates)

    def __str__(self) -> str:
        return self.code if self.subject is None else f"{self.code}:{self.subject}"


def parse_severity(value: str, what: str) -> Severity:
    """`error`, `warning` or `info` (any case); a clear error otherwise."""
    lowered = value.strip().lower()
    for severity in SEVERITIES:
        if lowered == severity:
            return severity
    raise FilterError(f"{what} {value!r}: expected one of {', '.join(SEVERITIES)}")


@dataclass(frozen=True)
class FindingFilter:
    """What to show and what fails: made from flags and `.gpuop.yaml`, applied to a report."""

    minimum: Severity = "info"
    fail_on: Severity = "error"
    ignores: tuple[IgnoreRule, ...] = ()
    use_annotations: bool = True

    def __post_init__(self) -> None:
        if _RANK[self.fail_on] > _RANK[self.minimum]:
            raise FilterError(
                f"fail-on {self.fail_on} with severity {self.minimum}: findings that fail the"
                f" run would not be shown; lower the severity to {self.fail_on}"
            )

    @property
    def is_default(self) -> bool:
        return self == FindingFilter()

    def shows(self, severity: Severity) -> bool:
        return _RANK[severity] <= _RANK[self.minimum]

    def apply(self, report: Report, objects: Iterable[Any] = ()) -> Report:
        """The report with the findings this filter hides taken out, and counted."""
        annotations = (
            annotation_ignores(objects) if self.use_annotations and report.findings else {}
        )
        kept: list[Finding] = []
        below = ignored = annotated = 0
        for finding in report.findings:
            if not self.shows(finding.severity):
                below += 1
            elif any(rule.matches(finding) for rule in self.ignores):
                ignored += 1
            elif _annotated(finding, annotations):
                annotated += 1
            else:
                kept.append(finding)
        suppressed = dict(report.suppressed)
        for reason, count in (
            ("below_severity", below),
            ("ignored", ignored),
            ("annotation", annotated),
        ):
            if count:
                suppressed[reason] = suppressed.get(reason, 0) + count
        return dataclasses.replace(
            report, findings=tuple(kept), suppressed=suppressed, fail_on=self.fail_on
        )


def _annotated(finding: Finding, annotations: Mapping[tuple[str, str, str], Sequence[str]]) -> bool:
    patterns = annotations.get((finding.kind, finding.namespace or "", finding.name))
    if not patterns:
        return False
    code = finding.code.upper()
    return any(fnmatchcase(code, pattern) for pattern in patterns)


def annotation_ignores(objects: Iterable[Any]) -> dict[tuple[str, str, str], tuple[str, ...]]:
    """(kind, namespace, name) -> the code patterns its `gpuop.io/ignore` annotation lists."""
    found: dict[tuple[str, str, str], tuple[str, ...]] = {}
    for obj in objects:
        if not isinstance(obj, Mapping):
            continue
        metadata = obj.get("metadata")
        if not isinstance(metadata, Mapping):
            continue
        annotations = metadata.get("annotations")
        if not isinstance(annotations, Mapping):
            continue
        value = annotations.get(IGNORE_ANNOTATION)
        kind, name = obj.get("kind"), metadata.get("name")
        if not isinstance(value, str) or not isinstance(kind, str) or not isinstance(name, str):
            continue
        namespace = metadata.get("namespace")
        patterns = tuple(
            part.strip().upper() for part in value.replace(";", ",").split(",") if part.strip()
        )
        if patterns:
            key = (kind, namespace if isinstance(namespace, str) else "", name)
            found[key] = found.get(key, ()) + patterns
    return found


def build_filter(
    *,
    severity: str | None = None,
    fail_on: str | None = None,
    ignores: Iterable[str] = (),
    use_annotations: bool = True,
) -> FindingFilter:
    """A filter from user text (flags, config); raises :class:`FilterError` on a bad value."""
    return FindingFilter(
        minimum=parse_severity(severity, "severity") if severity else "info",
        fail_on=parse_severity(fail_on, "fail-on") if fail_on else "error",
        ignores=tuple(IgnoreRule.parse(item) for item in ignores),
        use_annotations=use_annotations,
    )


__all__ = [
    "FAIL_ON_CHOICES",
    "FilterError",
    "FindingFilter",
    "IgnoreRule",
    "annotation_ignores",
    "build_filter",
    "parse_severity",
]
