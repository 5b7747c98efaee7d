"""Which ClusterPolicy is active: one rule for the operator and the checker.

Why this module exists: the operator and the checker each had their own rule, and they
disagreed on the two cases that matter mid-change (a policy being deleted, a policy without
a creation time), so a dump taken while the oldest policy was being deleted was checked
against a different policy than the operator reconciled. The rule is the operator's:

* a ClusterPolicy with a `deletionTimestamp` is going away: it is never active, and is not
  reported as ignored either;
* of the others the oldest `creationTimestamp` wins (RFC 3339 UTC stamps sort as text), a
  missing or unreadable stamp sorting first, as the empty string does;
* the lexically smaller name breaks ties.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

_P = TypeVar("_P", bound=Mapping[str, Any])


@dataclass(frozen=True)
class PolicySelection(Generic[_P]):
    """The active ClusterPolicy (None: none is live), the live ones it overrides (oldest
    first), and those being deleted (in input order)."""

    active: _P | None
    ignored: tuple[_P, ...]
    deleting: tuple[_P, ...]


def _text(metadata: Any, key: str) -> str:
    value = metadata.get(key) if isinstance(metadata, Mapping) else None
    return value if isinstance(value, str) else ""


def deleting(policy: Mapping[str, Any]) -> bool:
    """Whether the object is being deleted (it has a `deletionTimestamp`)."""
    metadata = policy.get("metadata")
    return isinstance(metadata, Mapping) and bool(metadata.get("deletionTimestamp"))


def age_key(policy: Mapping[str, Any]) -> tuple[str, str]:
    """The sort key of the rule: (creationTimestamp or "", name or "")."""
    metadata = policy.get("metadata")
    return _text(metadata, "creationTimestamp"), _text(metadata, "name")


def select_active(policies: Sequence[_P]) -> PolicySelection[_P]:
    """Apply the rule to every ClusterPolicy in the cluster (or a dump)."""
    live = sorted((p for p in policies if not deleting(p)), key=age_key)
    going = tuple(p for p in policies if deleting(p))
    if not live:
        return PolicySelection(None, (), going)
    return PolicySelection(live[0], tuple(live[1:]), going)


__all__ = ["PolicySelection", "age_key", "deleting", "select_active"]
