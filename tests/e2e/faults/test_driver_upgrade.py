"""A driver upgrade rolled out over 100 simulated nodes, with the API server killed mid-way.

The operator and the simulator run against the session cluster; 100 kwok nodes run the
container operands. With `maxParallelUpgrades: 10`, a driver version change must move
through the nodes at most ten at a time, never restart a driver under a running GPU pod,
and finish with every node `upgrade-done`, uncordoned and on the new driver, although the
kube-apiserver is SIGKILLed and restarted while nodes are half-way through, and later the
leading operator replica is SIGKILLed and the standby takes over the rollout.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Node, Pod
from lightkube.types import PatchType

from gpuop.api.labels import DRIVER_VERSION_LABEL, UPGRADE_STATE_LABEL
from gpuop.controlplane import LocalCluster
from gpuop.controlplane.components import APISERVER
from gpuop.kube import ClusterPolicy, ops, sync_client
from gpuop.lab import stack
from gpuop.sim.hardware import NodeSpec, node_manifest
from gpuop.sim.registry import register_hardware
from kit.waiting import retry_api

pytestmark = pytest.mark.e2e

COUNT = 100
PARALLEL = 10
PREFIX = "e2e-upgrade"
POLICY = "cluster-policy"
NEW_VERSION = "595.100.01"
IDLE = {"", "upgrade-done", "upgrade-required"}
WORKLOAD = "cuda-fleet"


def _cluster(e2e_cluster: Any) -> LocalCluster:
    if e2e_cluster.cluster is not None:
        return e2e_cluster.cluster  # type: ignore[no-any-return]
    directory = Path(e2e_cluster.kubeconfig).resolve().parent
    return LocalCluster(directory.name, state_root_dir=directory.parent.parent)


@pytest.fixture(scope="module")
def fleet(e2e_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    kubeconfig = str(e2e_cluster.kubeconfig)
    work = tmp_path_factory.mktemp("upgrade-fleet")
    client = sync_client(kubeconfig)
    names = [f"{PREFIX}-{i:03d}" for i in range(COUNT)]
    stack.install_crd(kubeconfig)
    operator_kubeconfig = stack.install_operator_access(kubeconfig, work)
    simulator_kubeconfig = stack.install_simulator_access(kubeconfig, work)
    register_hardware(client, [NodeSpec(n, "A10", 2) for n in names], stack.NAMESPACE)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: ops.delete_node_sync(client, n), names))
        list(
            pool.map(
                lambda n: ops.create_object_sync(client, node_manifest(NodeSpec(n, "A10", 2))),
                names,
            )
        )
    operator = stack.start_operator(operator_kubeconfig, work / "logs")
    # A second replica stands by; the test kills whichever leads mid-rollout.
    standby = stack.start_operator(operator_kubeconfig, work / "logs-standby")
    simulator = stack.start_simulator(str(simulator_kubeconfig), work / "logs", work / "hosts")
    policy = stack.lab_policy(sandbox=False, name=POLICY)
    policy["spec"]["driver"]["upgradePolicy"] = {
        "autoUpgrade": True,
        "maxParallelUpgrades": PARALLEL,
        "maxUnavailable": "25%",
    }
    stack.apply_cluster_policy(kubeconfig, policy)
    state = {
        "client": client,
        "names": names,
        "operator": operator,
        "operators": [operator, standby],
        "kubeconfig": kubeconfig,
    }
    yield state
    print("operator log tail:\n" + operator.log_tail(40))
    with contextlib.suppress(ApiError):
        client.delete(Deployment, WORKLOAD, namespace="default")
    for replica in state["operators"]:
        replica.stop()
    simulator.stop()
    stack.delete_cluster_policy(kubeconfig, POLICY)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: ops.delete_node_sync(client, n), names))


def _fleet_state(client: Client, names: list[str]) -> dict[str, tuple[str, bool]]:
    return {name: (state, cordoned) for name, (state, cordoned, _) in _fleet(client, names).items()}


def _fleet(client: Client, names: list[str]) -> dict[str, tuple[str, bool, str]]:
    """Each node's upgrade state, cordon, and the driver version feature discovery reports."""
    wanted = set(names)
    return {
        node.metadata.name: (
            (node.metadata.labels or {}).get(UPGRADE_STATE_LABEL, ""),
            bool(node.spec and node.spec.unschedulable),
            (node.metadata.labels or {}).get(DRIVER_VERSION_LABEL, ""),
        )
        for node in client.list(Node, labels={"type": "kwok"})
        if node.metadata and node.metadata.name in wanted
    }


def _pods_by_node(client: Client, namespace: str, labels: dict[str, str]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for pod in client.list(Pod, namespace=namespace, labels=labels):
        if pod.spec and pod.spec.nodeName and not (pod.metadata and pod.metadata.deletionTimestamp):
            found.setdefault(pod.spec.nodeName, []).append(pod)
    return found


def _restarted_under(gpu: dict[str, list[Any]], drivers: dict[str, list[Any]]) -> list[str]:
    """GPU pods that were bound to their node before its new driver pod was created: the
    driver restarted under them (the API's timestamps have whole seconds, so a binding in
    the driver pod's own second is not counted)."""
    found = []
    for node, pods in gpu.items():
        new = [d for d in drivers.get(node, []) if NEW_VERSION in d.spec.containers[0].image]
        if not new:
            continue
        restarted = min(d.metadata.creationTimestamp for d in new)
        for pod in pods:
            bound = next(
                (
                    c.lastTransitionTime
                    for c in pod.status.conditions or []
                    if c.type == "PodScheduled"
                ),
                None,
            )
            if bound is not None and bound < restarted:
                found.append(f"{node}: driver restarted at {restarted} under {pod.metadata.name}")
    return found


def _gpu_workload(replicas: int) -> dict[str, Any]:
    pod = stack.gpu_pod(WORKLOAD, "nvidia.com/gpu")
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": WORKLOAD, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": WORKLOAD}},
            "template": {"metadata": {"labels": {"app": WORKLOAD}}, "spec": pod["spec"]},
        },
    }


def test_a_hundred_nodes_upgrade_ten_at_a_time_through_an_api_server_kill(
    fleet: dict[str, Any], e2e_cluster: Any
) -> None:
    client: Client = fleet["client"]
    names: list[str] = fleet["names"]
    deadline = time.monotonic() + 300
    while True:
        seen = _fleet_state(client, names)
        if len(seen) == COUNT and all(state == "upgrade-done" for state, _ in seen.values()):
            break
        assert time.monotonic() < deadline, f"not all upgrade-done: {Counter(seen.values())}"
        time.sleep(1.0)
    ops.create_or_replace_sync(client, _gpu_workload(30))
    deadline = time.monotonic() + 120
    while sum(len(v) for v in _pods_by_node(client, "default", {"app": WORKLOAD}).values()) < 30:
        assert time.monotonic() < deadline, "the GPU workload never ran"
        time.sleep(1.0)

    started = time.monotonic()
    client.patch(
        ClusterPolicy,
        POLICY,
        {
            "spec": {
                "driver": {
                    "repository": "nvcr.io/nvidia",
                    "image": "driver",
                    "version": NEW_VERSION,
                }
            }
        },
        patch_type=PatchType.MERGE,
    )
    peak = 0
    killed_at: int | None = None
    leader_killed_at: int | None = None
    violations: list[str] = []
    states_seen: Counter[str] = Counter()
    deadline = time.monotonic() + 540
    while True:
        seen = retry_api(lambda: _fleet_state(client, names), timeout=90)
        upgrading = [n for n, (state, _) in seen.items() if state not in IDLE]
        peak = max(peak, len(upgrading))
        states_seen.update(state for state, _ in seen.values())
        gpu = retry_api(lambda: _pods_by_node(client, "default", {"app": WORKLOAD}), timeout=90)
        restarted = retry_api(
            lambda: _pods_by_node(client, stack.NAMESPACE, {"app": "nvidia-driver-daemonset"}),
            timeout=90,
        )
        violations.extend(_restarted_under(gpu, restarted))
        done = [n for n, (state, _) in seen.items() if state == "upgrade-done"]
        if (
            killed_at is None
            and upgrading
            and len(done) >= COUNT // 3
            and time.monotonic() - started > 5
        ):
            killed_at = len(done)
            _cluster(e2e_cluster).restart_component(APISERVER)
            continue
        if killed_at is not None and leader_killed_at is None and len(done) >= 2 * COUNT // 3:
            # The leading replica dies mid-rollout: the standby takes over the Lease and the
            # rollout where the Nodes' upgrade states say it is.
            leader = next(
                r for r in fleet["operators"] if r.alive() and "leading as" in r.log_tail(2000)
            )
            leader.kill()
            leader_killed_at = len(done)
        drivers = retry_api(
            lambda: _pods_by_node(client, stack.NAMESPACE, {"app": "nvidia-driver-daemonset"}),
            timeout=90,
        )
        finished = (
            killed_at is not None
            and leader_killed_at is not None
            and len(seen) == COUNT
            and all(state == "upgrade-done" and not cordoned for state, cordoned in seen.values())
            and all(
                len(drivers.get(n, [])) == 1
                and NEW_VERSION in drivers[n][0].spec.containers[0].image
                for n in names
            )
        )
        if finished:
            break
        if time.monotonic() > deadline:
            pytest.fail(
                f"rollout not finished: {Counter(s for s, _ in seen.values())};"
                f" operator log:\n{fleet['operator'].log_tail(30)}"
            )
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    print(
        f"\n[upgrade] {COUNT} nodes in {elapsed:.0f}s, at most {peak} upgrading at once,"
        f" API server killed with {killed_at} done, the leading operator with"
        f" {leader_killed_at} done"
    )
    assert 1 <= peak <= PARALLEL, f"{peak} nodes upgrading at once"
    assert not violations, sorted(set(violations))[:10]
    assert "upgrade-failed" not in states_seen
    assert not any(s.startswith("paused") for s in states_seen)
    # Feature discovery on every node reports the driver the new pods installed.
    deadline = time.monotonic() + 60
    while Counter(v for _, _, v in _fleet(client, names).values()) != {NEW_VERSION: COUNT}:
        assert time.monotonic() < deadline, Counter(v for _, _, v in _fleet(client, names).values())
        time.sleep(0.5)
    labels = [(n.metadata.labels or {}) for n in client.list(Node, labels={"type": "kwok"})]
    assert not [(k, v) for node_labels in labels for k, v in node_labels.items() if "paused" in v]
