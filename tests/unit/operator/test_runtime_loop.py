"""The operator process on the in-memory API: informers, the loop and the writes together.

Each test runs the real runtime (`reconcile_loop` and the informers) against `FakeKube`,
with the DaemonSet controller and kubelets played by `kit.cluster`, injects a fault, and
asserts where the cluster ends up: three GPU nodes labelled for their workload, every
operand's DaemonSet and support object made, the ClusterPolicy `ready`, and nothing left
for another pass to write. The faults are the API's: an error in the middle of a pass, a
409, a watch answered 410 Gone, a write the server dropped.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest

from gpuop.api.labels import (
    FORCE_SWITCH_ANNOTATION,
    HASH_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    UPGRADE_STATE_LABEL,
    WORKLOAD_LABEL,
    deploy_label,
)
from gpuop.kube import controller, informer
from gpuop.kube.controller import Outcome
from gpuop.kube.ops import MANAGED_KINDS
from gpuop.kube.running import supervise
from gpuop.lab.stack import lab_policy
from gpuop.operator import runtime
from gpuop.operator.reconcile import Actions, Snapshot, pod_info, reconcile
from gpuop.operator.slim import same_node
from gpuop.planner.upgrade import UpgradeCounts
from gpuop.render import configmap_keys
from gpuop.sim.hardware import NodeSpec, node_manifest
from kit.aio import eventually, running
from kit.cluster import play_daemonsets
from kit.fake_kube import FakeKube

NS = "gpu-operator"
NOW = "2026-12-01T00:00:00Z"
WORKLOADS = {"c": "container", "p": "vm-passthrough", "v": "vm-vgpu"}
DEPLOYED = {
    "c": deploy_label("device-plugin"),
    "p": deploy_label("vfio-manager"),
    "v": deploy_label("vgpu-manager"),
}
TIMEOUT = 60.0


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controller, "API_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(controller, "ERROR_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(informer, "RETRY_DELAYS_SECONDS", (0.01,))
    monkeypatch.setattr(runtime, "STATUS_INTERVAL_SECONDS", 0.05)


def gpu_node(name: str, workload: str | None = None) -> dict[str, Any]:
    labels = {WORKLOAD_LABEL: workload} if workload else {}
    return node_manifest(NodeSpec(name, "A10", 2, labels))


def cluster() -> FakeKube:
    return FakeKube(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            lab_policy(sandbox=True),
            *(gpu_node(name, workload) for name, workload in WORKLOADS.items()),
        ]
    )


def operator(fake: FakeKube) -> tuple[runtime.OperatorState, Any]:
    """The operator's state and its informers and loop, ready to run."""
    config = runtime.OperatorConfig(namespace=NS, debounce_seconds=0.01, resync_seconds=3600)
    state = runtime.OperatorState(config)
    state.client = fake
    informers = state.watch(fake)
    return state, supervise(runtime.reconcile_loop(state), *(i.run() for i in informers))


def what_is_left(fake: FakeKube) -> Actions:
    """A fresh reconcile of what the API holds now: what a new operator would still write."""
    revisions = [
        runtime.slim_revision(o) for o in fake.objects_of("ControllerRevision", NS).values()
    ]
    daemonsets = {n: runtime.slim_daemonset(o) for n, o in fake.objects_of("DaemonSet", NS).items()}
    existing = {
        (kind, name): obj["metadata"].get("annotations", {}).get(HASH_ANNOTATION, "")
        for kind in MANAGED_KINDS
        for name, obj in fake.objects_of(kind).items()
        if obj["metadata"].get("labels", {}).get(MANAGED_BY_LABEL) == MANAGED_BY
    }
    snapshot = Snapshot(
        policies=list(fake.objects_of("ClusterPolicy").values()),
        nodes={n: runtime.slim_node(o) for n, o in fake.objects_of("Node").items()},
        daemonsets=daemonsets,
        pods=[p for o in fake.objects_of("Pod").values() if (p := pod_info(o, NS)) is not None],
        namespace=NS,
        existing_objects=existing,
        revisions=runtime.newest_revisions([r for r in revisions if r is not None]),
        template_digests={
            n: ds["configDigest"] for n, ds in daemonsets.items() if ds["configDigest"] is not None
        },
        configmap_keys={
            name: configmap_keys(obj) for name, obj in fake.objects_of("ConfigMap", NS).items()
        },
    )
    return reconcile(snapshot, NOW)


def converged(fake: FakeKube) -> bool:
    policy = fake.get_object("ClusterPolicy", "cluster-policy") or {}
    if (policy.get("status") or {}).get("state") != "ready":
        return False
    nodes = fake.objects_of("Node")
    if any(nodes[n]["metadata"]["labels"].get(key) != "true" for n, key in DEPLOYED.items()):
        return False
    return what_is_left(fake).write_count == 0


def assert_converged(fake: FakeKube) -> None:
    left = what_is_left(fake)
    assert left.write_count == 0, left
    labels = {n: o["metadata"]["labels"] for n, o in fake.objects_of("Node").items()}
    for name, key in DEPLOYED.items():
        assert labels[name][key] == "true"
    assert labels["c"].get(DEPLOYED["p"]) is None
    assert labels["p"].get(DEPLOYED["c"]) is None
    daemonsets = fake.objects_of("DaemonSet", NS)
    assert {
        "nvidia-driver-daemonset",
        "nvidia-vfio-manager",
        "nvidia-vgpu-manager-daemonset",
    } <= set(daemonsets)
    policy = fake.get_object("ClusterPolicy", "cluster-policy") or {}
    assert policy["status"]["state"] == "ready"
    assert not fake.faults_left()


async def operate(
    fake: FakeKube, until: Callable[[], Any], what: str = "the cluster to converge"
) -> runtime.OperatorState:
    state, work = operator(fake)
    async with running(work, play_daemonsets(fake, NS)):
        await eventually(until, TIMEOUT, what)
    return state


def test_labels_the_nodes_makes_the_daemonsets_and_reports_ready() -> None:
    fake = cluster()
    state = asyncio.run(operate(fake, lambda: converged(fake)))
    assert_converged(fake)
    assert state.passes >= 2


def test_node_writes_are_not_kept_once_the_watch_brings_them() -> None:
    # Ten thousand patched nodes held twice (the write and the watched copy) until the next
    # pass was most of the operator's peak memory at fleet size.
    state = runtime.OperatorState(runtime.OperatorConfig(namespace=NS))
    written = runtime.slim_node(
        {**gpu_node("c"), "metadata": {"name": "c", "resourceVersion": "7"}}
    )
    state.node_overlay.wrote("c", 7, written)
    state.node_changed("c", {**written, "metadata": {"name": "c", "resourceVersion": "6"}})
    assert "c" in state.node_overlay
    state.node_changed("c", written)
    assert "c" not in state.node_overlay
    state.node_overlay.wrote("c", 9, written)
    state.node_changed("c", None)
    assert len(state.node_overlay) == 0


def test_the_echo_of_its_own_node_patch_wakes_no_pass() -> None:
    # At 10,000 nodes the labelling's echoes came back for many seconds after it, and each
    # woke a pass over the whole fleet that found nothing to write.
    state = runtime.OperatorState(runtime.OperatorConfig(namespace=NS))
    written = runtime.slim_node(
        {**gpu_node("c"), "metadata": {"name": "c", "resourceVersion": "7"}}
    )
    state.node_overlay.wrote("c", 7, written)
    state.node_changed("c", written)
    assert not state.trigger.is_set()
    assert "c" not in state.node_overlay
    # A version past the write is someone else's change: it wakes a pass.
    state.node_overlay.wrote("c", 9, written)
    state.node_changed(
        "c", {**written, "metadata": {**written["metadata"], "resourceVersion": "10"}}
    )
    assert state.trigger.is_set()
    state.trigger.clear()
    # So is any change to a node this process did not write.
    state.node_changed("g", written)
    assert state.trigger.is_set()


def test_the_echo_of_its_own_status_write_wakes_no_pass() -> None:
    state = runtime.OperatorState(runtime.OperatorConfig(namespace=NS))
    policy = {**lab_policy(sandbox=True), "status": {"state": "ready"}}
    policy["metadata"] = {**policy["metadata"], "resourceVersion": "5"}
    state.status_overlay.wrote("cluster-policy", 5, {"state": "ready"})
    state.policy_changed("cluster-policy", policy)
    assert not state.trigger.is_set()
    edited = {**policy, "metadata": {**policy["metadata"], "resourceVersion": "6"}}
    state.policy_changed("cluster-policy", edited)
    assert state.trigger.is_set()


def test_the_nodes_whose_pods_are_read_live_follow_their_events() -> None:
    # A pass reads live the pods of the nodes between the cordon and the driver restart;
    # which nodes those are is kept as events come, not looked up over the fleet each pass.
    state = runtime.OperatorState(runtime.OperatorConfig(namespace=NS))

    def node(version: str, upgrade_state: str | None) -> dict[str, Any]:
        labels = {UPGRADE_STATE_LABEL: upgrade_state} if upgrade_state else {}
        body = node_manifest(NodeSpec("c", "A10", 2, labels))
        body["metadata"]["resourceVersion"] = version
        return runtime.slim_node(body)

    state.node_changed("c", node("1", "upgrade-required"))
    assert state.pods_read_on == set()
    state.node_changed("c", node("2", "pod-deletion-required"))
    assert state.pods_read_on == {"c"}
    state.node_overlay.wrote("c", 3, node("3", "upgrade-done"))
    state.node_changed("c", node("3", "upgrade-done"))  # its own write, come back
    assert state.pods_read_on == set()
    state.node_changed("c", node("4", "drain-required"))
    state.node_changed("c", None)
    assert state.pods_read_on == set()


def test_a_node_heartbeat_is_not_a_change() -> None:
    node = runtime.slim_node({**gpu_node("c"), "metadata": {"name": "c", "resourceVersion": "7"}})
    beat = runtime.slim_node({**gpu_node("c"), "metadata": {"name": "c", "resourceVersion": "8"}})
    assert same_node(node, beat)
    relabelled = copy.deepcopy(beat)
    relabelled["metadata"]["labels"][WORKLOAD_LABEL] = "vm-passthrough"
    assert not same_node(node, relabelled)
    unready = copy.deepcopy(beat)
    unready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    assert not same_node(node, unready)


def test_the_driver_mounts_the_keys_of_the_configmap_its_policy_names() -> None:
    fake = cluster()
    policy = fake.get_object("ClusterPolicy", "cluster-policy")
    assert policy is not None
    policy["spec"]["driver"]["kernelModuleConfig"] = {"name": "kernel-module-params"}
    fake.put(policy)
    fake.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "kernel-module-params", "namespace": NS},
            "data": {"nvidia.conf": "NVreg_EnableGpuFirmware=0"},
        }
    )
    asyncio.run(operate(fake, lambda: converged(fake)))
    driver = fake.get_object("DaemonSet", "nvidia-driver-daemonset", NS)
    assert driver is not None
    container = driver["spec"]["template"]["spec"]["containers"][0]
    assert {
        "name": "kernel-module-params",
        "readOnly": True,
        "mountPath": "/drivers/nvidia.conf",
        "subPath": "nvidia.conf",
    } in container["volumeMounts"]


def test_an_api_error_in_the_middle_of_a_pass_is_retried() -> None:
    fake = cluster()
    # The second node patch of the first pass fails, and the first DaemonSet applied.
    fake.fail("patch", "Node", 500, nth=2)
    fake.fail("apply", "DaemonSet", 503, nth=1)
    asyncio.run(operate(fake, lambda: converged(fake)))
    assert_converged(fake)


def test_a_409_conflict_is_retried() -> None:
    fake = cluster()
    fake.fail("patch", "ClusterPolicy/status", 409, times=2)
    fake.fail("apply", "ConfigMap", 409, nth=2)
    asyncio.run(operate(fake, lambda: converged(fake)))
    assert_converged(fake)


def test_a_watch_answered_410_gone_relists_and_catches_up() -> None:
    async def scenario(fake: FakeKube) -> runtime.OperatorState:
        state, work = operator(fake)
        async with running(work, play_daemonsets(fake, NS)):
            await eventually(lambda: converged(fake), TIMEOUT, "the first convergence")
            # The API server restarts; while the operator is away its deploy label is taken
            # off a node and a new GPU node joins; the versions the informers hold are gone.
            fake.end_watches()
            fake.modify(
                "Node",
                "c",
                lambda node: node["metadata"]["labels"].pop(DEPLOYED["c"]),
            )
            fake.put(gpu_node("c2", "container"))
            fake.compact()
            await eventually(
                lambda: (
                    converged(fake)
                    and fake.objects_of("Node")["c2"]["metadata"]["labels"].get(DEPLOYED["c"])
                ),
                TIMEOUT,
                "the relisted nodes to converge",
            )
        return state

    fake = cluster()
    state = asyncio.run(scenario(fake))
    assert_converged(fake)
    assert state.nodes is not None and state.nodes.relists >= 2


def test_a_410_on_the_first_watch_relists() -> None:
    fake = cluster()
    fake.fail("watch", "Node", 410)
    fake.fail("watch", "DaemonSet", 410, times=2)
    asyncio.run(operate(fake, lambda: converged(fake)))
    assert_converged(fake)


def test_writes_the_server_dropped_are_made_again() -> None:
    fake = cluster()
    fake.drop("patch", "Node", nth=1)
    fake.drop("apply", "DaemonSet", nth=2)
    fake.drop("patch", "ClusterPolicy/status", nth=1)
    asyncio.run(operate(fake, lambda: converged(fake)))
    assert_converged(fake)
    assert len(fake.dropped) == 3


def test_a_held_status_write_and_a_driver_upgrade_ask_for_later_passes() -> None:
    fake = cluster()
    state = runtime.OperatorState(runtime.OperatorConfig(namespace=NS))
    state.watch(fake.client)
    assert state.policies is not None
    written = {"state": "notReady", "nodes": {"ready": 1}}
    state.policies.store["cluster-policy"] = {**lab_policy(sandbox=True), "status": written}
    passes = runtime.OperatorPasses(state, fake.client)

    def execute(actions: Actions) -> Outcome:
        return asyncio.run(passes.execute(actions))

    upgrading = UpgradeCounts(in_progress=1, total=3)
    # The first status write goes out at once; progress figures right after it wait.
    first = execute(Actions(status={"cluster-policy": {"state": "notReady", "nodes": {}}}))
    assert first.requeue_after is None and first.again
    held = execute(
        Actions(
            status={"cluster-policy": {**written, "nodes": {"ready": 2}}}, upgrade_counts=upgrading
        )
    )
    assert held.requeue_after == runtime.STATUS_INTERVAL_SECONDS
    assert fake.calls[("patch", "ClusterPolicy/status")] == 1
    # A change of state is written at once; the upgrade asks to look again later.
    urgent = execute(
        Actions(status={"cluster-policy": {"state": "ready"}}, upgrade_counts=upgrading)
    )
    assert fake.calls[("patch", "ClusterPolicy/status")] == 2
    assert urgent.requeue_after == runtime.STATUS_INTERVAL_SECONDS
    state.last_status_write = 0.0
    later = execute(Actions(upgrade_counts=upgrading))
    assert later.requeue_after == runtime.UPGRADE_RECHECK_SECONDS and not later.again


def gpu_pod(name: str, node: str) -> dict[str, Any]:
    container = {"name": "cuda", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running"},
    }


def reconcile_without_pods(fake: FakeKube) -> Actions:
    """A pass on what the API holds, with a pod informer that has delivered no pods yet."""
    snapshot = Snapshot(
        policies=list(fake.objects_of("ClusterPolicy").values()),
        nodes={n: runtime.slim_node(o) for n, o in fake.objects_of("Node").items()},
        daemonsets={
            n: runtime.slim_daemonset(o) for n, o in fake.objects_of("DaemonSet", NS).items()
        },
        pods=[],
        namespace=NS,
    )
    return reconcile(snapshot, NOW)


def switch_seen_without_pods(fake: FakeKube) -> Actions:
    """Node c relabelled vm-vgpu, decided on a snapshot whose pod informer lags (no pods)."""
    node = fake.get_object("Node", "c")
    assert node is not None
    node["metadata"]["labels"][WORKLOAD_LABEL] = "vm-vgpu"
    fake.put(node)
    actions = reconcile_without_pods(fake)
    assert "c" in actions.switching and "c" in actions.node_label_patches
    return actions


@pytest.mark.parametrize("pod_on_node", [True, False])
def test_a_switch_is_held_for_a_gpu_pod_the_pod_informer_has_not_seen(pod_on_node: bool) -> None:
    fake = cluster()
    state = asyncio.run(operate(fake, lambda: converged(fake)))
    if pod_on_node:
        fake.put(gpu_pod("training", "c"))
    fake.put(gpu_pod("elsewhere", "p"))
    actions = switch_seen_without_pods(fake)
    held = asyncio.run(runtime._hold_unseen_switches(state, fake, actions))
    if pod_on_node:
        assert held == ["c"]
        assert "c" not in actions.node_label_patches and not actions.switching
        assert not [e for e in actions.events if e.reason == "WorkloadSwitched"]
    else:
        assert held == []
        assert "c" in actions.node_label_patches
        assert [e.node for e in actions.events if e.reason == "WorkloadSwitched"] == ["c"]


def test_a_forced_switch_is_not_read_again() -> None:
    fake = cluster()
    asyncio.run(operate(fake, lambda: converged(fake)))
    node = fake.get_object("Node", "c")
    assert node is not None
    node["metadata"].setdefault("annotations", {})[FORCE_SWITCH_ANNOTATION] = "true"
    fake.put(node)
    node = fake.get_object("Node", "c")
    assert node is not None
    node["metadata"]["labels"][WORKLOAD_LABEL] = "vm-vgpu"
    fake.put(node)
    actions = reconcile_without_pods(fake)
    assert "c" in actions.node_label_patches and not actions.switching


def test_a_refused_apply_backs_off_and_is_said_once() -> None:
    """Every Service apply answered 422 for good: each is tried once per backoff step (1 s,
    2 s, ...), never in a busy loop; the passes still succeed; the ClusterPolicy says which
    objects are refused (condition ApplyRefused) and one Warning Event per object says so."""
    fake = cluster()
    fake.fail("apply", "Service", 422, nth=1, times=10_000, message="spec.ports: Invalid")
    failed_passes = runtime.metrics.RECONCILE_ERRORS._value.get()

    def refused_reported() -> bool:
        policy = fake.get_object("ClusterPolicy", "cluster-policy") or {}
        conditions = {c["type"]: c for c in (policy.get("status") or {}).get("conditions", [])}
        refused = conditions.get("ApplyRefused", {})
        return refused.get("status") == "True" and "Service gpu-operator" in refused["message"]

    async def main() -> tuple[runtime.OperatorState, int]:
        state, work = operator(fake)
        async with running(work, play_daemonsets(fake, NS)):
            await eventually(refused_reported, TIMEOUT, "the refusal in the ClusterPolicy")
            started = fake.calls[("apply", "Service")]
            await asyncio.sleep(2.5)
            return state, fake.calls[("apply", "Service")] - started

    state, attempts = asyncio.run(main())
    services = len(state.refused)
    assert services >= 2, state.refused
    # In 2.5 s after the first refusals: at most the retries after 1 s and 2 s more.
    assert attempts <= 2 * services, attempts
    events = [e for e in fake.objects_of("Event").values() if e.get("reason") == "ApplyRefused"]
    assert len(events) == services
    assert all(e["involvedObject"]["kind"] == "ClusterPolicy" for e in events)
    assert runtime.metrics.RECONCILE_ERRORS._value.get() == failed_passes
