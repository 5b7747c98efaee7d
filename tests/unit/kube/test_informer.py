"""The informer's list/watch protocol, against a scripted API: resume, relist, filtering.

The API here is a script of what list and watch return, not a server; the end-to-end
suites (tests/e2e/faults) kill the real API server and expire real watches.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx2
import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from gpuop.kube import informer as informer_module
from gpuop.kube.informer import Informer, object_key


def node(name: str, rv: int, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(rv), "labels": labels}}


def gone() -> ApiError:
    return ApiError(status=Status(code=410, message="too old resource version", reason="Gone"))


class ScriptedApi:
    """Each list returns the next listing; each watch plays the next script of events."""

    def __init__(
        self,
        listings: list[tuple[str, list[dict[str, Any]]]],
        watches: list[list[tuple[str, dict[str, Any]] | BaseException]],
    ) -> None:
        self.listings = listings
        self.watches = watches
        self.watched_from: list[str] = []
        self.done = asyncio.Event()

    async def list_objects(
        self,
        client: object,
        kind: str,
        keep: Callable[[dict[str, Any]], Any],
        labels: Mapping[str, str | None] | None,
        namespace: str | None,
    ) -> tuple[str, list[Any]]:
        version, objects = self.listings.pop(0)
        kept = (keep(obj) for obj in objects)
        return version, [value for value in kept if value is not None]

    async def watch_objects(
        self,
        client: object,
        kind: str,
        labels: Mapping[str, str | None] | None,
        namespace: str | None,
        resource_version: str,
        server_timeout: int,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        self.watched_from.append(resource_version)
        if not self.watches:
            self.done.set()
            await asyncio.Event().wait()
        for step in self.watches.pop(0):
            if isinstance(step, BaseException):
                raise step
            yield step


def run(api: ScriptedApi, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> tuple[Any, list[Any]]:
    monkeypatch.setattr(informer_module.ops, "list_objects", api.list_objects)
    monkeypatch.setattr(informer_module.ops, "watch_objects", api.watch_objects)
    monkeypatch.setattr(informer_module, "RETRY_DELAYS_SECONDS", (0.0,))
    changes: list[tuple[str, Any]] = []

    async def main() -> Informer[Any]:
        informer: Informer[Any] = Informer(
            object(),
            "Node",
            kwargs.get("slim", lambda obj: obj["metadata"]["resourceVersion"]),
            lambda key, value: changes.append((key, value)),
            unchanged=kwargs.get("unchanged"),
        )
        task = asyncio.create_task(informer.run())
        await asyncio.wait_for(api.done.wait(), timeout=5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return informer

    return asyncio.run(main()), changes


def test_list_then_watch_applies_every_event(monkeypatch: pytest.MonkeyPatch) -> None:
    api = ScriptedApi(
        [("10", [node("a", 5), node("b", 6)])],
        [[("MODIFIED", node("a", 11)), ("ADDED", node("c", 12)), ("DELETED", node("b", 13))]],
    )
    informer, changes = run(api, monkeypatch)
    assert informer.synced.is_set()
    assert informer.store == {"a": "11", "c": "12"}
    assert changes == [("a", "5"), ("b", "6"), ("a", "11"), ("c", "12"), ("b", None)]
    assert api.watched_from == ["10", "13"]
    assert informer.relists == 1


def test_a_dropped_stream_resumes_from_the_last_version_without_relisting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = ScriptedApi(
        [("10", [node("a", 5)])],
        [
            [("MODIFIED", node("a", 11)), httpx2.ReadError("connection reset")],
            [httpx2.ConnectError("connection refused")],
            [("MODIFIED", node("a", 14))],
        ],
    )
    informer, _ = run(api, monkeypatch)
    assert api.watched_from == ["10", "11", "11", "14"]
    assert informer.relists == 1
    assert informer.store == {"a": "14"}


def test_410_gone_relists_and_reports_what_disappeared_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = ScriptedApi(
        [("10", [node("a", 5), node("b", 6)]), ("40", [node("a", 30), node("d", 35)])],
        [[gone()]],
    )
    informer, changes = run(api, monkeypatch)
    assert informer.relists == 2
    assert informer.store == {"a": "30", "d": "35"}
    assert ("b", None) in changes
    assert changes[-3:] == [("b", None), ("a", "30"), ("d", "35")]
    assert api.watched_from == ["10", "40"]


def test_objects_slimmed_to_none_are_not_kept_and_leave_when_they_stop_mattering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def gpu_only(obj: dict[str, Any]) -> str | None:
        return obj["metadata"]["name"] if obj["metadata"]["labels"].get("gpu") else None

    api = ScriptedApi(
        [("10", [node("a", 5, gpu="yes"), node("b", 6)])],
        [[("MODIFIED", node("b", 11)), ("MODIFIED", node("a", 12)), ("DELETED", node("b", 13))]],
    )
    informer, changes = run(api, monkeypatch, slim=gpu_only)
    assert informer.store == {}
    assert changes == [("a", "a"), ("a", None)]


def test_an_event_that_changes_nothing_read_is_stored_without_waking_the_controller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def labels_and_version(obj: dict[str, Any]) -> tuple[str, dict[str, str]]:
        return obj["metadata"]["resourceVersion"], obj["metadata"]["labels"]

    api = ScriptedApi(
        [("10", [node("a", 5, gpu="yes")])],
        [[("MODIFIED", node("a", 11, gpu="yes")), ("MODIFIED", node("a", 12, gpu="no"))]],
    )
    informer, changes = run(
        api,
        monkeypatch,
        slim=labels_and_version,
        unchanged=lambda stored, new: stored[1] == new[1],
    )
    assert changes == [("a", ("5", {"gpu": "yes"})), ("a", ("12", {"gpu": "no"}))]
    assert informer.store == {"a": ("12", {"gpu": "no"})}
    assert api.watched_from == ["10", "12"]


def test_other_api_errors_back_off_and_watch_again(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = ApiError(status=Status(code=500, message="etcdserver: leader changed"))
    api = ScriptedApi([("10", [])], [[refused], [("ADDED", node("a", 12))]])
    informer, _ = run(api, monkeypatch)
    assert api.watched_from == ["10", "10", "12"]
    assert informer.store == {"a": "12"}


def test_namespaced_objects_are_keyed_by_namespace_and_name() -> None:
    assert object_key({"metadata": {"name": "p", "namespace": "ns"}}) == "ns/p"
    assert object_key({"metadata": {"name": "n"}}) == "n"


def plain_text_not_found() -> httpx2.HTTPStatusError:
    """The API server's answer for a kind whose CRD is not installed: `404 page not found`
    as text/plain, which lightkube leaves an HTTPStatusError (there is no Status to decode)."""
    request = httpx2.Request("GET", "https://apiserver/apis/nvidia.com/v1alpha1/gpuclusters")
    response = httpx2.Response(
        404, text="404 page not found\n", headers={"content-type": "text/plain"}, request=request
    )
    return httpx2.HTTPStatusError("404 Not Found", request=request, response=response)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(plain_text_not_found, id="plain-text"),
        pytest.param(
            lambda: ApiError(status=Status(code=404, reason="NotFound", message="not found")),
            id="status",
        ),
    ],
)
def test_a_kind_not_served_is_synced_and_empty(
    monkeypatch: pytest.MonkeyPatch, answer: Any
) -> None:
    lists = 0

    async def list_objects(*_args: Any) -> tuple[str, list[dict[str, Any]]]:
        nonlocal lists
        lists += 1
        raise answer()

    monkeypatch.setattr(informer_module.ops, "list_objects", list_objects)
    monkeypatch.setattr(informer_module, "ABSENT_RETRY_SECONDS", 0.01)

    async def main() -> Informer[Any]:
        informer: Informer[Any] = Informer(
            object(), "GPUCluster", dict, lambda *_: None, may_be_absent=True
        )
        task = asyncio.create_task(informer.run())
        await asyncio.wait_for(informer.synced.wait(), timeout=5)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return informer

    informer = asyncio.run(main())
    assert informer.store == {}
    assert lists >= 2  # listed again later, in case the CRD is installed meanwhile
