"""What gpuop asks of a Kubernetes client: the protocols every API call is written against.

`gpuop.kube.ops` takes a `KubeClient`, not a client library's class, so three things stand
behind the same calls: lightkube's `AsyncClient` (what `gpuop.kube.async_client` makes),
a synchronous `Client` answered through `gpuop.kube.blocking`, and the in-memory fake API
of the unit tests (`tests/kit/fake_kube.py`). Each method takes the library's arguments
(`res, name, *, namespace=...`) and the objects it returns are turned into plain dicts in
`ops` before anyone else sees them; failures are the library's, translated in `ops` into
`gpuop.kube.errors`.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any, Protocol


class Listing(Protocol):
    """A list answer: its items, then (once iterated) the list's resourceVersion."""

    def __aiter__(self) -> AsyncIterator[Any]: ...

    @property
    def resourceVersion(self) -> str: ...


class KubeClient(Protocol):
    """The asynchronous calls gpuop makes (lightkube's `AsyncClient` is one)."""

    async def get(self, *args: Any, **kwargs: Any) -> Any: ...

    async def create(self, *args: Any, **kwargs: Any) -> Any: ...

    async def patch(self, *args: Any, **kwargs: Any) -> Any: ...

    async def apply(self, *args: Any, **kwargs: Any) -> Any: ...

    async def replace(self, *args: Any, **kwargs: Any) -> Any: ...

    async def delete(self, *args: Any, **kwargs: Any) -> Any: ...

    def list(self, *args: Any, **kwargs: Any) -> Listing: ...

    def watch(self, *args: Any, **kwargs: Any) -> AsyncIterable[Any]: ...

    async def close(self) -> None: ...


class SyncKubeClient(Protocol):
    """The same calls, answered at once (lightkube's `Client` is one)."""

    def get(self, *args: Any, **kwargs: Any) -> Any: ...

    def create(self, *args: Any, **kwargs: Any) -> Any: ...

    def patch(self, *args: Any, **kwargs: Any) -> Any: ...

    def apply(self, *args: Any, **kwargs: Any) -> Any: ...

    def replace(self, *args: Any, **kwargs: Any) -> Any: ...

    def delete(self, *args: Any, **kwargs: Any) -> Any: ...

    def list(self, *args: Any, **kwargs: Any) -> Iterable[Any]: ...


__all__ = ["KubeClient", "Listing", "SyncKubeClient"]
