"""The simulator's DRA driver as a controller: informers, passes, writes.

`gpuop.sim.dra` says what the DRA kubelet plugin on each simulated node publishes and
prepares; this module keeps what it reads current (simulated Nodes, the plugin pods, the
driver's ResourceSlices, allocated ResourceClaims, the machines' cards) and writes the
differences through `gpuop.kube.ops`, in the same controller loop the rest of the simulator
runs. What it wrote is remembered until the informers show it, so a pass never undoes or
repeats a write the watch has not delivered yet.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from gpuop.api.cards import GpuCard
from gpuop.api.labels import SIM_LABEL
from gpuop.kube import ops
from gpuop.kube.client import KubeClient
from gpuop.kube.controller import (
    BoundedWriter,
    ControllerLoop,
    LoopSettings,
    Outcome,
    Trigger,
    wait_synced,
)
from gpuop.kube.errors import Invalid
from gpuop.kube.informer import Informer
from gpuop.sim.dra import (
    PLUGIN_APP,
    ClaimView,
    PluginPod,
    SliceView,
    SliceWrites,
    claim_view,
    desired_slices,
    driver_version_of,
    node_slices,
    plugin_pod,
    prepare,
    slice_view,
)
from gpuop.sim.registry import read_hardware

log = logging.getLogger("gpuop.sim.dra")
HARDWARE_CHECK_SECONDS = 5.0


def _slim_node(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    return {
        "metadata": {
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "labels": dict(meta.get("labels") or {}),
        }
    }


class DraState:
    """What the DRA driver reads, plus what it wrote and the watch has not shown yet."""

    def __init__(self, namespace: str, shared_counters: bool, write_concurrency: int = 32) -> None:
        self.namespace = namespace
        self.shared_counters = shared_counters
        self.trigger = Trigger()
        self.client: Any = None
        self.writer = BoundedWriter(write_concurrency)
        self.nodes: Informer[dict[str, Any]] | None = None
        self.pods: Informer[tuple[str, PluginPod]] | None = None
        self.claims: Informer[ClaimView] | None = None
        self.slices: Informer[SliceView] | None = None
        self.hardware: dict[str, tuple[GpuCard, ...]] = {}
        self.hardware_checked = 0.0
        self.written_slices: dict[str, SliceView | None] = {}
        self.written_claims: dict[str, tuple[dict[str, Any], ...]] = {}
        self.passes = 0

    def watch(self, client: KubeClient) -> list[Informer[Any]]:
        changed = self._changed
        self.nodes = Informer(client, "Node", _slim_node, changed, labels={SIM_LABEL: "true"})
        self.pods = Informer(
            client, "Pod", plugin_pod, changed, labels={"app": PLUGIN_APP}, namespace=self.namespace
        )
        self.claims = Informer(client, "ResourceClaim", claim_view, changed)
        self.slices = Informer(client, "ResourceSlice", slice_view, changed)
        return [self.nodes, self.pods, self.claims, self.slices]

    def _changed(self, _key: str, _value: object) -> None:
        self.trigger.set()

    def slice_views(self) -> list[SliceView]:
        stored = dict(self.slices.store) if self.slices else {}
        for name, written in list(self.written_slices.items()):
            seen = stored.get(name)
            if written is None:
                if seen is None:
                    del self.written_slices[name]
                else:
                    stored.pop(name)
            elif seen is not None and seen.generation >= written.generation:
                del self.written_slices[name]
            else:
                stored[name] = written
        return list(stored.values())

    def claim_views(self) -> list[ClaimView]:
        stored = dict(self.claims.store) if self.claims else {}
        for key in list(self.written_claims):
            view = stored.get(key)
            if view is None or view.devices:
                del self.written_claims[key]
            else:
                stored[key] = replace(view, devices=self.written_claims[key])
        return list(stored.values())


@dataclass(frozen=True)
class DraSnapshot:
    nodes: dict[str, dict[str, Any]]
    pods: dict[str, PluginPod]
    claims: list[ClaimView]
    slices: list[SliceView]
    hardware: dict[str, tuple[GpuCard, ...]]
    # When the snapshot was taken (RFC 3339): prepares are stamped with it, so deciding
    # the same snapshot twice gives the same writes.
    taken: str


@dataclass
class DraDecision:
    slices: dict[str, SliceWrites] = field(default_factory=dict)
    prepares: list[tuple[ClaimView, list[dict[str, Any]]]] = field(default_factory=list)


def _plugin_pods(state: DraState) -> dict[str, PluginPod]:
    pods: dict[str, PluginPod] = {}
    for node, pod in state.pods.store.values() if state.pods else ():
        if node not in pods or (pod.ready and not pods[node].ready):
            pods[node] = pod
    return pods


def decide(snapshot: DraSnapshot, shared_counters: bool) -> DraDecision:
    """Slice writes per simulated node, then the prepares due on what is published."""
    decision = DraDecision()
    by_node: dict[str, list[SliceView]] = {}
    for view in snapshot.slices:
        by_node.setdefault(view.node, []).append(view)
    for name, node in snapshot.nodes.items():
        cards = snapshot.hardware.get(name, ())
        pod = snapshot.pods.get(name)
        existing = by_node.get(name, [])
        publishing = pod is not None and pod.ready and bool(cards)
        if not publishing and not existing:
            continue  # nothing published and nothing to publish: most nodes, every pass
        writes = node_slices(
            node, cards, pod, snapshot.claims, existing, shared_counters=shared_counters
        )
        if writes.apply or writes.delete:
            decision.slices[name] = writes
        if pod is None or not publishing:
            continue
        # Prepare looks devices up in the whole publication, siblings included: a claim can
        # hold a face that a later republication no longer shows.
        full = desired_slices(
            name,
            None,
            cards,
            pod,
            shared_counters=shared_counters,
            driver_version=driver_version_of(node),
            prepared={},
        )
        published = {d["name"]: d for s in full for d in s["spec"].get("devices") or []}
        decision.prepares.extend(prepare(snapshot.claims, name, published, snapshot.taken))
    return decision


class DraPasses:
    """The DRA driver's part of the controller loop."""

    def __init__(self, state: DraState) -> None:
        self.state = state

    async def snapshot(self, resync: bool) -> DraSnapshot:
        state = self.state
        nodes = dict(state.nodes.store) if state.nodes else {}
        stale = time.monotonic() - state.hardware_checked > HARDWARE_CHECK_SECONDS
        if resync or stale or any(name not in state.hardware for name in nodes):
            state.hardware = await read_hardware(state.client, state.namespace)
            state.hardware_checked = time.monotonic()
        return DraSnapshot(
            nodes=nodes,
            pods=_plugin_pods(state),
            claims=state.claim_views(),
            slices=state.slice_views(),
            hardware=dict(state.hardware),
            taken=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )

    def decide(self, snapshot: DraSnapshot) -> DraDecision:
        return decide(snapshot, self.state.shared_counters)

    async def execute(self, decision: DraDecision) -> Outcome:
        state = self.state
        writes: list[Callable[[], Awaitable[None]]] = []
        for node_writes in decision.slices.values():
            writes.extend(partial(self._apply_slice, m) for m in node_writes.apply)
            writes.extend(partial(self._delete_slice, n) for n in node_writes.delete)
        writes.extend(partial(self._prepare, c, e) for c, e in decision.prepares)
        await state.writer.gather(writes)
        state.passes += 1
        # A prepare changes what a two-faced node publishes: look again at once. The machines'
        # cards are not watched: look at them again now and then, as a driver's health
        # checks would notice a card gone.
        return Outcome(again=bool(decision.prepares), requeue_after=HARDWARE_CHECK_SECONDS)

    async def _apply_slice(self, manifest: dict[str, Any]) -> None:
        await ops.apply_object(self.state.client, manifest)
        view = slice_view(manifest)
        self.state.written_slices[manifest["metadata"]["name"]] = view

    async def _delete_slice(self, name: str) -> None:
        await ops.delete_resource_slice(self.state.client, name)
        self.state.written_slices[name] = None

    async def _prepare(self, claim: ClaimView, entries: list[dict[str, Any]]) -> None:
        try:
            written = await ops.patch_claim_status(
                self.state.client, claim.name, claim.namespace, {"devices": entries}
            )
        except Invalid as exc:
            # Deallocated or reallocated since the informer showed it: its next state decides.
            log.info("claim %s changed before its prepare: %s", claim.key, exc.detail)
            return
        if written is not None:
            self.state.written_claims[claim.key] = tuple(entries)
            log.info("prepared claim %s: %s", claim.key, ", ".join(e["device"] for e in entries))

    def failed(self, error: BaseException) -> None:
        self.state.written_slices.clear()
        self.state.written_claims.clear()


async def dra_loop(state: DraState, debounce_seconds: float = 0.05) -> None:
    informers = [i for i in (state.nodes, state.pods, state.claims, state.slices) if i]
    await wait_synced(informers)
    settings = LoopSettings(
        what="simulated DRA driver pass", resync_seconds=30.0, debounce_seconds=debounce_seconds
    )
    await ControllerLoop(DraPasses(state), state.trigger, settings, log).run()


__all__ = ["DraDecision", "DraPasses", "DraSnapshot", "DraState", "decide", "dra_loop"]
