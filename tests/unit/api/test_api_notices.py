"""Design rule: notice codes, Event reasons and condition words are spelled once, in
`gpuop.api`. No call in the product passes a string literal where a code or a reason
goes, and every member is documented where users look it up."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gpuop.api.conditions import ConditionType, Reason
from gpuop.api.notices import EventReason, NoticeCode

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "src" / "gpuop"
# Call -> the argument position of its code or reason.
VOCABULARY_ARGUMENT = {"Notice": 0, "NodeEvent": 1, "event_body": 1, "condition": 0}


def _literal_vocabulary() -> list[str]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            position = VOCABULARY_ARGUMENT.get(str(name))
            if position is None or len(node.args) <= position:
                continue
            argument = node.args[position]
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}({argument.value!r})")
    return found


def test_no_code_or_reason_is_an_inline_string() -> None:
    assert _literal_vocabulary() == []


def _table_codes(doc: str, heading: str) -> set[str]:
    text = (ROOT / "docs" / doc).read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Za-z]+)` \|", section, flags=re.MULTILINE))


def test_every_notice_code_is_documented() -> None:
    assert _table_codes("planner.md", "## 6. Notices") == {str(code) for code in NoticeCode}


def test_every_event_reason_is_documented() -> None:
    documented = _table_codes("operator.md", "## Events")
    assert {str(reason) for reason in EventReason} <= documented
    # The rest are the notices the operator posts as Events.
    assert documented - {str(r) for r in EventReason} <= {str(c) for c in NoticeCode}


@pytest.mark.parametrize("vocabulary", [NoticeCode, EventReason, ConditionType, Reason])
def test_values_are_unique_upstream_style_words(vocabulary: type) -> None:
    values = [str(member) for member in vocabulary]  # type: ignore[attr-defined]
    assert len(values) == len(set(values))
    assert all(re.fullmatch(r"[A-Z][A-Za-z]*", value) for value in values)
