"""Which of the GPU Operator's two stacks each node of the input runs.

NVIDIA's operator labels a node for its device-plugin stack under a ClusterPolicy and for
its DRA stack under a GPUCluster (`nvidia.com/gpu.deploy.dra-driver`, `.dra-validator`,
`.dcgm-dra`, `.dcgm-exporter-dra`, and no device plugin). A node of the DRA stack advertises
no `nvidia.com/gpu`: its cards are published as ResourceSlices. Held to the ClusterPolicy's
contract it would show a missing device plugin and missing deploy labels, so the check plans
it as the DRA stack (`gpuop.planner.stack.plan_dra`).

With a GPUCluster in the input the node's stack is decided as the operator decides it
(`decide_stack`). Without one, and without a ClusterPolicy (a dump of nodes alone), a node
that carries the DRA driver's deploy label and not the device plugin's was labelled by a
GPUCluster: the ClusterPolicy's labelling removes the DRA keys, and the GPUCluster's the
device plugin's. It is planned under the GPUCluster's defaults.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuop.api.labels import DEVICE_PLUGIN_DEPLOY_LABEL, DRA_DRIVER_DEPLOY_LABEL
from gpuop.check.model import Finding
from gpuop.check.policy import shown_problems
from gpuop.manifests.fields import text
from gpuop.planner.stack import decide_stack
from gpuop.policy.gpucluster import (
    GpuClusterError,
    ResolvedGpuCluster,
    default_gpu_cluster_object,
    parse_gpu_cluster,
)


@dataclass(frozen=True)
class GpuClusterChoice:
    """The GPUCluster the input holds (None: none, or none usable), and what was said."""

    gpu_cluster: ResolvedGpuCluster | None
    in_input: bool
    findings: tuple[Finding, ...] = ()


def choose_gpu_cluster(gpu_clusters: Sequence[Mapping[str, Any]]) -> GpuClusterChoice:
    """The input's GPUCluster, resolved; GPU007 where it cannot be read."""
    if not gpu_clusters:
        return GpuClusterChoice(None, in_input=False)
    chosen = gpu_clusters[0]
    name = text(chosen, "metadata", "name") or "(unnamed)"
    try:
        return GpuClusterChoice(parse_gpu_cluster(dict(chosen), f"GPUCluster {name}"), True)
    except GpuClusterError as exc:
        finding = Finding(
            "GPU007",
            "error",
            "GPUCluster",
            name,
            f"GPUCluster {name} cannot be used: {shown_problems(exc.problems)}; its nodes are"
            " checked against the GPUCluster's defaults",
            "fix the fields named; the operator reads the same spec",
        )
        return GpuClusterChoice(None, True, (finding,))


def runs_dra_stack(labels: Mapping[str, str], *, cluster_policy: bool, gpu_cluster: bool) -> bool:
    """Whether the node runs the GPU Operator's DRA stack, as the input shows it.

    `cluster_policy`, `gpu_cluster`: whether each CR is in the input (or given)."""
    if gpu_cluster:
        decision = decide_stack(labels, cluster_policy=cluster_policy, gpu_cluster=True)
        return decision.stack == "dra"
    if cluster_policy:
        return False
    return (
        labels.get(DRA_DRIVER_DEPLOY_LABEL) == "true" and DEVICE_PLUGIN_DEPLOY_LABEL not in labels
    )


def default_gpu_cluster() -> ResolvedGpuCluster:
    """The GPUCluster upstream's Helm chart creates: what a nodes-only dump is held to."""
    return parse_gpu_cluster(default_gpu_cluster_object(), "the default GPUCluster")


__all__ = ["GpuClusterChoice", "choose_gpu_cluster", "default_gpu_cluster", "runs_dra_stack"]
