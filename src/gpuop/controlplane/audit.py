"""Reading the local API server's audit log (JSON lines), for tests and benchmarks.

The local cluster writes every request to `logs/audit.log`; counting one client's write
requests there is how "the operator makes no write in a quiet minute" is measured.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

WRITE_VERBS = frozenset({"create", "update", "patch", "delete"})


def audit_entries(path: Path, start: int = 0) -> Iterator[dict[str, Any]]:
    """Every complete entry from byte offset `start` on; partial or broken lines are skipped."""
    with path.open() as handle:
        handle.seek(start)
        for line in handle:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                yield entry


def write_requests(path: Path, start: int, username: str) -> list[tuple[str, str]]:
    """(verb, request URI) of each completed write request by `username` from `start` on."""
    return [
        (str(entry.get("verb")), str(entry.get("requestURI")))
        for entry in audit_entries(path, start)
        if entry.get("stage") == "ResponseComplete"
        and entry.get("verb") in WRITE_VERBS
        and (entry.get("user") or {}).get("username") == username
    ]
