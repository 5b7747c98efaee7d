"""The VER family's engine: the cluster against the version matrix (`gpuop versions check`).

Pure: it reads Kubernetes objects already loaded and returns a `VersionReport` built on the
checker's `Report`, so text, JSON and SARIF come out in `gpuop check`'s format. The release
in use is `gpuop.check.release`'s answer (`--operator-release`, what the operator shows of
itself, then the ClusterPolicy's operand versions); every range is the matrix's (`gpuop.catalog.versions`), never a rule
of its own. Facts the input does not give, or the matrix does not know, become "unknown"
findings (VER001, VER004) rather than guesses. The rules are in `release_rules` (VER0xx),
`platform` (VER1xx) and `driver` (VER2xx, VER3xx).

    report = check_versions(objects, today=date.today())
    report.findings, report.exit_code, report.to_dict()
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import date
from typing import Any

from gpuop.api.labels import GPU_COUNT_LABEL
from gpuop.catalog import operand_table
from gpuop.catalog.versions import VersionMatrix, version_matrix
from gpuop.check.model import Finding, NodeSummary, PolicyInfo, Report, ordered_findings
from gpuop.check.policy import choose_policy
from gpuop.check.release import (
    Detection,
    OperatorRelease,
    describe_releases,
    line_key,
    release_in_use,
)
from gpuop.check.release import detect_release as detect_operator_release
from gpuop.check.state import ClusterState
from gpuop.check.versions.context import NodeVersions, VersionContext, read_nodes
from gpuop.check.versions.driver import check_drift, check_node_driver
from gpuop.check.versions.parse import node_os
from gpuop.check.versions.platform import check_kubernetes, check_os, check_runtime
from gpuop.check.versions.release_rules import older_release_finding, release_findings
from gpuop.check.versions.report import VersionReport
from gpuop.planner import decide_workload
from gpuop.policy import ResolvedPolicy, default_policy

CLUSTER_KIND = "Cluster"
CONTROL_PLANE = "control-plane"
# Checker findings about the input that matter here too (the policy used, unusable items).
_KEPT_POLICY_CODES = frozenset({"GPU002", "GPU003", "GPU005"})


def _check_node(ctx: VersionContext, node: NodeVersions, cluster_version: bool) -> None:
    """Kubernetes, OS, runtime (against the release) and driver/CUDA of one GPU node."""
    os = node_os(node.labels, node.os_image)
    if ctx.detection.known:
        if not node.has_node_info and not cluster_version:
            ctx.add(
                "VER004",
                "Node",
                node.name,
                "the node has no status.nodeInfo: its Kubernetes version, OS image and"
                " container runtime are unknown",
                "dump nodes with their status (`kubectl get nodes -o json`)",
            )
        else:
            if node.kubelet:
                check_kubernetes(ctx, "Node", node.name, node.kubelet, "kubelet", os)
            if node.has_node_info or os is not None:
                check_os(ctx, node, os)
            if node.has_node_info:
                check_runtime(ctx, node)
    check_node_driver(ctx, node)


def _summary(node: NodeVersions, policy: ResolvedPolicy) -> NodeSummary:
    gpu = node.gpu
    workload = decide_workload(policy, node.labels, gpu).config
    count_text = node.labels.get(GPU_COUNT_LABEL, "")
    count = int(count_text) if count_text.isdigit() and len(count_text) < 4 else None
    return NodeSummary(node.name, gpu, workload, count, node.product)


def _older_than_matrix(
    table: VersionMatrix, observed: OperatorRelease | None
) -> OperatorRelease | None:
    """The release NVIDIA's operator shows of itself when it is a 1.x one, older than the
    matrix (`gpuop check` knows how those labelled nodes; their support has ended)."""
    if observed is None or not observed.from_operator or observed.version is None:
        return None
    first = table.releases[0].line
    if observed.line is None or line_key(observed.line) >= line_key(first):
        return None
    return observed


def _unknown_reason(
    table: VersionMatrix,
    detection: Detection,
    operator_release: str | None,
    has_policy: bool,
    state: ClusterState,
    older: OperatorRelease | None,
) -> str | None:
    """Why the release is unknown (VER001's message), or None to let VER001 say it generally."""
    if operator_release is not None and not detection.known:
        return (
            f"operator release {operator_release} is not in gpuop's version matrix"
            f" ({describe_releases(table, table.release_names)}, as of {table.as_of})"
        )
    if older is not None:
        return (
            f"operator release v{older.version} (from {older.source}) is older than every"
            f" release in gpuop's version matrix ({describe_releases(table, table.release_names)})"
        )
    if not has_policy:
        return (
            "no live ClusterPolicy in the input, so its operand versions cannot name the release"
            if state.cluster_policies
            else "no ClusterPolicy in the input, so its operand versions cannot name the release"
        )
    if detection.unknown and not detection.pinned:
        return (
            "no operand version pinned in the ClusterPolicy is the default of a release in"
            " gpuop's matrix"
        )
    return None


def _check_nodes(ctx: VersionContext, nodes: list[NodeVersions], cluster_version: bool) -> None:
    gpu_nodes = [node for node in nodes if node.gpu]
    if not nodes:
        ctx.skip("nodes", "no Nodes in the input")
    elif not gpu_nodes:
        ctx.skip("nodes", "no GPU nodes (no NFD label marks an NVIDIA GPU)")
    # Nodes of one shape get the same findings: check each shape once (large clusters are
    # made of a few node images).
    shapes: dict[tuple[Any, ...], list[Finding]] = {}
    for node in gpu_nodes:
        seen = shapes.get(node.shape)
        if seen is None:
            before = len(ctx.findings)
            _check_node(ctx, node, cluster_version)
            shapes[node.shape] = ctx.findings[before:]
            continue
        for finding in seen:
            ctx.findings.append(dataclasses.replace(finding, name=node.name, node=node.name))
    check_drift(ctx, gpu_nodes)


def check_versions(
    objects: Iterable[Any],
    *,
    today: date,
    policy: ResolvedPolicy | None = None,
    policy_source: str = "--policy",
    operator_release: str | None = None,
    kubernetes_version: str | None = None,
    kubernetes_source: str = "--kubernetes-version",
    matrix: VersionMatrix | None = None,
) -> VersionReport:
    """Check nodes and the ClusterPolicy in `objects` against the version matrix.

    `operator_release` and `kubernetes_version` must already be well-formed (the CLI checks
    them); an operator release missing from the matrix is reported (VER001), not raised.
    """
    table = matrix or version_matrix()
    items = list(objects)
    state = ClusterState.from_objects(items)
    choice = choose_policy(state.cluster_policies, policy, policy_source)
    # A ClusterPolicy being deleted is none: the operator reconciles nothing then.
    has_policy = policy is not None or not choice.assumed
    used = choice.policy if has_policy else None
    observed = None if operator_release is not None else detect_operator_release(state)
    detection = release_in_use(table, used, operator_release, observed)
    planning_policy = choice.policy or default_policy()
    driver_operand = operand_table().operand("driver")
    ctx = VersionContext(
        matrix=table,
        today=today,
        detection=detection,
        policy=used,
        policy_name=(used.name or "(unnamed)") if used is not None else "(none)",
        driver_in_container=planning_policy.operand_enabled(driver_operand),
    )
    ctx.skips.extend(choice.skips)
    ctx.findings.extend(f for f in choice.findings if f.code in _KEPT_POLICY_CODES)
    ctx.add_unusable(state.ignored)
    older = _older_than_matrix(table, observed)
    release_findings(
        ctx, _unknown_reason(table, detection, operator_release, has_policy, state, older)
    )
    if older is not None:
        older_release_finding(ctx, f"v{older.version}")
    if kubernetes_version is not None and detection.known:
        check_kubernetes(
            ctx, CLUSTER_KIND, CONTROL_PLANE, kubernetes_version, kubernetes_source, None
        )
    nodes = read_nodes(items)
    _check_nodes(ctx, nodes, kubernetes_version is not None)

    info = choice.info if has_policy else PolicyInfo("none", None, None, None)
    summaries = tuple(_summary(node, planning_policy) for node in nodes)
    report = Report(
        ordered_findings(ctx.findings), tuple(ctx.skips), info, dict(state.counts), summaries
    )
    return VersionReport(
        report,
        detection,
        table,
        today,
        kubernetes_version,
        kubernetes_source if kubernetes_version is not None else None,
    )


__all__ = ["CLUSTER_KIND", "CONTROL_PLANE", "check_versions"]
