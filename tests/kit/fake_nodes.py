"""The Node object every generated corpus posts: a node kwok plays, Ready on creation."""

from __future__ import annotations

from typing import Any

__all__ = ["fake_node"]


def fake_node(
    name: str,
    labels: dict[str, str],
    allocatable: dict[str, str],
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Node kwok manages (``kwok.x-k8s.io/node: fake``), its capacity its allocatable."""
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }
    if spec is not None:
        node["spec"] = spec
    return node
