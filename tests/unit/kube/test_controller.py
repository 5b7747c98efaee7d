"""The shared controller loop: read-your-writes, the write bound, and the outcome ladder."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status

from gpuop.kube import controller
from gpuop.kube.controller import (
    BoundedWriter,
    ControllerLoop,
    LoopSettings,
    Outcome,
    Trigger,
    WriteOverlay,
    replace,
    resource_version,
)

log = logging.getLogger("test.controller")


def obj(rv: int | str | None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "n", "labels": labels}
    if rv is not None:
        meta["resourceVersion"] = str(rv)
    return {"metadata": meta}


def test_resource_versions_compare_as_numbers_and_odd_ones_as_zero() -> None:
    assert resource_version(obj(12)) == 12
    assert resource_version(obj(None)) == 0
    assert resource_version(obj("abc")) == 0
    assert resource_version({}) == 0
    assert resource_version(None) == 0


def test_the_overlay_shows_a_write_until_the_informer_reaches_its_version() -> None:
    overlay: WriteOverlay[dict[str, Any], dict[str, Any]] = WriteOverlay(replace)
    overlay.wrote("n", 11, obj(11, a="written"))
    stale = obj(10, a="old")
    assert overlay.view("n", stale, 10)["metadata"]["labels"] == {"a": "written"}
    assert "n" in overlay
    caught_up = obj(11, a="written")
    assert overlay.view("n", caught_up, 11) is caught_up
    assert "n" not in overlay
    # Once forgotten, an older copy is the truth again (the write was taken back since).
    assert overlay.view("n", stale, 10) is stale


def test_the_informer_catching_up_forgets_a_write_without_a_pass() -> None:
    overlay: WriteOverlay[dict[str, Any], dict[str, Any]] = WriteOverlay(replace)
    overlay.wrote("n", 11, obj(11, a="written"))
    assert not overlay.caught_up("n", 10)
    assert "n" in overlay
    assert not overlay.caught_up("n", 12)  # past the write: someone else's version
    assert "n" not in overlay
    assert not overlay.caught_up("absent", 3)
    assert len(overlay) == 0
    overlay.wrote("n", 13, obj(13, a="written"))
    assert overlay.caught_up("n", 13)  # the write itself, come back
    assert "n" not in overlay


def test_a_newer_write_by_someone_else_wins_over_ours() -> None:
    overlay: WriteOverlay[dict[str, Any], str] = WriteOverlay(
        lambda stored, digest: {**stored, "digest": digest}
    )
    overlay.wrote("ds", 20, "ours")
    assert overlay.view("ds", {"digest": "old"}, 19) == {"digest": "ours"}
    theirs = {"digest": "theirs"}
    assert overlay.view("ds", theirs, 25) is theirs
    assert len(overlay) == 0


def test_over_views_every_stored_object_and_forgets_writes_to_deleted_ones() -> None:
    overlay: WriteOverlay[dict[str, Any], dict[str, Any]] = WriteOverlay(replace)
    overlay.wrote("a", 5, obj(5, x="1"))
    overlay.wrote("gone", 7, obj(7))
    seen = overlay.over({"a": obj(4), "b": obj(3)}, resource_version)
    assert seen["a"]["metadata"]["labels"] == {"x": "1"}
    assert seen["b"] == obj(3)
    assert "gone" not in overlay and "a" in overlay


def test_the_writer_keeps_to_its_bound_and_raises_after_all_ended() -> None:
    async def main() -> tuple[int, list[int]]:
        writer = BoundedWriter(3)
        in_flight = 0
        most = 0
        done: list[int] = []

        async def write(i: int) -> None:
            nonlocal in_flight, most
            in_flight += 1
            most = max(most, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            if i == 2:
                raise ValueError("refused")
            done.append(i)

        with pytest.raises(ValueError):
            await writer.gather(lambda i=i: write(i) for i in range(10))  # type: ignore[misc]
        return most, done

    most, done = asyncio.run(main())
    assert most == 3
    assert sorted(done) == [i for i in range(10) if i != 2]


def test_the_writer_keeps_only_its_bound_of_tasks_alive() -> None:
    """Ten thousand writes are taken one by one by the workers, not made tasks at once."""

    async def main() -> int:
        writer = BoundedWriter(4)
        most_tasks = 0

        async def write() -> None:
            nonlocal most_tasks
            most_tasks = max(most_tasks, len(asyncio.all_tasks()))
            await asyncio.sleep(0)

        await writer.gather(write for _ in range(10_000))
        return most_tasks

    # The main task and the four workers.
    assert asyncio.run(main()) <= 5


@dataclass
class Script:
    """A reconciler whose passes play a script of outcomes (or errors to raise)."""

    steps: list[Outcome | BaseException]
    resyncs: list[bool] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)
    finished: asyncio.Event = field(default_factory=asyncio.Event)

    async def snapshot(self, resync: bool) -> int:
        self.resyncs.append(resync)
        return len(self.resyncs)

    def decide(self, snapshot: int) -> int:
        return snapshot

    async def execute(self, decision: int) -> Outcome:
        if not self.steps:
            self.finished.set()
            return Outcome()
        step = self.steps.pop(0)
        if isinstance(step, BaseException):
            raise step
        return step

    def failed(self, error: BaseException) -> None:
        self.failures.append(error)


def run_script(
    script: Script, monkeypatch: pytest.MonkeyPatch, resync: float = 3600
) -> ControllerLoop[int, int]:
    monkeypatch.setattr(controller, "API_RETRY_SECONDS", 0.0)
    monkeypatch.setattr(controller, "ERROR_RETRY_SECONDS", 0.0)
    settings = LoopSettings(what="test pass", resync_seconds=resync, debounce_seconds=0.0)

    async def main() -> ControllerLoop[int, int]:
        trigger = Trigger()
        loop = ControllerLoop(script, trigger, settings, log)
        trigger.set()
        task = asyncio.ensure_future(loop.run())
        await asyncio.wait_for(script.finished.wait(), timeout=5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return loop

    return asyncio.run(main())


def test_failed_passes_are_counted_reported_and_retried(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    refused = ApiError(status=Status(code=429, reason="TooManyRequests", message="slow down"))
    bug = RuntimeError("bug")
    script = Script([refused, bug])
    loop = run_script(script, monkeypatch)
    # Each failure starts another pass without a change; the third finds the script done.
    assert script.failures == [refused, bug]
    assert loop.failures == 2 and loop.passes == 1
    assert "test pass failed: 429 TooManyRequests: slow down" in caplog.text
    assert any(r.exc_info and r.exc_info[0] is RuntimeError for r in caplog.records)


def test_a_pass_that_wrote_asks_for_another_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script([Outcome(again=True), Outcome(again=True)])
    loop = run_script(script, monkeypatch)
    assert loop.passes == 3 and loop.failures == 0


def test_a_requeue_wakes_the_loop_without_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script([Outcome(requeue_after=0.01)])
    loop = run_script(script, monkeypatch)
    assert loop.passes == 2
    assert script.resyncs == [False, False]


def test_the_resync_period_wakes_the_loop_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script([Outcome()])
    run_script(script, monkeypatch, resync=0.01)
    assert script.resyncs == [False, True]


def test_a_trigger_set_as_the_loop_is_cancelled_does_not_keep_it_waiting() -> None:
    async def main() -> None:
        trigger = Trigger()
        waiting = asyncio.ensure_future(trigger.wait(3600))
        await asyncio.sleep(0)
        trigger.set()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(waiting, timeout=1)

    asyncio.run(main())


def test_decide_seconds_counts_only_the_decision_not_the_reads() -> None:
    @dataclass
    class SlowReads(Script):
        async def snapshot(self, resync: bool) -> int:
            await asyncio.sleep(0.2)  # reading the API is not deciding
            return 1

    script = SlowReads([])
    settings = LoopSettings(what="test pass", resync_seconds=3600, debounce_seconds=0.0)
    loop = ControllerLoop(script, Trigger(), settings, log)
    asyncio.run(loop.run_pass())
    assert loop.decide_seconds < 0.1
