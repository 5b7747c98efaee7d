"""Containers and VMs on one node through DRA, on the real control plane and kube-scheduler.

The simulator (as its ServiceAccount, under the shipped RBAC) plays NVIDIA's DRA kubelet
plugin on a 2x A10 node, publishing gpuop's race-free slices; the real kube-scheduler
places a CUDA pod and a VM's launcher pod, each with a claim, on different cards, and
leaves a third claim of either role Pending. Then the race: a container claim and a VFIO
claim for one card submitted together, 200 times, against NVIDIA's two-faced publication
and against gpuop's race-free one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpuop.kube import ops, sync_client
from gpuop.lab import stack
from gpuop.lab.dra import (
    CONTAINER_CLASS,
    VFIO_CLASS,
    claim_cards,
    claim_manifest,
    device_classes,
    plugin_pod_manifest,
    pod_placement,
    race,
    workload_pod,
)
from gpuop.sim.hardware import NodeSpec
from gpuop.sim.registry import DEFAULT_NAMESPACE, add_nodes
from kit.waiting import wait_until

pytestmark = pytest.mark.e2e

NODE = "e2e-dra"
NS = "e2e-dra"


@pytest.fixture(scope="module")
def dra_node(kubeconfig_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    kubeconfig = str(kubeconfig_path)
    work = tmp_path_factory.mktemp("dra")
    client = sync_client(kubeconfig)
    for obj in device_classes():
        ops.create_or_replace_sync(client, obj)
    ops.ensure_namespace_sync(client, NS)
    ops.delete_node_sync(client, NODE)
    simulator_kubeconfig = stack.install_simulator_access(kubeconfig, work)
    simulator = stack.start_simulator(str(simulator_kubeconfig), work / "logs", work / "hosts")
    add_nodes(client, [NodeSpec(NODE, "A10", 2)], DEFAULT_NAMESPACE)
    ops.create_or_replace_sync(client, plugin_pod_manifest(NODE, DEFAULT_NAMESPACE))
    yield client
    for pod in ops.list_pods_sync(client, NS):
        ops.delete_pod_sync(client, NS, pod["metadata"]["name"], 0)
    for claim in ops.list_dra_sync(client, "ResourceClaim", NS):
        ops.delete_object_sync(client, "ResourceClaim", claim["metadata"]["name"], NS)
    simulator.stop()
    print("simulator log tail:\n" + simulator.log_tail(30))
    ops.delete_pod_sync(
        client,
        DEFAULT_NAMESPACE,
        plugin_pod_manifest(NODE, DEFAULT_NAMESPACE)["metadata"]["name"],
        0,
    )
    ops.delete_node_sync(client, NODE)


def slices_of(client: Any, node: str) -> list[dict[str, Any]]:
    return [
        s for s in ops.list_dra_sync(client, "ResourceSlice") if s["spec"].get("nodeName") == node
    ]


def test_a_cuda_pod_and_a_vm_share_a_node_on_different_cards(dra_node: Any) -> None:
    client = dra_node
    slices = wait_until(
        lambda: (len(slices_of(client, NODE)) == 3, slices_of(client, NODE)), 60, "three slices"
    )
    counters = [s for s in slices if s["spec"].get("sharedCounters")]
    assert [c["name"] for c in counters[0]["spec"]["sharedCounters"]] == [
        "gpu-0-counter-set",
        "gpu-1-counter-set",
    ]
    for name, device_class, vm in (
        ("cuda", CONTAINER_CLASS, False),
        ("virt-launcher-vm", VFIO_CLASS, True),
    ):
        ops.create_or_replace_sync(client, claim_manifest(name, NS, device_class))
        ops.create_or_replace_sync(client, workload_pod(name, NS, name, vm=vm))

    def prepared() -> tuple[bool, Any]:
        claims = {c["metadata"]["name"]: c for c in ops.list_dra_sync(client, "ResourceClaim", NS)}
        entries = {n: (c.get("status") or {}).get("devices") or [] for n, c in claims.items()}
        return all(entries.get(n) for n in ("cuda", "virt-launcher-vm")), entries

    entries = wait_until(prepared, 60, "both claims prepared")
    cuda, vm = entries["cuda"][0], entries["virt-launcher-vm"][0]
    assert cuda["data"]["role"] == "gpu" and vm["data"]["role"] == "vfio"
    assert cuda["data"]["pciBusID"] != vm["data"]["pciBusID"]
    assert all(e["conditions"][0]["status"] == "True" for e in (cuda, vm))
    pods = {p["metadata"]["name"]: p for p in ops.list_pods_sync(client, NS)}
    assert {pod_placement(pods[n])[0] for n in ("cuda", "virt-launcher-vm")} == {NODE}
    cards = claim_cards(ops.list_dra_sync(client, "ResourceClaim", NS), slices_of(client, NODE))
    assert len({bus for devices in cards.values() for _p, _d, bus in devices}) == 2

    for name, device_class, vm_pod in (
        ("cuda-third", CONTAINER_CLASS, False),
        ("virt-launcher-third", VFIO_CLASS, True),
    ):
        ops.create_or_replace_sync(client, claim_manifest(name, NS, device_class))
        ops.create_or_replace_sync(client, workload_pod(name, NS, name, NODE, vm=vm_pod))

    def pending() -> tuple[bool, Any]:
        pods = {p["metadata"]["name"]: p for p in ops.list_pods_sync(client, NS)}
        seen = {
            n: pod_placement(pods[n]) if n in pods else (None, "")
            for n in ("cuda-third", "virt-launcher-third")
        }
        return all(node is None and reason for node, reason in seen.values()), seen

    seen = wait_until(pending, 60, "the third claims Pending with a reason")
    for _node, reason in seen.values():
        assert "cannot allocate all claims" in reason
    time.sleep(2)  # still Pending after the scheduler's retries
    assert all(
        pod_placement(p)[0] is None
        for p in ops.list_pods_sync(client, NS)
        if "third" in p["metadata"]["name"]
    )


def test_the_race_double_allocates_two_faced_and_never_race_free(kubeconfig_path: Path) -> None:
    client = sync_client(str(kubeconfig_path))
    for obj in device_classes():
        ops.create_or_replace_sync(client, obj)
    results = {
        shared: race(
            client,
            shared_counters=shared,
            nodes=20,
            rounds=10,
            namespace="e2e-dra-race",
            prefix=f"e2e-race-{'free' if shared else 'two'}",
            say=print,
        )
        for shared in (False, True)
    }
    two_faced, race_free = results[False], results[True]
    print(
        f"double allocations in {two_faced.trials} same-card pairs: two-faced"
        f" {two_faced.double_allocations}, race-free {race_free.double_allocations}"
    )
    assert two_faced.trials == race_free.trials == 200
    assert race_free.double_allocations == 0
    assert race_free.one_pending == 200
    assert two_faced.double_allocations > 0
