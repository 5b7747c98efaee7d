"""Forgiving reads of fields from Kubernetes objects held as plain dicts.

Objects come from user files and dumps, so any field may be missing, null
or of the wrong type.  These helpers walk a path and return an empty value
of the expected type instead of raising, so that callers can apply the API
server's defaults (a missing list is an empty list) in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["get", "mapping", "scalar_text", "sequence", "text"]


def get(obj: Any, *path: str) -> Any:
    """The value at ``path`` inside nested mappings, or None."""
    current = obj
    for key in path:
        # Inlined type test: every pod of a fleet-size dump is read through here.
        if type(current) is not dict and not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def mapping(obj: Any, *path: str) -> Mapping[str, Any]:
    """The mapping at ``path``, or an empty one."""
    found = get(obj, *path)
    return found if type(found) is dict or isinstance(found, Mapping) else {}


def sequence(obj: Any, *path: str) -> list[Any]:
    """The list at ``path``, or an empty one."""
    found = get(obj, *path)
    return found if isinstance(found, list) else []


def text(obj: Any, *path: str) -> str:
    """The string at ``path``, or ``""`` when absent or not a string."""
    found = get(obj, *path)
    return found if isinstance(found, str) else ""


def scalar_text(found: Any) -> str:
    """A label-like value as the API would hold it, as text.

    YAML turns ``true`` and ``8`` into a bool and an int; Kubernetes
    string fields would have had them quoted.  Those are spelled the way
    the user wrote them; None (and anything structured) becomes ``""``.
    """
    if isinstance(found, str):
        return found
    if isinstance(found, bool):
        return "true" if found else "false"
    if isinstance(found, int | float):
        return str(found)
    return ""
