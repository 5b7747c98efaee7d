"""docs/versions.md is rendered from the version rules; keep it in sync."""

from __future__ import annotations

import re
from pathlib import Path

from gpuop.check.rules import RULES, VERSION_RULES
from gpuop.check.rules import rule as version_rule
from gpuop.versions import render_docs

DOCS = Path(__file__).resolve().parents[3] / "docs" / "versions.md"


def test_docs_match_the_rules() -> None:
    assert DOCS.read_text(encoding="utf-8") == render_docs(), (
        'docs/versions.md is stale: python -c "from gpuop.versions.docs import render_docs;'
        " print(render_docs(), end='')\" > docs/versions.md"
    )


def test_every_rule_is_documented_completely() -> None:
    text = render_docs()
    for code, rule in VERSION_RULES.items():
        assert re.fullmatch(r"VER\d{3}", code) and rule.code == code
        assert f"### {code}" in text
        for part in (rule.title, rule.meaning, rule.failure, rule.fix):
            assert part.strip() and part in text
    names = [rule.name for rule in VERSION_RULES.values()]
    assert len(names) == len(set(names))
    assert not set(names) & {rule.name for rule in RULES.values()}


def test_version_codes_never_collide_with_the_checkers() -> None:
    assert not set(VERSION_RULES) & set(RULES)
    assert version_rule("VER101").code == "VER101"
    assert version_rule("GPU004").code == "GPU004"
