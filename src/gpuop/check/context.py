"""What every check shares: the state, the policy, cached plans and the findings so far.

`plan()` is the only source of what a node should run and advertise; the checks compare
against its result and never re-derive it. Planning is the expensive part of a check, and
large clusters are made of a few node shapes, so plans are cached by the node's planning
key (the labels, inventory and NVIDIA resources the planner reads; see `state.NodeView`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuop.api.labels import INVENTORY_ANNOTATION, WORKLOAD_LABEL, deploy_label
from gpuop.api.resources import CONFIG_KIND, RESOURCE_PREFIX, ResourceKind
from gpuop.catalog.dra import dra_catalog
from gpuop.check.model import Finding, Skip
from gpuop.check.release import OperatorRelease
from gpuop.check.rules import Severity, rule
from gpuop.check.state import ClusterState, Ignored, NodeView, resource_count
from gpuop.manifests.fields import text
from gpuop.naming import PciDatabase, classify_resource
from gpuop.planner import NodeFacts, NodePlan, plan
from gpuop.planner.stack import plan_dra
from gpuop.policy import ResolvedPolicy
from gpuop.policy.gpucluster import ResolvedGpuCluster
from gpuop.vgpu import VgpuConfigFile

if TYPE_CHECKING:
    from gpuop.check.managers import Management

SANDBOX_CONFIGS = ("vm-passthrough", "vm-vgpu")


@functools.lru_cache(maxsize=8192)
def kind_of(resource: str) -> ResourceKind:
    """`classify_resource`, cached: the same few names recur on every node."""
    return classify_resource(resource)


@dataclass(frozen=True)
class OperandPod:
    """A pod of an operand DaemonSet, placed on a node."""

    daemonset: str
    name: str
    namespace: str
    obj: Mapping[str, Any]


@dataclass
class NodeInfo:
    """A node, its plan (None when no policy can be used) and its NVIDIA resource counts."""

    view: NodeView
    plan: NodePlan | None
    counts: dict[str, int]
    bad_quantities: list[tuple[str, str]]
    # The policy the node was planned with when it is not the context's: with no
    # ClusterPolicy in the input, a vm-* node is planned with sandbox workloads assumed on.
    policy: ResolvedPolicy | None = None

    @property
    def name(self) -> str:
        return self.view.name

    @property
    def on_dra_stack(self) -> bool:
        """Whether the node was planned on the GPUCluster's DRA stack."""
        return self.plan is not None and self.plan.on_dra_stack

    def positive(self) -> dict[str, int]:
        return {name: count for name, count in self.counts.items() if count > 0}

    def own_kind(self, policy: ResolvedPolicy) -> ResourceKind | None:
        if self.plan is None or not self.plan.gpu_node:
            return None
        config = self.plan.workload.config
        if config == "vm-passthrough" and policy.sandbox_mode == "kata":
            # With `P_GPU_ALIAS=""` the Kata plugin names GPUs by model, as passthrough.
            return "kata" if policy.kata_gpu_alias else "passthrough"
        return CONFIG_KIND.get(config or "")


class FindingLog:
    """What every checker's context records: findings, and the checks that could not run."""

    findings: list[Finding]
    skips: list[Skip]

    def add(
        self,
        code: str,
        kind: str,
        name: str,
        message: str,
        hint: str,
        namespace: str | None = None,
        severity: Severity | None = None,
        node: str | None = None,
    ) -> None:
        """A finding at its rule's severity (or `severity`); a Node's is about itself."""
        self.findings.append(
            Finding(
                code,
                severity or rule(code).severity,
                kind,
                name,
                message,
                hint,
                namespace or None,
                node or (name if kind == "Node" else None),
            )
        )

    def skip(self, check: str, reason: str) -> None:
        self.skips.append(Skip(check, reason))

    def add_unusable(self, ignored: Iterable[Ignored]) -> None:
        """GPU004 for each input item no check could read."""
        for item in ignored:
            self.add(
                "GPU004",
                item.kind or "Object",
                item.name or f"item {item.position}",
                item.reason,
                "regenerate the dump with `kubectl get ... -o json` or `gpuop collect`",
            )


@dataclass
class CheckContext(FindingLog):
    state: ClusterState
    policy: ResolvedPolicy | None
    pci_db: PciDatabase
    vgpu_config: VgpuConfigFile | None = None
    # True when no ClusterPolicy is in the input and the default one stands in for it.
    policy_assumed: bool = False
    # The release that labelled the nodes (or the plausible ones); None: the newest.
    release: OperatorRelease | None = None
    # The GPUCluster its DRA-stack nodes are planned with (`check.stack`), and whether it is
    # the input's (False: none, or none usable, so the defaults stand in).
    gpu_cluster: ResolvedGpuCluster | None = None
    gpu_cluster_usable: bool = False
    # True when no ClusterPolicy is in the input and every GPU node shows another manager:
    # the report names no operator release then.
    operator_absent: bool = False
    findings: list[Finding] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)
    # Operand pods by node name (filled by `operands.index_operand_pods`).
    operand_pods: dict[str, list[OperandPod]] = field(default_factory=dict)
    # Namespaces where a pod known by name is one only the GPU Operator runs (filled there).
    # Replicas per GPU that a device plugin sharing config in the input gives a node
    # (`sharing.note_config_replicas`), for the count check where GFD does not know them.
    config_replicas: dict[str, int] = field(default_factory=dict)
    operator_spaces: frozenset[str] = frozenset()
    # What manages each node's GPUs (filled by `managers.node_management`).
    management: dict[str, Management] = field(default_factory=dict)
    _plans: dict[Any, NodePlan] = field(default_factory=dict)
    _advertised: dict[str, dict[str, int]] | None = None
    # resource -> (workload config, [(node, count it would advertise)]), see workloads.py
    candidates: dict[str, tuple[str | None, list[tuple[NodeInfo, int]]]] = field(
        default_factory=dict
    )

    def plan_for(
        self, view: NodeView, workload: str | None = None, policy: ResolvedPolicy | None = None
    ) -> NodePlan | None:
        """The plan for a node (optionally as if labelled with `workload`), cached by shape."""
        chosen = policy or self.policy
        if chosen is None:
            return None
        key = (view.plan_key, workload, id(chosen))
        cached = self._plans.get(key)
        if cached is not None:
            return cached
        labels = dict(view.planned_labels)
        if workload is not None:
            labels[WORKLOAD_LABEL] = workload
        annotations = {INVENTORY_ANNOTATION: view.inventory} if view.inventory is not None else {}
        facts = NodeFacts("", labels, annotations, view.planned_resources, view.planned_capacity)
        result = plan(chosen, facts, pci_db=self.pci_db, vgpu_config=self.vgpu_config)
        self._plans[key] = result
        return result

    @functools.cached_property
    def dra_published(self) -> frozenset[str]:
        """The nodes NVIDIA's DRA driver publishes ResourceSlices for."""
        driver = dra_catalog().driver
        return frozenset(
            text(item, "spec", "nodeName")
            for item in self.state.resource_slices
            if text(item, "spec", "driver") == driver
        ) - {""}

    def dra_plan_for(self, view: NodeView, gpu_cluster: ResolvedGpuCluster) -> NodePlan:
        """The plan for a node of the DRA stack (GPUCluster), cached by shape."""
        key = (view.plan_key, "dra", id(gpu_cluster))
        cached = self._plans.get(key)
        if cached is not None:
            return cached
        annotations = {INVENTORY_ANNOTATION: view.inventory} if view.inventory is not None else {}
        labels = dict(view.planned_labels)
        facts = NodeFacts("", labels, annotations, view.planned_resources, view.planned_capacity)
        result = plan_dra(gpu_cluster, facts, pci_db=self.pci_db, vgpu_config=self.vgpu_config)
        self._plans[key] = result
        return result

    def assumed_sandbox_policy(self, view: NodeView) -> ResolvedPolicy | None:
        """With no ClusterPolicy in the input, the policy a vm-* labelled node implies.

        A node labelled vm-passthrough or vm-vgpu was set up for sandbox workloads, so it is
        planned as if they were on (in kata mode when it carries the Kata plugin's deploy
        label or advertises Kata's resources), not as the container node the default
        policy would make it. None when the node is planned with the context's policy.
        """
        if not self.policy_assumed or self.policy is None:
            return None
        if view.labels.get(WORKLOAD_LABEL) not in SANDBOX_CONFIGS:
            return None
        sandbox = self.sandbox_policy()
        assert sandbox is not None
        kata_label = deploy_label("kata-sandbox-device-plugin")
        kata = kata_label in view.labels or any(kind_of(name) == "kata" for name in view.resources)
        if kata and sandbox.sandbox_mode != "kata":
            return dataclasses.replace(sandbox, sandbox_mode="kata")
        return sandbox

    def sandbox_policy(self) -> ResolvedPolicy | None:
        """The policy with sandbox workloads on (for "what would this node advertise as a VM node")."""
        if self.policy is None or self.policy.sandbox_enabled:
            return self.policy
        return dataclasses.replace(self.policy, sandbox_enabled=True)

    def advertised(self) -> dict[str, dict[str, int]]:
        """resource -> {node: count} for every NVIDIA resource some node advertises above 0."""
        if self._advertised is None:
            index: dict[str, dict[str, int]] = {}
            for info in self.nodes:
                for name, count in info.counts.items():
                    if count > 0:
                        index.setdefault(name, {})[info.name] = count
            self._advertised = index
        return self._advertised


def node_counts(view: NodeView) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A node's NVIDIA resource counts, and the quantities that cannot be read."""
    counts: dict[str, int] = {}
    bad: list[tuple[str, str]] = []
    for name, raw in view.resources.items():
        if not name.startswith(RESOURCE_PREFIX):
            continue
        if type(raw) is str and raw.isdigit() and raw.isascii() and len(raw) < 19:
            counts[name] = int(raw)
            continue
        count, problem = resource_count(raw)
        if count is None:
            bad.append((name, problem or "not a quantity"))
        else:
            counts[name] = count
    return counts, bad


__all__ = [
    "CheckContext",
    "FindingLog",
    "NodeInfo",
    "OperandPod",
    "kind_of",
    "node_counts",
    "resource_count",
]
