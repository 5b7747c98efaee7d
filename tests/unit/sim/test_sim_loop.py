"""The node simulator on the in-memory API: informers, the loop and the node writes together.

Each test runs the real simulator (`sim_loop` and its informers) against `FakeKube` with
three simulated 2x A10 nodes, makes operand pods Ready the way kubelets would, injects a
fault, and asserts what the nodes end up advertising: the GPU resources of each node's
workload once its operands are Ready, none before. The faults are the API's: an error in
the middle of a pass, a 409, a watch answered 410 Gone, a write the server dropped.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gpuop.api.labels import GPU_PRODUCT_LABEL, VGPU_CONFIG_STATE_LABEL
from gpuop.catalog import operand_table
from gpuop.kube import controller, informer
from gpuop.kube.running import supervise
from gpuop.naming import is_gpu_resource
from gpuop.sim import controller as sim
from gpuop.sim.hardware import HARDWARE_CONFIGMAP, NodeSpec, hardware_entries, node_manifest
from kit.aio import eventually, running
from kit.fake_kube import FakeKube

NS = "gpu-operator"
TIMEOUT = 20.0
CHAINS = {
    "c": (
        "driver",
        "container-toolkit",
        "operator-validator",
        "device-plugin",
        "gpu-feature-discovery",
    ),
    "p": ("vfio-manager", "sandbox-validator", "sandbox-device-plugin"),
    "v": ("vgpu-manager", "vgpu-device-manager", "sandbox-validator", "sandbox-device-plugin"),
}
ADVERTISED = {
    "c": {"nvidia.com/gpu": 2},
    "p": {"nvidia.com/GA102GL_A10": 2},
    "v": {"nvidia.com/NVIDIA_A10-12Q": 4},
}


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controller, "API_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(controller, "ERROR_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(informer, "RETRY_DELAYS_SECONDS", (0.01,))
    # No resync within a test: only the loop's own retries may repair a failed pass.
    monkeypatch.setattr(sim, "RESYNC_SECONDS", 3600.0)


def cluster() -> FakeKube:
    specs = [NodeSpec(name, "A10", 2) for name in CHAINS]
    hardware = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": HARDWARE_CONFIGMAP, "namespace": NS},
        "data": hardware_entries(specs),
    }
    return FakeKube([hardware, *(node_manifest(spec) for spec in specs)])


def operand_pod(operand: str, node: str, ready: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{operand}-{node}",
            "namespace": NS,
            "labels": {"app": operand_table().operand(operand).daemonset},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": operand_table().operand(operand).daemonset,
                    "controller": True,
                }
            ],
        },
        "spec": {"nodeName": node, "containers": [{"name": operand, "image": "x:1"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def run_operands(fake: FakeKube, ready: bool = True) -> None:
    for node, chain in CHAINS.items():
        for operand in chain:
            fake.put(operand_pod(operand, node, ready))


def advertised(fake: FakeKube) -> dict[str, dict[str, int]]:
    result = {}
    for name, node in fake.objects_of("Node").items():
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        result[name] = {k: int(v) for k, v in allocatable.items() if is_gpu_resource(k)}
    return result


def simulator(fake: FakeKube, hosts: Path) -> tuple[sim.SimState, Any]:
    state = sim.SimState(sim.SimConfig(namespace=NS, hosts_dir=hosts, debounce_seconds=0.01))
    state.client = fake
    informers = state.watch(fake)
    return state, supervise(sim.sim_loop(state), *(i.run() for i in informers))


async def simulate(fake: FakeKube, hosts: Path, ready_later: bool = False) -> sim.SimState:
    """Run the simulator until every node advertises its workload's resources."""
    state, work = simulator(fake, hosts)
    async with running(work):
        if ready_later:
            await eventually(lambda: state.passes >= 1, TIMEOUT, "a first pass")
            await asyncio.sleep(0.1)
            assert advertised(fake) == {name: {} for name in CHAINS}
            run_operands(fake)
        await eventually(lambda: advertised(fake) == ADVERTISED, TIMEOUT, "the GPU resources")
    return state


def assert_settled(fake: FakeKube, hosts: Path) -> None:
    assert advertised(fake) == ADVERTISED
    labels = fake.objects_of("Node")["c"]["metadata"]["labels"]
    assert labels[GPU_PRODUCT_LABEL] == "NVIDIA-A10"
    assert fake.objects_of("Node")["v"]["metadata"]["labels"][VGPU_CONFIG_STATE_LABEL] == "success"
    config = (hosts / "c" / "etc" / "containerd" / "config.toml").read_text()
    assert "nvidia" in config
    assert not fake.faults_left()


def test_resources_appear_once_the_operand_pods_are_ready(tmp_path: Path) -> None:
    fake = cluster()
    run_operands(fake, ready=False)
    asyncio.run(simulate(fake, tmp_path, ready_later=True))
    assert_settled(fake, tmp_path)


def test_an_api_error_in_the_middle_of_a_pass_is_retried(tmp_path: Path) -> None:
    fake = cluster()
    run_operands(fake)
    fake.fail("patch", "Node/status", 500, nth=2)
    fake.fail("patch", "Node", 503, nth=3)
    asyncio.run(simulate(fake, tmp_path))
    assert_settled(fake, tmp_path)


def test_a_failed_write_is_made_again_when_nothing_else_changes(tmp_path: Path) -> None:
    async def scenario(fake: FakeKube) -> None:
        _state, work = simulator(fake, tmp_path)
        async with running(work):
            await eventually(lambda: advertised(fake) == ADVERTISED, TIMEOUT, "the resources")
            # The sandbox device plugin leaves one node: one write, which fails once.
            fake.fail("patch", "Node/status", 500)
            fake.remove("Pod", "sandbox-device-plugin-p", NS)
            await eventually(
                lambda: advertised(fake)["p"] == {}, TIMEOUT, "the resources to be withdrawn"
            )

    fake = cluster()
    run_operands(fake)
    asyncio.run(scenario(fake))
    assert advertised(fake) == {**ADVERTISED, "p": {}}
    assert not fake.faults_left()


def test_a_409_conflict_is_retried(tmp_path: Path) -> None:
    fake = cluster()
    run_operands(fake)
    fake.fail("patch", "Node", 409, nth=1, times=3)
    asyncio.run(simulate(fake, tmp_path))
    assert_settled(fake, tmp_path)


def test_a_watch_answered_410_gone_relists_and_catches_up(tmp_path: Path) -> None:
    async def scenario(fake: FakeKube) -> sim.SimState:
        state, work = simulator(fake, tmp_path)
        async with running(work):
            await eventually(lambda: state.passes >= 1, TIMEOUT, "a first pass")
            # While the watches are down the operand pods become Ready, and the versions
            # the informers hold are compacted away.
            fake.end_watches()
            run_operands(fake)
            fake.compact()
            await eventually(lambda: advertised(fake) == ADVERTISED, TIMEOUT, "the resources")
        return state

    fake = cluster()
    run_operands(fake, ready=False)
    state = asyncio.run(scenario(fake))
    assert_settled(fake, tmp_path)
    assert state.pods is not None and state.pods.relists >= 2


def test_a_410_on_the_first_watch_relists(tmp_path: Path) -> None:
    fake = cluster()
    run_operands(fake)
    fake.fail("watch", "Pod", 410)
    fake.fail("watch", "Node", 410)
    asyncio.run(simulate(fake, tmp_path))
    assert_settled(fake, tmp_path)


def test_writes_the_server_dropped_are_made_again(tmp_path: Path) -> None:
    fake = cluster()
    run_operands(fake)
    fake.drop("patch", "Node/status", nth=1)
    fake.drop("patch", "Node", nth=2)
    asyncio.run(simulate(fake, tmp_path))
    assert_settled(fake, tmp_path)
    assert len(fake.dropped) == 2


def test_a_deleted_node_is_forgotten(tmp_path: Path) -> None:
    async def scenario(fake: FakeKube) -> sim.SimState:
        state, work = simulator(fake, tmp_path)
        async with running(work):
            await eventually(lambda: advertised(fake) == ADVERTISED, TIMEOUT, "the resources")
            fake.remove("Node", "p")
            await eventually(lambda: "p" not in state.host, TIMEOUT, "the host state to go")
        return state

    fake = cluster()
    run_operands(fake)
    state = asyncio.run(scenario(fake))
    assert "p" not in state.overlay
    assert set(state.host) == {"c", "v"}
