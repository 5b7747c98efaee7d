"""Running controllers: a failing task stops the rest; start-up calls retry, then say why."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from gpuop.kube import KubeError, describe_api_error, running


def test_the_first_failing_task_cancels_the_others_and_its_error_surfaces() -> None:
    cancelled = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def broken() -> None:
        await asyncio.sleep(0)
        raise RuntimeError("loop broke")

    async def main() -> None:
        with pytest.raises(RuntimeError, match="loop broke"):
            await running.supervise(forever(), broken())
        assert cancelled.is_set()

    asyncio.run(main())


def test_start_up_calls_retry_while_the_api_is_away_then_name_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(running, "START_RETRY_SECONDS", 0.6)
    calls = 0

    async def refused() -> bool:
        nonlocal calls
        calls += 1
        raise httpx2.ConnectError("[Errno 111] Connection refused")

    with pytest.raises(KubeError, match="cannot reach the API server: ConnectError"):
        asyncio.run(running.with_retries(refused))
    assert calls >= 2


def test_start_up_calls_return_once_the_api_answers() -> None:
    answers = [httpx2.ConnectError("refused"), True]

    async def flaky() -> bool:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert asyncio.run(running.with_retries(flaky)) is True


def test_api_errors_read_as_one_line() -> None:
    error = ApiError(status=Status(code=403, reason="Forbidden", message="nodes is forbidden"))
    assert describe_api_error(error) == "403 Forbidden: nodes is forbidden"
    assert describe_api_error(httpx2.ConnectError("refused")) == "ConnectError: refused"
