"""Operand readiness from pods and DaemonSets (GPU307, GPU308).

Operand pods are recognised by their owning DaemonSet (or their `app` label) being one of
the operand table's DaemonSets. A node's operands are those its plan says run; a pod of
another operand on the node is reported with the deploy-label finding that explains it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from gpuop.catalog import operand_table
from gpuop.check.context import CheckContext, OperandPod
from gpuop.check.plugin_signals import (
    SHARED_OPERAND_DAEMONSETS,
    known_by_name_only,
    label_match,
    operator_namespaces,
    pod_owner_name,
)
from gpuop.check.state import PodView
from gpuop.manifests.fields import mapping, sequence, text


@cache
def _daemonset_names() -> frozenset[str]:
    return frozenset(operand.daemonset for operand in operand_table().operands)


def operator_daemonset(daemonset: Mapping[str, Any]) -> str | None:
    """The operand a DaemonSet of the operator runs, or None for any other DaemonSet.

    Known by name, unless its pod template carries another manager's plugin labels: the
    standalone plugin's static manifest (AKS's guide uses it) names its DaemonSet
    `nvidia-device-plugin-daemonset` too, labelling its pods `name: nvidia-device-plugin-ds`
    where the operator's have `app: nvidia-device-plugin-daemonset`.
    """
    operand = operand_table().operand_for_daemonset(text(daemonset, "metadata", "name"))
    if operand is None or label_match(mapping(daemonset, "spec", "template", "metadata", "labels")):
        return None
    return operand


def owner_daemonset(pod: PodView, operator_spaces: frozenset[str] = frozenset()) -> str | None:
    """The operand DaemonSet a pod belongs to, or None (every pod of a dump comes here).

    Named as the operand table names it: the pods of `nvidia-driver-daemonset-<kernel>-<os>`
    (precompiled), `-<RHCOS version>` (OpenShift) and an NVIDIADriver's DaemonSets are the
    driver's. A pod labelled as another manager's plugin is that plugin's, whatever its
    owner is named. A pod known by its name alone (a `kubectl get pods -o wide` row) is an
    operand's by that name; for a name NVIDIA's static manifests share with the operator,
    only in `operator_spaces`, where the operator's own operands run.
    """
    names = _daemonset_names()
    if label_match(pod.labels) is not None:
        return None
    table = operand_table()
    for kind, name in pod.owners:
        if kind != "DaemonSet":
            continue
        if name in names:
            return name
        operand = table.operand_for_daemonset(name)
        if operand is not None:
            return table.operand(operand).daemonset
    app = pod.labels.get("app")
    if app in names:
        return app
    if not pod.owners and not pod.labels and not pod.images and _readiness_shown(pod.obj):
        # A row of `kubectl get pods -o wide`: known by name, with its readiness.
        owner = pod_owner_name(pod)
        operand = table.operand_for_daemonset(owner) if owner is not None else None
        shared = owner in SHARED_OPERAND_DAEMONSETS and pod.namespace not in operator_spaces
        if operand is not None and not shared:
            return table.operand(operand).daemonset
    return None


def _readiness_shown(pod: Mapping[str, Any]) -> bool:
    """Whether the input says if the pod is Ready (describe output lists pods by name alone,
    so nothing is known of their readiness there)."""
    return any(text(c, "type") == "Ready" for c in sequence(mapping(pod, "status"), "conditions"))


def index_operand_pods(ctx: CheckContext) -> None:
    index: dict[str, list[OperandPod]] = {}
    ctx.operator_spaces = operator_namespaces(
        pod for pod in ctx.state.pod_views if known_by_name_only(pod)
    )
    for pod in ctx.state.pod_views:
        if not pod.node:
            continue
        daemonset = owner_daemonset(pod, ctx.operator_spaces)
        if daemonset is not None:
            index.setdefault(pod.node, []).append(
                OperandPod(daemonset, pod.name, pod.namespace, pod.obj)
            )
    ctx.operand_pods = index


def operand_pods_on(ctx: CheckContext, node: str) -> list[OperandPod]:
    return ctx.operand_pods.get(node, [])


def pod_status(pod: Mapping[str, Any]) -> tuple[bool, str]:
    """(ready, a kubectl-like status such as `Init:CrashLoopBackOff`)."""
    status = mapping(pod, "status")
    phase = text(status, "phase")
    if phase == "Succeeded":
        return True, "Completed"
    init = [item for item in sequence(status, "initContainerStatuses") if isinstance(item, Mapping)]
    # As kubectl words it: the first init container not done says why, or its place.
    for index, item in enumerate(init):
        state = mapping(item, "state")
        terminated = state.get("terminated")
        if isinstance(terminated, Mapping):
            if terminated.get("exitCode") in (0, None):
                continue
            return False, f"Init:{text(terminated, 'reason') or 'Error'}"
        waiting = state.get("waiting")
        reason = text(waiting, "reason") if isinstance(waiting, Mapping) else ""
        if reason and reason != "PodInitializing":
            return False, f"Init:{reason}"
        if not state and item.get("ready") is True:
            continue
        return False, f"Init:{index}/{len(init)}"
    for item in sequence(status, "containerStatuses"):
        if not isinstance(item, Mapping):
            continue
        waiting = mapping(item, "state", "waiting")
        if waiting:
            return False, text(waiting, "reason") or "Waiting"
        terminated = mapping(item, "state", "terminated")
        if terminated:
            return False, text(terminated, "reason") or "Terminated"
    for condition in sequence(status, "conditions"):
        if text(condition, "type") == "Ready":
            ready = text(condition, "status") == "True"
            return ready, phase or ("Running" if ready else "NotReady")
    return False, phase or "Unknown"


def check_operands(ctx: CheckContext) -> None:
    if not ctx.state.pods and not ctx.state.daemonsets:
        ctx.skip("operands", "no Pods or DaemonSets in the input: operand readiness not checked")
        return
    table = operand_table()
    # Each operator DaemonSet of the input by the operand table's name for it.
    operator_daemonsets = [
        (ds, table.operand(name).daemonset)
        for ds in ctx.state.daemonsets
        if (name := operator_daemonset(ds)) is not None
    ]
    present = {daemonset for _, daemonset in operator_daemonsets}
    with_pods = {pod.daemonset for pods in ctx.operand_pods.values() for pod in pods}
    for info in ctx.nodes:
        plan = info.plan
        if plan is None or not plan.gpu_node:
            continue
        running = {op.daemonset: op for op in plan.operands if op.runs}
        pods = operand_pods_on(ctx, info.name)
        seen = set()
        for pod in pods:
            seen.add(pod.daemonset)
            if pod.daemonset not in running:
                continue
            ready, status = pod_status(pod.obj)
            if not ready:
                ctx.add(
                    "GPU307",
                    "Pod",
                    pod.name,
                    f"{running[pod.daemonset].name} on node {info.name} is not Ready: {status}",
                    f"kubectl describe pod -n {pod.namespace or 'NAMESPACE'} {pod.name}: the first"
                    " waiting (init) container says what it waits for",
                    namespace=pod.namespace,
                    node=info.name,
                )
        for daemonset, operand in running.items():
            # Only where the input has this DaemonSet's pods elsewhere: a dump without them
            # says nothing about this node.
            if daemonset in seen or daemonset not in present or daemonset not in with_pods:
                continue
            if info.view.labels.get(operand.deploy_label) != "true":
                continue
            ctx.add(
                "GPU307",
                "Node",
                info.name,
                f"{operand.deploy_label}=true, but DaemonSet {daemonset} has no pod on the node",
                f"kubectl describe daemonset {daemonset}: check its nodeSelector, tolerations"
                f" and the taints of {info.name}",
            )
    _check_pods_of_nodes_not_shown(ctx)
    for ds, daemonset in operator_daemonsets:
        if daemonset in with_pods:
            continue
        name = text(ds, "metadata", "name")
        ds_status = mapping(ds, "status")
        desired = ds_status.get("desiredNumberScheduled")
        unavailable = ds_status.get("numberUnavailable")
        ready_count = ds_status.get("numberReady")
        if not isinstance(unavailable, int) or isinstance(unavailable, bool) or unavailable <= 0:
            continue
        shown = f"{unavailable} pod{'s' if unavailable != 1 else ''} unavailable"
        if isinstance(desired, int) and isinstance(ready_count, int):
            shown += f" ({ready_count} of {desired} ready)"
        namespace = text(ds, "metadata", "namespace")
        ctx.add(
            "GPU308",
            "DaemonSet",
            name,
            f"{name}: {shown}",
            f"kubectl get pods -n {namespace or 'NAMESPACE'} -o wide | grep {name}; add the pods"
            " to the input to have each node checked",
            namespace=namespace,
        )


def _check_pods_of_nodes_not_shown(ctx: CheckContext) -> None:
    """GPU307 for an operand pod that is not Ready on a node the input does not hold (a
    report posting `kubectl describe pod` of the failing operand alone): its DaemonSet
    placed it there, so it is meant to run."""
    shown = {info.name for info in ctx.nodes}
    table = operand_table()
    for node, pods in ctx.operand_pods.items():
        if node in shown:
            continue
        for pod in pods:
            ready, status = pod_status(pod.obj)
            operand = table.operand_for_daemonset(pod.daemonset)
            if ready or operand is None:
                continue
            ctx.add(
                "GPU307",
                "Pod",
                pod.name,
                f"{operand} on node {node} (not in the input) is not Ready: {status}",
                f"kubectl describe pod -n {pod.namespace or 'NAMESPACE'} {pod.name}: the first"
                " waiting (init) container says what it waits for",
                namespace=pod.namespace,
                node=node,
            )


__all__ = [
    "check_operands",
    "index_operand_pods",
    "operand_pods_on",
    "operator_daemonset",
    "owner_daemonset",
    "pod_status",
]
