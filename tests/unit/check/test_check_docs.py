"""docs/checks.md is rendered from the rule registry; keep it in sync."""

from __future__ import annotations

import re
from pathlib import Path

from gpuop.check import RULES, render_docs

DOCS = Path(__file__).resolve().parents[3] / "docs" / "checks.md"


def test_docs_match_the_rule_registry() -> None:
    assert DOCS.read_text(encoding="utf-8") == render_docs(), (
        'docs/checks.md is stale: python -c "from gpuop.check.docs import render_docs;'
        " print(render_docs(), end='')\" > docs/checks.md"
    )


def test_every_rule_is_documented_completely() -> None:
    text = render_docs()
    for code, rule in RULES.items():
        assert re.fullmatch(r"GPU\d{3}", code)
        assert f"### {code}" in text
        for part in (rule.title, rule.meaning, rule.failure, rule.fix):
            assert part.strip() and part in text
    names = [rule.name for rule in RULES.values()]
    assert len(names) == len(set(names))
