"""Fault tests run last in a session.

Right after a kube-apiserver restart, requests are denied (403) for a moment, until its
RBAC caches have synced; the operator and simulator retry and recover. Those entries in
the audit log would read as denials to the least-privilege test
(`test_operator_sim.py::test_shipped_rbac_is_exactly_what_the_operator_used`), which
reads the whole session's log, so the fault tests (the fault sequence, and the driver
upgrade that kills the API server mid-rollout) are moved behind every other test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    faults = [item for item in items if HERE in Path(str(item.path)).resolve().parents]
    if faults:
        others = [item for item in items if item not in faults]
        items[:] = others + faults
