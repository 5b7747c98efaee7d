"""The one golden-file comparison: byte for byte, a unified diff when it differs.

`pytest --update-golden` (or `UPDATE_GOLDEN=1`, the older spelling) rewrites the files
instead of comparing; review `git diff tests/golden` afterwards. The tests get that choice
from the `update_golden` fixture in `tests/conftest.py` and pass it on as `update`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

GoldenCheck = Callable[[str, str], None]
"""`check(name, actual)`: compare `actual` with the golden file `name` of one folder."""


def update_requested(option: bool) -> bool:
    """Whether this run rewrites the golden files: the `--update-golden` option, or
    `UPDATE_GOLDEN=1` in the environment."""
    return option or os.environ.get("UPDATE_GOLDEN") == "1"


def check_golden(path: Path, actual: str, *, update: bool) -> None:
    """Compare `actual` with the golden file at `path`; with `update`, rewrite it instead."""
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.is_file(), f"golden file {path} is missing; run with --update-golden to create it"
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
            f"output differs from {path}; if the change is intended, rerun with --update-golden"
            " and review the diff\n" + diff
        )


def golden_in(directory: Path, *, update: bool) -> GoldenCheck:
    """`check(name, actual)`: `check_golden` on the file `name` under `directory`."""

    def check(name: str, actual: str) -> None:
        check_golden(directory / name, actual, update=update)

    return check
