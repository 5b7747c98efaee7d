"""`blocking`: the asynchronous API calls, run to their end with a synchronous client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lightkube import AsyncClient

from gpuop.kube import ops
from gpuop.kube.blocking import blocking
from gpuop.kube.errors import Conflict, NotFound
from kit.fake_kube import api_error


class SyncClient:
    """Answers like lightkube's `Client`: at once, raising its `ApiError`."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.calls: list[tuple[str, str]] = []

    def get(self, res: Any, name: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("get", name))
        if name not in self.objects:
            raise api_error(404, f"{name} not found")
        return self.objects[name]

    def create(self, obj: Any, **kwargs: Any) -> Any:
        raise api_error(409, "exists")

    def list(self, res: Any, **kwargs: Any) -> list[dict[str, Any]]:
        return list(self.objects.values())


def test_an_async_operation_answers_through_a_sync_client() -> None:
    node = {"kind": "Node", "metadata": {"name": "a"}}
    client = SyncClient({"a": node})
    assert ops.get_object_sync(client, "Node", "a") == node  # type: ignore[arg-type]
    assert ops.get_object_sync(client, "Node", "b") is None  # type: ignore[arg-type]
    assert ops.list_nodes_sync(client) == [node]  # type: ignore[arg-type]
    assert client.calls == [("get", "a"), ("get", "b")]


def test_client_errors_come_back_as_gpuop_errors() -> None:
    client = SyncClient({})
    with pytest.raises(NotFound):
        ops.get_pod_sync(client, "p", "ns")  # type: ignore[arg-type]
    with pytest.raises(Conflict):
        ops.create_object_sync(
            client, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}}
        )  # type: ignore[arg-type]


def test_an_operation_that_really_waits_is_refused_not_hung() -> None:
    async def waits(client: AsyncClient) -> int:
        await asyncio.sleep(0)
        return 1

    with pytest.raises(RuntimeError, match="cannot answer"):
        blocking(waits)(SyncClient({}))  # type: ignore[arg-type]
