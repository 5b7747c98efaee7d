"""Driver upgrades in the reconcile pass: the enabled annotation, state labels, writes."""

from __future__ import annotations

from typing import Any

from gpuop.api.labels import UPGRADE_ENABLED_ANNOTATION, UPGRADE_STATE_LABEL
from gpuop.lab.stack import lab_policy
from gpuop.operator.model import workload_pod
from gpuop.operator.reconcile import Snapshot, pod_info, reconcile
from gpuop.sim.hardware import NodeSpec, node_manifest

NOW = "2026-11-29T00:00:00Z"
NS = "gpu-operator"
DS = "nvidia-driver-daemonset"


def _policy(sandbox: bool = False, auto: bool = True) -> dict[str, Any]:
    policy = lab_policy(sandbox=sandbox)
    policy["metadata"].update(uid="uid", creationTimestamp="2026-01-01T00:00:00Z", generation=1)
    policy["spec"].setdefault("driver", {})["upgradePolicy"] = {
        "autoUpgrade": auto,
        "maxParallelUpgrades": 1,
    }
    return policy


def _driver_pod(node: str, revision: str, ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": NS,
            "name": f"{DS}-{node}",
            "labels": {"app": DS, "controller-revision-hash": revision},
            "ownerReferences": [{"kind": "DaemonSet", "name": DS, "controller": True}],
        },
        "spec": {"nodeName": node, "containers": [{"name": "nvidia-driver-ctr"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "nvidia-driver-ctr", "ready": ready}],
        },
    }


def _gpu_pod(node: str, controlled: bool = True) -> dict[str, Any]:
    owners = [{"kind": "ReplicaSet", "name": "train", "controller": True}] if controlled else []
    return {
        "metadata": {"namespace": "ml", "name": f"train-{node}", "ownerReferences": owners},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }


def _snapshot(
    states: dict[str, str], revisions: dict[str, str], sandbox: bool = False, auto: bool = True
) -> Snapshot:
    nodes = {}
    for name, state in states.items():
        node = node_manifest(NodeSpec(name, "A10", 2))
        node["metadata"]["labels"]["nvidia.com/gpu.present"] = "true"
        if state:
            node["metadata"]["labels"][UPGRADE_STATE_LABEL] = state
        node["metadata"].setdefault("annotations", {})
        nodes[name] = node
    pods = [pod_info(_driver_pod(n, r), NS) for n, r in revisions.items()]
    pods += [pod_info(_gpu_pod(n), NS) for n in states]
    daemonsets = {
        DS: {"metadata": {"name": DS}, "status": {"desiredNumberScheduled": len(pods) // 2}}
    }
    return Snapshot(
        [_policy(sandbox, auto)],
        nodes,
        daemonsets,
        [p for p in pods if p is not None],
        NS,
        revisions={DS: "new"},
        now_seconds=1000.0,
    )


def test_gpu_nodes_get_the_enabled_annotation_and_their_state() -> None:
    actions = reconcile(_snapshot({"a": "", "b": ""}, {"a": "new", "b": "old"}), NOW)
    assert actions.upgrades_enabled
    assert actions.node_annotation_patches["a"][UPGRADE_ENABLED_ANNOTATION] == "true"
    assert actions.node_label_patches["a"][UPGRADE_STATE_LABEL] == "upgrade-done"
    assert actions.node_label_patches["b"][UPGRADE_STATE_LABEL] == "upgrade-required"
    assert any(e.reason == "GPUDriverUpgrade" for e in actions.events)


def _read_live(snapshot: Snapshot, *pods: dict[str, Any]) -> Snapshot:
    """The operator's live read of every pod on the snapshot's nodes."""
    snapshot.node_pods = {
        name: tuple(workload_pod(p) for p in pods if p["spec"]["nodeName"] == name)
        for name in snapshot.nodes
    }
    return snapshot


def test_gpu_pods_are_evicted_and_the_driver_pod_restarted() -> None:
    deleting = _read_live(_snapshot({"b": "pod-deletion-required"}, {"b": "old"}), _gpu_pod("b"))
    assert reconcile(deleting, NOW).evictions == [("ml", "train-b")]
    restart = _read_live(_snapshot({"b": "pod-restart-required"}, {"b": "old"}))
    restart.pods = [p for p in restart.pods if p.namespace == NS]
    assert reconcile(restart, NOW).delete_pods == [(NS, f"{DS}-b")]


def test_nothing_is_evicted_or_restarted_without_a_live_read_of_the_node() -> None:
    for state in ("pod-deletion-required", "pod-restart-required"):
        snapshot = _snapshot({"b": state}, {"b": "old"})
        snapshot.pods = [p for p in snapshot.pods if p.namespace == NS]
        actions = reconcile(snapshot, NOW)
        assert not actions.delete_pods
        assert UPGRADE_STATE_LABEL not in actions.node_label_patches.get("b", {})


def test_a_gpu_pod_the_informer_has_not_seen_keeps_the_driver_running() -> None:
    # Bound by the scheduler just after the cordon: only the live read has it.
    for state in ("pod-deletion-required", "pod-restart-required"):
        snapshot = _read_live(_snapshot({"b": state}, {"b": "old"}), _gpu_pod("b"))
        snapshot.pods = [p for p in snapshot.pods if p.namespace == NS]
        actions = reconcile(snapshot, NOW)
        assert not actions.delete_pods
        assert actions.node_label_patches["b"].get(UPGRADE_STATE_LABEL, state) == (
            "pod-deletion-required"
        )
        if state == "pod-deletion-required":
            assert actions.evictions == [("ml", "train-b")]


def test_the_driver_waits_for_a_terminating_gpu_pod() -> None:
    leaving = _gpu_pod("b")
    leaving["metadata"]["deletionTimestamp"] = NOW
    snapshot = _read_live(_snapshot({"b": "pod-restart-required"}, {"b": "old"}), leaving)
    actions = reconcile(snapshot, NOW)
    assert not actions.delete_pods and not actions.evictions
    assert UPGRADE_STATE_LABEL not in actions.node_label_patches.get("b", {})
    del leaving["metadata"]["deletionTimestamp"]
    leaving["status"]["phase"] = "Succeeded"
    snapshot = _read_live(_snapshot({"b": "pod-restart-required"}, {"b": "old"}), leaving)
    snapshot.pods = [p for p in snapshot.pods if p.namespace == NS]
    assert reconcile(snapshot, NOW).delete_pods == [(NS, f"{DS}-b")]


def test_nothing_moves_while_a_driver_pod_is_missing() -> None:
    snapshot = _snapshot({"a": "", "b": ""}, {"a": "new"})
    snapshot.daemonsets[DS]["status"]["desiredNumberScheduled"] = 2
    actions = reconcile(snapshot, NOW)
    assert UPGRADE_STATE_LABEL not in actions.node_label_patches.get("a", {})


def test_sandbox_workloads_or_auto_upgrade_off_clear_the_upgrade_state() -> None:
    for snapshot in (
        _snapshot({"a": "upgrade-done"}, {"a": "old"}, sandbox=True),
        _snapshot({"a": "upgrade-done"}, {"a": "old"}, auto=False),
    ):
        snapshot.nodes["a"]["metadata"]["annotations"][UPGRADE_ENABLED_ANNOTATION] = "true"
        actions = reconcile(snapshot, NOW)
        assert not actions.upgrades_enabled
        assert actions.node_label_patches["a"][UPGRADE_STATE_LABEL] is None
        assert actions.node_annotation_patches["a"] == {UPGRADE_ENABLED_ANNOTATION: None}
        assert not actions.evictions and not actions.delete_pods


def test_without_a_policy_the_upgrade_marks_go() -> None:
    snapshot = _snapshot({"a": "upgrade-done"}, {"a": "new"})
    snapshot.nodes["a"]["metadata"]["annotations"][UPGRADE_ENABLED_ANNOTATION] = "true"
    snapshot.policies = []
    actions = reconcile(snapshot, NOW)
    assert actions.node_label_patches["a"][UPGRADE_STATE_LABEL] is None
    assert actions.node_annotation_patches["a"] == {UPGRADE_ENABLED_ANNOTATION: None}


def test_pod_info_reads_what_the_upgrade_needs() -> None:
    info = pod_info(_driver_pod("a", "abc", ready=False), NS)
    assert info is not None
    assert (info.app, info.owner, info.revision) == (DS, DS, "abc")
    assert info.running and not info.containers_ready
    bare = pod_info(_gpu_pod("a", controlled=False), NS)
    assert bare is not None and not bare.controlled and bare.owner is None
