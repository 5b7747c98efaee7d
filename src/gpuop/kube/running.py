"""How gpuop's controllers run: one asyncio loop, their tasks supervised, a clean stop.

The operator and the node simulator are each a few informers (`gpuop.kube.informer`) and
one loop that writes. This module runs such a set of tasks until SIGINT or SIGTERM, stops
them all if one of them fails (so a broken controller exits instead of idling), and retries
the calls a controller makes at start while the API server is briefly away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from gpuop.kube import KubeError
from gpuop.kube.errors import API_ERRORS
from gpuop.kube.errors import describe as describe_api_error
from gpuop.kube.heap import FULL_COLLECTION_SECONDS, HeapKeeper, keep_heap

log = logging.getLogger("gpuop.kube")

T = TypeVar("T")

START_RETRY_SECONDS = 30.0


async def supervise(*work: Coroutine[Any, Any, None]) -> None:
    """Run the coroutines together until cancelled; the first to fail cancels the rest."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def with_retries(call: Callable[[], Awaitable[T]], what: str = "the API server") -> T:
    """`call()`, retried while the API refuses or cannot be reached, for up to 30 s."""
    deadline = time.monotonic() + START_RETRY_SECONDS
    delay = 0.5
    while True:
        try:
            return await call()
        except API_ERRORS as exc:
            if time.monotonic() + delay > deadline:
                raise KubeError(f"cannot reach {what}: {describe_api_error(exc)}") from exc
            log.warning("cannot reach %s yet (%s); retrying", what, describe_api_error(exc))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)


def run_controller(
    main: Coroutine[Any, Any, None], full_collection_seconds: float = FULL_COLLECTION_SECONDS
) -> None:
    """Run `main` until it returns, fails, or SIGINT/SIGTERM stops it, with the cycle
    collector kept off the objects it holds (`gpuop.kube.heap`): the whole heap is collected
    every `full_collection_seconds`."""

    async def until_stopped() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        task = asyncio.ensure_future(main)
        stopper = asyncio.ensure_future(stop.wait())
        heap = asyncio.ensure_future(keep_heap(HeapKeeper(full_collection_seconds)))
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            heap.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]

    asyncio.run(until_stopped())
