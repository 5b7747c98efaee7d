"""Per-node stack: ClusterPolicy's device plugin or GPUCluster's DRA driver, and the labels.

The DRA node's labels are checked against a transcription of upstream's Go rules
(controllers/state_manager.go: gpuStateLabels, gpuClusterStateLabels,
devicePluginOnlyStateLabelKeys, removeAllGPUStateLabels) over generated label sets.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuop.api.labels import GPU_STACK_LABEL
from gpuop.planner.stack import decide_stack, plan_node
from gpuop.policy import default_policy
from gpuop.policy.gpucluster import default_gpu_cluster_object, parse_gpu_cluster

P = "nvidia.com/gpu.deploy."
NFD = "feature.node.kubernetes.io/pci-10de.present"
PRESENT = "nvidia.com/gpu.present"

# Upstream's maps, as state_manager.go spells them.
UPSTREAM_CP_KEYS = {
    P + k
    for k in (
        "driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm",
        "dcgm-exporter", "node-status-exporter", "operator-validator", "client",
        "sandbox-device-plugin", "sandbox-validator", "vfio-manager", "kata-manager",
        "cc-manager", "vgpu-manager", "vgpu-device-manager", "kata-sandbox-device-plugin",
        "mig-manager",
    )
}  # fmt: skip
UPSTREAM_DRA = {P + k: "true" for k in ("driver", "dra-driver", "dra-validator", "dcgm-dra", "dcgm-exporter-dra")}  # fmt: skip
UPSTREAM_DP_ONLY = UPSTREAM_CP_KEYS - set(UPSTREAM_DRA) - {P + "vgpu-manager"}

GPU_CLUSTER = parse_gpu_cluster(default_gpu_cluster_object())
POLICY = default_policy()


def upstream_dra_labels(labels: dict[str, str]) -> dict[str, str]:
    """updateGPUStateLabels with a GPUCluster, after reconcileCommonGPULabel."""
    out = dict(labels)
    gpu = out.get(NFD) == "true"
    if gpu and out.get(PRESENT) != "true":
        out[PRESENT] = "true"
    elif not gpu and out.get(PRESENT) == "true":
        out[PRESENT] = "false"
    if out.get(PRESENT) != "true":
        for key in UPSTREAM_CP_KEYS | set(UPSTREAM_DRA):
            out.pop(key, None)
        return out
    for key in UPSTREAM_DP_ONLY:
        out.pop(key, None)
    for key, value in UPSTREAM_DRA.items():
        if not out.get(key):
            out[key] = value
    return out


def node(labels: dict[str, str], name: str = "n") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def final(plan_labels: dict[str, str], changes: dict[str, str | None]) -> dict[str, str]:
    out = dict(plan_labels)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


@pytest.mark.parametrize(
    ("cp", "gc", "label", "stack", "reason"),
    [
        (True, False, None, "device-plugin", "cluster-policy-only"),
        (True, False, "dra", "device-plugin", "cluster-policy-only"),
        (False, True, None, "dra", "gpu-cluster-only"),
        (False, True, "device-plugin", "dra", "gpu-cluster-only"),
        (True, True, None, "device-plugin", "default"),
        (True, True, "dra", "dra", "label"),
        (True, True, "device-plugin", "device-plugin", "label"),
        (True, True, "DRA", "device-plugin", "invalid-label"),
        (True, True, "", "device-plugin", "invalid-label"),
        (False, False, "dra", None, "no-policy"),
    ],
)
def test_decide_stack(cp: bool, gc: bool, label: str | None, stack: str, reason: str) -> None:
    labels = {} if label is None else {GPU_STACK_LABEL: label}
    decision = decide_stack(labels, cluster_policy=cp, gpu_cluster=gc)
    assert (decision.stack, decision.reason) == (stack, reason)


def test_ignored_stack_labels_are_warned() -> None:
    labels = {NFD: "true", GPU_STACK_LABEL: "dra"}
    result = plan_node(POLICY, None, node(labels))
    assert result.stack is not None and result.stack.stack == "device-plugin"
    assert [n.code for n in result.notices if n.code == "StackLabelIgnored"] == [
        "StackLabelIgnored"
    ]
    result = plan_node(None, GPU_CLUSTER, node({NFD: "true", GPU_STACK_LABEL: "device-plugin"}))
    assert any(n.code == "StackLabelIgnored" for n in result.notices)
    result = plan_node(POLICY, GPU_CLUSTER, node({NFD: "true", GPU_STACK_LABEL: "dra"}))
    assert not any(n.code == "StackLabelIgnored" for n in result.notices)


def test_a_container_node_moves_to_dra_and_back() -> None:
    start = {NFD: "true", GPU_STACK_LABEL: "device-plugin"}
    container = plan_node(POLICY, GPU_CLUSTER, node(start))
    labels = final(start, container.label_changes)
    assert labels[P + "device-plugin"] == "true" and P + "dra-driver" not in labels
    assert container.workload.config == "container"

    labels[GPU_STACK_LABEL] = "dra"
    dra = plan_node(POLICY, GPU_CLUSTER, node(labels))
    assert dra.workload.config is None and dra.workload.reason == "dra-stack"
    labels = final(labels, dra.label_changes)
    deploy = {k: v for k, v in labels.items() if k.startswith(P)}
    assert deploy == {
        P + "driver": "true",
        P + "dra-driver": "true",
        P + "dra-validator": "true",
        P + "dcgm-dra": "true",
        P + "dcgm-exporter-dra": "true",
    }
    assert [op.name for op in dra.running_operands()] == [
        "dra-driver",
        "dra-validator",
        "dcgm-exporter-dra",
    ]
    assert dra.advertises == {} and "nvidia.com/gpu" in dra.must_not_advertise
    assert plan_node(POLICY, GPU_CLUSTER, node(labels)).label_changes == {}

    labels[GPU_STACK_LABEL] = "device-plugin"
    held = plan_node(POLICY, GPU_CLUSTER, node(labels), dra_claims_on_node=True)
    assert P + "dra-driver" not in held.label_changes
    assert held.label_changes[P + "dra-validator"] is None
    assert held.desired_labels[P + "dra-driver"] == "true"
    assert any(n.code == "DraPluginRemovalDeferred" for n in held.notices)
    back = plan_node(POLICY, GPU_CLUSTER, node(labels))
    labels = final(labels, back.label_changes)
    assert not any(k.endswith(("dra-driver", "dra-validator", "dcgm-dra")) for k in labels)
    assert labels[P + "device-plugin"] == "true"


def test_a_paused_dra_label_is_kept() -> None:
    """k8s-driver-manager pauses an operand by rewriting its label: honoured, as upstream."""
    labels = {NFD: "true", PRESENT: "true", P + "dra-driver": "paused-for-driver-upgrade"}
    result = plan_node(None, GPU_CLUSTER, node(labels))
    assert P + "dra-driver" not in result.label_changes
    (driver,) = [op for op in result.operands if op.name == "dra-driver"]
    assert driver.status == "held"


def test_gpu_cluster_only_dcgm_enabled() -> None:
    obj = default_gpu_cluster_object()
    obj["spec"]["dcgm"] = {"enabled": True}
    result = plan_node(None, parse_gpu_cluster(obj), node({NFD: "true"}))
    labels = final({NFD: "true"}, result.label_changes)
    assert "dcgm-dra" in {
        op.name for op in plan_node(None, parse_gpu_cluster(obj), node(labels)).running_operands()
    }


VALUES = st.sampled_from(["true", "false", "", "paused-for-driver-upgrade"])
KEYS = [*sorted(UPSTREAM_CP_KEYS | set(UPSTREAM_DRA)), P + "operands", "nvidia.com/other"]


@st.composite
def label_sets(draw: st.DrawFn) -> dict[str, str]:
    labels = draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=12))
    if draw(st.booleans()):
        labels[NFD] = "true"
    present = draw(st.sampled_from([None, "true", "false"]))
    if present is not None:
        labels[PRESENT] = present
    stack = draw(st.sampled_from([None, "dra", "device-plugin", "bogus"]))
    if stack is not None:
        labels[GPU_STACK_LABEL] = stack
    return labels


@settings(max_examples=300, deadline=None)
@given(label_sets())
def test_dra_nodes_are_labelled_as_upstream_labels_them(labels: dict[str, str]) -> None:
    result = plan_node(None, GPU_CLUSTER, node(labels))
    assert final(labels, result.label_changes) == upstream_dra_labels(labels)


@settings(max_examples=300, deadline=None)
@given(label_sets(), st.booleans())
def test_one_stack_per_node(labels: dict[str, str], claims: bool) -> None:
    """Both CRs: the label decides; a node never carries both stacks' publishing labels."""
    result = plan_node(POLICY, GPU_CLUSTER, node(labels), dra_claims_on_node=claims)
    assert result.stack is not None
    wanted = "dra" if labels.get(GPU_STACK_LABEL) == "dra" else "device-plugin"
    assert result.stack.stack == wanted
    after = final(labels, result.label_changes)
    publishing_dp = {P + k for k in ("device-plugin", "sandbox-device-plugin", "kata-sandbox-device-plugin", "vgpu-device-manager")}  # fmt: skip
    if wanted == "dra":
        assert not publishing_dp & set(after)
        assert result.advertises == {}
    else:
        dra_only = {P + k for k in ("dra-validator", "dcgm-dra", "dcgm-exporter-dra")}
        assert not dra_only & set(after)
        if not claims:
            assert P + "dra-driver" not in after
    # Planning again after the changes changes nothing (the operator converges).
    again = plan_node(POLICY, GPU_CLUSTER, node(after), dra_claims_on_node=claims)
    assert again.label_changes == {}
