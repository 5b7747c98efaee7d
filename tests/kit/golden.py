"""The one golden-file comparison: byte for byte, a unified diff when it differs.

`UPDATE_GOLDEN=1` rewrites the files instead of comparing (review `git diff tests/golden`
afterwards).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path


def updating() -> bool:
    """Whether this run rewrites the golden files (`UPDATE_GOLDEN=1`)."""
    return os.environ.get("UPDATE_GOLDEN") == "1"


def check_golden(path: Path, actual: str) -> None:
    """Compare `actual` with the golden file at `path`; `UPDATE_GOLDEN=1` rewrites it."""
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.is_file(), f"golden file {path} is missing; run with UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=f"{path} (golden)",
                tofile="actual",
            )
        )
        raise AssertionError(
            f"output differs from {path}; if the change is intended, rerun with UPDATE_GOLDEN=1"
            " and review the diff\n" + diff
        )
