"""The simulator's DRA driver: NVIDIA's kubelet plugin, played on kwok nodes.

Where the DRA kubelet-plugin pod (DaemonSet `nvidia-dra-driver-kubelet-plugin`, its pods
labelled `app` with that name, as upstream renders it) is Ready on a simulated node, this
module publishes the node's ResourceSlices from the machine's cards (the hardware ConfigMap)
through `gpuop.dra.publish`, and removes them when the pod goes. The pod's `FEATURE_GATES`
environment decides the roles as it does for the real plugin: `PassthroughSupport=true` adds
the `vfio` devices. The publication is gpuop's race-free one unless the simulator is told to
play NVIDIA's two-faced one (`SimConfig.dra_shared_counters`).

Prepare is imitated on what the API shows: a claim allocated on the node from the node's pool
and reserved for a pod is prepared. Its `status.devices` gets one entry per device (driver,
pool, device, a `Ready` condition, and `data` recording the card's role, PCI address and UUID;
KEP-4817's device status, which NVIDIA's plugin does not write today, so that the prepare and
the card's role can be seen). As NVIDIA's plugin does after a prepare in the two-faced
publication, the prepared device's sibling (the card's other face) is removed from the slices;
a claim allocated the other face of a card already prepared fails to prepare (`Ready=False`,
`PrepareFailed`), which is the race's visible end.

Drift kinds (`DRA_DRIFT_KINDS`): slices left behind after a card is removed, and a card
published by both stacks (the device plugin's `nvidia.com/gpu` on a node whose cards are in a
DRA slice).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuop.api.cards import GpuCard, encode_inventory
from gpuop.api.labels import DRIVER_VERSION_LABEL, SIM_LABEL
from gpuop.api.resources import CONTAINER_RESOURCE
from gpuop.catalog import operand_table
from gpuop.dra.publish import DRIVER, PCI_BUS_ID_ATTRIBUTE, PublishError, publish
from gpuop.sim.hardware import SimError

log = logging.getLogger("gpuop.sim.dra")

# The kubelet plugin's pods, found by their `app` label as upstream finds them.
PLUGIN_APP = operand_table().gpucluster_operand("dra-driver").app_label
PASSTHROUGH_GATE = "PassthroughSupport"
# The driver version of the operator release gpuop renders by default (operands.yaml).
DEFAULT_DRIVER_VERSION = operand_table().default_versions.get("driver") or ""
PREPARED_REASON = "Prepared"
FAILED_REASON = "PrepareFailed"


@dataclass(frozen=True)
class PluginPod:
    """The DRA kubelet-plugin pod on a node, as far as the simulator cares."""

    node: str
    ready: bool
    feature_gates: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class Allocated:
    request: str
    driver: str
    pool: str
    device: str


@dataclass(frozen=True)
class ClaimView:
    """A ResourceClaim reduced to what prepare reads."""

    namespace: str
    name: str
    node: str | None
    results: tuple[Allocated, ...]
    reserved: bool
    devices: tuple[dict[str, Any], ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class SliceView:
    name: str
    node: str
    generation: int
    spec: dict[str, Any]


def parse_gates(text: str) -> dict[str, bool]:
    """`A=true,B=false` (the plugin's FEATURE_GATES) -> {A: True, B: False}."""
    gates: dict[str, bool] = {}
    for item in text.split(","):
        name, _, value = item.strip().partition("=")
        if name:
            gates[name] = value.strip().lower() == "true"
    return gates


def plugin_pod(body: Mapping[str, Any]) -> tuple[str, PluginPod] | None:
    """(node, plugin pod) for a DRA kubelet-plugin pod scheduled to a node, else None."""
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    node = spec.get("nodeName")
    if (meta.get("labels") or {}).get("app") != PLUGIN_APP or not node:
        return None
    if meta.get("deletionTimestamp"):
        return None
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (body.get("status") or {}).get("conditions") or []
    )
    gates: dict[str, bool] = {}
    for container in spec.get("containers") or []:
        for item in container.get("env") or []:
            if item.get("name") == "FEATURE_GATES" and isinstance(item.get("value"), str):
                gates.update(parse_gates(item["value"]))
    return str(node), PluginPod(str(node), ready, gates)


def roles_for(pod: PluginPod) -> tuple[str, ...]:
    return ("gpu", "vfio") if pod.feature_gates.get(PASSTHROUGH_GATE) else ("gpu",)


def _allocation_node(allocation: Mapping[str, Any]) -> str | None:
    """The node an allocation is bound to (the scheduler writes a metadata.name field term)."""
    for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for expr in term.get("matchFields") or []:
            if expr.get("key") == "metadata.name" and expr.get("operator") == "In":
                values = expr.get("values") or []
                if len(values) == 1:
                    return str(values[0])
    return None


def claim_view(body: Mapping[str, Any]) -> ClaimView | None:
    meta = body.get("metadata") or {}
    status = body.get("status") or {}
    allocation = status.get("allocation")
    if not allocation:
        return None
    results = tuple(
        Allocated(
            str(r.get("request", "")),
            str(r.get("driver", "")),
            str(r.get("pool", "")),
            str(r.get("device", "")),
        )
        for r in (allocation.get("devices") or {}).get("results") or []
    )
    return ClaimView(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        node=_allocation_node(allocation),
        results=results,
        reserved=bool(status.get("reservedFor")),
        devices=tuple(status.get("devices") or ()),
    )


def slice_view(body: Mapping[str, Any]) -> SliceView | None:
    spec = body.get("spec") or {}
    if spec.get("driver") != DRIVER or not spec.get("nodeName"):
        return None
    return SliceView(
        name=str((body.get("metadata") or {}).get("name")),
        node=str(spec["nodeName"]),
        generation=int((spec.get("pool") or {}).get("generation") or 0),
        spec=dict(spec),
    )


def _devices_of(slices: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """device name -> device, over slice specs (or manifests)."""
    found: dict[str, dict[str, Any]] = {}
    for item in slices:
        spec = item.get("spec", item)
        for device in spec.get("devices") or []:
            found[str(device.get("name"))] = device
    return found


def _card_of(device: Mapping[str, Any]) -> tuple[str, str, str]:
    """(role, PCI address, uuid) of a published device."""
    attributes = device.get("attributes") or {}

    def text(key: str) -> str:
        return str((attributes.get(key) or {}).get("string", ""))

    return text("type"), text(PCI_BUS_ID_ATTRIBUTE), text("uuid")


def prepared_cards(claims: Iterable[ClaimView], node: str) -> dict[str, tuple[str, str]]:
    """PCI address -> (claim, device) for the cards prepared on `node` (reserved claims only)."""
    held: dict[str, tuple[str, str]] = {}
    for claim in claims:
        if claim.node != node or not claim.reserved:
            continue
        for entry in claim.devices:
            data = entry.get("data") or {}
            ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in entry.get("conditions") or []
            )
            if ready and entry.get("driver") == DRIVER and data.get("pciBusID"):
                held[str(data["pciBusID"])] = (claim.key, str(entry.get("device")))
    return held


def desired_slices(
    node: str,
    node_uid: str | None,
    cards: tuple[GpuCard, ...],
    pod: PluginPod | None,
    *,
    shared_counters: bool,
    driver_version: str,
    prepared: Mapping[str, tuple[str, str]],
    generation: int = 1,
) -> list[dict[str, Any]]:
    """The slices the plugin on `node` publishes now (none without a Ready plugin or cards)."""
    if pod is None or not pod.ready or not cards:
        return []
    slices = publish(
        node,
        cards,
        roles_for(pod),
        shared_counters=shared_counters,
        driver_version=driver_version,
        generation=generation,
        node_uid=node_uid,
    )
    if shared_counters or not prepared:
        return slices
    # RemoveSiblingDevices: a prepared card keeps only the face it was prepared as.
    keep = {device for _claim, device in prepared.values()}
    for manifest in slices:
        manifest["spec"]["devices"] = [
            d
            for d in manifest["spec"].get("devices") or []
            if _card_of(d)[1] not in prepared or d["name"] in keep
        ]
    return slices


def _comparable(spec: Mapping[str, Any]) -> dict[str, Any]:
    pool = dict(spec.get("pool") or {})
    pool.pop("generation", None)
    return {**spec, "pool": pool}


@dataclass
class SliceWrites:
    apply: list[dict[str, Any]] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)


def slice_writes(existing: Iterable[SliceView], desired: list[dict[str, Any]]) -> SliceWrites:
    """What makes a node's slices the desired ones; a changed pool gets the next generation."""
    current = {s.name: s for s in existing}
    writes = SliceWrites(delete=sorted(set(current) - {d["metadata"]["name"] for d in desired}))
    same = not writes.delete and all(
        d["metadata"]["name"] in current
        and _comparable(current[d["metadata"]["name"]].spec) == _comparable(d["spec"])
        for d in desired
    )
    if same:
        return writes
    generation = max((s.generation for s in current.values()), default=0) + 1
    for manifest in desired:
        manifest["spec"]["pool"]["generation"] = generation
        writes.apply.append(manifest)
    return writes


def _condition(ok: bool, message: str, now: str) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True" if ok else "False",
        "reason": PREPARED_REASON if ok else FAILED_REASON,
        "message": message,
        "lastTransitionTime": now,
    }


def prepare(
    claims: Iterable[ClaimView],
    node: str,
    published: Mapping[str, dict[str, Any]],
    now: str,
) -> list[tuple[ClaimView, list[dict[str, Any]]]]:
    """The `status.devices` to write for reserved claims on `node` not yet prepared.

    `published` maps this node's device names to devices (as last published, before a
    prepare took a sibling away). Claims are prepared in name order; a card already held by a
    prepared claim fails the later one, as the driver's second prepare fails.
    """
    ordered = sorted(claims, key=lambda c: c.key)
    held = prepared_cards(ordered, node)
    writes: list[tuple[ClaimView, list[dict[str, Any]]]] = []
    for claim in ordered:
        mine = [r for r in claim.results if r.driver == DRIVER and r.pool == node]
        if claim.node != node or not claim.reserved or not mine:
            continue
        done = {(e.get("driver"), e.get("pool"), e.get("device")) for e in claim.devices}
        if all((r.driver, r.pool, r.device) in done for r in mine):
            continue
        entries: list[dict[str, Any]] = []
        for result in mine:
            device = published.get(result.device)
            if device is None:
                entries.append(
                    {
                        "driver": DRIVER,
                        "pool": node,
                        "device": result.device,
                        "conditions": [
                            _condition(
                                False, f"device {result.device} is not published on {node}", now
                            )
                        ],
                    }
                )
                continue
            role, bus_id, card_uuid = _card_of(device)
            holder = held.get(bus_id)
            ok = holder is None or holder[0] == claim.key
            if holder is None or ok:
                message = f"{result.device} prepared as {role} on card {bus_id}"
                held[bus_id] = (claim.key, result.device)
            else:
                message = f"card {bus_id} is already prepared as {holder[1]} for claim {holder[0]}"
            entries.append(
                {
                    "driver": DRIVER,
                    "pool": node,
                    "device": result.device,
                    "conditions": [_condition(ok, message, now)],
                    "data": {"role": role, "pciBusID": bus_id, "uuid": card_uuid},
                }
            )
        writes.append((claim, entries))
    return writes


def driver_version_of(node: Mapping[str, Any]) -> str:
    labels = (node.get("metadata") or {}).get("labels") or {}
    version = str(labels.get(DRIVER_VERSION_LABEL) or "")
    return version if version.count(".") in (1, 2) else DEFAULT_DRIVER_VERSION


def node_slices(
    node: Mapping[str, Any],
    cards: tuple[GpuCard, ...],
    pod: PluginPod | None,
    claims: Iterable[ClaimView],
    existing: Iterable[SliceView],
    *,
    shared_counters: bool,
) -> SliceWrites:
    """The slice writes for one node, from everything the simulator knows of it."""
    meta = node.get("metadata") or {}
    name = str(meta.get("name"))
    try:
        desired = desired_slices(
            name,
            meta.get("uid"),
            cards,
            pod,
            shared_counters=shared_counters,
            driver_version=driver_version_of(node),
            prepared=prepared_cards(claims, name),
        )
    except PublishError as exc:
        log.warning("node %s: the DRA driver publishes nothing: %s", name, exc)
        desired = []
    return slice_writes(existing, desired)


# --- drift ------------------------------------------------------------------------------


@dataclass(frozen=True)
class DraDriftKind:
    name: str
    imitates: str


DRA_DRIFT_KINDS: dict[str, DraDriftKind] = {
    kind.name: kind
    for kind in (
        DraDriftKind(
            "stale-slices",
            "a card was removed from the machine (or fell off the bus) while the DRA driver"
            " was down: its ResourceSlices still offer the card, and claims allocated to it"
            " can never be prepared",
        ),
        DraDriftKind(
            "both-stacks",
            "the device plugin still advertises nvidia.com/gpu on a node whose cards the DRA"
            " driver publishes: one card can go to a device-plugin pod and to a claim",
        ),
    )
}


@dataclass
class DraDrift:
    kind: str
    node: str
    hardware: str | None = None  # the machine's new card list (hardware ConfigMap value)
    resources: dict[str, str | None] = field(default_factory=dict)
    description: str = ""


def dra_drift(
    kind: str, node: Mapping[str, Any], cards: tuple[GpuCard, ...], slices: Iterable[SliceView]
) -> DraDrift:
    """What puts `node` into DRA drift `kind` (apply with the simulator stopped); SimError when
    it does not apply."""
    if kind not in DRA_DRIFT_KINDS:
        raise SimError(f"unknown DRA drift kind {kind!r}; known: {', '.join(DRA_DRIFT_KINDS)}")
    name = str((node.get("metadata") or {}).get("name"))
    labels = (node.get("metadata") or {}).get("labels") or {}
    if labels.get(SIM_LABEL) != "true" or not cards:
        raise SimError(f"node {name} is not a simulated GPU node")
    published = {
        _card_of(d)[1] for d in _devices_of(s.spec for s in slices if s.node == name).values()
    }
    if not published:
        raise SimError(f"node {name} has no DRA slices (is the DRA kubelet plugin Ready there?)")
    drift = DraDrift(kind, name, description=DRA_DRIFT_KINDS[kind].imitates)
    if kind == "stale-slices":
        if len(cards) < 2:
            raise SimError(f"node {name} has one card; stale-slices removes one and keeps others")
        drift.hardware = encode_inventory(list(cards[:-1]))
    else:
        drift.resources[CONTAINER_RESOURCE] = str(len(published))
    return drift


def render_dra_drift_docs() -> str:
    """The DRA drift-kind table of docs/sim.md."""
    lines = ["| drift kind | the real-world failure it imitates |", "|---|---|"]
    lines += [f"| `{kind.name}` | {kind.imitates} |" for kind in DRA_DRIFT_KINDS.values()]
    return "\n".join(lines) + "\n"


__all__ = [
    "DRA_DRIFT_KINDS",
    "PLUGIN_APP",
    "ClaimView",
    "DraDrift",
    "PluginPod",
    "SliceView",
    "SliceWrites",
    "claim_view",
    "desired_slices",
    "dra_drift",
    "node_slices",
    "parse_gates",
    "plugin_pod",
    "prepare",
    "prepared_cards",
    "render_dra_drift_docs",
    "roles_for",
    "slice_view",
    "slice_writes",
]
