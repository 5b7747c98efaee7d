"""Unified diffs of planned file changes, as `--dry-run` prints them.

Why this module exists: a dry run must show an administrator exactly the bytes that would change,
in a format they can review and that tests can keep as golden files. Labels are host paths
(`/dev/null` for a created or removed file), so the diff is the same whatever the host root,
and a missing final newline is marked the way `git diff` marks it.
"""

from __future__ import annotations

import difflib

NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(path: str, before: bytes | None, after: bytes | None, context: int = 3) -> str:
    """The unified diff turning `before` into `after` (None: the file does not exist)."""
    if before == after:
        return ""
    old = _lines(before)
    new = _lines(after)
    out: list[str] = []
    for line in difflib.unified_diff(
        old,
        new,
        fromfile=path if before is not None else "/dev/null",
        tofile=path if after is not None else "/dev/null",
        n=context,
    ):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n" + NO_NEWLINE)
    return "".join(out)


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)
