"""Running controllers in a test: background tasks that stop with the test, and waiting
for a condition instead of for a number of passes."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any


@contextlib.asynccontextmanager
async def running(*work: Coroutine[Any, Any, Any]) -> AsyncIterator[list[asyncio.Task[Any]]]:
    """Run `work` in the background for the block; a task that failed fails the test."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result


async def eventually(
    check: Callable[[], Any], timeout: float = 10.0, what: str = "the condition"
) -> Any:
    """Poll `check()` until it returns something true; that value. Fails after `timeout`."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")
