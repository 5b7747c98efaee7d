"""PodTopologySpread's Filter: a pod's hard spread constraints over the whole cluster.

A port of kube-scheduler v1.37.2's ``podtopologyspread`` filtering (``common.go``,
``filtering.go``) for the constraints with ``whenUnsatisfiable: DoNotSchedule``:

* PreFilter counts, per constraint and topology domain (the value of the node label
  ``topologyKey``), the pods that match the constraint's selector in the pod's namespace
  and are not being deleted, over the nodes that carry every constraint's key and pass
  the node inclusion policies: ``nodeAffinityPolicy`` (``Honor`` by default: the pod's
  ``nodeSelector`` and required node affinity) and ``nodeTaintsPolicy`` (``Ignore`` by
  default; ``Honor``: no untolerated ``NoSchedule``/``NoExecute`` taint).
  ``matchLabelKeys`` add the pod's own values for those keys to the selector.
* Filter rejects a node without a constraint's key as ``UnschedulableAndUnresolvable``
  (``... (missing required label)``), and a node where ``matched + self - min > maxSkew``
  as ``Unschedulable``; ``min`` is 0 while fewer domains than ``minDomains`` exist.

The system default constraints are all ``ScheduleAnyway`` (scoring only), so a pod without
constraints is never filtered here. Counts are taken once; a node whose pods change in a
what-if (nominated pods added, preemption victims removed) is recounted alone, which is
what the scheduler's ``AddPod``/``RemovePod`` do to its state.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from gpuop.explain.model import Code, Status
from gpuop.explain.selectors import NodeAffinity, Toleration, find_untolerated_taint
from gpuop.manifests.fields import get, mapping, scalar_text, sequence, text

if TYPE_CHECKING:
    from gpuop.explain.filters import NodeState, PodOnNode
    from gpuop.explain.fleet import NodeIndex, PodIndex

__all__ = [
    "REASON_SPREAD",
    "REASON_SPREAD_LABEL",
    "LabelSelector",
    "SpreadConstraint",
    "SpreadState",
    "label_selector",
    "spread_constraints_of",
]

REASON_SPREAD: Final = "node(s) didn't match pod topology spread constraints"
REASON_SPREAD_LABEL: Final = REASON_SPREAD + " (missing required label)"
PLUGIN: Final = "PodTopologySpread"


@dataclass(frozen=True)
class LabelSelector:
    """``metav1.LabelSelector`` as ``LabelSelectorAsSelector`` makes it: ``nothing`` for a
    missing selector (matches no pod), no requirements for ``{}`` (matches every pod)."""

    requirements: tuple[tuple[str, str, frozenset[str]], ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """``labels.Selector.Empty()``: no requirements (and not the nothing selector)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, operator, values in self.requirements:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True

    def with_labels(self, extra: Mapping[str, str]) -> LabelSelector:
        """``mergeLabelSetWithSelector``: the pod's ``matchLabelKeys`` values added."""
        if self.nothing or not extra:
            return self
        added = tuple((k, "In", frozenset({v})) for k, v in sorted(extra.items()))
        return LabelSelector(added + self.requirements)

    def describe(self) -> str:
        if self.nothing:
            return "<none>"
        parts = []
        for key, operator, values in self.requirements:
            if operator in ("Exists", "DoesNotExist"):
                parts.append(key if operator == "Exists" else f"!{key}")
            elif operator == "In" and len(values) == 1:
                parts.append(f"{key}={next(iter(values))}")
            else:
                shown = ",".join(sorted(values))
                parts.append(f"{key} {'in' if operator == 'In' else 'notin'} ({shown})")
        return ",".join(parts) or "<everything>"


def label_selector(raw: Any) -> LabelSelector:
    """A ``metav1.LabelSelector`` from a dict (None or not a mapping: matches nothing)."""
    if not isinstance(raw, Mapping):
        return LabelSelector(nothing=True)
    requirements: list[tuple[str, str, frozenset[str]]] = []
    for key, value in sorted(mapping(raw, "matchLabels").items()):
        requirements.append((str(key), "In", frozenset({scalar_text(value)})))
    for expression in sequence(raw, "matchExpressions"):
        operator = text(expression, "operator")
        values = frozenset(scalar_text(v) for v in sequence(expression, "values"))
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return LabelSelector(nothing=True)  # the API server refuses such a pod
        requirements.append((text(expression, "key"), operator, values))
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True)
class SpreadConstraint:
    """One ``DoNotSchedule`` topology spread constraint, defaults applied."""

    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False


def spread_constraints_of(
    pod: Mapping[str, Any], labels: Mapping[str, str]
) -> tuple[SpreadConstraint, ...]:
    """``filterTopologySpreadConstraints(..., DoNotSchedule)`` over the pod's constraints."""
    found: list[SpreadConstraint] = []
    for raw in sequence(pod, "spec", "topologySpreadConstraints"):
        if text(raw, "whenUnsatisfiable") != "DoNotSchedule":
            continue
        selector = label_selector(get(raw, "labelSelector"))
        keys = [scalar_text(k) for k in sequence(raw, "matchLabelKeys")]
        selector = selector.with_labels({k: labels[k] for k in keys if k in labels})
        max_skew = get(raw, "maxSkew")
        min_domains = get(raw, "minDomains")
        found.append(
            SpreadConstraint(
                max_skew if isinstance(max_skew, int) and not isinstance(max_skew, bool) else 1,
                text(raw, "topologyKey"),
                selector,
                min_domains
                if isinstance(min_domains, int) and not isinstance(min_domains, bool)
                else 1,
                text(raw, "nodeAffinityPolicy") != "Ignore",
                text(raw, "nodeTaintsPolicy") == "Honor",
            )
        )
    return tuple(found)


def _matching(pods: Iterable[PodOnNode], selector: LabelSelector, namespace: str) -> int:
    """``countPodsMatchSelector``."""
    if selector.empty:
        return 0
    return sum(
        1
        for p in pods
        if not p.terminating and p.namespace == namespace and selector.matches(p.labels)
    )


@dataclass
class SpreadState:
    """PreFilter's counts: per constraint, matching pods per domain and per counted node."""

    constraints: tuple[SpreadConstraint, ...]
    namespace: str
    affinity: NodeAffinity | None
    tolerations: tuple[Toleration, ...]
    comparison_operators: bool
    # The node states the counts were taken on: a node seen again as the same object
    # (not a what-if copy) is not recounted.
    base: Mapping[str, NodeState]
    # Per constraint: domain -> matching pods; node name -> matching pods (none: left out).
    domains: list[dict[str, int]] = field(default_factory=list)
    matched: list[dict[str, int]] = field(default_factory=list)
    # Per constraint: the two emptiest domains, (count, domain), for the minimum with one
    # domain's count changed without a pass over every domain.
    emptiest: list[list[tuple[int, str]]] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        constraints: tuple[SpreadConstraint, ...],
        namespace: str,
        affinity: NodeAffinity | None,
        tolerations: tuple[Toleration, ...],
        comparison_operators: bool,
        nodes: Mapping[str, NodeState],
        index: tuple[PodIndex, NodeIndex, frozenset[str]] | None = None,
    ) -> SpreadState:
        """The counts over `nodes`; `index`: the pods and nodes of the cluster snapshot
        and the nodes whose state here differs from the snapshot's (counted from their
        own pods)."""
        state = cls(constraints, namespace, affinity, tolerations, comparison_operators, nodes)
        keys = tuple(dict.fromkeys(c.topology_key for c in constraints))
        state.matched = [state._matches(c, nodes, index) for c in constraints]
        conditional = any(state._conditional(c) for c in constraints)
        if index is not None and not conditional:
            # Every node with all keys is counted: the domains are the values they have.
            values = index[1].domain_values(keys)
            state.domains = [dict.fromkeys(values[c.topology_key], 0) for c in constraints]
            for position, constraint in enumerate(constraints):
                domains, key = state.domains[position], constraint.topology_key
                for name, count in state.matched[position].items():
                    labels = nodes[name].labels
                    if all(k in labels for k in keys):
                        domains[labels[key]] += count
        else:
            state.domains = [{} for _ in constraints]
            included: dict[Any, bool] = {}
            for node in nodes.values():
                if not all(key in node.labels for key in keys):
                    continue
                for position, constraint in enumerate(constraints):
                    if not state._included(constraint, node, included):
                        continue
                    domain = node.labels[constraint.topology_key]
                    domains = state.domains[position]
                    domains[domain] = domains.get(domain, 0) + state.matched[position].get(
                        node.name, 0
                    )
        state.emptiest = [
            heapq.nsmallest(2, ((count, domain) for domain, count in domains.items()))
            for domains in state.domains
        ]
        return state

    def _matches(
        self,
        constraint: SpreadConstraint,
        nodes: Mapping[str, NodeState],
        index: tuple[PodIndex, NodeIndex, frozenset[str]] | None,
    ) -> dict[str, int]:
        """``countPodsMatchSelector`` per node, the nodes with none left out."""
        selector, found = constraint.selector, dict[str, int]()
        if selector.empty:
            return found
        if index is None:
            for node in nodes.values():
                count = _matching(node.pods, selector, self.namespace)
                if count:
                    found[node.name] = count
            return found
        pods, _, changed = index
        apart = [nodes[name] for name in changed if name in nodes]
        for group in pods.candidates(selector):
            if group.namespace != self.namespace or not selector.matches(group.labels):
                continue
            for name, (_, live) in group.on_nodes.items():
                if live and name in nodes:
                    found[name] = found.get(name, 0) + live
        for node in apart:
            found.pop(node.name, None)
            count = _matching(node.pods, selector, self.namespace)
            if count:
                found[node.name] = count
        return found

    def _conditional(self, constraint: SpreadConstraint) -> bool:
        """Whether the node inclusion policies leave some nodes out for this pod."""
        return (constraint.honor_affinity and self.affinity is not None) or (
            constraint.honor_taints
        )

    def _included(
        self, constraint: SpreadConstraint, node: NodeState, seen: dict[Any, bool] | None = None
    ) -> bool:
        """The node inclusion policies (the caller has checked the keys); `seen` keeps
        the verdicts by what they read of the node."""
        affinity = self.affinity
        if constraint.honor_affinity and affinity is not None:
            by_labels = seen is not None and not any(t.fields for t in affinity.terms)
            key: tuple[Any, ...] = ("affinity", *(node.labels.get(k) for k in affinity.label_keys))
            ok = seen.get(key) if seen is not None and by_labels else None
            if ok is None:
                ok = not affinity.mismatch(node.obj)
                if seen is not None and by_labels:
                    seen[key] = ok
            if not ok:
                return False
        if constraint.honor_taints:
            key = ("taints", *node.taints)
            ok = seen.get(key) if seen is not None else None
            if ok is None:
                ok = (
                    find_untolerated_taint(node.taints, self.tolerations, self.comparison_operators)
                    is None
                )
                if seen is not None:
                    seen[key] = ok
            return ok
        return True

    def filter(self, pod_labels: Mapping[str, str], node: NodeState) -> Status | None:
        """``Filter``, with `node`'s own pods recounted (they may differ from PreFilter's)."""
        for index, constraint in enumerate(self.constraints):
            key = constraint.topology_key
            if key not in node.labels:
                return Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    (REASON_SPREAD_LABEL,),
                    PLUGIN,
                    (f"the node has no {key} label",),
                )
            domains = self.domains[index]
            emptiest = self.emptiest[index]
            minimum = emptiest[0][0] if emptiest else 0
            value = node.labels[key]
            matched = domains.get(value, 0)
            if (
                self.base.get(node.name) is not node
                and all(c.topology_key in node.labels for c in self.constraints)
                and self._included(constraint, node)
            ):
                domain, before = value, self.matched[index].get(node.name, 0)
                now = _matching(node.pods, constraint.selector, self.namespace)
                if now != before:
                    changed = domains[domain] - before + now
                    others = [c for c, d in emptiest if d != domain]
                    minimum = min([changed, *others])
                    if domain == value:
                        matched = changed
            if len(domains) < constraint.min_domains:
                minimum = 0
            own = 1 if constraint.selector.matches(pod_labels) else 0
            if matched + own - minimum > constraint.max_skew:
                return Status(
                    Code.UNSCHEDULABLE,
                    (REASON_SPREAD,),
                    PLUGIN,
                    (
                        f"{key}={value}: {matched} matching pod(s) ({constraint.selector.describe()})"
                        f" + {own} - the fewest in a domain {minimum}"
                        f" > maxSkew {constraint.max_skew}",
                    ),
                )
        return None
