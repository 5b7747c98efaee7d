"""vGPU resource names (resource-naming.md §2) and which config a resource belongs to."""

from __future__ import annotations

import pytest

from gpuop.catalog import gpu_catalog
from gpuop.naming import (
    NamingError,
    classify_resource,
    is_gpu_resource,
    mdev_type_name,
    resource_name_problem,
    vgpu_resource,
    vgpu_type_of_resource,
)


@pytest.mark.parametrize(
    ("mdev", "resource"),
    [
        ("NVIDIA A10-12Q", "nvidia.com/NVIDIA_A10-12Q"),
        ("GRID T4-1Q", "nvidia.com/GRID_T4-1Q"),
        ("GRID P100X-1B", "nvidia.com/GRID_P100X-1B"),  # the plugin's unit test
        ("NVIDIA A10-12Q\n", "nvidia.com/NVIDIA_A10-12Q"),  # sysfs has a newline
        ("NVIDIA  L40S-24Q", "nvidia.com/NVIDIA_L40S-24Q"),  # whitespace runs become one _
        ("NVIDIA\tRTX6000-Ada-24Q", "nvidia.com/NVIDIA_RTX6000-Ada-24Q"),  # case and - kept
        ("NVIDIA A100-1-5C", "nvidia.com/NVIDIA_A100-1-5C"),
    ],
)
def test_vgpu_resource(mdev: str, resource: str) -> None:
    assert vgpu_resource(mdev) == resource


@pytest.mark.parametrize("mdev", ["", "\n", "  \r\n"])
def test_vgpu_resource_rejects_empty(mdev: str) -> None:
    with pytest.raises(NamingError, match="empty"):
        vgpu_resource(mdev)


@pytest.mark.parametrize(
    ("vgpu_type", "mdev"),
    [
        ("A10-12Q", "NVIDIA A10-12Q"),
        ("A16-8Q", "NVIDIA A16-8Q"),
        ("L40S-24Q", "NVIDIA L40S-24Q"),
        ("T4-1Q", "GRID T4-1Q"),  # Turing boards keep the GRID prefix
        ("A100-1-5C", "NVIDIA A100-1-5C"),
        ("X99-1Q", "NVIDIA X99-1Q"),  # unknown types get the current prefix
    ],
)
def test_mdev_type_name(vgpu_type: str, mdev: str) -> None:
    assert mdev_type_name(vgpu_type) == mdev


def test_every_catalog_type_gives_a_valid_resource_that_reads_back() -> None:
    for gpu in gpu_catalog().gpus:
        for vgpu_type in gpu.vgpu_types:
            resource = vgpu_resource(mdev_type_name(vgpu_type))
            assert resource_name_problem(resource) is None, resource
            assert classify_resource(resource) == "vgpu", resource
            assert vgpu_type_of_resource(resource) == vgpu_type


@pytest.mark.parametrize(
    ("resource", "vgpu_type"),
    [
        ("nvidia.com/NVIDIA_A10-12Q", "A10-12Q"),
        ("nvidia.com/GRID_T4-1Q", "T4-1Q"),
        ("nvidia.com/NVIDIA_A100-1-5CME", "A100-1-5CME"),
        ("nvidia.com/GA102GL_A10", None),
        ("nvidia.com/gpu", None),
        ("nvidia.com/NVIDIA_A10", None),
    ],
)
def test_vgpu_type_of_resource(resource: str, vgpu_type: str | None) -> None:
    assert vgpu_type_of_resource(resource) == vgpu_type


@pytest.mark.parametrize(
    ("resource", "kind"),
    [
        ("nvidia.com/gpu", "container"),
        ("nvidia.com/gpu.shared", "container"),
        ("nvidia.com/mig-1g.5gb", "container"),
        ("nvidia.com/mig-3g.20gb", "container"),
        ("nvidia.com/GA102GL_A10", "passthrough"),
        ("nvidia.com/GA107GL_A2___A16", "passthrough"),
        ("nvidia.com/2235", "passthrough"),  # raw-id fallback
        ("nvidia.com/GA104_RTX_A4500_EMBEDDED_GPU_", "passthrough"),
        ("nvidia.com/NVIDIA_A10-12Q", "vgpu"),
        ("nvidia.com/GRID_T4-1Q", "vgpu"),
        ("nvidia.com/NVIDIA_RTX6000-Ada-24Q", "vgpu"),
        ("nvidia.com/pgpu", "kata"),
        ("nvidia.com/nvswitch", "kata"),
        ("amd.com/gpu", "other"),
        ("cpu", "other"),
        ("nvidia.com/TU104GL_Tesla_T4", "other"),  # the stale mixed-case spelling
    ],
)
def test_classify_resource(resource: str, kind: str) -> None:
    assert classify_resource(resource) == kind
    assert is_gpu_resource(resource) == (kind != "other")
