"""One active-ClusterPolicy rule for the operator and the checker."""

from __future__ import annotations

from typing import Any

from gpuop.api.policies import select_active


def _policy(name: str, created: Any = None, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if created is not None:
        meta["creationTimestamp"] = created
    if deleting:
        meta["deletionTimestamp"] = "2026-11-01T00:00:00Z"
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": meta}


def test_the_oldest_wins_and_the_rest_are_ignored_oldest_first() -> None:
    a = _policy("a", "2026-03-01T00:00:00Z")
    b = _policy("b", "2026-01-01T00:00:00Z")
    c = _policy("c", "2026-02-01T00:00:00Z")
    selection = select_active([a, b, c])
    assert selection.active is b
    assert selection.ignored == (c, a)
    assert selection.deleting == ()


def test_the_name_breaks_ties() -> None:
    stamp = "2026-01-01T00:00:00Z"
    selection = select_active([_policy("z", stamp), _policy("m", stamp)])
    assert selection.active is not None and selection.active["metadata"]["name"] == "m"


def test_a_policy_being_deleted_is_skipped_even_when_oldest() -> None:
    going = _policy("old", "2025-01-01T00:00:00Z", deleting=True)
    staying = _policy("new", "2026-01-01T00:00:00Z")
    selection = select_active([going, staying])
    assert selection.active is staying
    assert selection.ignored == ()
    assert selection.deleting == (going,)


def test_a_missing_creation_time_sorts_first() -> None:
    stamped = _policy("a", "2026-01-01T00:00:00Z")
    unstamped = _policy("b")
    assert select_active([stamped, unstamped]).active is unstamped


def test_unreadable_metadata_sorts_as_missing_and_never_raises() -> None:
    odd = {"metadata": {"name": 7, "creationTimestamp": 12345}}
    bare: dict[str, Any] = {"kind": "ClusterPolicy"}
    stamped = _policy("a", "2026-01-01T00:00:00Z")
    selection = select_active([stamped, odd, bare])
    assert selection.active is odd
    assert selection.ignored == (bare, stamped)


def test_none_active_when_none_or_all_are_being_deleted() -> None:
    assert select_active([]).active is None
    going = _policy("a", "2026-01-01T00:00:00Z", deleting=True)
    selection = select_active([going])
    assert selection.active is None and selection.deleting == (going,)
