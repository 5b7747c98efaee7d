"""GPU213 to GPU215: fewer GPUs than the machine has, none at all, and the faults a platform reports."""

from __future__ import annotations

from typing import Any

import managers_corpus
import pytest

from gpuop.check import run_checks
from gpuop.planner.machine import gpu_hardware, machine_gpus, unadvertised_gpus


def _codes(objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {c for c in run_checks(objects).codes() if c[0] != "GPU001"}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"karpenter.k8s.aws/instance-gpu-count": "8"}, 8),
        (
            {
                "karpenter.azure.com/sku-gpu-count": "2",
                "karpenter.azure.com/sku-gpu-manufacturer": "nvidia",
            },
            2,
        ),
        ({"eks.amazonaws.com/instance-gpu-count": "1"}, 1),
        # Another vendor's GPUs, none, or a count that is not one.
        (
            {
                "karpenter.k8s.aws/instance-gpu-count": "8",
                "karpenter.k8s.aws/instance-gpu-manufacturer": "amd",
            },
            None,
        ),
        ({"karpenter.k8s.aws/instance-gpu-count": "0"}, None),
        ({"karpenter.k8s.aws/instance-gpu-count": "eight"}, None),
        # GKE's accelerator-optimized machine types, on GKE's GPU nodes only.
        (
            {
                "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
                "node.kubernetes.io/instance-type": "a3-highgpu-8g",
            },
            8,
        ),
        (
            {
                "cloud.google.com/gke-accelerator": "nvidia-gb200",
                "node.kubernetes.io/instance-type": "a4x-highgpu-4g",
            },
            4,
        ),
        ({"node.kubernetes.io/instance-type": "a3-highgpu-8g"}, None),
        # GKE's count label (Autopilot's and node pools' GPU nodes), not on its TPU nodes.
        (
            {
                "cloud.google.com/gke-accelerator": "nvidia-tesla-t4",
                "cloud.google.com/gke-accelerator-count": "2",
                "node.kubernetes.io/instance-type": "n1-standard-8",
            },
            2,
        ),
        (
            {
                "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                "cloud.google.com/gke-accelerator-count": "4",
            },
            None,
        ),
        (
            {
                "cloud.google.com/gke-accelerator": "nvidia-l4",
                "node.kubernetes.io/instance-type": "g2-standard-8",
            },
            None,
        ),
    ],
)
def test_the_machine_gpu_count_is_read_from_the_provisioner_labels(
    labels: dict[str, str], expected: int | None
) -> None:
    found = machine_gpus(labels)
    assert (found[0] if found else None) == expected


def test_a_gke_node_missing_a_gpu_of_its_machine_type_is_found() -> None:
    objects = managers_corpus.gke()
    node = objects[0]
    node["metadata"]["labels"]["cloud.google.com/gke-accelerator"] = "nvidia-h100-80gb"
    node["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "a3-highgpu-8g"
    for part in ("capacity", "allocatable"):
        node["status"][part]["nvidia.com/gpu"] = "7"
    assert _codes(objects) == {("GPU213", "Node/gke-l4-1")}
    for part in ("capacity", "allocatable"):
        node["status"][part]["nvidia.com/gpu"] = "8"
    assert _codes(objects) == set()


def test_nodes_whose_cards_gpu_feature_discovery_counts_are_left_to_gpu206() -> None:
    objects = managers_corpus.karpenter_plugin("3", "3")
    node = objects[0]
    node["metadata"]["labels"].update(
        {
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-A10G",
            "nvidia.com/gpu.count": "4",
        }
    )
    codes = _codes(objects)
    assert ("GPU213", "Node/ip-10-0-12-34") not in codes
    assert ("GPU206", "Node/ip-10-0-12-34") in codes


def test_mig_partitions_are_not_counted_as_gpus() -> None:
    objects = managers_corpus.karpenter_plugin("1", "1")
    for part in ("capacity", "allocatable"):
        objects[0]["status"][part]["nvidia.com/mig-1g.10gb"] = "7"
    assert ("GPU213", "Node/ip-10-0-12-34") not in _codes(objects)


def test_gpu206_says_when_the_missing_device_is_registered_but_unhealthy() -> None:
    objects = managers_corpus.karpenter_plugin("3", "4")
    objects[0]["metadata"]["labels"].update(
        {
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-A10G",
            "nvidia.com/gpu.count": "4",
        }
    )
    (finding,) = [f for f in run_checks(objects).findings if f.code == "GPU206"]
    assert finding.message.endswith(": the device plugin registered 4 and marks 1 unhealthy")
    assert "XID" in finding.hint


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (
            {"karpenter.k8s.aws/instance-gpu-count": "2"},
            (2, "karpenter.k8s.aws/instance-gpu-count=2"),
        ),
        (
            {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"},
            (None, "cloud.google.com/gke-accelerator=nvidia-tesla-t4"),
        ),
        (
            {"k8s.amazonaws.com/accelerator": "nvidia-tesla-v100"},
            (None, "k8s.amazonaws.com/accelerator=nvidia-tesla-v100"),
        ),
        (
            {"kubernetes.azure.com/accelerator": "nvidia"},
            (None, "kubernetes.azure.com/accelerator=nvidia"),
        ),
        # Another vendor's accelerator, and GKE's pools that run no GKE plugin.
        ({"kubernetes.azure.com/accelerator": "amd"}, None),
        (
            {
                "karpenter.k8s.aws/instance-gpu-count": "1",
                "karpenter.k8s.aws/instance-gpu-manufacturer": "amd",
            },
            None,
        ),
        (
            {
                "cloud.google.com/gke-accelerator": "nvidia-l4",
                "gke-no-default-nvidia-gpu-device-plugin": "true",
            },
            None,
        ),
        ({}, None),
    ],
)
def test_the_machine_has_gpus_by_its_provisioner_or_its_cloud(
    labels: dict[str, str], expected: tuple[int | None, str] | None
) -> None:
    assert gpu_hardware(labels) == expected


def _finding(objects: list[dict[str, Any]], code: str) -> Any:
    (finding,) = [f for f in run_checks(objects).findings if f.code == code]
    return finding


def test_a_gpu_machine_advertising_nothing_says_why_for_its_manager() -> None:
    finding = _finding(managers_corpus.bottlerocket_no_plugin(), "GPU214")
    assert finding.severity == "error"
    assert finding.message == (
        "its machine has 1 NVIDIA GPU (karpenter.k8s.aws/instance-gpu-count=1) but the node"
        " advertises no GPU resource (tainted nvidia.com/gpu=true:NoSchedule)"
    )
    assert "apiclient get settings.kubelet-device-plugins" in finding.hint
    assert (
        "cloud.google.com/gke-gpu-driver-version"
        in _finding(managers_corpus.gke_no_driver(), "GPU214").hint
    )
    assert "not the device plugin" in _finding(managers_corpus.eks_no_plugin(), "GPU214").hint


def test_a_node_whose_gpus_only_nfd_shows_is_a_warning_that_names_dra() -> None:
    finding = _finding(managers_corpus.nfd_no_plugin(), "GPU214")
    assert finding.severity == "warning"
    assert finding.message.startswith(
        "its machine has NVIDIA GPUs (feature.node.kubernetes.io/pci-10de.present=true)"
    )
    assert finding.hint.startswith("no device plugin runs on the node")
    assert finding.hint.endswith(
        "if NVIDIA's DRA driver serves the node, include its ResourceSlices"
    )


def test_a_node_that_registered_a_gpu_resource_with_no_device_is_gpu211_alone() -> None:
    objects = managers_corpus.eks_no_plugin()
    for part in ("capacity", "allocatable"):
        objects[0]["status"][part]["nvidia.com/gpu"] = "0"
    assert _codes(objects) == {("GPU211", "Node/ip-10-0-7-21")}


def test_the_report_counts_a_gpu_machine_advertising_nothing_as_a_gpu_node() -> None:
    report = run_checks(managers_corpus.aks_no_plugin())
    assert report.to_dict()["summary"]["gpu_nodes"] == 1


def test_the_standalone_plugins_node_advertising_nothing_gets_the_plugins_fix() -> None:
    objects = managers_corpus.standalone()
    node = objects[0]
    for part in ("capacity", "allocatable"):
        node["status"][part].pop("nvidia.com/gpu")
    finding = _finding(objects, "GPU207")
    assert "validator" not in finding.hint
    assert "NVML not found" in finding.hint
    assert "GPU214" not in {f.code for f in run_checks(objects).findings}


def test_an_autopilot_node_missing_a_gpu_of_its_count_label_is_found() -> None:
    objects = managers_corpus.gke()
    labels = objects[0]["metadata"]["labels"]
    labels["cloud.google.com/gke-accelerator-count"] = "2"
    assert _codes(objects) == {("GPU213", "Node/gke-l4-1")}
    labels["cloud.google.com/gke-accelerator-count"] = "1"
    assert _codes(objects) == set()


def test_a_link_condition_is_a_warning_and_a_false_one_says_nothing() -> None:
    objects = managers_corpus.aks_h100()
    conditions = objects[0]["status"]["conditions"]
    assert _codes(objects) == set()
    nvlink = next(c for c in conditions if c["type"] == "NVLinkStatusInactive")
    nvlink.update(status="True", reason="NVLinkStatusInactive", message="NVLink 3 is inactive")
    finding = _finding(objects, "GPU215")
    assert finding.severity == "warning"
    assert finding.message.endswith(
        "an NVLink of the node's GPUs is inactive (NVLink 3 is inactive)"
    )


def test_a_node_whose_cards_kubevirt_serves_under_its_own_name_advertises_them() -> None:
    # KubeVirt takes any resourceName; an NVIDIA card permitted as `devices.example.com/t4`
    # is advertised all the same, and KubeVirt's plugin is its manager.
    objects = managers_corpus.kubevirt_own_pci()
    node, kubevirt = objects
    node["metadata"]["labels"]["cloud.google.com/gke-accelerator"] = "nvidia-tesla-t4"
    for part in ("capacity", "allocatable"):
        node["status"][part].pop("nvidia.com/GA100_A100_SXM4_40GB")
        node["status"][part]["devices.example.com/t4"] = "1"
    entry = kubevirt["spec"]["configuration"]["permittedHostDevices"]["pciHostDevices"][0]
    entry["resourceName"] = "devices.example.com/t4"
    report = run_checks(objects)
    assert [f.code for f in report.findings if f.severity != "info"] == []
    assert report.nodes[0].managers[:1] == ("kubevirt",)


def test_a_windows_gpu_node_is_not_held_to_the_linux_device_plugin() -> None:
    objects = managers_corpus.aks_no_plugin()
    objects[0]["metadata"]["labels"]["kubernetes.io/os"] = "windows"
    assert _codes(objects) == set()


@pytest.mark.parametrize(
    ("labels", "resources", "expected"),
    [
        (
            {"kubernetes.azure.com/accelerator": "nvidia"},
            ["cpu"],
            (None, "kubernetes.azure.com/accelerator=nvidia"),
        ),
        (
            {"feature.node.kubernetes.io/pci-10de.present": "true"},
            [],
            (None, "feature.node.kubernetes.io/pci-10de.present=true"),
        ),
        # Advertised: NVIDIA's names (even with 0 devices), or another vendor's.
        ({"kubernetes.azure.com/accelerator": "nvidia"}, ["nvidia.com/gpu"], None),
        ({"feature.node.kubernetes.io/pci-10de.present": "true"}, ["volcano.sh/vgpu-number"], None),
        ({"feature.node.kubernetes.io/pci-10de.present": "true"}, ["aliyun.com/gpu-mem"], None),
        # No GPU said, or a Windows node.
        ({}, [], None),
        ({"kubernetes.azure.com/accelerator": "nvidia", "kubernetes.io/os": "windows"}, [], None),
    ],
)
def test_a_gpu_machine_advertising_nothing_is_read_from_its_labels_and_resources(
    labels: dict[str, str], resources: list[str], expected: tuple[int | None, str] | None
) -> None:
    assert unadvertised_gpus(labels, resources, gpu_hardware(labels)) == expected
