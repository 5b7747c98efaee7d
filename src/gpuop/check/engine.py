"""Run every check over a list of objects and build the report.

Each group of rules runs on its own: an unexpected failure in one (a gpuop bug) becomes a
GPU000 finding on the object being checked, and the other checks still run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from gpuop.api.labels import DEFAULT_VGPU_CONFIGMAP
from gpuop.api.wording import listed
from gpuop.check.claims import check_claims
from gpuop.check.context import CheckContext, NodeInfo, node_counts
from gpuop.check.drift import check_driver_drift
from gpuop.check.kubevirt import check_kubevirt
from gpuop.check.managers import node_management
from gpuop.check.model import (
    InventoryEvidence,
    NodeSummary,
    PolicyInfo,
    Report,
    ordered_findings,
)
from gpuop.check.nodes import check_nodes
from gpuop.check.operands import check_operands, index_operand_pods
from gpuop.check.policy import choose_policy
from gpuop.check.release import OperatorRelease, detect_release
from gpuop.check.stack import choose_gpu_cluster, default_gpu_cluster, runs_dra_stack
from gpuop.check.state import ClusterState
from gpuop.check.workloads import check_workloads
from gpuop.manifests import ManifestError, load_yaml_documents
from gpuop.manifests.fields import mapping, text
from gpuop.naming import PciDatabase
from gpuop.planner import NodePlan
from gpuop.planner.machine import gpu_hardware
from gpuop.policy import ResolvedPolicy
from gpuop.vgpu import VgpuConfigError, VgpuConfigFile, parse_vgpu_config


def _internal(ctx: CheckContext, kind: str, name: str, what: str, exc: BaseException) -> None:
    ctx.add(
        "GPU000",
        kind,
        name,
        f"{what} failed: {type(exc).__name__}: {str(exc)[:300]}",
        "this is a gpuop bug; report it with the object that triggered it",
    )


def _guard(ctx: CheckContext, what: str, check: Callable[[CheckContext], None]) -> None:
    try:
        check(ctx)
    except Exception as exc:  # a bug in one rule group must not hide the others
        _internal(ctx, "Check", what, f"the {what} checks", exc)


def _vgpu_config(ctx: CheckContext, explicit: VgpuConfigFile | None) -> VgpuConfigFile | None:
    if explicit is not None or ctx.policy is None:
        return explicit
    wanted = ctx.policy.vgpu_config_map
    if not wanted:
        return None
    for configmap in ctx.state.configmaps:
        if text(configmap, "metadata", "name") != wanted:
            continue
        data = mapping(configmap, "data")
        for key, value in sorted(data.items()):
            if not isinstance(value, str):
                continue
            try:
                documents = load_yaml_documents(value, f"ConfigMap {wanted} key {key}")
                return parse_vgpu_config(documents[0] if documents else None)
            except (VgpuConfigError, ManifestError) as exc:
                ctx.skip(
                    "vgpu-config",
                    f"ConfigMap {wanted} key {key} is not a usable vGPU config ({str(exc)[:200]}):"
                    " vGPU counts are checked against gpuop's default config",
                )
                return None
    if wanted != DEFAULT_VGPU_CONFIGMAP:  # gpuop's default config is built to match it
        ctx.skip(
            "vgpu-config",
            f"the ClusterPolicy's vGPU config ConfigMap {wanted} is not in the input:"
            " vGPU counts are checked against gpuop's default config",
        )
    return None


def _say_labels_only(ctx: CheckContext) -> None:
    """A skip for the nodes whose input shows no capacity or allocatable."""
    bare = [info.name for info in ctx.nodes if not info.view.resources_known]
    if bare:
        ctx.skip(
            "advertised resources",
            f"{listed(sorted(bare), 3)}: no status.capacity or allocatable in the input (as"
            " `kubectl get nodes --show-labels` shows nodes): only labels checked there",
        )


def _say_sandbox_assumed(ctx: CheckContext) -> None:
    """GPU001 names the vm-* nodes checked as if sandbox workloads were on."""
    assumed = sorted(info.name for info in ctx.nodes if info.policy is not None)
    if not assumed:
        return
    shown = listed(assumed, 3)
    for position, finding in enumerate(ctx.findings):
        if finding.code == "GPU001":
            ctx.findings[position] = dataclasses.replace(
                finding,
                message=f"{finding.message}; nodes labelled vm-passthrough or vm-vgpu ({shown})"
                " are checked as if sandbox workloads were on, their findings at most warnings",
            )


def _say_dra_stack(ctx: CheckContext) -> None:
    """GPU001 names the nodes checked as the GPU Operator's DRA stack (GPUCluster)."""
    nodes = sorted(info.name for info in ctx.nodes if info.on_dra_stack)
    if not nodes:
        return
    source = "the input's GPUCluster" if ctx.gpu_cluster_usable else "the GPUCluster's defaults"
    for position, finding in enumerate(ctx.findings):
        if finding.code == "GPU001":
            ctx.findings[position] = dataclasses.replace(
                finding,
                message=f"{finding.message}; nodes of the DRA stack ({listed(nodes, 3)}) are"
                f" checked against {source}",
            )


def check_state(
    state: ClusterState,
    *,
    policy: ResolvedPolicy | None = None,
    policy_source: str = "--policy",
    pci_db: PciDatabase | None = None,
    vgpu_config: VgpuConfigFile | None = None,
    operator_release: OperatorRelease | None = None,
) -> Report:
    """Every check over a `ClusterState`; `policy` overrides the input's ClusterPolicy.

    `operator_release` (`--operator-version`) overrides the release read from the input.
    """
    choice = choose_policy(state.cluster_policies, policy, policy_source)
    ctx = CheckContext(state, choice.policy, pci_db or PciDatabase.builtin())
    ctx.policy_assumed = choice.assumed
    ctx.release = detect_release(state, operator_release)
    ctx.findings.extend(choice.findings)
    ctx.skips.extend(choice.skips)
    ctx.add_unusable(state.ignored)
    ctx.vgpu_config = _vgpu_config(ctx, vgpu_config)
    gpu_cluster = choose_gpu_cluster(state.gpu_clusters)
    ctx.findings.extend(gpu_cluster.findings)
    ctx.gpu_cluster = gpu_cluster.gpu_cluster
    ctx.gpu_cluster_usable = gpu_cluster.gpu_cluster is not None
    cluster_policy = not choice.assumed
    if not state.nodes:
        ctx.skip("nodes", "no Nodes in the input")
    for view in state.nodes:
        counts, bad = node_counts(view)
        node_policy = ctx.assumed_sandbox_policy(view)
        dra_stack = runs_dra_stack(
            view.labels, cluster_policy=cluster_policy, gpu_cluster=gpu_cluster.in_input
        )
        node_plan: NodePlan | None
        try:
            if dra_stack:
                if ctx.gpu_cluster is None:
                    ctx.gpu_cluster = default_gpu_cluster()
                node_plan = ctx.dra_plan_for(view, ctx.gpu_cluster)
            else:
                node_plan = ctx.plan_for(view, policy=node_policy)
        except Exception as exc:  # the planner promises not to raise; say so if it does
            _internal(ctx, "Node", view.name, "planning the node", exc)
            node_plan = None
        ctx.nodes.append(NodeInfo(view, node_plan, counts, bad, node_policy))
    _say_sandbox_assumed(ctx)
    _say_dra_stack(ctx)
    _say_labels_only(ctx)
    index_operand_pods(ctx)
    ctx.management = node_management(ctx)
    _without_the_operator(ctx, choice.assumed and policy is None)
    _guard(ctx, "node", check_nodes)
    _guard(ctx, "operand", check_operands)
    _guard(ctx, "kubevirt", check_kubevirt)
    _guard(ctx, "workload", check_workloads)
    _guard(ctx, "driver drift", check_driver_drift)
    _guard(ctx, "DRA", check_claims)
    return _report(ctx, choice.info)


def _without_the_operator(ctx: CheckContext, policy_assumed: bool) -> None:
    """Where no ClusterPolicy is in the input and every GPU node shows another manager
    (a managed cloud's stack, a standalone plugin), say that the GPU Operator's contract was
    not applied, rather than that a default policy was, and name no operator release."""
    managed = [m for m in ctx.management.values() if m.managers]
    if not policy_assumed or not managed or any(m.operator for m in managed):
        return
    names = sorted({m.primary for m in managed if m.primary})
    for index, finding in enumerate(ctx.findings):
        if finding.code == "GPU001" and finding.name == "(default)":
            ctx.findings[index] = dataclasses.replace(
                finding,
                message="no ClusterPolicy in the input, and no node shows NVIDIA's GPU Operator"
                f" (its GPUs are managed by {listed(names, 3)}): the operator's rules are not"
                " applied to any node",
                hint="nothing to do, unless the cluster runs NVIDIA's GPU Operator: then add"
                " its ClusterPolicy to the input or pass one with --policy FILE",
            )
    ctx.operator_absent = True


def run_checks(
    objects: Iterable[Any],
    *,
    policy: ResolvedPolicy | None = None,
    policy_source: str = "--policy",
    pci_db: PciDatabase | None = None,
    vgpu_config: VgpuConfigFile | None = None,
    operator_release: OperatorRelease | None = None,
) -> Report:
    """Check a list of Kubernetes objects (as from `gpuop.manifests.load_objects`)."""
    return check_state(
        ClusterState.from_objects(objects),
        policy=policy,
        policy_source=policy_source,
        pci_db=pci_db,
        vgpu_config=vgpu_config,
        operator_release=operator_release,
    )


def _report(ctx: CheckContext, info: PolicyInfo | None) -> Report:
    findings = ordered_findings(ctx.findings)
    nodes = []
    # Plans are shared by nodes of one shape: describe each plan once.
    described: dict[int, tuple[Any, ...]] = {}
    for node in ctx.nodes:
        plan = node.plan
        managed = ctx.management.get(node.name)
        management = managed.to_dict() if managed is not None else None
        if plan is None:
            nodes.append(NodeSummary(node.name, False, None, None, None, management=management))
            continue
        facts = described.get(id(plan))
        if facts is None:
            inventory = plan.inventory
            models = sorted({card.describe() for card in inventory.cards})
            facts = (
                plan.gpu_node,
                plan.workload.config,
                inventory.count if inventory.count_known else None,
                "/".join(models) or None,
                inventory.source if plan.gpu_node else None,
                tuple(
                    InventoryEvidence(item.source, item.signal, item.implies())
                    for item in inventory.evidence
                ),
            )
            described[id(plan)] = facts
        summary = NodeSummary(node.name, *facts)._replace(management=management)
        if not summary.gpu_node and (node.counts or gpu_hardware(node.view.labels)):
            # No label the planner reads marks its GPUs (a managed cloud's node, say), yet
            # a plugin registered NVIDIA devices, or what provisioned it says its machine
            # has GPUs: it is a GPU node all the same, even where it registered none usable
            # (0 devices, GPU211) or none at all (GPU214).
            summary = summary._replace(gpu_node=True)
        nodes.append(summary)
    release = None if ctx.operator_absent else ctx.release
    if info is not None and any(node.on_dra_stack for node in ctx.nodes):
        gpu_cluster = ctx.gpu_cluster.name if ctx.gpu_cluster_usable and ctx.gpu_cluster else None
        info = dataclasses.replace(info, gpu_cluster=gpu_cluster or "default")
    return Report(findings, tuple(ctx.skips), info, dict(ctx.state.counts), tuple(nodes), release)


__all__ = ["check_state", "run_checks"]
