"""Nodes as real clusters present them: no gpuop annotation, NFD labels by vendor only.

Sandbox nodes never run GPU feature discovery, so what they have is read from what their
device plugin advertises; container nodes are read from GPU feature discovery's labels.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpuop.check import Report, run_checks
from gpuop.planner import plan
from gpuop.policy import default_policy_object, parse_cluster_policy

WORKLOAD = "nvidia.com/gpu.workload.config"


def policy(sandbox: bool = True) -> dict[str, Any]:
    obj = default_policy_object()
    obj["spec"]["sandboxWorkloads"] = {"enabled": sandbox, "defaultWorkload": "container"}
    return obj


def deploy(*keys: str) -> dict[str, str]:
    return {f"nvidia.com/gpu.deploy.{key}": "true" for key in keys}


CONTAINER = deploy(
    "driver",
    "container-toolkit",
    "operator-validator",
    "device-plugin",
    "gpu-feature-discovery",
    "dcgm",
    "dcgm-exporter",
    "node-status-exporter",
    "client",
)
PASSTHROUGH = deploy(
    "sandbox-device-plugin",
    "sandbox-validator",
    "vfio-manager",
    "kata-manager",
    "cc-manager",
    "client",
)
VGPU = deploy(
    "sandbox-device-plugin",
    "vgpu-manager",
    "vgpu-device-manager",
    "sandbox-validator",
    "cc-manager",
    "client",
)


def node(
    name: str,
    labels: dict[str, str],
    allocatable: dict[str, str],
    capacity: dict[str, str] | None = None,
) -> dict[str, Any]:
    base = {
        "kubernetes.io/hostname": name,
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04",
        "nvidia.com/gpu.present": "true",
    }
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {**base, **labels}, "annotations": {}},
        "status": {
            "allocatable": {**resources, **allocatable},
            "capacity": {**resources, **(capacity if capacity is not None else allocatable)},
        },
    }


def vgpu_node(
    name: str, config: str | None, advertised: dict[str, str], state: str = "success"
) -> dict[str, Any]:
    labels = {WORKLOAD: "vm-vgpu", **VGPU, "nvidia.com/vgpu.config.state": state}
    labels["nvidia.com/vgpu.host-driver-version"] = "595.91.07"
    if config is not None:
        labels["nvidia.com/vgpu.config"] = config
    return node(name, labels, advertised)


def passthrough_node(name: str, advertised: dict[str, str], **kw: Any) -> dict[str, Any]:
    return node(name, {WORKLOAD: "vm-passthrough", **PASSTHROUGH}, advertised, **kw)


def gfd_node(name: str, product: str, count: str, advertised: dict[str, str]) -> dict[str, Any]:
    labels = {
        **CONTAINER,
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": count,
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "false",
    }
    return node(name, labels, advertised)


def report(*nodes: dict[str, Any], sandbox: bool = True) -> Report:
    return run_checks([policy(sandbox), *nodes])


def codes(result: Report, name: str) -> set[str]:
    return {f.code for f in result.findings if f.node == name and f.severity != "info"}


HEALTHY = [
    vgpu_node("vgpu-default", None, {"nvidia.com/NVIDIA_A10-12Q": "4"}),
    vgpu_node("vgpu-4q", "A10-4Q", {"nvidia.com/NVIDIA_A10-4Q": "12"}),
    vgpu_node("vgpu-l40s", "L40S-24Q", {"nvidia.com/NVIDIA_L40S-24Q": "4"}),
    vgpu_node("vgpu-h100", None, {"nvidia.com/NVIDIA_H100XM-40C": "16"}),
    passthrough_node("pt-a10", {"nvidia.com/GA102GL_A10": "2"}),
    passthrough_node("pt-h100", {"nvidia.com/GH100_H100_SXM5_80GB": "8"}),
    passthrough_node("pt-l40s", {"nvidia.com/AD102GL_L40S": "4"}),
    gfd_node("c-a10", "NVIDIA-A10", "2", {"nvidia.com/gpu": "2"}),
    gfd_node("c-h100-sxm", "NVIDIA-H100-80GB-HBM3", "8", {"nvidia.com/gpu": "8"}),
    gfd_node("c-h200", "NVIDIA-H200", "8", {"nvidia.com/gpu": "8"}),
]


@pytest.mark.parametrize("healthy", HEALTHY, ids=lambda n: n["metadata"]["name"])
def test_healthy_real_nodes_are_clean(healthy: dict[str, Any]) -> None:
    result = report(healthy)
    name = healthy["metadata"]["name"]
    assert codes(result, name) == set(), [f.message for f in result.findings]
    assert "GPU104" not in {f.code for f in result.findings}


def test_the_cards_are_read_from_what_a_vgpu_node_advertises() -> None:
    resolved = parse_cluster_policy(policy())
    result = plan(resolved, vgpu_node("v", "A10-4Q", {"nvidia.com/NVIDIA_A10-4Q": "12"}))
    assert result.inventory.source == "advertised"
    assert result.inventory.count == 2
    assert {card.device_id for card in result.inventory.cards} == {"2236"}
    assert result.advertises == {"nvidia.com/NVIDIA_A10-4Q": 12}
    evidence = result.inventory.to_dict()["evidence"]
    assert evidence[0]["signal"] == "nvidia.com/NVIDIA_A10-4Q: 12 (capacity)"
    assert evidence[0]["count"] == 2


def test_a_vgpu_type_other_than_the_config_names_is_found() -> None:
    drifted = vgpu_node("v", "A10-12Q", {"nvidia.com/NVIDIA_A10-4Q": "12"})
    assert "GPU203" in codes(report(drifted), "v")


def test_a_vgpu_count_that_is_not_whole_cards_is_found() -> None:
    drifted = vgpu_node("v", "A10-12Q", {"nvidia.com/NVIDIA_A10-12Q": "3"})
    result = report(drifted)
    assert "GPU107" in codes(result, "v")
    (finding,) = [f for f in result.findings if f.code == "GPU107"]
    assert "2 A10-12Q per card" in finding.message


def test_a_passthrough_node_advertising_one_card_of_two_is_found() -> None:
    drifted = passthrough_node(
        "p", {"nvidia.com/GA102GL_A10": "1"}, capacity={"nvidia.com/GA102GL_A10": "2"}
    )
    assert "GPU206" in codes(report(drifted), "p")


def test_a_raw_id_resource_name_is_found() -> None:
    drifted = passthrough_node("p", {"nvidia.com/2236": "2"})
    result = report(drifted)
    assert "GPU209" in codes(result, "p")
    (finding,) = [f for f in result.findings if f.code == "GPU209"]
    assert "nvidia.com/GA102GL_A10" in finding.message


def test_hints_that_disagree_are_a_finding_not_a_crash() -> None:
    hinted = gfd_node("c", "NVIDIA-A10", "2", {"nvidia.com/gpu": "2"})
    hinted["metadata"]["annotations"]["gpuop.io/gpu-inventory"] = (
        '[{"pci":"10de:2236"},{"pci":"10de:2236"},{"pci":"10de:2236"}]'
    )
    assert "GPU106" in codes(report(hinted), "c")


def test_gfd_saying_two_and_the_resource_three_is_a_count_finding() -> None:
    drifted = gfd_node("c", "NVIDIA-A10", "2", {"nvidia.com/gpu": "3"})
    assert "GPU205" in codes(report(drifted), "c")


def test_a_node_with_no_signal_at_all_is_only_unknown() -> None:
    bare = node("n", {WORKLOAD: "vm-passthrough", **PASSTHROUGH}, {})
    result = report(bare)
    assert "GPU104" in {f.code for f in result.findings}


def test_a_plugin_that_registered_no_device_is_missing_its_devices() -> None:
    drifted = passthrough_node("p", {"nvidia.com/GA102GL_A10": "0"})
    result = report(drifted)
    assert "GPU207" in codes(result, "p")
    (finding,) = [f for f in result.findings if f.code == "GPU207"]
    assert "nvidia.com/GA102GL_A10" in finding.message


def test_a_sandbox_node_advertising_nothing_of_its_kind_is_found() -> None:
    drifted = vgpu_node("v", "A10-12Q", {"nvidia.com/NVIDIA_A10-12Q": "0"})
    assert "GPU207" in codes(report(drifted), "v")


def test_a_passthrough_name_no_device_has_is_found() -> None:
    drifted = passthrough_node("p", {"nvidia.com/GA102GL_A10_24GB": "2"})
    assert codes(report(drifted), "p") == {"GPU209"}


def test_the_report_says_what_a_node_with_findings_was_learnt_from() -> None:
    drifted = vgpu_node("v", "A10-12Q", {"nvidia.com/NVIDIA_A10-4Q": "12"})
    healthy = vgpu_node("w", None, {"nvidia.com/NVIDIA_A10-12Q": "4"})
    result = report(drifted, healthy)
    (node,) = result.to_dict()["nodes"]
    assert node["name"] == "v" and node["gpus"] == 2
    assert node["inventory"]["source"] == "advertised"
    signals = [item["signal"] for item in node["inventory"]["evidence"]]
    assert "nvidia.com/NVIDIA_A10-4Q: 12 (capacity)" in signals
    assert "2× A10 per its resources" in render_text_of(result)


def render_text_of(result: Report) -> str:
    from gpuop.check import render_text

    return render_text(result, color=False)


@pytest.mark.parametrize(
    ("advertised", "replicas", "found"),
    [
        # GFD installed by its own chart beside a plugin sharing by time-slicing (#732).
        ({"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "100"}, "1", {"GPU216"}),
        ({"nvidia.com/gpu": "8"}, "1", {"GPU205"}),  # sharing, or cards GFD does not see
        ({"nvidia.com/gpu.shared": "8"}, "4", set()),  # GFD knows the replicas
        ({"nvidia.com/gpu": "8"}, "4", set()),
        ({"nvidia.com/gpu.shared": "100"}, None, set()),  # no GFD label: not known here
        ({"nvidia.com/gpu": "3"}, "1", {"GPU205"}),  # not a whole multiple: a count finding
        ({"nvidia.com/gpu.shared": "10"}, "4", {"GPU205"}),  # more than 2 × 4
    ],
)
def test_sharing_that_gfd_does_not_know(
    advertised: dict[str, str], replicas: str | None, found: set[str]
) -> None:
    subject = gfd_node("c-a10", "NVIDIA-A10", "2", advertised)
    labels = subject["metadata"]["labels"]
    if replicas is None:
        del labels["nvidia.com/gpu.replicas"]
    else:
        labels["nvidia.com/gpu.replicas"] = replicas
    result = report(subject)
    assert codes(result, "c-a10") == found, [f.message for f in result.findings]
    if found == {"GPU216"}:
        (finding,) = [f for f in result.findings if f.code == "GPU216"]
        assert "nvidia.com/gpu.replicas=1" in finding.message
        assert "on 2 GPUs" in finding.message
    if advertised == {"nvidia.com/gpu": "8"} and replicas == "1":
        (finding,) = [f for f in result.findings if f.code == "GPU205"]
        assert "time-slicing or MPS (4 replicas)" in (finding.hint or "")
