"""Leader election on the fake API: who leads, when a standby may take over, giving up in time.

The end-to-end test (`tests/e2e/test_leader_election.py`) kills real leaders; these tests
pin the protocol's rules with a clock the test moves.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gpuop.kube.leader import LEASE_NAME, LeaderElector, LeadershipLost, LeaseSettings
from kit.fake_kube import FakeKube

NS = "gpu-operator"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def candidate(fake: FakeKube, identity: str, clock: Clock, **terms: float) -> LeaderElector:
    settings = LeaseSettings(namespace=NS, identity=identity, **terms)
    return LeaderElector(fake.client, settings, clock=clock)


def lease(fake: FakeKube) -> dict[str, Any]:
    found = fake.get_object("Lease", LEASE_NAME, NS)
    assert found is not None
    return dict(found["spec"])


def test_one_candidate_leads_and_the_other_waits_out_the_lease() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), Clock()
        a, b = candidate(fake, "a", clock), candidate(fake, "b", clock)
        assert await a._try()
        assert not await b._try()
        assert lease(fake)["holderIdentity"] == "a"
        assert lease(fake)["leaseDurationSeconds"] == 15
        clock.now += 14.0
        assert not await b._try(), "a's lease has not run out on b's clock"
        assert await a._try(), "a renews"
        clock.now += 14.0
        assert not await b._try(), "b saw the renewal: the lease runs from then"
        clock.now += 15.1
        assert await b._try()
        spec = lease(fake)
        assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
        assert not await a._try()

    asyncio.run(main())


def test_a_handed_back_lease_is_taken_at_once() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), Clock()
        a, b = candidate(fake, "a", clock), candidate(fake, "b", clock)
        await a.acquire()
        assert a.leading and a.valid()
        assert not await b._try()
        await a.release()
        assert not a.leading and lease(fake)["holderIdentity"] == ""
        assert await b._try()

    asyncio.run(main())


def test_two_candidates_racing_for_a_free_lease_never_both_win() -> None:
    async def main() -> None:
        fake, clock = FakeKube(), Clock()
        candidates = [candidate(fake, name, clock) for name in "abcd"]
        won = await asyncio.gather(*(c._try() for c in candidates))
        assert sum(won) == 1
        assert lease(fake)["holderIdentity"] == "abcd"[won.index(True)]

    asyncio.run(main())


def test_a_leader_that_cannot_renew_gives_up_before_the_lease_can_expire() -> None:
    async def main() -> None:
        fake = FakeKube()
        terms = {"lease_duration": 1.5, "renew_deadline": 0.6, "retry_period": 0.05}
        settings = LeaseSettings(namespace=NS, identity="a", **terms)
        changes: list[tuple[bool, str | None]] = []
        leader = LeaderElector(fake.client, settings, lambda *c: changes.append(c))
        await leader.acquire()
        fake.fail("get", "Lease", 500, nth=1, times=1000)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(LeadershipLost):
            await leader.hold()
        lost_after = loop.time() - started
        assert not leader.valid() and not leader.leading
        assert lost_after < terms["lease_duration"], lost_after
        assert changes[-1] == (False, "a")

    asyncio.run(main())


def test_impossible_terms_are_refused() -> None:
    assert LeaseSettings(namespace=NS).problems() == []
    assert LeaseSettings(namespace=NS, lease_duration=10, renew_deadline=10).problems()
    assert LeaseSettings(namespace=NS, renew_deadline=2, retry_period=2).problems()
