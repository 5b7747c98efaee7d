"""At fleet size a pass plans only what changed: a node is planned again when its
resourceVersion moves, and nodes that read the same share one planning."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpuop.lab.stack import lab_policy
from gpuop.operator import nodes as node_step
from gpuop.operator import reconcile as reconcile_module
from gpuop.operator.model import PlanCache
from gpuop.operator.reconcile import MAX_LISTED_NODES, Snapshot, reconcile
from gpuop.sim.hardware import NodeSpec, node_manifest

NOW = "2026-12-06T00:00:00Z"
FLEET = 10_000
WORKLOAD = "nvidia.com/gpu.workload.config"


def _fleet() -> dict[str, dict[str, Any]]:
    template = node_manifest(NodeSpec("gpu-00000", "A10", 2, {WORKLOAD: "container"}))
    fleet = {}
    for index in range(FLEET):
        name = f"gpu-{index:05d}"
        node = copy.deepcopy(template)
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        node["metadata"]["resourceVersion"] = "1"
        fleet[name] = node
    return fleet


def _snapshot(nodes: dict[str, dict[str, Any]]) -> Snapshot:
    policy = lab_policy(sandbox=True)
    policy["metadata"].update(uid="uid-1", creationTimestamp=NOW, generation=1)
    return Snapshot([policy], nodes, {}, [], "gpu-operator")


def _labelled(nodes: dict[str, dict[str, Any]], patches: dict[str, Any], version: str) -> None:
    """The label patches written, each patched node at a new resourceVersion."""
    for name, changes in patches.items():
        labels = nodes[name]["metadata"]["labels"]
        for key, value in changes.items():
            if value is None:
                labels.pop(key, None)
            else:
                labels[key] = value
        nodes[name]["metadata"]["resourceVersion"] = version


def test_a_one_node_change_in_ten_thousand_plans_one_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planned: list[str] = []
    real_plan = node_step.plan

    def counting(policy: Any, facts: Any) -> Any:
        planned.append(facts.name)
        return real_plan(policy, facts)

    monkeypatch.setattr(node_step, "plan", counting)
    nodes, cache = _fleet(), PlanCache()
    first = reconcile(_snapshot(nodes), NOW, cache)
    # Ten thousand identical servers: one planning, shared.
    assert len(planned) == 1
    assert len(first.node_label_patches) == FLEET
    _labelled(nodes, first.node_label_patches, "2")
    planned.clear()
    quiet = reconcile(_snapshot(nodes), NOW, cache)
    assert len(planned) <= 1 and not quiet.node_label_patches
    planned.clear()
    assert not reconcile(_snapshot(nodes), NOW, cache).node_label_patches
    assert planned == []
    # One node flips to vm-passthrough: it alone is planned and written.
    flipped = nodes["gpu-04242"]
    flipped["metadata"]["labels"][WORKLOAD] = "vm-passthrough"
    flipped["metadata"]["resourceVersion"] = "3"
    changed = reconcile(_snapshot(nodes), NOW, cache)
    assert planned == ["gpu-04242"]
    assert set(changed.node_label_patches) == {"gpu-04242"}


def test_a_relabelled_fleet_keeps_one_planning_per_node() -> None:
    # Each relabelling is a new resourceVersion of every node: the superseded versions'
    # facts are let go, not held until the cache is cleared (a fleet's worth each time).
    nodes, cache = _fleet(), PlanCache()
    first = reconcile(_snapshot(nodes), NOW, cache)
    size = len(cache)
    _labelled(nodes, first.node_label_patches, "2")
    reconcile(_snapshot(nodes), NOW, cache)
    for node in nodes.values():
        node["metadata"]["resourceVersion"] = "3"
    reconcile(_snapshot(nodes), NOW, cache)
    assert len(cache) <= size + 8
    versions = {key[3] for key in cache if key[0] == "version"}
    assert versions == {"3"}


def test_a_waiting_fleet_is_counted_whole_and_listed_in_part() -> None:
    # Ten thousand nodes waiting for their operand pods: the status counts them all and
    # names the first in its message, but lists only the first MAX_LISTED_NODES.
    nodes, cache = _fleet(), PlanCache()
    first = reconcile(_snapshot(nodes), NOW, cache)
    _labelled(nodes, first.node_label_patches, "2")
    status = reconcile(_snapshot(nodes), NOW, cache).status["cluster-policy"]
    listed = status["nodes"]["notReady"]
    assert [entry["name"] for entry in listed] == sorted(nodes)[:MAX_LISTED_NODES]
    assert listed[0]["waitingFor"][0] == "driver" and not listed[0]["held"]
    assert status["nodes"]["readyNodes"] == 0
    error = next(c for c in status["conditions"] if c["type"] == "Error")
    assert f"{FLEET} node(s) not ready: gpu-00000, gpu-00001," in error["message"]
    assert f"and {FLEET - 10} more" in error["message"]


def test_without_a_cluster_policy_a_quiet_fleet_is_not_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Without a ClusterPolicy a pass takes back the deploy labels gpuop set; what each node
    # needs is kept by its resourceVersion, so nodes changing elsewhere in the fleet (a
    # label patch each) do not have every node's labels read again.
    read: list[str] = []
    real = reconcile_module._node_cleanup

    def counting(node: Any) -> Any:
        read.append(node["metadata"]["name"])
        return real(node)

    monkeypatch.setattr(reconcile_module, "_node_cleanup", counting)
    nodes, cache = _fleet(), PlanCache()
    nodes["gpu-00007"]["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] = "true"
    nodes["gpu-00008"]["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] = "false"
    bare = Snapshot([], nodes, {}, [], "gpu-operator")
    first = reconcile(bare, NOW, cache)
    assert first.node_label_patches == {"gpu-00007": {"nvidia.com/gpu.deploy.driver": None}}
    assert len(read) == FLEET
    read.clear()
    nodes["gpu-00009"]["metadata"]["resourceVersion"] = "2"
    again = reconcile(Snapshot([], nodes, {}, [], "gpu-operator"), NOW, cache)
    assert read == ["gpu-00009"]
    assert again.node_label_patches == first.node_label_patches
