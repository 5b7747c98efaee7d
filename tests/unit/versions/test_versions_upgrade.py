"""`preview_upgrade`: operand changes, node disruption from the planner, and the warnings."""

from __future__ import annotations

from typing import Any

import pytest

from gpuop.catalog import operand_table
from gpuop.catalog.versions import version_matrix
from gpuop.policy import ResolvedPolicy, default_policy, parse_cluster_policy
from gpuop.versions import preview_upgrade, side_from_policy, side_from_release
from gpuop.versions.upgrade import IMPACT_ORDER, Side, UpgradePreview
from kit.versions_support import L40S, TODAY, cluster_policy, cpu_node, gpu_node

MATRIX = version_matrix()
NODES = [gpu_node("gpu-1"), gpu_node("gpu-2", product=L40S), cpu_node("cpu-1")]


def release(name: str, policy: ResolvedPolicy | None = None) -> Side:
    found = MATRIX.release(name)
    assert found is not None
    return side_from_release(found, policy or default_policy(), MATRIX)


def policy_side(obj: dict[str, Any], label: str) -> Side:
    return side_from_policy(parse_cluster_policy(obj, label), label, MATRIX)


def preview(old: Side, new: Side, nodes: list[Any] | None = None, **kw: Any) -> UpgradePreview:
    return preview_upgrade(old, new, nodes, today=TODAY, matrix=MATRIX, **kw)


def codes(result: UpgradePreview) -> list[str]:
    return [finding.code for finding in result.findings]


def test_every_operand_has_a_ranked_impact() -> None:
    for operand in operand_table().operands:
        assert operand.restart.impact in IMPACT_ORDER
        assert operand.restart.effect


def test_a_patch_release_moves_one_deployed_operand() -> None:
    nodes = [gpu_node("gpu-1", kubelet="v1.33.1"), cpu_node("cpu-1")]
    result = preview(release("25.3.3"), release("25.3.4"), nodes)
    assert [c.operand for c in result.changed] == ["operator-validator"]
    assert [str(m) for m in result.moves] == ["the operator release (25.3.3 → 25.3.4)"]
    assert codes(result) == []  # one move
    impacts = {node.node: node for node in result.nodes or ()}
    assert impacts["gpu-1"].restarts == ("operator-validator",)
    assert impacts["gpu-1"].disruption == "none"
    assert impacts["cpu-1"].restarts == () and not impacts["cpu-1"].gpu_node


def test_a_driver_branch_change_disrupts_every_gpu_node() -> None:
    old = policy_side(cluster_policy("26.3.2"), "old.yaml")
    new = policy_side(cluster_policy("26.3.2", versions={"driver": "595.91.07"}), "new.yaml")
    result = preview(old, new, NODES)
    assert [c.operand for c in result.changed] == ["driver"]
    assert [m.what for m in result.moves] == ["driver"]
    assert codes(result) == []  # one move: no warning
    gpu = [node for node in result.nodes or () if node.gpu_node]
    assert len(gpu) == 2 and all(node.disruption == "gpu-workloads" for node in gpu)
    assert all(node.restarts == ("driver",) for node in gpu)
    assert any("R580" in note and "R595" in note for note in result.notes)


def test_a_toolkit_change_restarts_containerd_only() -> None:
    old = policy_side(cluster_policy("26.3.3"), "old.yaml")
    new = policy_side(cluster_policy("26.3.3", versions={"toolkit": "v1.19.0"}), "new.yaml")
    result = preview(old, new, NODES)
    assert {node.disruption for node in result.nodes or () if node.gpu_node} == {
        "container-runtime"
    }


def test_operator_and_kubernetes_together_are_warned() -> None:
    result = preview(release("26.3.3"), release("26.7.0"), NODES, kubernetes=("1.32", "1.33"))
    assert [m.what for m in result.moves] == [
        "operator release",
        "driver",
        "container toolkit",
        "Kubernetes",
    ]
    assert codes(result) == ["VER401"]
    warning = result.findings[0]
    assert "you cannot tell which move broke it" in warning.message
    assert "spec.driver.version: 580.126.20" in warning.hint
    assert "spec.toolkit.version: v1.19.1" in warning.hint
    assert "Kubernetes 1.33 is in 26.3.3's range, so Kubernetes can move first" in warning.hint


def test_the_operator_alone_with_pinned_driver_and_toolkit_is_one_move() -> None:
    old = policy_side(cluster_policy("26.3.3"), "old.yaml")
    pinned = cluster_policy("26.7.0", versions={"driver": "580.126.20", "toolkit": "v1.19.1"})
    new = policy_side(pinned, "new.yaml")
    result = preview(old, new)
    assert [m.what for m in result.moves] == ["operator release"]
    assert "VER401" not in codes(result)
    assert "VER002" in codes(result)  # the pinned toolkit is 26.3's: the new policy mixes


def test_driver_and_toolkit_in_one_policy_change_are_warned() -> None:
    old = policy_side(cluster_policy("26.3.3"), "old.yaml")
    new = policy_side(
        cluster_policy("26.3.3", versions={"driver": "595.91.07", "toolkit": "v1.19.0"}),
        "new.yaml",
    )
    result = preview(old, new)
    assert codes(result)[0] == "VER401"
    assert "separate windows" in result.findings[0].hint


def test_skipping_a_line_is_warned() -> None:
    assert "VER402" in codes(preview(release("25.3.4"), release("26.7.0")))
    assert "VER402" not in codes(preview(release("25.10.1"), release("26.3.3")))
    assert "VER402" not in codes(preview(release("26.7.0"), release("26.3.3")))  # downgrade
    skipped = next(
        f for f in preview(release("25.3.4"), release("26.7.0")).findings if f.code == "VER402"
    )
    assert "25.10.1 → 26.3.3" in skipped.hint


@pytest.mark.parametrize(
    ("kubernetes", "nodes", "expected"),
    [
        (("1.30", "1.31"), None, True),  # 1.31 is below 26.7.0's 1.32
        (("1.32", "1.33"), None, False),
        (None, [gpu_node("old-k8s", kubelet="v1.31.9")], True),
        (None, [gpu_node("ok", kubelet="v1.33.1")], False),
        (("1.32", "1.32"), [gpu_node("jammy", os_version="22.04")], True),  # 22.04 needs 1.33
    ],
)
def test_the_target_kubernetes_against_the_new_release(
    kubernetes: tuple[str, str] | None, nodes: list[Any] | None, expected: bool
) -> None:
    result = preview(release("26.3.3"), release("26.7.0"), nodes, kubernetes=kubernetes)
    assert ("VER403" in codes(result)) is expected


def test_a_new_driver_past_end_of_life_is_reported() -> None:
    old = policy_side(cluster_policy("26.7.0"), "old.yaml")
    new = policy_side(cluster_policy("26.7.0", versions={"driver": "535.309.01"}), "new.yaml")
    assert "VER201" in codes(preview(old, new))


def test_vm_nodes_do_not_run_the_driver_and_are_not_disrupted_by_it() -> None:
    sandbox = {"sandboxWorkloads": {"enabled": True}}
    old = policy_side(cluster_policy("26.7.0", spec=sandbox), "old.yaml")
    new = policy_side(
        cluster_policy("26.7.0", versions={"driver": "580.173.02"}, spec=sandbox), "new.yaml"
    )
    vm = gpu_node("vm-1", labels={"nvidia.com/gpu.workload.config": "vm-passthrough"})
    result = preview(old, new, [gpu_node("ctr-1"), vm])
    impacts = {node.node: node for node in result.nodes or ()}
    assert impacts["ctr-1"].disruption == "gpu-workloads"
    assert impacts["vm-1"].workload == "vm-passthrough"
    assert impacts["vm-1"].restarts == () and impacts["vm-1"].disruption == "none"


def test_enabling_an_operand_starts_it() -> None:
    old = policy_side(cluster_policy("26.7.0", spec={"dcgm": {"enabled": False}}), "old.yaml")
    new = policy_side(cluster_policy("26.7.0"), "new.yaml")
    result = preview(old, new, [gpu_node("gpu-1")])
    assert [c.operand for c in result.changed] == ["dcgm"]
    node = (result.nodes or ())[0]
    assert node.starts == ("dcgm",) and node.restarts == () and node.disruption == "none"


def test_unpinned_versions_follow_the_policys_release() -> None:
    partial = cluster_policy("26.3.3")
    del partial["spec"]["dcgm"]
    side = policy_side(partial, "p.yaml")
    assert side.versions["dcgm"] == "4.5.2-1"
    assert side.sources["dcgm"] == "release 26.3.3 default (not pinned)"
    bare = policy_side(cluster_policy(), "bare.yaml")
    assert bare.versions["driver"] == "595.91.07"


def test_json_shape() -> None:
    data = preview(release("26.3.3"), release("26.7.0"), NODES).to_dict()
    assert list(data) == [
        "schema_version",
        "tool",
        "old",
        "new",
        "kubernetes",
        "matrix_as_of",
        "today",
        "operands",
        "moves",
        "nodes",
        "notes",
        "findings",
        "summary",
    ]
    assert data["summary"]["gpu_nodes_by_disruption"]["gpu-workloads"] == 2
    assert preview(release("26.3.3"), release("26.7.0")).to_dict()["nodes"] is None
