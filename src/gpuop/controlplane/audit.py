"""Reading the local API server's audit log (JSON lines), for tests and benchmarks.

The local cluster writes every request to `logs/audit.log`; counting one client's write
requests there is how "the operator makes no write in a quiet minute" is measured. The API
server rotates that file (every 100 MB, renamed to `audit-<time>.log`), so a place in the
log is an `AuditMark`, the file's identity and an offset, and reading from a mark goes on
through every file rotated since: a long benchmark never misses entries, and never counts
"no writes" because the file it looked at was renamed away.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})


@dataclass(frozen=True)
class AuditMark:
    """A place in the audit log: which file (by inode) and how far into it."""

    inode: int
    offset: int


def audit_mark(path: Path) -> AuditMark:
    """The end of the log now: read from here to see only what comes next."""
    stat = path.stat()
    return AuditMark(stat.st_ino, stat.st_size)


def _log_files(path: Path) -> list[Path]:
    """Rotated files, oldest first (their names carry the rotation time), then the live one."""
    rotated = sorted(path.parent.glob(f"{path.stem}-*{path.suffix}"))
    return [*rotated, path]


def _entries_of(handle: Any) -> Iterator[dict[str, Any]]:
    for line in handle:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            yield entry


def audit_entries(path: Path, start: AuditMark | None = None) -> Iterator[dict[str, Any]]:
    """Every complete entry from `start` on (from the oldest kept entry without one);
    partial or broken lines are skipped."""
    files = _log_files(path)
    seen_start = start is None
    for file in files:
        try:
            handle = file.open()
        except FileNotFoundError:
            continue
        with handle:
            inode = os.fstat(handle.fileno()).st_ino
            if not seen_start:
                assert start is not None
                if inode != start.inode:
                    continue
                seen_start = True
                handle.seek(start.offset)
            yield from _entries_of(handle)
    if not seen_start:
        # The marked file is gone (rotated files deleted): everything kept is newer than it.
        for file in files:
            try:
                with file.open() as handle:
                    yield from _entries_of(handle)
            except FileNotFoundError:
                continue


def write_requests(
    path: Path, start: AuditMark | None, username: str, leases: bool = True
) -> list[tuple[str, str]]:
    """(verb, request URI) of each completed write request by `username` from `start` on;
    without `leases`, less the Lease writes of leader election (a leader renews its Lease
    every few seconds, however quiet the cluster is)."""
    return [
        (str(entry.get("verb")), str(entry.get("requestURI")))
        for entry in audit_entries(path, start)
        if entry.get("stage") == "ResponseComplete"
        and entry.get("verb") in WRITE_VERBS
        and (entry.get("user") or {}).get("username") == username
        and (leases or (entry.get("objectRef") or {}).get("resource") != "leases")
    ]
