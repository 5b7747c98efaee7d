"""Workloads that wait for a GPU resource (GPU601) and capacity idle in the wrong mode (GPU602).

A pod's request is what the scheduler sees (per resource, the larger of the summed app
containers and the largest init container; limits count as requests for extended
resources). A VMI asks for one device per `gpus[]`/`hostDevices[]` entry, as
virt-controller renders its launcher pod. Which workload config would advertise a resource,
and which nodes would, is asked of `plan()` with the node's workload label changed.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuop.api.labels import WORKLOAD_LABEL
from gpuop.api.resources import KIND_CONFIG, normalised
from gpuop.api.wording import listed
from gpuop.check.context import CheckContext, NodeInfo, kind_of
from gpuop.check.state import PodView
from gpuop.manifests.fields import mapping, sequence, text

_FINAL_PHASES = ("Succeeded", "Failed")
_VMI_WAITING = ("", "Pending", "Scheduling")


@dataclass(frozen=True)
class Workload:
    """A pod or VMI and the NVIDIA resources it asks for."""

    kind: str
    name: str
    namespace: str
    node: str
    phase: str
    requests: dict[str, int]
    obj: Mapping[str, Any]

    @property
    def waiting(self) -> bool:
        if self.kind == "Pod":
            return not self.node and self.phase in ("", "Pending")
        return self.phase in _VMI_WAITING

    @property
    def active(self) -> bool:
        return self.phase not in _FINAL_PHASES


def vmi_devices(vmi: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(section, deviceName) per `gpus[]` and `hostDevices[]` entry that names a device."""
    devices: list[tuple[str, str]] = []
    for section in ("gpus", "hostDevices"):
        for entry in sequence(vmi, "spec", "domain", "devices", section):
            name = text(entry, "deviceName")
            if name:
                devices.append((section, name))
    return devices


def _launcher_owner(pod: PodView) -> str | None:
    for kind, name in pod.owners:
        if kind == "VirtualMachineInstance":
            return name or None
    return None


def collect_workloads(ctx: CheckContext) -> list[Workload]:
    vmis = {
        (text(vmi, "metadata", "namespace"), text(vmi, "metadata", "name"))
        for vmi in ctx.state.vmis
    }
    launched: set[tuple[str, str]] = set()
    workloads: list[Workload] = []
    for pod in ctx.state.pod_views:
        requests = pod.requests
        if not requests:
            continue
        owner = _launcher_owner(pod)
        if owner is not None:
            launched.add((pod.namespace, owner))
            if (pod.namespace, owner) in vmis and not pod.node:
                continue  # reported through its VMI
        workloads.append(
            Workload("Pod", pod.name, pod.namespace, pod.node, pod.phase, requests, pod.obj)
        )
    for vmi in ctx.state.vmis:
        devices: dict[str, int] = {}
        for _, device in vmi_devices(vmi):
            devices[device] = devices.get(device, 0) + 1
        if not devices:
            continue
        namespace = text(vmi, "metadata", "namespace")
        name = text(vmi, "metadata", "name")
        node = text(vmi, "status", "nodeName")
        phase = text(vmi, "status", "phase")
        if (namespace, name) in launched and phase not in _VMI_WAITING:
            continue  # its launcher pod already counts its devices
        workloads.append(
            Workload("VirtualMachineInstance", name, namespace, node, phase, devices, vmi)
        )
    return workloads


def latest_events(ctx: CheckContext) -> dict[tuple[str, str, str], str]:
    """(kind, namespace, name) -> the message of the latest event about it."""
    latest: dict[tuple[str, str, str], tuple[str, str]] = {}
    for event in ctx.state.events:
        regarding = mapping(event, "involvedObject") or mapping(event, "regarding")
        key = (text(regarding, "kind"), text(regarding, "namespace"), text(regarding, "name"))
        message = text(event, "message") or text(event, "note")
        if not key[2] or not message:
            continue
        stamp = (
            text(event, "lastTimestamp")
            or text(event, "eventTime")
            or text(event, "firstTimestamp")
            or text(event, "metadata", "creationTimestamp")
        )
        if key not in latest or stamp >= latest[key][0]:
            latest[key] = (stamp, message)
    return {key: message for key, (_, message) in latest.items()}


def candidates_for(
    ctx: CheckContext, resource: str
) -> tuple[str | None, list[tuple[NodeInfo, int]]]:
    """The workload config that advertises `resource`, and GPU nodes that would in it."""
    cached = ctx.candidates.get(resource)
    if cached is not None:
        return cached
    result = _candidates(ctx, resource)
    ctx.candidates[resource] = result
    return result


def _candidates(ctx: CheckContext, resource: str) -> tuple[str | None, list[tuple[NodeInfo, int]]]:
    config = KIND_CONFIG.get(kind_of(resource))
    if config is None:
        return None, []
    policy = ctx.policy if config == "container" else ctx.sandbox_policy()
    found: list[tuple[NodeInfo, int]] = []
    for info in ctx.nodes:
        if info.plan is None or not info.plan.gpu_node or info.plan.workload.config == config:
            continue
        alternative = ctx.plan_for(info.view, workload=config, policy=policy)
        count = alternative.advertises.get(resource, 0) if alternative else 0
        if count > 0:
            found.append((info, count))
    return config, found


def _near_names(resource: str, advertised: Mapping[str, Any]) -> list[str]:
    same = [name for name in advertised if normalised(name) == normalised(resource)]
    if same:
        return sorted(same)
    return difflib.get_close_matches(resource, list(advertised), n=2, cutoff=0.8)


def check_workloads(ctx: CheckContext) -> None:
    if not ctx.state.pods and not ctx.state.vmis:
        ctx.skip(
            "workloads",
            "no Pods or VirtualMachineInstances in the input: waiting workloads not checked",
        )
        return
    if not any(info.view.resources_known for info in ctx.nodes):
        ctx.skip(
            "workloads",
            "no Node in the input shows what it advertises: waiting workloads not compared"
            " with the nodes' resources",
        )
        return
    workloads = collect_workloads(ctx)
    advertised = ctx.advertised()
    events = latest_events(ctx)
    nodes_total = len(ctx.nodes)
    demand: dict[str, list[Workload]] = {}
    for workload in workloads:
        if not workload.waiting:
            continue
        for resource, count in sorted(workload.requests.items()):
            demand.setdefault(resource, []).append(workload)
            if resource in advertised:
                continue
            _report_unadvertised(ctx, workload, resource, count, advertised, events, nodes_total)
    _check_stranded(ctx, workloads, demand, advertised)


def _report_unadvertised(
    ctx: CheckContext,
    workload: Workload,
    resource: str,
    count: int,
    advertised: Mapping[str, Any],
    events: Mapping[tuple[str, str, str], str],
    nodes_total: int,
) -> None:
    config, nodes = candidates_for(ctx, resource)
    what = "pod" if workload.kind == "Pod" else "VMI"
    message = (
        f"{what} requests {resource}: {count}, which no node advertises; it stays Pending"
        f" (0/{nodes_total} nodes are available: Insufficient {resource})"
    )
    event = events.get((workload.kind, workload.namespace, workload.name))
    if event:
        message += f"; last event: {event}"
    hints: list[str] = []
    near = _near_names(resource, advertised)
    if near:
        hints.append(f"nodes advertise {', '.join(near)}: request that exact name")
    if config is None:
        hints.append(f"no workload config advertises {resource}")
    else:
        hints.append(f"{resource} is advertised by {config} nodes")
        if ctx.policy is not None and config != "container" and not ctx.policy.sandbox_enabled:
            hints.append(
                "no ClusterPolicy in the input: sandbox workloads must be on"
                if ctx.policy_assumed
                else "sandbox workloads are off: set spec.sandboxWorkloads.enabled: true first"
            )
        if nodes:
            shown = listed(
                [
                    f"{info.name} ({info.plan.workload.config})" if info.plan else info.name
                    for info, _ in nodes[:3]
                ],
                3,
                len(nodes),
            )
            hints.append(
                f"as {config} nodes {shown} would advertise it:"
                f" kubectl label node {nodes[0][0].name} {WORKLOAD_LABEL}={config} --overwrite"
            )
        elif not near:
            hints.append(f"no node in the input has GPUs that would advertise {resource}")
    ctx.add(
        "GPU601",
        workload.kind,
        workload.name,
        message,
        "; ".join(hints),
        namespace=workload.namespace,
    )


def _check_stranded(
    ctx: CheckContext,
    workloads: list[Workload],
    demand: Mapping[str, list[Workload]],
    advertised: Mapping[str, Mapping[str, int]],
) -> None:
    if not demand:
        return
    if not ctx.state.pods:
        ctx.skip("stranded-capacity", "no Pods in the input: GPU usage on nodes is unknown")
        return
    used: dict[str, dict[str, int]] = {}
    for workload in workloads:
        if workload.node and workload.active and not workload.waiting:
            per_node = used.setdefault(workload.node, {})
            for resource, count in workload.requests.items():
                per_node[resource] = per_node.get(resource, 0) + count
    reported: set[str] = set()
    for resource, waiting in sorted(demand.items()):
        wanted = sum(w.requests.get(resource, 0) for w in waiting)
        free = sum(
            count - used.get(node, {}).get(resource, 0)
            for node, count in advertised.get(resource, {}).items()
        )
        if wanted <= max(free, 0):
            continue
        config, nodes = candidates_for(ctx, resource)
        for info, would in nodes:
            if info.name in reported:
                continue
            own = info.positive()
            if not own or any(used.get(info.name, {}).get(r, 0) for r in own):
                continue
            reported.add(info.name)
            shown = ", ".join(f"{r}: {n}" for r, n in sorted(own.items()))
            assert info.plan is not None
            waits = "workload waits" if len(waiting) == 1 else f"{len(waiting)} workloads wait"
            first = ""
            if config != "container" and ctx.policy is not None and not ctx.policy.sandbox_enabled:
                first = "set spec.sandboxWorkloads.enabled: true in the ClusterPolicy, then "
            ctx.add(
                "GPU602",
                "Node",
                info.name,
                f"idle {info.plan.workload.config} node: {shown} unused, while {'a ' if len(waiting) == 1 else ''}{waits} for {resource},"
                f" which it would advertise ({would}) as a {config} node",
                f"{first}kubectl label node {info.name} {WORKLOAD_LABEL}={config} --overwrite",
            )


__all__ = [
    "Workload",
    "candidates_for",
    "check_workloads",
    "collect_workloads",
    "latest_events",
    "vmi_devices",
]
