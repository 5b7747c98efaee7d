"""gpuop's error tree, made from what the client raised: callers branch on classes."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from gpuop.kube import ops
from gpuop.kube.errors import (
    Conflict,
    Forbidden,
    Invalid,
    KubeApiError,
    NotFound,
    Refused,
    TooManyRequests,
    Unreachable,
    describe,
    failure,
    status_code,
    translated,
)
from kit.fake_kube import FakeKube


def _answer(code: int, reason: str = "", message: str = "m") -> ApiError:
    return ApiError(status=Status(code=code, reason=reason, message=message))


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (404, NotFound),
        (403, Forbidden),
        (409, Conflict),
        (422, Invalid),
        (429, TooManyRequests),
        (500, Refused),
    ],
)
def test_each_answer_becomes_its_class(code: int, kind: type[Refused]) -> None:
    error = translated(_answer(code, "Why", "the API server's words"))
    assert type(error) is kind and error.code == code
    assert error.detail == "the API server's words" and error.reason == "Why"
    assert str(error) == f"{code} Why: the API server's words" == describe(error)
    assert status_code(error) == code


def test_no_answer_is_unreachable() -> None:
    error = translated(httpx2.ConnectError("connection refused"))
    assert isinstance(error, Unreachable) and error.code is None
    assert failure(error).startswith("cannot reach the cluster")


def test_a_plain_text_answer_keeps_its_status() -> None:
    request = httpx2.Request("GET", "https://api/apis/nvidia.com/v1/clusterpolicies")
    response = httpx2.Response(404, text="404 page not found", request=request)
    error = translated(httpx2.HTTPStatusError("404", request=request, response=response))
    assert isinstance(error, NotFound)


def test_the_calls_of_ops_raise_gpuops_errors_not_the_clients() -> None:
    fake = FakeKube([])
    fake.fail("patch", "Node", 409)

    async def main() -> KubeApiError:
        with pytest.raises(KubeApiError) as raised:
            await ops.patch_node_labels(fake.client, "absent", {"x": "1"})
        return raised.value

    error = asyncio.run(main())
    assert isinstance(error, Conflict) and not isinstance(error, ApiError)
    assert isinstance(error.__cause__, ApiError)
