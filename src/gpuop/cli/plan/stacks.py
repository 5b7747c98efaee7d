"""What `gpuop plan` plans with: the ClusterPolicy, and a GPUCluster beside it or alone.

With a GPUCluster each node runs one stack, the device plugin's (ClusterPolicy) or the
DRA driver's (GPUCluster), chosen by `gpuop.planner.stack`; without one, and without a
stack label on the node, the plan is the ClusterPolicy's alone, as it always was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuop.api.labels import GPU_STACK_LABEL
from gpuop.cli.common import UserError
from gpuop.cli.inputs import PciSource, load_yaml_document
from gpuop.planner import NodeFacts, NodePlan
from gpuop.planner.stack import plan_node as plan_stacks
from gpuop.policy import PolicyError, ResolvedPolicy
from gpuop.policy.gpucluster import (
    ResolvedGpuCluster,
    default_gpu_cluster_object,
    parse_gpu_cluster,
)


def plan_inputs(policy: ResolvedPolicy, source: str, pci: PciSource) -> dict[str, Any]:
    return {
        "policy": source,
        "sandbox_enabled": policy.sandbox_enabled,
        "sandbox_mode": policy.sandbox_mode,
        "default_workload": policy.default_workload,
        "pci_ids": pci.to_dict(),
    }


def load_gpu_cluster(path: str | None) -> tuple[ResolvedGpuCluster | None, str | None]:
    """The GPUCluster to plan with (`default`: gpuop's default one), and its name."""
    if path is None:
        return None, None
    if path == "default":
        obj: Any = default_gpu_cluster_object()
        source = "default GPUCluster"
    else:
        obj = load_yaml_document(path, "GPUCluster", "gpuop plan --gpu-cluster")
        source = "stdin" if path == "-" else path
    try:
        return parse_gpu_cluster(obj, source), source
    except PolicyError as exc:
        lines = "\n".join(f"  {problem}" for problem in exc.problems)
        raise UserError(f"{source}: not a valid GPUCluster\n{lines}") from None


@dataclass(frozen=True)
class Stacks:
    """What the plan reads besides the node: the ClusterPolicy (if any) and GPUCluster."""

    policy: ResolvedPolicy
    source: str
    gpu_cluster: ResolvedGpuCluster | None = None
    gpu_cluster_source: str | None = None
    cluster_policy: bool = True

    def involved(self, facts: NodeFacts) -> bool:
        """Whether the node's plan depends on stacks: a GPUCluster, or a stack label."""
        return self.gpu_cluster is not None or GPU_STACK_LABEL in facts.labels

    def plan(self, facts: NodeFacts, pci: PciSource) -> NodePlan:
        policy = self.policy if self.cluster_policy else None
        return plan_stacks(policy, self.gpu_cluster, facts, pci_db=pci.database)

    def inputs(self, pci: PciSource) -> dict[str, Any]:
        inputs = plan_inputs(self.policy, self.source, pci)
        if self.gpu_cluster_source is not None:
            inputs["gpu_cluster"] = self.gpu_cluster_source
            inputs["cluster_policy"] = self.cluster_policy
        return inputs


def load_stacks(
    policy_file: str | None,
    sandbox: bool,
    gpu_cluster_file: str | None,
    no_cluster_policy: bool,
    load_policy: Callable[[str | None, bool], tuple[ResolvedPolicy, str]],
) -> Stacks:
    """The ClusterPolicy (`load_policy` reads it) and the GPUCluster to plan with."""
    resolved, source = load_policy(policy_file, sandbox)
    gpu_cluster, gpu_cluster_source = load_gpu_cluster(gpu_cluster_file)
    if no_cluster_policy:
        source = "none"
    return Stacks(resolved, source, gpu_cluster, gpu_cluster_source, not no_cluster_policy)
