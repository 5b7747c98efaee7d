"""What a rule is, and what a family of rules shares.

A separate module from the registry (`gpuop.check.rules`) so that each family module can
declare its rules without importing the registry that lists it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Rule:
    """One check: its code, default severity and the text behind it."""

    code: str
    name: str
    severity: Severity
    title: str
    meaning: str
    failure: str
    fix: str


@dataclass(frozen=True)
class RuleFamily:
    """The rules one checker reports: their code prefix, the checker's name, SARIF tags.

    Codes never change meaning and are never reused; a retired rule keeps its number.
    """

    prefix: str
    tool: str
    sarif_tags: tuple[str, ...]
    rules: tuple[Rule, ...]


__all__ = ["SEVERITIES", "Rule", "RuleFamily", "Severity"]
