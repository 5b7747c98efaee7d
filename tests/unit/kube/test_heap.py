"""The heap keeper hides the live objects from the cycle collector, and still collects
the cycles that became garbage once its period is up."""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import weakref
from collections.abc import Iterator

import pytest

from gpuop.kube.heap import HeapKeeper, keep_heap


class Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_tick_freezes_what_is_alive() -> None:
    keeper = HeapKeeper(full_every=60.0, clock=Clock())
    kept = [{"metadata": {"name": f"node-{i}"}} for i in range(100)]
    keeper.tick()
    assert gc.get_freeze_count() >= len(kept)


def test_a_frozen_cycle_is_collected_when_the_full_collection_is_due() -> None:
    clock = Clock()
    keeper = HeapKeeper(full_every=60.0, clock=clock)
    cycle = Cycle()
    alive = weakref.ref(cycle)
    keeper.tick()
    del cycle
    gc.collect()
    assert alive() is not None  # frozen: out of the collector's sight
    clock.now += 59
    keeper.tick()
    assert alive() is not None
    clock.now += 1
    keeper.tick()
    assert alive() is None
    assert gc.get_freeze_count() > 0  # the survivors are frozen again


def test_the_heap_is_unfrozen_when_the_keeper_stops() -> None:
    async def run() -> None:
        task = asyncio.ensure_future(keep_heap(HeapKeeper(), every=0.01))
        await asyncio.sleep(0.05)
        assert gc.get_freeze_count() > 0
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(run())
    assert gc.get_freeze_count() == 0


def test_each_full_collection_is_logged_with_its_time(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    keeper = HeapKeeper(full_every=60.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="gpuop.kube"):
        keeper.tick()
        assert not caplog.records
        clock.now += 60
        keeper.tick()
    (record,) = caplog.records
    assert re.fullmatch(
        r"heap: full collection, \d+ unreachable objects, in \d+\.\d{3} s", record.getMessage()
    )
