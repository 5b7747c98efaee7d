"""The rule registry: every finding a gpuop checker can report, with a stable code.

One registry over every family in `gpuop.check.families` (``GPU`` for `gpuop check`,
``VER`` for `gpuop versions check` and `gpuop upgrade preview`): a finding's title, default
severity and SARIF rule come from here whichever checker reported it. Codes are unique
across families.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuop.check.families import FAMILIES
from gpuop.check.rule_types import SEVERITIES, Rule, RuleFamily, Severity

_BY_PREFIX: Mapping[str, RuleFamily] = {family.prefix: family for family in FAMILIES}
REGISTRY: Mapping[str, Rule] = {rule.code: rule for family in FAMILIES for rule in family.rules}
if len(REGISTRY) != sum(len(family.rules) for family in FAMILIES):
    raise AssertionError("two rules share a code")


def family(prefix: str) -> RuleFamily:
    """The family of a code prefix ("GPU", "VER"); KeyError for an unknown one."""
    return _BY_PREFIX[prefix]


def family_rules(prefix: str) -> Mapping[str, Rule]:
    """A family's rules by code."""
    return {rule.code: rule for rule in family(prefix).rules}


# The rules of `gpuop check` and of the version checks, by code.
RULES: Mapping[str, Rule] = family_rules("GPU")
VERSION_RULES: Mapping[str, Rule] = family_rules("VER")


def rule(code: str) -> Rule:
    """The rule for a code of any family; KeyError for an unknown code."""
    return REGISTRY[code]


__all__ = [
    "REGISTRY",
    "RULES",
    "SEVERITIES",
    "VERSION_RULES",
    "Rule",
    "RuleFamily",
    "Severity",
    "family",
    "family_rules",
    "rule",
]
