"""One synchronous facade over the asynchronous API calls.

Every request gpuop sends is written once, as a coroutine of `gpuop.kube.ops` over an
`AsyncClient`. The lab, the simulator's drift command, the benches and the tests call some
of them from synchronous code with a synchronous `Client`; `blocking(op)` is that call. It
hands the coroutine an adapter whose methods answer at once through the synchronous client,
so the coroutine runs to its end without an event loop and never suspends: the same body,
the same error translation, no second copy of an operation to drift from the first.

    get_object_sync = blocking(get_object)
    get_object_sync(client, "Node", "a10-vgpu")
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from gpuop.kube.client import KubeClient, SyncKubeClient

P = ParamSpec("P")
T = TypeVar("T")


class _AnsweredListing:
    """A synchronous list seen as an async iterator (what `AsyncClient.list` returns)."""

    def __init__(self, items: Iterable[Any]) -> None:
        self._items: Iterator[Any] = iter(items)
        self._items_answer = items

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    @property
    def resourceVersion(self) -> str:
        return str(getattr(self._items_answer, "resourceVersion", ""))

    async def __anext__(self) -> Any:
        try:
            return next(self._items)
        except StopIteration:
            raise StopAsyncIteration from None


class _AnsweredClient:
    """The `AsyncClient` calls `ops` makes, each answered at once by a `Client`."""

    def __init__(self, client: SyncKubeClient) -> None:
        self._client = client

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.get(*args, **kwargs)

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.create(*args, **kwargs)

    async def patch(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.patch(*args, **kwargs)

    async def apply(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.apply(*args, **kwargs)

    async def replace(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.replace(*args, **kwargs)

    async def delete(self, *args: Any, **kwargs: Any) -> Any:
        return self._client.delete(*args, **kwargs)

    def list(self, *args: Any, **kwargs: Any) -> _AnsweredListing:
        return _AnsweredListing(self._client.list(*args, **kwargs))

    def watch(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise RuntimeError("a watch waits for changes: it needs an asynchronous client")

    async def close(self) -> None:
        return None


def _run_to_end(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (all its awaits answered at once)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    coroutine.close()
    name = getattr(coroutine, "__qualname__", "an API call")
    raise RuntimeError(f"{name} waited on something a synchronous Client cannot answer")


def blocking(
    op: Callable[Concatenate[KubeClient, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SyncKubeClient, P], T]:
    """`op` called with a synchronous client, returning its result."""

    @functools.wraps(op)
    def call(client: SyncKubeClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        answered: KubeClient = _AnsweredClient(client)
        return _run_to_end(op(answered, *args, **kwargs))

    return call


__all__ = ["blocking"]
