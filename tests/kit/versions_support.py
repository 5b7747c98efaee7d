"""Builders for the version tests: GPU nodes as GPU feature discovery and NFD label them,
and ClusterPolicies pinned to a release's operand versions (as Helm renders them)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from gpuop.catalog import operand_table
from gpuop.catalog.versions import version_matrix

TODAY = date(2026, 11, 29)
GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden" / "upgrade"
A100 = "NVIDIA-A100-SXM4-80GB"
L40S = "NVIDIA-L40S"
# The CUDA version a driver branch reports (`nvidia.com/cuda.runtime-version.full`).
CUDA_OF_BRANCH = {"535": "12.2", "550": "12.4", "570": "12.8", "580": "13.0", "595": "13.2"}


def gpu_node(
    name: str,
    *,
    product: str = A100,
    driver: str | None = "595.91.07",
    cuda: str | None = "",
    kubelet: str = "v1.34.2",
    os_id: str | None = "ubuntu",
    os_version: str | None = "24.04",
    os_image: str = "Ubuntu 24.04.1 LTS",
    runtime: str = "containerd://2.1.4",
    gpu: bool = True,
    labels: dict[str, str] | None = None,
    node_info: bool = True,
) -> dict[str, Any]:
    """A Node with NFD's GPU and os_release labels and GFD's product/driver/CUDA labels."""
    all_labels: dict[str, str] = {"kubernetes.io/hostname": name}
    if gpu:
        all_labels["feature.node.kubernetes.io/pci-10de.present"] = "true"
        all_labels["nvidia.com/gpu.product"] = product
        all_labels["nvidia.com/gpu.count"] = "8"
        if driver is not None:
            all_labels["nvidia.com/cuda.driver-version.full"] = driver
        reported = CUDA_OF_BRANCH.get(driver.split(".")[0], "") if cuda == "" and driver else cuda
        if reported:
            all_labels["nvidia.com/cuda.runtime-version.full"] = reported
    if os_id is not None:
        all_labels["feature.node.kubernetes.io/system-os_release.ID"] = os_id
    if os_version is not None:
        all_labels["feature.node.kubernetes.io/system-os_release.VERSION_ID"] = os_version
    all_labels.update(labels or {})
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
    }
    if node_info:
        node["status"] = {
            "nodeInfo": {
                "kubeletVersion": kubelet,
                "osImage": os_image,
                "containerRuntimeVersion": runtime,
            }
        }
    return node


def cpu_node(name: str, **kwargs: Any) -> dict[str, Any]:
    return gpu_node(name, gpu=False, **kwargs)


def pinned_spec(release: str) -> dict[str, Any]:
    """The image blocks Helm renders for `release`: repository, image and version per operand."""
    components = version_matrix().release(release)
    assert components is not None, release
    spec: dict[str, Any] = {}
    for operand in operand_table().operands:
        key = operand.image.version_key
        block = operand.spec_block
        if key is None or block is None or operand.image.repository is None:
            continue
        version = components.components.get(key)
        if version is None:
            continue
        spec[block] = {
            "repository": operand.image.repository,
            "image": operand.image.image,
            "version": version,
        }
    return spec


def cluster_policy(
    release: str | None = None,
    *,
    name: str = "cluster-policy",
    versions: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ClusterPolicy pinned to `release` (if given), with `versions` per block on top."""
    body: dict[str, Any] = pinned_spec(release) if release else {}
    for block, version in (versions or {}).items():
        body.setdefault(block, {})["version"] = version
    for block, value in (spec or {}).items():
        if isinstance(value, dict):
            body.setdefault(block, {}).update(value)
        else:
            body[block] = value
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": body,
    }
