"""InterPodAffinity's Filter: required pod affinity and anti-affinity, the pod's and the
running pods'.

A port of kube-scheduler v1.37.2's ``interpodaffinity`` filtering with the default feature
gates (``InterPodAffinityHostnameFastPath`` is alpha and off, so every term is counted by
topology pair):

* PreFilter counts, per topology pair (``topologyKey`` and the node's value for it), the
  running pods' anti-affinity terms that select the incoming pod, the running pods that
  match all of the incoming pod's affinity terms, and the running pods each of its
  anti-affinity terms selects. A pod with no terms, on a cluster where no running pod's
  anti-affinity selects it, is not filtered at all.
* Filter, in this order: affinity (``node(s) didn't match pod affinity rules``,
  unresolvable): every term's key on the node and a matching pod in each term's domain,
  unless no pod anywhere matches and the pod matches its own terms (the first of a
  group); anti-affinity (``node(s) didn't match pod anti-affinity rules``); the running
  pods' anti-affinity (``node(s) didn't satisfy existing pods anti-affinity rules``).

A term's namespaces are its ``namespaces``, else its ``namespaceSelector`` resolved over
the namespaces the input's pods live in, else the pod's own; ``matchLabelKeys`` and
``mismatchLabelKeys`` are merged into the selector as the API server does when it admits
the pod. Namespace labels are not in a dump: each namespace is taken to carry only
``kubernetes.io/metadata.name``, which the API server always sets. Counts are taken once;
a node whose pods differ in a what-if (nominated pods, preemption victims) is recounted
alone, as the scheduler's ``AddPod``/``RemovePod`` do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from gpuop.explain.model import Code, Status
from gpuop.explain.spread import LabelSelector, label_selector
from gpuop.manifests.fields import get, mapping, scalar_text, sequence, text

if TYPE_CHECKING:
    from gpuop.explain.filters import NodeState, PodOnNode
    from gpuop.explain.fleet import PodIndex

__all__ = [
    "REASON_AFFINITY",
    "REASON_ANTI_AFFINITY",
    "REASON_EXISTING_ANTI_AFFINITY",
    "AffinityTerm",
    "InterPodState",
    "namespace_labels",
    "required_terms",
]

REASON_AFFINITY: Final = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY: Final = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
PLUGIN: Final = "InterPodAffinity"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"

Pair = tuple[str, str]


def namespace_labels(namespace: str) -> dict[str, str]:
    """The labels every namespace has (the only ones a dump of pods and nodes tells)."""
    return {NAMESPACE_NAME_LABEL: namespace}


@dataclass(frozen=True)
class AffinityTerm:
    """``framework.AffinityTerm``: where a term looks for pods, and which pods."""

    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    namespace_selector: LabelSelector = field(default_factory=lambda: LabelSelector(nothing=True))

    def matches(
        self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]
    ) -> bool:
        if namespace in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(labels)
        return False

    def resolved(self, namespaces: Iterable[str]) -> AffinityTerm:
        """``mergeAffinityTermNamespacesIfNotEmpty``: a non-empty namespace selector
        becomes the namespaces it selects."""
        if self.namespace_selector.empty:
            return self
        chosen = {n for n in namespaces if self.namespace_selector.matches(namespace_labels(n))}
        return AffinityTerm(
            self.namespaces | chosen, self.selector, self.topology_key, LabelSelector(nothing=True)
        )


def _merged_selector(raw: Mapping[str, Any], labels: Mapping[str, str]) -> LabelSelector:
    selector = label_selector(get(raw, "labelSelector"))
    if selector.nothing:
        return selector
    extra: list[tuple[str, str, frozenset[str]]] = []
    for key in (scalar_text(k) for k in sequence(raw, "matchLabelKeys")):
        if key in labels:
            extra.append((key, "In", frozenset({labels[key]})))
    for key in (scalar_text(k) for k in sequence(raw, "mismatchLabelKeys")):
        if key in labels:
            extra.append((key, "NotIn", frozenset({labels[key]})))
    return LabelSelector(selector.requirements + tuple(extra)) if extra else selector


def required_terms(
    pod: Mapping[str, Any], section: str, namespace: str, labels: Mapping[str, str]
) -> tuple[AffinityTerm, ...]:
    """The pod's required ``podAffinity`` or ``podAntiAffinity`` terms (``section``)."""
    raw_terms = sequence(
        mapping(pod, "spec", "affinity", section), "requiredDuringSchedulingIgnoredDuringExecution"
    )
    terms: list[AffinityTerm] = []
    for raw in raw_terms:
        if not isinstance(raw, Mapping):
            continue
        listed = [scalar_text(n) for n in sequence(raw, "namespaces")]
        ns_raw = raw.get("namespaceSelector")
        namespaces = frozenset(listed) if listed or ns_raw is not None else frozenset({namespace})
        terms.append(
            AffinityTerm(
                namespaces,
                _merged_selector(raw, labels),
                text(raw, "topologyKey"),
                label_selector(ns_raw),
            )
        )
    return tuple(terms)


@dataclass(frozen=True)
class _Incoming:
    namespace: str
    labels: Mapping[str, str]
    affinity: tuple[AffinityTerm, ...]
    anti_affinity: tuple[AffinityTerm, ...]


def _counts(
    incoming: _Incoming, node_labels: Mapping[str, str], pods: Iterable[PodOnNode]
) -> tuple[Counter[Pair], Counter[Pair], Counter[Pair]]:
    """One node's share of PreFilter's three counts."""
    existing: Counter[Pair] = Counter()
    affinity: Counter[Pair] = Counter()
    anti: Counter[Pair] = Counter()
    own_ns_labels = namespace_labels(incoming.namespace)
    for pod in pods:
        for term in pod.anti_affinity:
            key = term.topology_key
            if key in node_labels and term.matches(
                incoming.namespace, incoming.labels, own_ns_labels
            ):
                existing[(key, node_labels[key])] += 1
        if incoming.affinity and all(
            t.matches(pod.namespace, pod.labels, {}) for t in incoming.affinity
        ):
            for term in incoming.affinity:
                if term.topology_key in node_labels:
                    affinity[(term.topology_key, node_labels[term.topology_key])] += 1
        for term in incoming.anti_affinity:
            key = term.topology_key
            if key in node_labels and term.matches(pod.namespace, pod.labels, {}):
                anti[(key, node_labels[key])] += 1
    return existing, affinity, anti


_NO_SHARE: Final[tuple[Counter[Pair], Counter[Pair], Counter[Pair]]] = (
    Counter(),
    Counter(),
    Counter(),
)


def _adjusted(total: Counter[Pair], before: Counter[Pair], now: Counter[Pair]) -> Counter[Pair]:
    if before == now:
        return total
    result = Counter(total)
    result.subtract(before)
    result.update(now)
    return Counter({pair: count for pair, count in result.items() if count != 0})


@dataclass
class InterPodState:
    """PreFilter's counts over the cluster, and each node's share of them."""

    incoming: _Incoming
    existing: Counter[Pair]
    affinity: Counter[Pair]
    anti: Counter[Pair]
    per_node: dict[str, tuple[Counter[Pair], Counter[Pair], Counter[Pair]]]
    # The node states the counts were taken on: a node seen again as the same object
    # (not a what-if copy) is not recounted.
    base: Mapping[str, NodeState] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        pod: Mapping[str, Any],
        namespace: str,
        labels: Mapping[str, str],
        nodes: Mapping[str, NodeState],
        namespaces: Iterable[str],
        anti_affinity_nodes: frozenset[str] | None = None,
        index: tuple[PodIndex, frozenset[str]] | None = None,
    ) -> InterPodState | None:
        """The state, or None when PreFilter skips the plugin. `anti_affinity_nodes`: the
        only nodes with pods that have required anti-affinity, when known; `index`: the
        cluster snapshot's pods and the nodes whose state here differs from the
        snapshot's (counted from their own pods)."""
        known = set(namespaces) | {namespace}
        affinity = tuple(
            t.resolved(known) for t in required_terms(pod, "podAffinity", namespace, labels)
        )
        anti = tuple(
            t.resolved(known) for t in required_terms(pod, "podAntiAffinity", namespace, labels)
        )
        incoming = _Incoming(namespace, labels, affinity, anti)
        state = cls(incoming, Counter(), Counter(), Counter(), {}, nodes)
        with_terms = bool(affinity or anti)
        shares: dict[str, tuple[Counter[Pair], Counter[Pair], Counter[Pair]]] = {}
        if index is None:
            apart = list(nodes) if with_terms else []
        else:
            apart = [name for name in index[1] if name in nodes]
        # Running pods' anti-affinity: only nodes with such pods have a share.
        if not with_terms or index is not None:
            alone = _Incoming(namespace, labels, (), ())
            names = anti_affinity_nodes if anti_affinity_nodes is not None else nodes
            skip = set(apart)
            for name in names:
                node = nodes.get(name)
                if node is None or name in skip:
                    continue
                guarded = [p for p in node.pods if p.anti_affinity]
                if guarded:
                    shares[name] = _counts(alone, node.labels, guarded)
            if not with_terms:
                apart = [
                    n for n in apart if anti_affinity_nodes is None or n in anti_affinity_nodes
                ]
        if with_terms and index is not None:
            state._count_indexed(index[0], nodes, set(apart), shares)
        for name in apart:
            node = nodes[name]
            pods = node.pods if with_terms else [p for p in node.pods if p.anti_affinity]
            shares[name] = _counts(incoming, node.labels, pods) if pods else _NO_SHARE
        for name, share in shares.items():
            if any(share):
                state.per_node[name] = share
                state.existing.update(share[0])
                state.affinity.update(share[1])
                state.anti.update(share[2])
        if not state.existing and not with_terms:
            return None
        return state

    def _count_indexed(
        self,
        pods: PodIndex,
        nodes: Mapping[str, NodeState],
        apart: set[str],
        shares: dict[str, tuple[Counter[Pair], Counter[Pair], Counter[Pair]]],
    ) -> None:
        """The pod's own terms counted from the index of pods by labels."""

        def share(name: str) -> tuple[Counter[Pair], Counter[Pair], Counter[Pair]]:
            found = shares.get(name)
            if found is None:
                found = shares[name] = (Counter(), Counter(), Counter())
            return found

        affinity = self.incoming.affinity
        if affinity:
            for group in pods.candidates(affinity[0].selector):
                if not all(t.matches(group.namespace, group.labels, {}) for t in affinity):
                    continue
                for name, (count, _) in group.on_nodes.items():
                    node = nodes.get(name)
                    if node is None or name in apart:
                        continue
                    for term in affinity:
                        value = node.labels.get(term.topology_key)
                        if value is not None:
                            share(name)[1][(term.topology_key, value)] += count
        for term in self.incoming.anti_affinity:
            for group in pods.candidates(term.selector):
                if not term.matches(group.namespace, group.labels, {}):
                    continue
                for name, (count, _) in group.on_nodes.items():
                    node = nodes.get(name)
                    if node is None or name in apart:
                        continue
                    value = node.labels.get(term.topology_key)
                    if value is not None:
                        share(name)[2][(term.topology_key, value)] += count

    def filter(self, node: NodeState) -> Status | None:
        existing, affinity, anti = self.existing, self.affinity, self.anti
        before = self.per_node.get(node.name, _NO_SHARE)
        if self.base.get(node.name) is node:
            now = before
        else:
            now = _counts(self.incoming, node.labels, node.pods) if node.pods else _NO_SHARE
        if now != before:
            existing = _adjusted(existing, before[0], now[0])
            affinity = _adjusted(affinity, before[1], now[1])
            anti = _adjusted(anti, before[2], now[2])
        labels = node.labels
        why = self._affinity_mismatch(labels, affinity)
        if why:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_AFFINITY,), PLUGIN, (why,))
        if anti:
            for term in self.incoming.anti_affinity:
                key = term.topology_key
                if key in labels and anti[(key, labels[key])] > 0:
                    return Status(
                        Code.UNSCHEDULABLE,
                        (REASON_ANTI_AFFINITY,),
                        PLUGIN,
                        (
                            f"{anti[(key, labels[key])]} pod(s) in {key}={labels[key]} match"
                            f" the anti-affinity term ({term.selector.describe()})",
                        ),
                    )
        if existing:
            for key in sorted(labels):
                value = labels[key]
                if existing[(key, value)] > 0:
                    return Status(
                        Code.UNSCHEDULABLE,
                        (REASON_EXISTING_ANTI_AFFINITY,),
                        PLUGIN,
                        (
                            f"{existing[(key, value)]} running pod(s) in {key}={value} keep"
                            " pods like this one away (their required anti-affinity)",
                        ),
                    )
        return None

    def _affinity_mismatch(self, labels: Mapping[str, str], counts: Counter[Pair]) -> str:
        """``nodeTopologyMatchesAffinity`` (non-fast path): why not, or ``""``."""
        terms = self.incoming.affinity
        if not terms:
            return ""
        missing = ""
        for term in terms:
            key = term.topology_key
            if key not in labels:
                return f"the node has no {key} label"
            if counts[(key, labels[key])] <= 0 and not missing:
                missing = (
                    f"no pod matching every affinity term in the node's {key} domain"
                    f" ({term.selector.describe()})"
                )
        if not missing:
            return ""
        first_of_group = not counts and all(
            t.matches(self.incoming.namespace, self.incoming.labels, {}) for t in terms
        )
        return "" if first_of_group else missing
