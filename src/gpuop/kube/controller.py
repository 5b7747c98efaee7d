"""One controller loop: trigger, debounce, resync, read-your-writes, bounded writes, outcomes.

The operator and the node simulator are the same machine with different decisions: informers
poke a trigger, one loop waits for it (or for the resync period), waits a little longer so a
burst of watch events becomes one pass, takes a snapshot of what the informers hold, decides
what to write, and writes it. This module is that machine; each controller supplies only a
`Reconciler`:

- `snapshot(resync)`: read what the pass needs (the informers' stores, seen through the
  controller's `WriteOverlay`s, and whatever it reads from the API per pass);
- `decide(snapshot)`: what to write, without I/O;
- `execute(decision)`: the writes (through a `BoundedWriter`), and an `Outcome` saying what the
  loop does next;
- `failed(error)`: what the controller does when a pass raised (count it, forget what it
  thought was done).

`ControllerLoop.handle_outcome` is the one place a pass's result becomes "sleep, retry,
count": a refused or unanswered API request is retried after a second, any other failure
after two, each doubling while failures come in a row (up to a minute), and a successful
pass may ask for another one at once (its own writes come back as watch events and a
follow-up pass confirms the fixed point) or after a delay (a wait that ends without an
event: a status write held back, a driver upgrade's timeout, an object's backoff).
`ObjectBackoff` keeps the per-object side: an object the API server refuses is not sent
again until its own backoff ends, so one bad object neither spins the loop nor fails the
passes of the others.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from gpuop.kube.errors import API_ERRORS
from gpuop.kube.errors import describe as describe_api_error

S = TypeVar("S")
D = TypeVar("D")
T = TypeVar("T")
W = TypeVar("W")

API_RETRY_SECONDS = 1.0
ERROR_RETRY_SECONDS = 2.0
RETRY_CAP_SECONDS = 60.0


def resource_version(obj: Mapping[str, Any] | None) -> int:
    """An object's `metadata.resourceVersion` as a number (0 when absent or not a number).

    The API server documents resource versions as opaque; every server gpuop meets (etcd's
    revision) hands out increasing integers, and comparing them is how a controller tells
    its own write from an older copy still in an informer's store.
    """
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def replace(_stored: T, written: T) -> T:
    """A `WriteOverlay` merge for writes whose answer is the whole (slimmed) object."""
    return written


class WriteOverlay(Generic[T, W]):
    """Read your own writes: what this process wrote, laid over an informer's copy.

    A write's answer carries the object's new resourceVersion, but the informer learns of it
    only when the watch event arrives. Until the stored copy has reached that version, `view`
    shows the stored copy with the write laid over it (`merge(stored, written)`; with
    `replace`, the written object itself), so a pass started in between does not write the
    same thing again. Once the informer has caught up (or moved past: someone else wrote
    since), the entry is forgotten and the stored copy is the truth.
    """

    def __init__(self, merge: Callable[[T, W], T]) -> None:
        self._merge = merge
        self._written: dict[str, tuple[int, W]] = {}

    def wrote(self, key: str, version: int, written: W) -> None:
        self._written[key] = (version, written)

    def view(self, key: str, stored: T, stored_version: int) -> T:
        entry = self._written.get(key)
        if entry is not None and entry[0] > stored_version:
            return self._merge(stored, entry[1])
        self._written.pop(key, None)
        return stored

    def over(self, stored: Mapping[str, T], version: Callable[[T], int]) -> dict[str, T]:
        """Every stored object, each seen through this overlay; writes to objects no longer
        stored are forgotten."""
        for key in [k for k in self._written if k not in stored]:
            del self._written[key]
        # A copy of the stored map, then the few written keys: a pass over ten thousand
        # nodes with nothing written pays one dictionary copy, not a call per node.
        seen = dict(stored)
        for key in list(self._written):
            value = stored[key]
            seen[key] = self.view(key, value, version(value))
        return seen

    def forget(self, key: str) -> None:
        self._written.pop(key, None)

    def caught_up(self, key: str, stored_version: int) -> bool:
        """The informer now holds `stored_version` of `key`: a write it reached is forgotten.
        True when that version is the write itself, come back: a pass has seen it already."""
        entry = self._written.get(key)
        if entry is None or entry[0] > stored_version:
            return False
        del self._written[key]
        return entry[0] == stored_version

    def __contains__(self, key: object) -> bool:
        return key in self._written

    def __len__(self) -> int:
        return len(self._written)


class WritesStopped(RuntimeError):
    """A write refused before it was sent: the process no longer leads."""


class BoundedWriter:
    """At most `concurrency` requests of a controller in flight at once.

    A pass on a thousand nodes has a thousand patches to send; sending them together keeps
    a pass short, and the bound keeps the API server's priority and fairness from shedding
    them (a 429 fails the pass).
    """

    def __init__(self, concurrency: int, allowed: Callable[[], bool] | None = None) -> None:
        self._concurrency = max(1, concurrency)
        self._slots = asyncio.Semaphore(self._concurrency)
        self._allowed = allowed

    async def run(self, write: Callable[[], Awaitable[T]]) -> T:
        """`write()`, once a slot is free; refused (`WritesStopped`) when `allowed` says no
        (a leader whose Lease may have lapsed sends nothing)."""
        async with self._slots:
            if self._allowed is not None and not self._allowed():
                raise WritesStopped("this process may not write now (it does not lead)")
            return await write()

    async def gather(self, writes: Iterable[Callable[[], Awaitable[Any]]]) -> None:
        """Run the writes together, bounded; the first error raises once all have ended.

        `concurrency` workers take the writes one by one: ten thousand node patches are
        ten thousand requests, not ten thousand tasks waiting in memory at once."""
        pending = iter(writes)
        errors: list[Exception] = []

        async def worker() -> None:
            for write in pending:
                try:
                    await self.run(write)
                except Exception as exc:
                    errors.append(exc)

        await asyncio.gather(*(worker() for _ in range(self._concurrency)))
        if errors:
            raise errors[0]


@dataclass
class _Attempts:
    version: str
    attempts: int
    retry_at: float


class ObjectBackoff:
    """Per-object exponential backoff, as client-go's workqueue rate limiter keeps it.

    An object whose write failed is not written again before `base * 2**(n-1)` seconds
    (capped at `cap`) after its n-th failure in a row, unless what would be written changed
    (`version`: a new rendering is tried at once); a success forgets it.
    """

    def __init__(
        self, base: float = 1.0, cap: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.base = base
        self.cap = cap
        self.clock = clock
        self._entries: dict[str, _Attempts] = {}

    def failed(self, key: str, version: str) -> float:
        """Count a failure; the seconds until the object may be tried again."""
        entry = self._entries.get(key)
        attempts = entry.attempts + 1 if entry is not None and entry.version == version else 1
        delay = min(self.base * float(2 ** (attempts - 1)), self.cap)
        self._entries[key] = _Attempts(version, attempts, self.clock() + delay)
        return delay

    def succeeded(self, key: str) -> None:
        self._entries.pop(key, None)

    def waiting(self, key: str, version: str) -> bool:
        """Whether this version of the object is still in its backoff."""
        entry = self._entries.get(key)
        return entry is not None and entry.version == version and self.clock() < entry.retry_at

    def keep_only(self, keys: Iterable[str]) -> None:
        """Forget the objects not among `keys` (no longer wanted, or written meanwhile)."""
        wanted = set(keys)
        for key in [k for k in self._entries if k not in wanted]:
            del self._entries[key]

    def next_retry(self) -> float | None:
        """Seconds until the first object's backoff ends; None when none waits."""
        if not self._entries:
            return None
        return max(0.0, min(e.retry_at for e in self._entries.values()) - self.clock())


class Trigger:
    """What informers poke when something changed; the loop waits on it."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    def set_after(self, seconds: float) -> None:
        asyncio.get_running_loop().call_later(seconds, self._event.set)

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self, timeout: float) -> bool:
        """True when poked, False when `timeout` seconds passed without a change.

        (Not `asyncio.wait_for`: on Python 3.11 it can swallow a cancellation that arrives
        as the event is set, and a controller being stopped would wait on.)
        """
        try:
            async with asyncio.timeout(timeout):
                await self._event.wait()
        except TimeoutError:
            return False
        return True


@dataclass(frozen=True)
class Outcome:
    """What a pass asks of the loop: another pass at once (`again`), one after
    `requeue_after` seconds, or (both unset) nothing until the next change or resync.
    `error` is set by the loop when the pass raised."""

    again: bool = False
    requeue_after: float | None = None
    error: BaseException | None = None


class Reconciler(Protocol[S, D]):
    async def snapshot(self, resync: bool) -> S:
        """What this pass works on; `resync` when the loop woke for its period, not a change."""

    def decide(self, snapshot: S) -> D:
        """What to write, without I/O."""

    async def execute(self, decision: D) -> Outcome:
        """Write the decision; what the loop does next."""

    def failed(self, error: BaseException) -> None:
        """The pass raised `error` (the loop logs it and retries)."""


@dataclass(frozen=True)
class LoopSettings:
    """`what` names a pass in logs ("reconcile", "simulator pass"). `resync_seconds`: the
    longest wait without a change. `debounce_seconds`: how long to gather changes after the
    trigger. `pace_by_decide`: wait at least as long as the last pass took to decide, so that
    while events never stop (thousands of operand pods rolling out) a large cluster costs
    the controller half a core, not a whole one."""

    what: str
    resync_seconds: float
    debounce_seconds: float
    pace_by_decide: bool = False


class ControllerLoop(Generic[S, D]):
    """Runs a `Reconciler` pass after pass until cancelled; counts `passes` and `failures`."""

    def __init__(
        self,
        reconciler: Reconciler[S, D],
        trigger: Trigger,
        settings: LoopSettings,
        log: logging.Logger,
    ) -> None:
        self.reconciler = reconciler
        self.trigger = trigger
        self.settings = settings
        self.log = log
        self.passes = 0
        self.failures = 0
        self.failures_in_a_row = 0
        self.decide_seconds = 0.0

    async def run(self) -> None:
        settings = self.settings
        while True:
            changed = await self.trigger.wait(settings.resync_seconds)
            pause = settings.debounce_seconds
            if settings.pace_by_decide:
                pause = max(pause, self.decide_seconds)
            await asyncio.sleep(pause)
            self.trigger.clear()
            await self.handle_outcome(await self.run_pass(resync=not changed))

    async def run_pass(self, resync: bool = False) -> Outcome:
        """One pass; its failure comes back as an `Outcome` with `error` set."""
        try:
            snapshot = await self.reconciler.snapshot(resync)
            started = time.monotonic()
            decision = self.reconciler.decide(snapshot)
            self.decide_seconds = time.monotonic() - started
            # The writes may take a while: what the snapshot holds is not kept meanwhile.
            del snapshot
            return await self.reconciler.execute(decision)
        except Exception as exc:  # every failure is retried; cancellation is not caught
            return Outcome(error=exc)

    async def handle_outcome(self, outcome: Outcome) -> None:
        """The one place a pass's result becomes "sleep, retry, count"."""
        error = outcome.error
        if error is not None:
            self.failures += 1
            self.failures_in_a_row += 1
            self.reconciler.failed(error)
            # Failures in a row double the wait, up to RETRY_CAP_SECONDS: a cluster that
            # refuses the same write for good is not asked again and again.
            backoff = float(2 ** min(self.failures_in_a_row - 1, 16))
            if isinstance(error, API_ERRORS):
                # Refused (429 while the API server sheds load, 5xx) or unreachable.
                delay = min(API_RETRY_SECONDS * backoff, RETRY_CAP_SECONDS)
                self.log.warning(
                    "%s failed: %s; retrying in %.0fs",
                    self.settings.what,
                    describe_api_error(error),
                    delay,
                )
            else:
                delay = min(ERROR_RETRY_SECONDS * backoff, RETRY_CAP_SECONDS)
                self.log.error("%s failed", self.settings.what, exc_info=error)
            await asyncio.sleep(delay)
            self.trigger.set()
            return
        self.failures_in_a_row = 0
        self.passes += 1
        if outcome.requeue_after is not None:
            self.trigger.set_after(outcome.requeue_after)
        if outcome.again:
            self.trigger.set()


async def wait_synced(informers: Iterable[Any]) -> None:
    """Until every informer's first list is in (a pass before would see a partial cluster)."""
    await asyncio.gather(*(informer.synced.wait() for informer in informers))
