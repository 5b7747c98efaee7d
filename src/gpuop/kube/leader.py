"""Leader election on a coordination.k8s.io Lease, as client-go's `leaderelection` does it.

Why this module exists: the operator runs as two replicas so that a dead node does not leave
the GPU fleet unmanaged, and two operators that both write (cordon, evict, switch a node's
workload) would undo each other's safety holds. Exactly one of them leads: it holds the
Lease and renews it; the others keep their informers warm and wait. The protocol, the
record and the defaults are controller-runtime's (lease 15 s, renew deadline 10 s, retry
2 s), and the Lease is NVIDIA's operator's (`53822513.nvidia.com` in the operator's
namespace), so gpuop and NVIDIA's operator can never lead at once either.

- A candidate takes the Lease when nobody holds it, or when its record has not changed for
  `leaseDurationSeconds` as measured on the candidate's own clock since it last saw the
  record change (so clocks need not agree), with an update conditional on the
  resourceVersion it read (two candidates cannot both win).
- The leader renews every retry period. A leader that has not renewed within the renew
  deadline (shorter than the lease) gives up, before any other candidate may take over:
  `hold` raises `LeadershipLost`, and the caller stops writing.
- A leader that stops cleanly hands the Lease back (empty holder, one-second lease), so the
  next one leads at once instead of after a lease duration.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpuop.api.labels import LEADER_ELECTION_ID
from gpuop.kube import KubeError, ops
from gpuop.kube.client import KubeClient
from gpuop.kube.errors import API_ERRORS, status_code
from gpuop.kube.errors import describe as describe_api_error

log = logging.getLogger("gpuop.kube.leader")

LEASE_NAME = LEADER_ELECTION_ID
CONFLICT = 409
# client-go's JitterFactor: a candidate waits retry_period * [1, 2.2) between tries.
_JITTER = 1.2


def default_identity() -> str:
    """`<hostname>_<uuid>`, as controller-runtime names a candidate (unique per process)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaseSettings:
    """Where the Lease is and how long its terms are (controller-runtime's defaults)."""

    namespace: str
    name: str = LEASE_NAME
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def problems(self) -> list[str]:
        """Why these terms cannot work (client-go refuses the same)."""
        found = []
        if self.lease_duration <= self.renew_deadline:
            found.append("the lease duration must be longer than the renew deadline")
        if self.renew_deadline <= _JITTER * self.retry_period:
            found.append(f"the renew deadline must be longer than {_JITTER} times the retry period")
        if min(self.lease_duration, self.renew_deadline, self.retry_period) <= 0:
            found.append("every duration must be positive")
        return found


class LeadershipLost(KubeError):
    """The leader could not renew its Lease within the renew deadline."""


def _micro_time(moment: datetime) -> str:
    """A `MicroTime` as the API server stores it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _record(lease: dict[str, Any] | None) -> tuple[Any, ...]:
    spec = (lease or {}).get("spec") or {}
    return (
        spec.get("holderIdentity"),
        spec.get("leaseDurationSeconds"),
        spec.get("acquireTime"),
        spec.get("renewTime"),
        spec.get("leaseTransitions"),
    )


class LeaderElector:
    """One candidate for the Lease. `acquire` waits to lead, `hold` renews until it cannot,
    `release` hands the Lease back. `on_change(leading, holder)` is called whenever this
    candidate starts or stops leading, or sees another holder."""

    def __init__(
        self,
        client: KubeClient,
        settings: LeaseSettings,
        on_change: Callable[[bool, str | None], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.settings = settings
        self.on_change = on_change
        self.clock = clock
        self.wall_clock = wall_clock
        self.leading = False
        self.holder: str | None = None
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self._renewed_at = 0.0

    def valid(self) -> bool:
        """Whether this candidate leads and renewed recently enough to write."""
        return self.leading and self.clock() - self._renewed_at < self.settings.renew_deadline

    async def acquire(self) -> None:
        """Return once this candidate leads; API errors are retried, never raised."""
        settings = self.settings
        log.info("waiting to lead (Lease %s/%s)", settings.namespace, settings.name)
        while True:
            if await self._try():
                self._set_leading(True)
                return
            await asyncio.sleep(settings.retry_period * (1 + random.random() * _JITTER))

    async def hold(self) -> None:
        """Renew every retry period until the renew deadline passes without a renewal;
        then raise `LeadershipLost` (never returns otherwise)."""
        settings = self.settings
        while True:
            await asyncio.sleep(settings.retry_period)
            left = self._renewed_at + settings.renew_deadline - self.clock()
            renewed = False
            if left > 0:
                try:
                    async with asyncio.timeout(left):
                        renewed = await self._try()
                except TimeoutError:
                    renewed = False
            if renewed:
                continue
            if self.clock() - self._renewed_at >= settings.renew_deadline:
                self._set_leading(False)
                raise LeadershipLost(
                    f"leadership lost: the Lease {settings.namespace}/{settings.name} was not"
                    f" renewed within {settings.renew_deadline:g}s"
                )

    async def release(self) -> None:
        """Hand the Lease back if this candidate still holds it (errors are only logged)."""
        if not self.leading:
            return
        self._set_leading(False)
        settings = self.settings
        try:
            lease = await ops.get_lease(self.client, settings.name, settings.namespace)
            spec = (lease or {}).get("spec") or {}
            if lease is None or spec.get("holderIdentity") != settings.identity:
                return
            now = _micro_time(self.wall_clock())
            lease["spec"] = {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": int(spec.get("leaseTransitions") or 0),
            }
            await ops.replace_lease(self.client, lease)
            log.info("handed back the Lease %s/%s", settings.namespace, settings.name)
        except API_ERRORS as exc:
            log.warning("could not hand back the Lease: %s", describe_api_error(exc))

    async def _try(self) -> bool:
        """One attempt to take or renew the Lease; True when this candidate holds it now."""
        settings = self.settings
        started = self.clock()
        try:
            lease = await ops.get_lease(self.client, settings.name, settings.namespace)
            now = _micro_time(self.wall_clock())
            if lease is None:
                written = await ops.create_lease(
                    self.client,
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": settings.name, "namespace": settings.namespace},
                        "spec": self._spec(now, now, 0),
                    },
                )
            else:
                self._observe(lease)
                spec = lease.get("spec") or {}
                holder = spec.get("holderIdentity") or ""
                duration = float(spec.get("leaseDurationSeconds") or settings.lease_duration)
                mine = holder == settings.identity
                if holder and not mine and self._observed_at + duration > self.clock():
                    return False
                transitions = int(spec.get("leaseTransitions") or 0)
                lease["spec"] = (
                    self._spec(spec.get("acquireTime") or now, now, transitions)
                    if mine
                    else self._spec(now, now, transitions + 1)
                )
                written = await ops.replace_lease(self.client, lease)
        except API_ERRORS as exc:
            if status_code(exc) != CONFLICT:
                log.warning(
                    "cannot read or write the Lease %s/%s: %s",
                    settings.namespace,
                    settings.name,
                    describe_api_error(exc),
                )
            return False
        self._observe(written)
        self._renewed_at = started
        return True

    def _spec(self, acquired: str, renewed: str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.settings.identity,
            "leaseDurationSeconds": max(1, round(self.settings.lease_duration)),
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        }

    def _observe(self, lease: dict[str, Any]) -> None:
        """Remember when the record last changed, on this candidate's clock."""
        record = _record(lease)
        if record != self._observed:
            self._observed = record
            self._observed_at = self.clock()
        holder = record[0] or None
        if holder != self.holder:
            self.holder = holder
            if holder and holder != self.settings.identity:
                log.info("the leader is now %s", holder)
            if self.on_change is not None:
                self.on_change(self.leading, holder)

    def _set_leading(self, leading: bool) -> None:
        if leading == self.leading:
            return
        self.leading = leading
        if leading:
            self.holder = self.settings.identity
            log.info(
                "leading as %s (Lease %s/%s)",
                self.settings.identity,
                self.settings.namespace,
                self.settings.name,
            )
        else:
            log.warning(
                "no longer leading (Lease %s/%s)", self.settings.namespace, self.settings.name
            )
        if self.on_change is not None:
            self.on_change(leading, self.holder)
