"""Reconcile with a GPUCluster: its objects, its nodes' stack, its status (upstream's)."""

from __future__ import annotations

import copy
from typing import Any

from test_reconcile import NOW, _apply, _policy, _ready_pods

from gpuop.operator.reconcile import PodInfo, Snapshot, reconcile
from gpuop.policy.gpucluster import default_gpu_cluster_object
from gpuop.sim.hardware import NodeSpec, node_manifest

P = "nvidia.com/gpu.deploy."
STACK = "nvidia.com/gpu.stack"


def _gpu_cluster() -> dict[str, Any]:
    obj = default_gpu_cluster_object()
    obj["metadata"].update(uid="uid-gc", generation=1)
    return obj


def _nodes(**stacks: str) -> dict[str, dict[str, Any]]:
    nodes = {}
    for name in ("a", "b"):
        labels = {STACK: stacks[name]} if name in stacks else {}
        nodes[name] = node_manifest(NodeSpec(name, "A10", 2, labels))
    return nodes


def _with_gc(snapshot: Snapshot, actions: Any, gc: dict[str, Any]) -> Snapshot:
    after = _apply(snapshot, actions)
    gc = copy.deepcopy(gc)
    if "gpu-cluster" in actions.gpu_cluster_status:
        gc["status"] = actions.gpu_cluster_status["gpu-cluster"]
    after.gpu_clusters = [gc]
    after.pods = _ready_pods(actions)
    return after


def test_both_crs_one_stack_per_node_and_a_second_pass_writes_nothing() -> None:
    gc = _gpu_cluster()
    snapshot = Snapshot([_policy(sandbox=False)], _nodes(b="dra"), {}, [], "gpu-operator")
    snapshot.gpu_clusters = [gc]
    first = reconcile(snapshot, NOW)
    a, b = first.node_label_patches["a"], first.node_label_patches["b"]
    assert a[P + "device-plugin"] == "true" and P + "dra-driver" not in a
    assert b[P + "dra-driver"] == "true" and b[P + "driver"] == "true"
    assert P + "device-plugin" not in b
    applied = {(o["kind"], o["metadata"]["name"]) for o in first.apply}
    assert ("DaemonSet", "nvidia-device-plugin-daemonset") in applied
    assert ("DaemonSet", "nvidia-dra-driver-kubelet-plugin") in applied
    assert ("DeviceClass", "vfio.gpu.nvidia.com") in applied
    status = first.gpu_cluster_status["gpu-cluster"]
    assert status["state"] == "notReady"
    error = next(c for c in status["conditions"] if c["type"] == "Error")
    assert (error["status"], error["reason"]) == ("True", "OperandNotReady")

    second_snapshot = _with_gc(snapshot, first, gc)
    second = reconcile(second_snapshot, NOW)
    assert not second.node_label_patches and not second.apply and not second.delete_objects
    ready = second.gpu_cluster_status["gpu-cluster"]
    assert ready["state"] == "ready"
    assert next(c for c in ready["conditions"] if c["type"] == "Ready")["reason"] == "Reconciled"
    final = reconcile(_with_gc(second_snapshot, second, gc), NOW)
    assert not final.gpu_cluster_status and not final.node_label_patches and not final.apply


def test_a_gpu_cluster_alone_runs_every_gpu_node_on_dra() -> None:
    snapshot = Snapshot([], _nodes(), {}, [], "gpu-operator")
    snapshot.gpu_clusters = [_gpu_cluster()]
    actions = reconcile(snapshot, NOW)
    for name in ("a", "b"):
        assert actions.node_label_patches[name][P + "dra-driver"] == "true"
        assert P + "device-plugin" not in actions.node_label_patches[name]
    daemonsets = {o["metadata"]["name"] for o in actions.apply if o["kind"] == "DaemonSet"}
    assert "nvidia-device-plugin-daemonset" not in daemonsets
    assert "nvidia-dra-driver-kubelet-plugin" in daemonsets


def test_moving_back_keeps_the_plugin_while_claims_are_on_the_node() -> None:
    gc = _gpu_cluster()
    snapshot = Snapshot([_policy(sandbox=False)], _nodes(b="dra"), {}, [], "gpu-operator")
    snapshot.gpu_clusters = [gc]
    on_dra = _with_gc(snapshot, reconcile(snapshot, NOW), gc)
    on_dra.nodes["b"]["metadata"]["labels"][STACK] = "device-plugin"
    claim_pod = PodInfo("default", "vm", "b", None, True, (), False, claims=True, phase="Running")
    on_dra.pods = [*on_dra.pods, claim_pod]
    back = reconcile(on_dra, NOW)
    patch = back.node_label_patches["b"]
    assert P + "dra-driver" not in patch and patch[P + "dra-validator"] is None
    assert patch[P + "device-plugin"] == "true"
    on_dra.pods = [p for p in on_dra.pods if p is not claim_pod]
    assert reconcile(on_dra, NOW).node_label_patches["b"][P + "dra-driver"] is None


def test_a_switch_to_dra_is_held_while_gpu_pods_run_there() -> None:
    gc = _gpu_cluster()
    snapshot = Snapshot([_policy(sandbox=False)], _nodes(), {}, [], "gpu-operator")
    snapshot.gpu_clusters = [gc]
    settled = _with_gc(snapshot, reconcile(snapshot, NOW), gc)
    settled.nodes["a"]["metadata"]["labels"][STACK] = "dra"
    busy = PodInfo("default", "cuda", "a", None, True, ("nvidia.com/gpu",), False)
    settled.pods = [*settled.pods, busy]
    actions = reconcile(settled, NOW)
    assert "a" not in actions.node_label_patches
    assert any(e.reason == "WorkloadSwitchHeld" and e.node == "a" for e in actions.events)


def test_an_invalid_gpu_cluster_says_so() -> None:
    gc = _gpu_cluster()
    gc["spec"]["draDriver"]["image"] = "not/valid"
    snapshot = Snapshot([_policy(sandbox=False)], _nodes(b="dra"), {}, [], "gpu-operator")
    snapshot.gpu_clusters = [gc]
    actions = reconcile(snapshot, NOW)
    status = actions.gpu_cluster_status["gpu-cluster"]
    error = next(c for c in status["conditions"] if c["type"] == "Error")
    assert error["reason"] == "ReconcileFailed" and "spec.draDriver.image" in error["message"]
    # Its nodes keep the ClusterPolicy's stack meanwhile.
    assert actions.node_label_patches["b"][P + "device-plugin"] == "true"
