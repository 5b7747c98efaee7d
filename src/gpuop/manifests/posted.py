"""Cluster state as bug reports post it: kubectl's human output, several commands in one text.

A report pastes `kubectl describe node` (or `describe pod`), `kubectl get nodes
--show-labels`, `kubectl get pods -o wide` and `kubectl get daemonsets` one after another,
often with prose between them. Each form has its reader (`describe`, `node_table`,
`pod_table`, `daemonset_table`); this module runs them all on one text and joins what they
read: where two forms show the same node or pod, the richer wins (describe's node, which
has capacity, over a table's labels; a described pod over a pods table's row, which has
readiness, over the name a described node lists), and `notes` says what each form leaves
out.

    posted = parse_posted(text)          # None when `text` holds none of those forms
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuop.manifests.daemonset_table import parse_daemonset_table
from gpuop.manifests.describe import parse_describe
from gpuop.manifests.node_table import parse_node_table
from gpuop.manifests.pod_table import parse_pod_table

__all__ = ["Posted", "parse_posted"]


@dataclass
class Posted:
    """The objects read from kubectl's human output, and a note per form found."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _shown_whole(obj: dict[str, Any]) -> bool:
    """Whether a described Pod came from `describe pod` (a node's list names it only)."""
    spec = obj.get("spec", {})
    return obj["kind"] == "Pod" and bool(spec.get("containers") or spec.get("initContainers"))


def parse_posted(text: str) -> Posted | None:
    """Every Node and Pod that describe output and the two tables in `text` show."""
    described = parse_describe(text)
    nodes = parse_node_table(text)
    pods = parse_pod_table(text)
    daemonsets = parse_daemonset_table(text)
    if described is None and nodes is None and pods is None and daemonsets is None:
        return None
    posted = Posted()
    described_objects = described.objects if described is not None else []
    seen_nodes = {o["metadata"]["name"] for o in described_objects if o["kind"] == "Node"}
    # `describe pod` shows a pod whole; a pods table's row, its readiness; `describe
    # node`, its name.
    whole = {o["metadata"]["name"] for o in described_objects if _shown_whole(o)}
    table_pods = [
        p for p in (pods.objects if pods is not None else []) if p["metadata"]["name"] not in whole
    ]
    # Names a described node lists that another form shows whole or with readiness.
    shown_better = whole | {pod["metadata"]["name"] for pod in table_pods}
    for obj in described_objects:
        if obj["kind"] != "Pod" or _shown_whole(obj) or obj["metadata"]["name"] not in shown_better:
            posted.objects.append(obj)
    if nodes is not None:
        posted.objects.extend(o for o in nodes.objects if o["metadata"]["name"] not in seen_nodes)
    posted.objects.extend(table_pods)
    if daemonsets is not None:
        posted.objects.extend(daemonsets.objects)
    if described is not None and described.nodes:
        posted.notes.append(
            f"`kubectl describe node` output: read {_plural(described.nodes, 'Node')} and the"
            f" {described.pods_without_specs} pods they list, by name only (describe shows no"
            " pod images, labels or requests)"
        )
    if described is not None and described.described_pods:
        posted.notes.append(
            f"`kubectl describe pod` output: read {_plural(described.described_pods, 'Pod')}:"
            " node, labels, owner, images, container states, conditions and events"
        )
    if described is not None and described.custom_resources:
        posted.notes.append(
            f"`kubectl describe` output of custom resources: read"
            f" {_plural(described.custom_resources, 'ClusterPolicy or KubeVirt CR')}, their"
            " fields from kubectl's words (empty maps, lists and strings read as absent)"
        )
    if nodes is not None:
        posted.notes.append(
            f"`kubectl get nodes --show-labels` output: read {_plural(nodes.nodes, 'Node')},"
            " labels only (the table shows no capacity, allocatable or pods, so what those"
            " nodes advertise is not checked)"
        )
    if pods is not None:
        posted.notes.append(
            f"`kubectl get pods -o wide` output: read {_plural(pods.pods, 'Pod')} with their"
            " node, readiness and status, known by name (the table shows no images, labels"
            " or owners)"
        )
    if daemonsets is not None:
        posted.notes.append(
            f"`kubectl get daemonsets` output: read {_plural(daemonsets.daemonsets, 'DaemonSet')}"
            " with their counts and node selectors (and, with -o wide, images)"
        )
    return posted
