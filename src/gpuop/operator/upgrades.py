"""The driver upgrade step of a reconcile pass: upstream's upgrade controller, on the snapshot.

Why this module exists: the state machine itself is pure planning (`gpuop.planner.upgrade`);
this is the part that reads it from what the operator sees (driver pods by upstream's `app`
label and owner, validator pods, GPU pods, node cordon and readiness, ControllerRevisions)
and turns its steps into the pass's writes: node labels, annotations, cordon, evictions,
driver pod deletions and Events. It also keeps the enabled annotation on GPU nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuop.api.labels import UPGRADE_ENABLED_ANNOTATION, UPGRADE_STATE_LABEL
from gpuop.api.resources import GPU_POD_RESOURCE_PREFIXES
from gpuop.catalog import operand_table
from gpuop.operator.model import (
    DRIVER_APP,
    VALIDATOR_APP,
    Actions,
    NodeEvent,
    PodInfo,
    Snapshot,
)
from gpuop.planner.upgrade import (
    EVENT_REASON,
    DriverPod,
    UpgradeNode,
    UpgradePolicy,
    WorkloadPod,
    plan_upgrades,
)
from gpuop.policy import ResolvedPolicy


def _upgrade_policy(policy: ResolvedPolicy) -> UpgradePolicy | None:
    """The upgrade policy when automatic upgrades are on (upstream: a driver the operator
    deploys, `autoUpgrade`, and no sandbox workloads), else None."""
    driver = policy.policy.spec.driver
    raw = driver.upgradePolicy if driver is not None else None
    if raw is None or policy.sandbox_enabled:
        return None
    if not policy.operand_enabled(operand_table().operand("driver")):
        return None
    upgrade = UpgradePolicy.from_spec(raw.model_dump(exclude_none=True))
    return upgrade if upgrade.auto_upgrade else None


def merge_node_labels(actions: Actions, node: str, changes: Mapping[str, str | None]) -> None:
    if changes:
        actions.node_label_patches.setdefault(node, {}).update(changes)


def driver_upgrades(policy: ResolvedPolicy, snapshot: Snapshot, actions: Actions) -> None:
    """Upstream's upgrade controller: the enabled annotation on GPU nodes, and one step of the
    upgrade state machine for every node that runs a driver pod (`gpuop.planner.upgrade`).
    With upgrades off, the state labels go, as upstream removes them."""
    upgrade = _upgrade_policy(policy)
    actions.upgrades_enabled = upgrade is not None
    for name, node in snapshot.nodes.items():
        meta = node.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        labels = meta.get("labels") or {}
        wanted = "true" if upgrade is not None and actions.plans[name].gpu_node else None
        if annotations.get(UPGRADE_ENABLED_ANNOTATION) != wanted:
            actions.node_annotation_patches.setdefault(name, {})[UPGRADE_ENABLED_ANNOTATION] = (
                wanted
            )
        if upgrade is None and UPGRADE_STATE_LABEL in labels:
            merge_node_labels(actions, name, {UPGRADE_STATE_LABEL: None})
    if upgrade is None:
        return
    driver_daemonset = operand_table().operand("driver").daemonset

    def is_driver_daemonset(name: str) -> bool:
        return name == driver_daemonset or name.startswith(f"{driver_daemonset}-")

    drivers: dict[str, PodInfo] = {}
    validators: set[str] = set()
    owned: dict[str, int] = {}
    gpu_pods: dict[str, list[WorkloadPod]] = {}
    for pod in snapshot.pods:
        if not pod.node:
            continue
        if pod.app == DRIVER_APP and pod.namespace == snapshot.namespace:
            if pod.owner and is_driver_daemonset(pod.owner):
                owned[pod.owner] = owned.get(pod.owner, 0) + 1
            if pod.owner is None or is_driver_daemonset(pod.owner or ""):
                current = drivers.get(pod.node)
                # A node briefly runs two (the old one terminating): the live one counts.
                if current is None or (current.terminating and not pod.terminating):
                    drivers[pod.node] = pod
        elif pod.app == VALIDATOR_APP and pod.namespace == snapshot.namespace:
            if pod.running and pod.ready and not pod.terminating:
                validators.add(pod.node)
        elif (
            pod.operand is None
            and (pod.terminating or not pod.terminal)
            and any(r.startswith(GPU_POD_RESOURCE_PREFIXES) for r in pod.gpu_resources)
        ):
            gpu_pods.setdefault(pod.node, []).append(
                WorkloadPod(
                    namespace=pod.namespace,
                    name=pod.name,
                    controlled=pod.controlled,
                    empty_dir=pod.empty_dir,
                    finished=False,
                    terminating=pod.terminating,
                )
            )
    for name, ds in snapshot.daemonsets.items():
        if not is_driver_daemonset(name):
            continue
        desired = int(((ds.get("status") or {}).get("desiredNumberScheduled")) or 0)
        if desired != owned.get(name, 0):
            # Upstream's BuildState refuses to decide while a driver pod is missing.
            actions.upgrade_counts = None
            return
    nodes = []
    for node_name, pod in sorted(drivers.items()):
        if node_name not in snapshot.nodes:
            continue
        node = snapshot.nodes[node_name]
        meta = node.get("metadata") or {}
        nodes.append(
            UpgradeNode(
                name=node_name,
                labels=meta.get("labels") or {},
                annotations=meta.get("annotations") or {},
                unschedulable=bool((node.get("spec") or {}).get("unschedulable")),
                ready=_node_ready(node),
                driver_pod=DriverPod(
                    namespace=pod.namespace,
                    name=pod.name,
                    owner=pod.owner or None,
                    revision=pod.revision,
                    running=pod.running,
                    containers_ready=pod.containers_ready,
                    failing=pod.failing,
                    terminating=pod.terminating,
                    config_digest=pod.config_digest,
                ),
                gpu_pods=tuple(gpu_pods.get(node_name, ())),
                validator_ready=node_name in validators,
                node_pods=snapshot.node_pods.get(node_name),
            )
        )
    result = plan_upgrades(
        upgrade,
        nodes,
        snapshot.revisions,
        snapshot.template_digests,
        snapshot.now_seconds,
        snapshot.evicting_since,
    )
    actions.upgrade_counts = result.counts
    for node_name, step in result.steps.items():
        merge_node_labels(actions, node_name, step.labels)
        if step.annotations:
            actions.node_annotation_patches.setdefault(node_name, {}).update(step.annotations)
        if step.cordon is not None:
            actions.cordon[node_name] = step.cordon
        actions.evictions.extend(step.evict)
        if step.delete_driver_pod is not None:
            actions.delete_pods.append(step.delete_driver_pod)
        if step.state is not None:
            kind = "Warning" if step.state == "upgrade-failed" else "Normal"
            actions.events.append(NodeEvent(node_name, EVENT_REASON, step.message, kind))


def _node_ready(node: Mapping[str, Any]) -> bool:
    for item in (node.get("status") or {}).get("conditions") or []:
        if item.get("type") == "Ready":
            return bool(item.get("status") == "True")
    return True
