"""What the GPU nodes tell the driver's DaemonSets: their OS (the image tag's suffix) and
their kernels (one precompiled driver DaemonSet per kernel and OS), read from NFD's labels;
their container runtime; and whether the cluster is OpenShift.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from gpuop.api.labels import (
    GPU_PRESENT_LABEL,
    NFD_KERNEL,
    NFD_OS_ID,
    NFD_OS_VERSION_ID,
    OPENSHIFT_OS_LABEL,
)


def driver_os_tag(nodes: Iterable[Mapping[str, Any]]) -> str | None:
    """The OS suffix of driver image tags, e.g. `ubuntu24.04`, as upstream derives it.

    Upstream reads NFD's OS labels from the first node (by name) with `nvidia.com/gpu.present`;
    for RHEL, Rocky and Oracle Linux only the major version counts. None when no such node
    carries both labels.
    """
    gpu_nodes = [
        n for n in nodes if ((n.get("metadata") or {}).get("labels") or {}).get(GPU_PRESENT_LABEL)
    ]
    if not gpu_nodes:
        return None
    first = min(gpu_nodes, key=lambda n: str(n["metadata"].get("name") or ""))
    return os_tag_of(first["metadata"]["labels"])


def on_openshift(nodes: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the nodes are OpenShift's: any carries the machine-config daemon's
    `node.openshift.io/os_id` label. (Upstream asks for the ClusterVersion instead; the
    nodes say the same without another read or right.)"""
    return any(
        OPENSHIFT_OS_LABEL in ((node.get("metadata") or {}).get("labels") or {}) for node in nodes
    )


_RUNTIME_PREFIXES = (("docker", "docker"), ("containerd", "containerd"), ("cri-o", "crio"))


def container_runtime(nodes: Iterable[Mapping[str, Any]]) -> str:
    """The GPU nodes' container runtime as upstream's `getRuntime` picks it: `containerd`
    when one GPU node runs it, else the last GPU node's recognised runtime (`docker`,
    `crio`), else `containerd`. Read from `status.nodeInfo.containerRuntimeVersion`
    (`containerd://1.7.23`, `cri-o://1.31.1`) of the nodes with `nvidia.com/gpu.present`."""
    found = ""
    for node in nodes:
        if ((node.get("metadata") or {}).get("labels") or {}).get(GPU_PRESENT_LABEL) != "true":
            continue
        version = str(
            ((node.get("status") or {}).get("nodeInfo") or {}).get("containerRuntimeVersion") or ""
        )
        runtime = next(
            (name for prefix, name in _RUNTIME_PREFIXES if version.startswith(prefix)), ""
        )
        if runtime == "containerd":
            return runtime
        found = runtime or found
    return found or "containerd"


def os_tag_of(labels: Mapping[str, str]) -> str | None:
    """The OS tag of one node's NFD labels (`ubuntu24.04`, `rhel9`); None without them."""
    os_id, version = labels.get(NFD_OS_ID), labels.get(NFD_OS_VERSION_ID)
    if not os_id or not version:
        return None
    if os_id in ("ol", "rocky", "rhel"):
        version = version.split(".")[0]
    return f"{os_id}{version}"


def kernel_versions(nodes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Kernel version -> OS (`ubuntu22.04`) of the GPU nodes, for precompiled drivers.

    As upstream's `getKernelVersionsMap`: nodes with `nvidia.com/gpu.present=true` and NFD's
    full kernel version label; the OS keeps its full VERSION_ID here.
    """
    found: dict[str, str] = {}
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if labels.get(GPU_PRESENT_LABEL) != "true" or NFD_KERNEL not in labels:
            continue
        node_os = f"{labels.get(NFD_OS_ID, '')}{labels.get(NFD_OS_VERSION_ID, '')}"
        found.setdefault(labels[NFD_KERNEL], node_os)
    return found


def sanitized_kernel(version: str) -> str:
    without_arch = re.sub(r"x86_64(?:_64k)?|aarch64(?:_64k)?", "", version).replace("_", ".")
    return without_arch.removesuffix(".").lower()
