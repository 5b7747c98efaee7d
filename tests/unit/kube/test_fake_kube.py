"""The in-memory API behaves as the API server does where gpuop's controllers can tell."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gpuop.kube import informer as informer_module
from gpuop.kube import ops
from gpuop.kube.errors import Refused
from gpuop.kube.informer import Informer
from kit.aio import eventually, running
from kit.fake_kube import FakeKube, merge_patch


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def test_merge_patch_merges_objects_and_none_deletes() -> None:
    target = {"a": {"b": 1, "c": 2}, "d": [1]}
    assert merge_patch(target, {"a": {"b": None, "e": 3}, "d": [2]}) == {
        "a": {"c": 2, "e": 3},
        "d": [2],
    }


def test_patches_bump_the_version_only_when_something_changed() -> None:
    async def main(fake: FakeKube) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        first = await ops.patch_node_labels(fake.client, "a", {"x": "1", "gone": None})
        again = await ops.patch_node_labels(fake.client, "a", {"x": "1"})
        return first, again

    fake = FakeKube([node("a", gone="yes")])
    first, again = asyncio.run(main(fake))
    assert first is not None and again is not None
    assert first["metadata"]["labels"] == {"x": "1"}
    assert first["metadata"]["resourceVersion"] == again["metadata"]["resourceVersion"] == "2"


def test_a_status_patch_touches_only_status() -> None:
    fake = FakeKube([node("a")])
    asyncio.run(ops.patch_node_resources(fake.client, "a", {"nvidia.com/gpu": "2"}))
    stored = fake.get_object("Node", "a") or {}
    assert stored["status"]["allocatable"] == {"nvidia.com/gpu": "2"}
    asyncio.run(ops.patch_node(fake.client, "a", labels={"y": "1"}))
    assert (fake.get_object("Node", "a") or {})["status"]["allocatable"] == {"nvidia.com/gpu": "2"}


def test_faults_fire_on_the_nth_matching_call_and_drops_keep_nothing() -> None:
    fake = FakeKube([node("a"), node("b")])
    fake.fail("patch", "Node", 500, nth=2)
    fake.drop("patch", "Node/status")

    async def main() -> None:
        await ops.patch_node_labels(fake.client, "a", {"x": "1"})
        with pytest.raises(Refused) as failed:
            await ops.patch_node_labels(fake.client, "b", {"x": "1"})
        assert failed.value.code == 500
        await ops.patch_node_labels(fake.client, "b", {"x": "1"})
        answer = await ops.patch_node_resources(fake.client, "a", {"nvidia.com/gpu": "1"})
        assert answer is not None and "nvidia.com/gpu" not in answer.get("status", {}).get(
            "allocatable", {}
        )

    asyncio.run(main())
    assert fake.objects_of("Node")["b"]["metadata"]["labels"] == {"x": "1"}
    assert "status" not in fake.objects_of("Node")["a"]
    assert not fake.faults_left() and fake.dropped == [("patch", "Node/status")]


def test_apply_creates_then_updates_and_eviction_deletes_the_pod() -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "labels": {"k": "v"}},
        "data": {"a": "1"},
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}
    fake = FakeKube([pod])

    async def main() -> None:
        created = await ops.apply_object(fake.client, config)
        updated = await ops.apply_object(fake.client, {**config, "data": {"a": "2"}})
        assert int(updated["metadata"]["resourceVersion"]) > int(
            created["metadata"]["resourceVersion"]
        )
        assert await ops.configmap_data(fake.client, "c", "ns") == {"a": "2"}
        assert await ops.managed_objects(fake.client, "ConfigMap", "ns", "x", "h") == {}
        assert await ops.evict_pod(fake.client, "ns", "p")
        assert await ops.evict_pod(fake.client, "ns", "p")  # gone already counts as evicted

    asyncio.run(main())
    assert fake.objects_of("Pod") == {}


def test_an_informer_on_the_fake_follows_selectors_and_relists_after_compaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(informer_module, "RETRY_DELAYS_SECONDS", (0.0,))
    fake = FakeKube([node("a", gpu="yes"), node("b")])
    changes: list[tuple[str, bool]] = []

    async def main() -> Informer[Any]:
        nodes: Informer[Any] = Informer(
            fake.client,
            "Node",
            dict,
            lambda k, v: changes.append((k, v is not None)),
            {"gpu": None},
        )
        async with running(nodes.run()):
            await eventually(lambda: nodes.synced.is_set() and fake.watches_open)
            assert set(nodes.store) == {"a"}
            # A node that stops matching the selector is seen as deleted, one that starts as added.
            fake.modify("Node", "a", lambda n: n["metadata"]["labels"].pop("gpu"))
            fake.modify("Node", "b", lambda n: n["metadata"]["labels"].update(gpu="yes"))
            await eventually(lambda: set(nodes.store) == {"b"})
            fake.end_watches()
            fake.put(node("c", gpu="yes"))
            fake.remove("Node", "b")
            fake.compact()
            await eventually(lambda: set(nodes.store) == {"c"}, what="the relisted store")
        return nodes

    nodes = asyncio.run(main())
    assert nodes.relists == 2
    assert ("a", False) in changes and ("b", False) in changes
