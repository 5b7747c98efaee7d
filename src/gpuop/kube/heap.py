"""Keeps CPython's cycle collector off the cluster a controller holds.

A controller keeps what it watches in memory: at 10,000 nodes that is over a million
dicts and strings, read from the API and long-lived. CPython's cycle collector walks every
one of them in each full collection, and a controller that plans and writes allocates
enough to start one every few passes: at 10,000 nodes each took 60 ms and more on a quiet
2-core machine, and a one-node change waited behind it.

Objects decoded from the API hold no reference cycles, so reference counting frees them
when a newer version replaces them; the collector has nothing to find there. So, every
second, what is alive is moved out of the collector's sight (`gc.freeze`, which costs
nothing), and every few minutes it is put back and collected once, so that the few cycles
that do become garbage (an exception and its traceback) are not kept for good.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("gpuop.kube")

FREEZE_SECONDS = 1.0
FULL_COLLECTION_SECONDS = 300.0


@dataclass
class HeapKeeper:
    """Freezes the heap on each `tick`, and collects it whole once `full_every` has passed."""

    full_every: float = FULL_COLLECTION_SECONDS
    clock: Callable[[], float] = time.monotonic
    next_full: float = field(init=False)

    def __post_init__(self) -> None:
        self.next_full = self.clock() + self.full_every

    def tick(self) -> None:
        now = self.clock()
        if now >= self.next_full:
            self.next_full = now + self.full_every
            started = time.monotonic()
            gc.unfreeze()
            found = gc.collect()
            log.info(
                "heap: full collection, %d unreachable objects, in %.3f s",
                found,
                time.monotonic() - started,
            )
        gc.freeze()


async def keep_heap(keeper: HeapKeeper, every: float = FREEZE_SECONDS) -> None:
    """`keeper.tick()` every `every` seconds, until cancelled; the heap is unfrozen after."""
    try:
        while True:
            keeper.tick()
            await asyncio.sleep(every)
    finally:
        gc.unfreeze()
