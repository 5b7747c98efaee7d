"""The simulator's DRA driver: what it publishes and prepares, alone and on the in-memory API."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gpuop.api.cards import decode_cards
from gpuop.api.resources import CONTAINER_RESOURCE
from gpuop.dra.publish import publish
from gpuop.kube import controller, informer
from gpuop.kube.running import supervise
from gpuop.sim import dra_loop
from gpuop.sim.dra import (
    DRA_DRIFT_KINDS,
    PLUGIN_APP,
    PluginPod,
    claim_view,
    desired_slices,
    dra_drift,
    parse_gates,
    plugin_pod,
    prepare,
    slice_view,
    slice_writes,
)
from gpuop.sim.hardware import (
    HARDWARE_CONFIGMAP,
    NodeSpec,
    SimError,
    cards_for,
    hardware_entries,
    node_manifest,
)
from kit.aio import eventually, running
from kit.fake_kube import FakeKube

NS = "gpu-operator"
NODE = "dra-a"
CARDS = tuple(cards_for(NodeSpec(NODE, "A10", 2)))
BOTH = PluginPod(NODE, True, {"PassthroughSupport": True})


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controller, "API_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(controller, "ERROR_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(informer, "RETRY_DELAYS_SECONDS", (0.01,))
    monkeypatch.setattr(dra_loop, "HARDWARE_CHECK_SECONDS", 0.05)


def plugin(
    node: str = NODE, ready: bool = True, gates: str = "PassthroughSupport=true"
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{PLUGIN_APP}-{node}",
            "namespace": NS,
            "labels": {"app": PLUGIN_APP},
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "gpus", "image": "x:1", "env": [{"name": "FEATURE_GATES", "value": gates}]}
            ],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def claim(name: str, device: str, reserved: bool = True, node: str = NODE) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "gpu",
                            "driver": "gpu.nvidia.com",
                            "pool": node,
                            "device": device,
                        }
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": f"pod-{name}", "uid": "u"}]
            if reserved
            else [],
        },
    }


def published(shared: bool) -> dict[str, dict[str, Any]]:
    slices = publish(
        NODE, CARDS, ("gpu", "vfio"), shared_counters=shared, driver_version="580.95.05"
    )
    return {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}


def test_the_plugin_pod_and_its_feature_gates() -> None:
    assert parse_gates("AdminAccess=false,MPSSupport=true, PassthroughSupport=true") == {
        "AdminAccess": False,
        "MPSSupport": True,
        "PassthroughSupport": True,
    }
    node, pod = plugin_pod(plugin()) or ("", None)
    assert (
        node == NODE and pod is not None and pod.ready and pod.feature_gates["PassthroughSupport"]
    )
    other = plugin()
    other["metadata"]["labels"] = {"app": "nvidia-device-plugin-daemonset"}
    assert plugin_pod(other) is None


def test_slices_only_while_the_plugin_is_ready_and_vfio_only_with_passthrough() -> None:
    def names(pod: PluginPod | None) -> list[str]:
        slices = desired_slices(
            NODE, None, CARDS, pod, shared_counters=True, driver_version="580.95.05", prepared={}
        )
        return sorted(d["name"] for s in slices for d in s["spec"].get("devices", []))

    assert names(BOTH) == ["gpu-0", "gpu-1", "gpu-vfio-0", "gpu-vfio-1"]
    assert names(PluginPod(NODE, True, {})) == ["gpu-0", "gpu-1"]
    assert names(PluginPod(NODE, False, {"PassthroughSupport": True})) == []
    assert names(None) == []


def test_an_unchanged_pool_is_not_rewritten_and_a_changed_one_gets_the_next_generation() -> None:
    desired = desired_slices(
        NODE, None, CARDS, BOTH, shared_counters=True, driver_version="580.95.05", prepared={}
    )
    existing = [v for v in (slice_view(m) for m in desired) if v is not None]
    assert not slice_writes(existing, [dict(m) for m in desired]).apply
    fewer = desired_slices(
        NODE, None, CARDS[:1], BOTH, shared_counters=True, driver_version="580.95.05", prepared={}
    )
    writes = slice_writes(existing, fewer)
    assert {m["spec"]["pool"]["generation"] for m in writes.apply} == {2}
    assert len(writes.delete) == 1


def test_race_free_claims_prepare_on_their_own_cards() -> None:
    views = [
        v for v in (claim_view(claim("cuda", "gpu-0")), claim_view(claim("vm", "gpu-vfio-1"))) if v
    ]
    writes = prepare(views, NODE, published(True), "2026-01-01T00:00:00Z")
    entries = {c.name: e[0] for c, e in writes}
    assert entries["cuda"]["data"]["role"] == "gpu"
    assert entries["vm"]["data"] == {
        "role": "vfio",
        "pciBusID": "0000:37:00.0",
        "uuid": published(True)["gpu-vfio-1"]["attributes"]["uuid"]["string"],
    }
    assert all(e["conditions"][0]["status"] == "True" for e in entries.values())
    assert entries["cuda"]["conditions"][0]["reason"] == "Prepared"


def test_deciding_reads_no_clock_the_snapshot_stamps_the_prepares() -> None:
    node = {"metadata": {"name": NODE, "labels": {}}}
    views = [v for v in (claim_view(claim("cuda", "gpu-0")),) if v]
    snapshot = dra_loop.DraSnapshot(
        nodes={NODE: node},
        pods={NODE: BOTH},
        claims=views,
        slices=[],
        hardware={NODE: CARDS},
        taken="2026-01-01T00:00:00Z",
    )
    first = dra_loop.decide(snapshot, True)
    assert first == dra_loop.decide(snapshot, True)
    [(_, entries)] = first.prepares
    assert entries[0]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_the_second_face_of_one_card_fails_to_prepare() -> None:
    views = [
        v
        for v in (claim_view(claim("a-cuda", "gpu-0")), claim_view(claim("b-vm", "gpu-vfio-0")))
        if v
    ]
    entries = {c.name: e[0] for c, e in prepare(views, NODE, published(False), "t")}
    assert entries["a-cuda"]["conditions"][0]["status"] == "True"
    failed = entries["b-vm"]["conditions"][0]
    assert (failed["status"], failed["reason"]) == ("False", "PrepareFailed")
    assert "already prepared as gpu-0 for claim default/a-cuda" in failed["message"]


def test_unreserved_and_other_node_claims_are_not_prepared() -> None:
    views = [
        v
        for v in (
            claim_view(claim("idle", "gpu-0", reserved=False)),
            claim_view(claim("far", "gpu-1", node="x")),
        )
        if v
    ]
    assert prepare(views, NODE, published(True), "t") == []


def test_a_prepared_two_faced_card_keeps_only_its_prepared_face() -> None:
    slices = desired_slices(
        NODE,
        None,
        CARDS,
        BOTH,
        shared_counters=False,
        driver_version="580.95.05",
        prepared={"0000:17:00.0": ("default/cuda", "gpu-0")},
    )
    assert [d["name"] for d in slices[0]["spec"]["devices"]] == ["gpu-0", "gpu-1", "gpu-vfio-1"]


def test_dra_drift_kinds() -> None:
    node = node_manifest(NodeSpec(NODE, "A10", 2))
    slices = [
        v
        for v in (
            slice_view(m)
            for m in publish(NODE, CARDS, shared_counters=True, driver_version="580.95.05")
        )
        if v
    ]
    stale = dra_drift("stale-slices", node, CARDS, slices)
    cards, _ = decode_cards(stale.hardware or "")
    assert cards is not None and len(cards) == 1
    both = dra_drift("both-stacks", node, CARDS, slices)
    assert both.resources == {CONTAINER_RESOURCE: "2"}
    assert set(DRA_DRIFT_KINDS) == {"stale-slices", "both-stacks"}
    with pytest.raises(SimError, match="no DRA slices"):
        dra_drift("both-stacks", node, CARDS, [])
    with pytest.raises(SimError, match="unknown DRA drift"):
        dra_drift("nope", node, CARDS, slices)


def test_dra_drift_docs_are_in_sync() -> None:
    from pathlib import Path

    from gpuop.sim.dra import render_dra_drift_docs

    doc = (Path(__file__).resolve().parents[3] / "docs" / "sim.md").read_text()
    assert render_dra_drift_docs() in doc


# --- on the in-memory API ---------------------------------------------------------------


def cluster() -> FakeKube:
    hardware = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": HARDWARE_CONFIGMAP, "namespace": NS},
        "data": hardware_entries([NodeSpec(NODE, "A10", 2)]),
    }
    return FakeKube([hardware, node_manifest(NodeSpec(NODE, "A10", 2))])


def driver(fake: FakeKube, shared: bool = True) -> tuple[dra_loop.DraState, Any]:
    state = dra_loop.DraState(NS, shared)
    state.client = fake
    informers = state.watch(fake)
    return state, supervise(dra_loop.dra_loop(state, 0.01), *(i.run() for i in informers))


def devices(fake: FakeKube) -> list[str]:
    return sorted(
        d["name"]
        for s in fake.objects_of("ResourceSlice").values()
        for d in s["spec"].get("devices", [])
    )


def test_on_the_api_slices_follow_the_plugin_pod_and_claims_get_prepared() -> None:
    async def scenario() -> None:
        fake = cluster()
        _state, work = driver(fake)
        async with running(work):
            await asyncio.sleep(0.1)
            assert fake.objects_of("ResourceSlice") == {}
            fake.put(plugin())
            await eventually(lambda: len(fake.objects_of("ResourceSlice")) == 3, 10, "three slices")
            assert devices(fake) == ["gpu-0", "gpu-1", "gpu-vfio-0", "gpu-vfio-1"]
            fake.put(claim("vm", "gpu-vfio-1"))

            def prepared() -> Any:
                found = fake.get_object("ResourceClaim", "vm", "default") or {}
                return (found.get("status") or {}).get("devices")

            entries = await eventually(prepared, 10, "the claim's device status")
            assert entries[0]["data"]["role"] == "vfio"
            # The machine loses a card: the next publication leaves it out.
            specs = [NodeSpec(NODE, "A10", 1)]
            fake.put(
                {
                    **fake.get_object("ConfigMap", HARDWARE_CONFIGMAP, NS),
                    "data": hardware_entries(specs),
                }
            )  # type: ignore[dict-item]
            await eventually(lambda: devices(fake) == ["gpu-0", "gpu-vfio-0"], 15, "one card left")
            generations = {
                s["spec"]["pool"]["generation"] for s in fake.objects_of("ResourceSlice").values()
            }
            assert generations == {2}
            fake.remove("Pod", f"{PLUGIN_APP}-{NODE}", NS)
            await eventually(lambda: fake.objects_of("ResourceSlice") == {}, 10, "no slices")

    asyncio.run(scenario())


def test_on_the_api_a_two_faced_prepare_takes_the_sibling_away() -> None:
    async def scenario() -> None:
        fake = cluster()
        _state, work = driver(fake, shared=False)
        async with running(work):
            fake.put(plugin())
            await eventually(lambda: len(devices(fake)) == 4, 10, "four devices")
            fake.put(claim("cuda", "gpu-0"))
            await eventually(
                lambda: devices(fake) == ["gpu-0", "gpu-1", "gpu-vfio-1"], 10, "the sibling gone"
            )

    asyncio.run(scenario())
