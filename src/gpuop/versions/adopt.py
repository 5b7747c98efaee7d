"""What taking over a running cluster would change: gpuop's rendering against what runs.

Why this module exists: before gpuop replaces NVIDIA's operator (or an older gpuop), a
person needs to see, without writing anything, whether the switch restarts a pod. A
DaemonSet rolls exactly when its pod template changes, so this compares, per operand
DaemonSet, the template gpuop renders for the active ClusterPolicy with the one the cluster
runs (both without the fields the API server fills in), and names each field that differs.
A rolling driver DaemonSet goes through the driver upgrade, which drains the GPU pods of
each node it reaches; the nodes whose labels gpuop would change are listed with their
changes. The same comparison answers a move between gpuop releases.

Pure: `gpuop adopt` reads the cluster (or a dump) and prints what this returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gpuop.api.labels import APP_LABEL, DEFAULT_VGPU_CONFIGMAP, MANAGED_BY_LABEL
from gpuop.api.policies import select_active
from gpuop.catalog import operand_table
from gpuop.check.release import detect_release
from gpuop.check.state import ClusterState
from gpuop.naming import is_gpu_resource
from gpuop.planner import plan
from gpuop.policy import PolicyError, parse_cluster_policy
from gpuop.render import kept_on_openshift, named_configmap_keys, render_all
from gpuop.render.defaults import strip_api_defaults
from gpuop.render.nodes import on_openshift

# `kept`: a DaemonSet gpuop leaves as it is and does not render (`render.kept_on_openshift`).
Action = Literal["unchanged", "roll", "create", "delete", "kept"]
# How many differing fields a DaemonSet lists before it says how many more there are.
MAX_DIFFERENCES = 20


@dataclass(frozen=True)
class DaemonSetChange:
    """One operand DaemonSet: unchanged, rolled (its pods restart), made, deleted, or kept
    as it is without being rendered."""

    name: str
    action: Action
    differences: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "action": self.action,
            "differences": list(self.differences),
            "nodes": list(self.nodes),
        }


@dataclass(frozen=True)
class NodeChange:
    """A node whose labels would change, or whose GPU pods a driver rollout would drain."""

    node: str
    labels: Mapping[str, str | None]
    gpu_pods: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "labels": dict(self.labels), "gpuPods": list(self.gpu_pods)}


@dataclass(frozen=True)
class AdoptionPreview:
    """Everything a takeover would change, with who manages the cluster now."""

    manager: str
    release: str
    policy: str | None
    daemonsets: tuple[DaemonSetChange, ...]
    nodes: tuple[NodeChange, ...]
    problems: tuple[str, ...] = ()
    # Objects beside the DaemonSets that gpuop would make ("ConfigMap gpu-operator/x"),
    # among the kinds the input holds.
    created: tuple[str, ...] = ()

    @property
    def rolls(self) -> tuple[DaemonSetChange, ...]:
        return tuple(d for d in self.daemonsets if d.action == "roll")

    @property
    def clean(self) -> bool:
        """Nothing would be written that restarts, starts or stops a pod, or relabels a node."""
        return (
            not self.problems
            and all(d.action in ("unchanged", "kept") for d in self.daemonsets)
            and not self.nodes
            and not self.created
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "manager": self.manager,
            "release": self.release,
            "policy": self.policy,
            "clean": self.clean,
            "daemonsets": [d.to_dict() for d in self.daemonsets],
            "nodes": [n.to_dict() for n in self.nodes],
            "created": list(self.created),
            "problems": list(self.problems),
        }


def _differences(live: Any, rendered: Any, path: str) -> list[str]:
    """Each field path where the two differ, `path: live -> rendered`."""
    if isinstance(live, dict) and isinstance(rendered, dict):
        found: list[str] = []
        for key in sorted({*live, *rendered}, key=str):
            sub = f"{path}.{key}"
            if key not in rendered:
                found.append(f"{sub}: {_short(live[key])} -> (none)")
            elif key not in live:
                found.append(f"{sub}: (none) -> {_short(rendered[key])}")
            else:
                found += _differences(live[key], rendered[key], sub)
        return found
    if isinstance(live, list) and isinstance(rendered, list) and len(live) == len(rendered):
        found = []
        for index, (a, b) in enumerate(zip(live, rendered, strict=True)):
            label = a.get("name", index) if isinstance(a, dict) else index
            found += _differences(a, b, f"{path}[{label}]")
        return found
    return [] if live == rendered else [f"{path}: {_short(live)} -> {_short(rendered)}"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _template(daemonset: Mapping[str, Any]) -> Any:
    return (strip_api_defaults(dict(daemonset)).get("spec") or {}).get("template") or {}


def _owner(pod: Mapping[str, Any]) -> str | None:
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("kind") == "DaemonSet":
            return str(owner.get("name") or "")
    return None


def _uses_gpus(pod: Mapping[str, Any]) -> bool:
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        for part in ("limits", "requests"):
            if any(is_gpu_resource(str(name)) for name in resources.get(part) or {}):
                return True
    return bool((pod.get("spec") or {}).get("resourceClaims"))


def _manager(daemonsets: Sequence[Mapping[str, Any]]) -> str:
    managers = sorted(
        {
            str(((ds.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) or "?")
            for ds in daemonsets
        }
    )
    if not managers:
        return "nothing (no operand DaemonSet)"
    named = {"gpu-operator": "NVIDIA's GPU Operator", "gpuop": "gpuop"}
    return ", ".join(named.get(m, m) for m in managers)


def preview_adoption(
    objects: Sequence[Mapping[str, Any]], namespace: str, operator_env: Mapping[str, str]
) -> AdoptionPreview:
    """What gpuop would change on the cluster these objects describe (a dump or a live read)."""
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(str(obj.get("kind")), []).append(obj)
    table = operand_table()
    daemonsets = [
        ds
        for ds in by_kind.get("DaemonSet", [])
        if (ds.get("metadata") or {}).get("namespace") in (None, namespace)
        and table.operand_for_daemonset(str((ds.get("metadata") or {}).get("name"))) is not None
    ]
    pods = by_kind.get("Pod", [])
    state = ClusterState(
        cluster_policies=tuple(by_kind.get("ClusterPolicy", [])),
        pods=tuple(pods),
        daemonsets=tuple(daemonsets),
        deployments=tuple(by_kind.get("Deployment", [])),
    )
    release = detect_release(state).describe()
    manager = _manager(daemonsets)
    active = select_active(list(by_kind.get("ClusterPolicy", []))).active
    if active is None:
        return AdoptionPreview(
            manager, release, None, (), (), ("no ClusterPolicy: gpuop would change nothing",)
        )
    name = str((active.get("metadata") or {}).get("name"))
    try:
        policy = parse_cluster_policy(dict(active), f"ClusterPolicy {name}")
    except PolicyError as exc:
        return AdoptionPreview(manager, release, name, (), (), tuple(exc.problems))
    nodes = by_kind.get("Node", [])
    configmaps = named_configmap_keys(policy, by_kind.get("ConfigMap", []), namespace)
    everything = render_all(
        policy, namespace, dict(operator_env), nodes=nodes, configmaps=configmaps
    )
    rendered = {str(o["metadata"]["name"]): o for o in everything if o["kind"] == "DaemonSet"}
    present = {
        (str(o.get("kind")), _where(o))
        for kind in {str(o["kind"]) for o in everything}
        for o in by_kind.get(kind, [])
    }
    # A kind the input does not hold says nothing; nor do ConfigMaps when the input holds
    # only the vGPU config ones (a `gpuop collect` bundle reads no others).
    vgpu_maps = {policy.vgpu_config_map, DEFAULT_VGPU_CONFIGMAP}
    judged = set(by_kind) - {"DaemonSet"}
    if not any(
        (m.get("metadata") or {}).get("name") not in vgpu_maps for m in by_kind.get("ConfigMap", [])
    ):
        judged.discard("ConfigMap")
    created = tuple(
        f"{o['kind']} {_where(o)}"
        for o in everything
        if o["kind"] in judged and (o["kind"], _where(o)) not in present
    )
    live = {str((ds.get("metadata") or {}).get("name")): ds for ds in daemonsets}
    pod_nodes: dict[str, set[str]] = {}
    for pod in pods:
        owner = _owner(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if owner and node:
            pod_nodes.setdefault(owner, set()).add(str(node))
    changes = []
    kept = kept_on_openshift(on_openshift(nodes))
    for ds_name in sorted({*rendered, *live}):
        running = tuple(sorted(pod_nodes.get(ds_name, ())))
        if ds_name not in live:
            changes.append(DaemonSetChange(ds_name, "create"))
        elif ds_name not in rendered and table.operand_for_daemonset(ds_name) in kept:
            changes.append(DaemonSetChange(ds_name, "kept", nodes=running))
        elif ds_name not in rendered:
            changes.append(DaemonSetChange(ds_name, "delete", nodes=running))
        else:
            found = _differences(
                _template(live[ds_name]), _template(rendered[ds_name]), "spec.template"
            )
            if len(found) > MAX_DIFFERENCES:
                found = [*found[:MAX_DIFFERENCES], f"and {len(found) - MAX_DIFFERENCES} more"]
            action: Action = "roll" if found else "unchanged"
            changes.append(DaemonSetChange(ds_name, action, tuple(found), running))
    driver_app = table.operand("driver").daemonset
    drained = {
        node
        for change in changes
        if change.action == "roll" and change.name.startswith(driver_app)
        for node in change.nodes
    }
    node_changes = []
    for node in nodes:
        node_name = str((node.get("metadata") or {}).get("name"))
        labels = plan(policy, node).label_changes
        gpu_pods: tuple[str, ...] = ()
        if node_name in drained:
            gpu_pods = tuple(
                sorted(
                    f"{(p.get('metadata') or {}).get('namespace')}/{(p.get('metadata') or {}).get('name')}"
                    for p in pods
                    if (p.get("spec") or {}).get("nodeName") == node_name
                    and _owner(p) is None
                    and _uses_gpus(p)
                    and ((p.get("metadata") or {}).get("labels") or {}).get(APP_LABEL)
                    not in rendered
                )
            )
        if labels or gpu_pods:
            node_changes.append(NodeChange(node_name, dict(labels), gpu_pods))
    return AdoptionPreview(
        manager, release, name, tuple(changes), tuple(node_changes), created=created
    )


def _where(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return (
        f"{meta['namespace']}/{meta.get('name')}"
        if meta.get("namespace")
        else str(meta.get("name"))
    )


def render_adoption_text(preview: AdoptionPreview) -> str:
    """The preview for a person: who manages the cluster, then only what would change."""
    lines = [
        f"Managed now by: {preview.manager}",
        f"Release: {preview.release}",
        f"ClusterPolicy: {preview.policy or '(none)'}",
    ]
    for problem in preview.problems:
        lines.append(f"error: {problem}")
    unchanged = [d.name for d in preview.daemonsets if d.action == "unchanged"]
    if unchanged:
        lines.append(
            f"Unchanged ({len(unchanged)} DaemonSets, no pod restarts): {', '.join(unchanged)}"
        )
    kept = [d.name for d in preview.daemonsets if d.action == "kept"]
    if kept:
        lines.append(
            f"Kept as they are ({len(kept)} DaemonSets, no pod restarts; OpenShift's Driver"
            f" Toolkit rendering, which gpuop neither renders nor deletes): {', '.join(kept)}"
        )
    for change in preview.daemonsets:
        if change.action in ("unchanged", "kept"):
            continue
        where = f" on {', '.join(change.nodes)}" if change.nodes else ""
        verb = {
            "roll": f"ROLLS: its pods restart{where}; the pod template differs in",
            "create": "is created: its pods start on the nodes labelled for it",
            "delete": f"is deleted: its pods stop{where}",
        }[change.action]
        lines.append(f"DaemonSet {change.name} {verb}")
        lines += [f"    {difference}" for difference in change.differences]
    for made in preview.created:
        lines.append(f"{made} is created (it is missing; no pod restarts for it)")
    for node in preview.nodes:
        if node.labels:
            shown = ", ".join(
                f"{key}-" if value is None else f"{key}={value}"
                for key, value in sorted(node.labels.items())
            )
            lines.append(f"Node {node.node}: labels change: {shown}")
        if node.gpu_pods:
            lines.append(
                f"Node {node.node}: the driver upgrade drains its GPU pods: {', '.join(node.gpu_pods)}"
            )
    lines.append(
        "Nothing to change: gpuop takes over without restarting a pod."
        if preview.clean
        else "gpuop would change what is listed above."
    )
    return "\n".join(lines) + "\n"
