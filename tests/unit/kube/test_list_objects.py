"""A list is reduced object by object as its pages arrive, never held whole."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from gpuop.kube import ops


class PagedListing:
    """lightkube's list: async iteration over pages, the resourceVersion known at the end."""

    def __init__(self, objects: list[dict[str, Any]], alive: list[int]) -> None:
        self.objects = objects
        self.alive = alive
        self.resourceVersion = ""

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        for obj in self.objects:
            self.alive.append(1)
            yield obj
        self.resourceVersion = "42"


class PagedClient:
    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.alive: list[int] = []

    def list(self, *_args: Any, **_kwargs: Any) -> PagedListing:
        return PagedListing(self.objects, self.alive)


def test_each_object_is_reduced_as_it_arrives() -> None:
    nodes = [{"metadata": {"name": f"n{i}", "labels": {"big": "x" * 100}}} for i in range(5)]
    client = PagedClient(nodes)
    seen_when_kept: list[int] = []

    def keep(obj: dict[str, Any]) -> str | None:
        seen_when_kept.append(len(client.alive))
        name = str(obj["metadata"]["name"])
        return None if name == "n2" else name

    version, kept = asyncio.run(ops.list_objects(client, "Node", keep))  # type: ignore[arg-type]
    assert version == "42"
    assert kept == ["n0", "n1", "n3", "n4"]
    # keep ran on each object before the next one was fetched.
    assert seen_when_kept == [1, 2, 3, 4, 5]
