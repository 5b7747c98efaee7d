"""Waiting on a real cluster: poll until a check holds, retry a call while the API is down.

`wait_until` is how the end-to-end tests wait for convergence (the last value seen goes
into the failure message), `wait_for` the same for a check whose answer is the value; `retry_api` runs one client call through an API server restart
(the fault tests and `bench/faults.py` kill it on purpose): it retries while the server
gives no answer or answers 500/503/504, and raises any other answer at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from lightkube.core.exceptions import ApiError

from gpuop.kube import API_ERRORS
from gpuop.kube.errors import Refused, status_code

T = TypeVar("T")

RETRIED_STATUSES = (500, 503, 504)


def wait_until(
    check: Callable[[], tuple[bool, Any]],
    timeout: float = 90,
    what: str = "",
    interval: float = 0.3,
) -> Any:
    """Poll `check` (done, value) until done; AssertionError with the last value at timeout."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        done, last = check()
        if done:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}: last seen {last}")


def wait_for(
    check: Callable[[], T | None], what: str, timeout: float = 120.0, every: float = 0.5
) -> T:
    """Poll `check` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every)


def retry_api(
    action: Callable[[], T],
    timeout: float = 60,
    errors: tuple[type[BaseException], ...] = API_ERRORS,
) -> T:
    """Run one client call, retrying while the API server is down (for up to `timeout` s)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return action()
        except errors as exc:
            # A Kubernetes Status answer (not a plain-text one, such as a 404 from an API
            # group not served yet) that asking again will not change.
            answer = exc.__cause__ if isinstance(exc, Refused) else exc
            if isinstance(answer, ApiError) and status_code(exc) not in RETRIED_STATUSES:
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
