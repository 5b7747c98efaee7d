"""How gpuop words what it names in a message: a long list in one line (the first few, and
how many more), and what a value read from YAML or JSON is.

Every message that names nodes, labels or resources says it the same way, so a reader (or
a script matching messages) sees one form: ``a, b, c and 12 more``. A value of the wrong
type is named in the words of the file it came from (``null``, ``a string``), never in
Python's (``NoneType``, ``str``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["listed", "value_kind"]


def listed(items: Sequence[str], limit: int, total: int | None = None) -> str:
    """The first `limit` of `items` joined by commas, then ``and N more`` for the rest of
    `total` (default: all of `items`; give it when only the first few are at hand)."""
    count = len(items) if total is None else total
    shown = ", ".join(items[:limit])
    return f"{shown} and {count - limit} more" if count > limit else shown


def value_kind(value: object) -> str:
    """What a value parsed from YAML or JSON is, in that file's words: ``null``, ``a
    boolean``, ``a number``, ``a string``, ``a list`` or ``a mapping``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"
