"""GPU213: a node advertising fewer GPUs than its machine has, by its provisioner's labels."""

from __future__ import annotations

from typing import Any

import managers_corpus
import pytest

from gpuop.check import run_checks
from gpuop.check.machine_gpus import machine_gpus


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
