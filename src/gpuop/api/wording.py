"""How gpuop words a long list in one line: the first few, and how many more.

Every message that names nodes, labels or resources says it the same way, so a reader (or
a script matching messages) sees one form: ``a, b, c and 12 more``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["listed"]


def listed(items: Sequence[str], limit: int, total: int | None = None) -> str:
    """The first `limit` of `items` joined by commas, then ``and N more`` for the rest of
    `total` (default: all of `items`; give it when only the first few are at hand)."""
    count = len(items) if total is None else total
    shown = ", ".join(items[:limit])
    return f"{shown} and {count - limit} more" if count > limit else shown
