"""Properties of `plan`: total on odd input, one pass reaches the fixed point, and it only
ever touches the labels it manages."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planner_builders import MIG_CONFIG, NFD, NFD_0300, NFD_0302, PRESENT, WORKLOAD, applied

from gpuop.api.labels import INVENTORY_ANNOTATION, PLANNED_LABEL_PREFIXES
from gpuop.catalog import operand_table
from gpuop.planner import (
    NodeFacts,
    NodePlan,
    plan,
    planning_key,
)
from gpuop.policy import ResolvedPolicy, parse_cluster_policy

PREFIX = operand_table().deploy_labels.prefix
KNOWN = sorted(operand_table().deploy_labels.known_keys)
# The count comes from the Hypothesis profile (tests/conftest.py).
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

label_values = st.one_of(
    st.sampled_from(["true", "false", "", "pre-installed", "paused-for-vgpu-change", "True"]),
    st.text(max_size=8),
)
label_keys = st.one_of(
    st.sampled_from(
        [
            NFD,
            NFD_0300,
            NFD_0302,
            PRESENT,
            WORKLOAD,
            MIG_CONFIG,
            "nvidia.com/mig.capable",
            "nvidia.com/mps.capable",
            "nvidia.com/vgpu.config",
            "nvidia.com/vgpu.host-driver-version",
            "nvidia.com/gpu.product",
            "nvidia.com/gpu.count",
            PREFIX + "operands",
            PREFIX + "unknown-thing",
            "feature.node.kubernetes.io/pci-0302_10de_2236.present",
        ]
    ),
    st.sampled_from(KNOWN).map(lambda key: PREFIX + key),
    st.text(max_size=12),
)
workload_values = st.sampled_from(["container", "vm-passthrough", "vm-vgpu", "", "bogus"])


@st.composite
def label_maps(draw: st.DrawFn) -> dict[str, str]:
    labels = draw(st.dictionaries(label_keys, label_values, max_size=12))
    if draw(st.booleans()):
        labels[NFD] = "true"
    if draw(st.booleans()):
        labels[WORKLOAD] = draw(workload_values)
    if draw(st.booleans()):
        labels["nvidia.com/gpu.product"] = draw(
            st.sampled_from(["NVIDIA-A100-PCIE-40GB", "NVIDIA-A10", "Tesla-T4", "x"])
        )
        labels["nvidia.com/gpu.count"] = draw(st.sampled_from(["0", "1", "8", "x", "²", "999"]))
    return labels


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
card_objects = st.fixed_dictionaries(
    {
        "pci": st.sampled_from(
            ["10de:2236", "10de:20f1", "10de:25b6", "10de:ffff", "1002:73bf", "x"]
        )
    },
    optional={
        "index": st.one_of(st.integers(-3, 9), st.booleans(), st.text(max_size=3)),
        "model": st.one_of(st.sampled_from(["A10", "A2", "A16", "A100", "B200"]), st.integers()),
        "memory_mib": st.one_of(st.integers(), st.text(max_size=3)),
    },
)
annotation_values = st.one_of(
    st.text(max_size=30),
    json_values.map(json.dumps),
    st.lists(card_objects, max_size=5).map(json.dumps),
)


@st.composite
def nodes(draw: st.DrawFn) -> dict[str, Any]:
    annotations: dict[str, Any] = {}
    if draw(st.booleans()):
        annotations[INVENTORY_ANNOTATION] = draw(annotation_values)
    obj: dict[str, Any] = {
        "metadata": {"name": draw(st.text(max_size=8)), "labels": draw(label_maps())},
    }
    if annotations:
        obj["metadata"]["annotations"] = annotations
    if draw(st.booleans()):
        obj["status"] = {
            "allocatable": draw(
                st.dictionaries(
                    st.sampled_from(["nvidia.com/GA102GL_A10", "nvidia.com/gpu", "cpu"]),
                    st.one_of(st.sampled_from(["2", "0", "x"]), st.none(), st.integers()),
                    max_size=3,
                )
            )
        }
    return obj


odd_nodes = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"metadata": json_values}),
    st.fixed_dictionaries({"metadata": st.fixed_dictionaries({"labels": json_values})}),
    st.fixed_dictionaries(
        {"metadata": st.fixed_dictionaries({"annotations": json_values}), "status": json_values}
    ),
)

enabled = st.one_of(st.none(), st.booleans())
blocks = [
    "driver", "toolkit", "devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager",
    "nodeStatusExporter", "vgpuManager", "vgpuDeviceManager", "vfioManager",
    "sandboxDevicePlugin", "kataSandboxDevicePlugin", "kataManager", "ccManager",
]  # fmt: skip


@st.composite
def policies(draw: st.DrawFn) -> ResolvedPolicy:
    spec: dict[str, Any] = {}
    for block in blocks:
        value = draw(enabled)
        if value is not None:
            spec[block] = {"enabled": value}
    sandbox: dict[str, Any] = {}
    if draw(st.booleans()):
        sandbox["enabled"] = draw(st.booleans())
    if draw(st.booleans()):
        sandbox["defaultWorkload"] = draw(
            st.sampled_from(["container", "vm-passthrough", "vm-vgpu"])
        )
    if draw(st.booleans()):
        sandbox["mode"] = draw(st.sampled_from(["kubevirt", "kata"]))
    spec["sandboxWorkloads"] = sandbox
    if draw(st.booleans()):
        default = draw(st.sampled_from(["all-disabled", "all-enabled", ""]))
        spec.setdefault("migManager", {})["config"] = {"default": default}
    if draw(st.booleans()):
        default = draw(st.sampled_from(["default", "A10-4Q", "nope", ""]))
        spec["vgpuDeviceManager"] = {
            **spec.get("vgpuDeviceManager", {}),
            "config": {"default": default},
        }
    if draw(st.booleans()):
        spec["driver"] = {**spec.get("driver", {}), "useNvidiaDriverCRD": draw(st.booleans())}
    return parse_cluster_policy({"spec": spec})


def managed(key: str) -> bool:
    return key in (PRESENT, MIG_CONFIG) or (
        key.startswith(PREFIX) and key.removeprefix(PREFIX) in KNOWN
    )


def check_invariants(obj: dict[str, Any], result: NodePlan) -> None:
    json.dumps(result.to_dict())
    labels = obj["metadata"]["labels"]
    for key, value in result.label_changes.items():
        assert managed(key), key
        assert value is None or value in ("true", "false", "all-disabled"), (key, value)
    assert result.label_changes.get(PRESENT, "") is not None  # never deleted
    assert result.label_changes.get(MIG_CONFIG, "") is not None  # never deleted
    after = applied(obj, result)["metadata"]["labels"]
    for op in result.operands:
        if op.runs:
            assert after.get(op.deploy_label) == "true", op.name
    if not result.gpu_node:
        assert not any(managed(k) and k.startswith(PREFIX) for k in after)
        assert result.operands == ()
    assert not set(result.advertises) & set(result.must_not_advertise)
    assert all(count >= 0 for count in result.advertises.values())
    for key in labels:
        if not managed(key):
            assert after[key] == labels[key]


@SETTINGS
@given(nodes(), policies())
def test_plan_is_total_and_keeps_its_invariants(
    obj: dict[str, Any], policy: ResolvedPolicy
) -> None:
    result = plan(policy, obj)
    check_invariants(obj, result)


@SETTINGS
@given(odd_nodes, policies())
def test_plan_is_total_on_odd_node_objects(obj: dict[str, Any], policy: ResolvedPolicy) -> None:
    json.dumps(plan(policy, obj).to_dict())


@SETTINGS
@given(nodes(), policies())
def test_one_pass_reaches_the_fixed_point(obj: dict[str, Any], policy: ResolvedPolicy) -> None:
    first = plan(policy, obj)
    second = plan(policy, applied(obj, first))
    assert second.label_changes == {}
    assert second.desired_labels == first.desired_labels
    assert second.workload == first.workload
    assert second.operands == first.operands
    assert second.advertises == first.advertises


unplanned_keys = st.one_of(
    st.sampled_from(
        [
            "kubernetes.io/hostname",
            "topology.kubernetes.io/zone",
            "node-role.kubernetes.io/worker",
            "type",
            "nvidia.io/gpu",
            "feature.node.kubernetes.io",
        ]
    ),
    st.text(max_size=12).filter(lambda key: not key.startswith(PLANNED_LABEL_PREFIXES)),
)


@SETTINGS
@given(
    nodes(),
    policies(),
    st.dictionaries(unplanned_keys, label_values, max_size=6),
    st.text(max_size=8),
)
def test_nodes_with_equal_planning_keys_get_equal_plans(
    obj: dict[str, Any], policy: ResolvedPolicy, extra: dict[str, str], other_name: str
) -> None:
    twin = {
        **obj,
        "metadata": {
            **obj["metadata"],
            "name": other_name,
            "labels": {**extra, **obj["metadata"]["labels"]},
        },
    }
    first, second = NodeFacts.from_object(obj), NodeFacts.from_object(twin)
    assert planning_key(first) == planning_key(second)
    assert replace(plan(policy, second), node=first.name) == plan(policy, first)
