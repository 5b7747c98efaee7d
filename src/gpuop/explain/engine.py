"""One scheduling attempt, replayed offline: :func:`explain_pod`.

The flow follows ``schedule_one.go`` for a single pod and the default
profile:

1. no nodes at all: ``no nodes available to schedule pods``;
2. PreFilter: NodeName pins a pod with ``spec.nodeName`` to that node, and
   NodeAffinity pins it to the nodes named by ``matchFields metadata.name
   In`` in every required term; the other nodes get ``node(s) didn't
   satisfy plugin(s) [<plugins>]``.  Contradicting name pins reject the
   pod outright: ``pod affinity terms conflict`` within NodeAffinity,
   ``node(s) didn't satisfy plugin(s) [NodeAffinity NodeName]
   simultaneously`` between the two;
3. Filter: each remaining node through the filters of
   :mod:`gpuop.explain.filters`, stopping at the first rejection
   (PodTopologySpread's counts over the whole cluster taken first, as its
   PreFilter does: :mod:`gpuop.explain.spread`);
4. PostFilter, when no node fits: DynamicResources (silent in v1.37 for
   pods without claims) then DefaultPreemption
   (:mod:`gpuop.explain.preemption`).

A pod with ``schedulingGates`` is never tried (SchedulingGates' PreEnqueue): it fits
nowhere, with the API server's ``SchedulingGated`` message, and its node verdicts say
where it would go once the gates are removed.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuop.explain.claims import (
    DRA_PLUGIN,
    DraCluster,
    PodClaims,
    claims_filter,
    extended_claim,
    pod_claims,
    verdict_to_dict,
)
from gpuop.explain.features import PLUGIN as FEATURES_PLUGIN
from gpuop.explain.features import declared_features, required_features
from gpuop.explain.filters import (
    NodeState,
    PodFacts,
    PodOnNode,
    host_ports,
    run_filters,
    run_filters_with_nominated,
)
from gpuop.explain.fleet import NodeIndex, PodIndex
from gpuop.explain.interpod import NAMESPACE_NAME_LABEL, InterPodState, required_terms
from gpuop.explain.model import (
    Code,
    ExplainOptions,
    NodeVerdicts,
    PodExplanation,
    PreemptionOutcome,
    Status,
)
from gpuop.explain.preemption import Budget, budgets_of, preempt
from gpuop.explain.report import NO_NODES, fit_error_message
from gpuop.explain.resources import (
    Resource,
    advertised_resources,
    node_allocatable,
    pod_requests,
    requested_extended_resources,
)
from gpuop.explain.selectors import labels_of, node_affinity_of, taints_of, tolerations_of
from gpuop.explain.spread import SpreadState, spread_constraints_of
from gpuop.explain.volumes import Storage, claim_keys, pod_volumes, volume_notes
from gpuop.manifests.fields import get, mapping, sequence, text

__all__ = ["ClusterSnapshot", "cluster_snapshot", "explain_pod", "explain_pods", "pod_key"]

_DRA_POSTFILTER = "no new claims to deallocate"
# DynamicResources' PostFilter without its PreFilter's state (``fwk.ErrNotFound``).
_NO_DRA_STATE = "not found"
# The PodScheduled condition the API server gives a pod created with scheduling gates
# (`applySchedulingGatedCondition`); the scheduler's SchedulingGates PreEnqueue keeps it
# out of the queue, so no FailedScheduling event ever comes.
SCHEDULING_GATED = "Scheduling is blocked due to non-empty scheduling gates"
_PREFILTER_CONFLICT = "pod affinity terms conflict"


def pod_key(pod: Mapping[str, Any]) -> str:
    """``namespace/name`` (namespace ``default`` when unset)."""
    namespace = text(pod, "metadata", "namespace") or "default"
    return f"{namespace}/{text(pod, 'metadata', 'name')}"


def _priority(pod: Mapping[str, Any]) -> int:
    found = get(pod, "spec", "priority")
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def _is_kind(obj: Mapping[str, Any], kind: str) -> bool:
    found = obj.get("kind")
    return found is None or found == "" or found == kind


def _pod_warnings(
    pod: Mapping[str, Any], options: ExplainOptions, warnings: list[str], *, dra: bool = False
) -> None:
    if not _is_kind(pod, "Pod"):
        warnings.append(
            f"kind {pod.get('kind')!r} is not a Pod: explain a VMI or VM through "
            "gpuop.kubevirt.launcher.schedulable_pod"
        )
    spec = mapping(pod, "spec")
    if text(spec, "nodeName"):
        warnings.append(
            "spec.nodeName is set: the scheduler never places this pod; "
            "the kubelet of that node admits or rejects it"
        )
    scheduler = text(spec, "schedulerName")
    if scheduler and scheduler != "default-scheduler":
        warnings.append(f"schedulerName is {scheduler!r}: default-scheduler does not place it")
    if text(spec, "priorityClassName") and get(spec, "priority") is None:
        warnings.append(
            f"priorityClassName {text(spec, 'priorityClassName')!r} is resolved at admission; "
            "without spec.priority the pod is taken as priority 0"
        )
    numeric = [t for t in tolerations_of(pod) if t.operator in ("Gt", "Lt")]
    if numeric and not options.toleration_comparison_operators:
        warnings.append(
            "Gt/Lt tolerations need the TaintTolerationComparisonOperators feature gate "
            "(alpha, off by default): without it the API server refuses the pod and the "
            "scheduler lets them tolerate nothing"
        )
    if sequence(spec, "resourceClaims") and not dra:
        warnings.append(
            "DRA resource claims are not modelled without the cluster's ResourceSlices,"
            " DeviceClasses and ResourceClaims (DynamicResources filter)"
        )
    for term in sequence(
        spec, "affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution"
    ) + sequence(
        spec, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"
    ):
        selector = mapping(term, "namespaceSelector")
        keys = {text(e, "key") for e in sequence(selector, "matchExpressions")} | set(
            mapping(selector, "matchLabels")
        )
        if keys - {NAMESPACE_NAME_LABEL}:
            warnings.append(
                "a pod affinity namespaceSelector reads namespace labels other than"
                f" {NAMESPACE_NAME_LABEL}, which the input does not hold: namespaces are"
                " taken to carry only that label"
            )
            break


def _pod_facts(pod: Mapping[str, Any], options: ExplainOptions, warnings: list[str]) -> PodFacts:
    requests = pod_requests(pod, warnings, pod_level_resources=options.pod_level_resources)
    resource = Resource.of({k: v for k, v in requests.items() if k != "pods"})
    return PodFacts(
        key=pod_key(pod),
        uid=text(pod, "metadata", "uid"),
        node_name=text(pod, "spec", "nodeName"),
        tolerations=tuple(tolerations_of(pod)),
        affinity=node_affinity_of(pod),
        requests=resource,
        ports=host_ports(pod),
        priority=_priority(pod),
        comparison_operators=options.toleration_comparison_operators,
        name_untolerated_taint=options.name_untolerated_taint,
        labels=labels_of(pod),
        required_features=required_features(pod),
    )


def _node_states(nodes: Iterable[Any], warnings: list[str]) -> dict[str, NodeState]:
    states: dict[str, NodeState] = {}
    for index, node in enumerate(nodes):
        if not isinstance(node, Mapping) or not _is_kind(node, "Node"):
            warnings.append(f"nodes[{index}] is not a Node (ignored)")
            continue
        name = text(node, "metadata", "name")
        if not name:
            warnings.append(f"nodes[{index}] has no metadata.name (ignored)")
            continue
        if name in states:
            warnings.append(f"node {name} is listed twice (the second is ignored)")
            continue
        states[name] = NodeState(
            name=name,
            labels=labels_of(node),
            taints=tuple(taints_of(node)),
            unschedulable=get(node, "spec", "unschedulable") is True,
            allocatable=node_allocatable(node, warnings),
            obj=node,
            declared_features=declared_features(node),
        )
    return states


def _other_pod(pod: Mapping[str, Any], options: ExplainOptions) -> PodOnNode:
    ignored: list[str] = []
    requests = pod_requests(
        pod, ignored, use_status=True, pod_level_resources=options.pod_level_resources
    )
    namespace = text(pod, "metadata", "namespace") or "default"
    labels = labels_of(pod)
    return PodOnNode(
        key=pod_key(pod),
        uid=text(pod, "metadata", "uid"),
        priority=_priority(pod),
        requests=Resource.of({k: v for k, v in requests.items() if k != "pods"}),
        ports=host_ports(pod),
        start_time=text(pod, "status", "startTime"),
        namespace=namespace,
        labels=labels,
        terminating=get(pod, "metadata", "deletionTimestamp") is not None,
        anti_affinity=required_terms(pod, "podAntiAffinity", namespace, labels),
        claims=claim_keys(pod),
    )


@dataclass
class ClusterSnapshot:
    """The cluster every explained pod is checked against, read once: node states with
    their bound pods placed, the pending pods nominated to nodes, what the nodes
    advertise. Shared and never changed: a pod's own entry is taken off a copy of its
    node (:func:`explain_pod` explains a bound pod as if it were being placed now)."""

    states: dict[str, NodeState]
    nominated: dict[str, list[PodOnNode]]
    node_warnings: tuple[str, ...]
    advertised: frozenset[str]
    # Where each pod was placed or nominated, by key and by uid.
    placed: dict[str, set[str]] = field(default_factory=dict)
    # Nodes with a pod that has required anti-affinity (InterPodAffinity reads only those
    # for a pod without terms), and every namespace a pod lives in.
    anti_affinity_nodes: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    # PodDisruptionBudgets, which preemption spares victims for.
    budgets: tuple[Budget, ...] = ()
    # The bound pods by labels, and the nodes by shape and label value.
    pod_index: PodIndex = field(default_factory=PodIndex)
    # The cluster's PersistentVolumeClaims, PersistentVolumes and StorageClasses.
    storage: Storage = field(default_factory=Storage)
    node_index: NodeIndex = field(default_factory=lambda: NodeIndex(()))

    # (the lowest priority of a node's pods, its position), lowest first.
    _lowest: list[tuple[int, int]] | None = field(default=None, repr=False)
    _lower: dict[int, frozenset[int]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.node_index.nodes and self.states:
            self.node_index = NodeIndex(tuple(self.states.values()))

    def with_lower_priority(self, priority: int) -> frozenset[int]:
        """The nodes (positions) with a pod of lower priority: the only ones where
        preemption can find victims."""
        found = self._lower.get(priority)
        if found is None:
            if self._lowest is None:
                self._lowest = sorted(
                    (min(p.priority for p in node.pods), at)
                    for at, node in enumerate(self.node_index.nodes)
                    if node.pods
                )
            end = bisect.bisect_left(self._lowest, (priority, -1))
            found = self._lower[priority] = frozenset(at for _, at in self._lowest[:end])
        return found


def cluster_snapshot(
    nodes: Iterable[Any],
    pods: Iterable[Any],
    options: ExplainOptions | None = None,
    budgets: Iterable[Any] = (),
    storage: Storage | None = None,
) -> ClusterSnapshot:
    """Read the nodes and the pods on them (or nominated to them) once; `budgets`: the
    cluster's PodDisruptionBudget objects; `storage`: its claims, volumes and classes."""
    options = options or ExplainOptions()
    warnings: list[str] = []
    states = _node_states(nodes, warnings)
    nominated: dict[str, list[PodOnNode]] = {}
    placed: dict[str, set[str]] = {}
    anti_nodes: set[str] = set()
    namespaces: set[str] = set()
    pod_index = PodIndex()
    for pod in pods:
        if not isinstance(pod, Mapping) or not _is_kind(pod, "Pod"):
            continue
        if text(pod, "status", "phase") in ("Succeeded", "Failed"):
            continue
        bound = text(pod, "spec", "nodeName")
        target = bound or text(pod, "status", "nominatedNodeName")
        if target not in states:
            continue
        other = _other_pod(pod, options)
        if bound:
            states[bound].add_pod(other)
            pod_index.add(other, bound)
            namespaces.add(other.namespace)
            if other.anti_affinity:
                anti_nodes.add(bound)
        else:
            nominated.setdefault(target, []).append(other)
        for handle in (other.key, other.uid):
            if handle:
                placed.setdefault(handle, set()).add(target)
    advertised: set[str] = set()
    for state in states.values():
        advertised |= advertised_resources(state.obj)
    return ClusterSnapshot(
        states,
        nominated,
        tuple(warnings),
        frozenset(advertised),
        placed,
        frozenset(anti_nodes),
        frozenset(namespaces),
        budgets_of(budgets),
        pod_index,
        storage=storage or Storage(),
    )


def _without(
    snapshot: ClusterSnapshot, me: PodFacts
) -> tuple[Mapping[str, NodeState], Mapping[str, list[PodOnNode]], frozenset[str]]:
    """The snapshot's states and nominated pods, the pod itself taken out, and the nodes
    whose state that changed."""
    where = snapshot.placed.get(me.key, set()) | (
        snapshot.placed.get(me.uid, set()) if me.uid else set()
    )
    if not where:
        return snapshot.states, snapshot.nominated, frozenset()

    def is_me(other: PodOnNode) -> bool:
        return bool(other.uid and other.uid == me.uid) or other.key == me.key

    states = dict(snapshot.states)
    nominated = dict(snapshot.nominated)
    changed: set[str] = set()
    for name in where:
        if any(is_me(p) for p in states[name].pods):
            copy = states[name].clone()
            for other in [p for p in copy.pods if is_me(p)]:
                copy.remove_pod(other)
            states[name] = copy
            changed.add(name)
        if name in nominated:
            nominated[name] = [p for p in nominated[name] if not is_me(p)]
    return states, nominated, frozenset(changed)


def _shape_cache(
    me: PodFacts,
) -> tuple[dict[tuple[Any, ...], Status | None] | None, tuple[str, ...]]:
    """A cache of the node-only filters' verdicts by node shape, and the node labels the
    pod reads; no cache for a pod that names nodes (``spec.nodeName``, ``matchFields``)."""
    affinity = me.affinity
    if me.node_name or (affinity is not None and any(t.fields for t in affinity.terms)):
        return None, ()
    return {}, (affinity.label_keys if affinity is not None else ())


def _sparse_keys(
    me: PodFacts, index: NodeIndex, raw: tuple[str, ...]
) -> tuple[tuple[str, ...], dict[str, set[str]]]:
    """The node labels PodTopologySpread and InterPodAffinity read for this pod, beyond
    the `raw` ones whose every value counts: a label whose few counted values cover few
    nodes is sparse (any other value of it is as good as another), else raw."""
    live: dict[str, set[str]] = {}
    if me.spread is not None:
        for constraint, domains in zip(me.spread.constraints, me.spread.domains, strict=True):
            values = live.setdefault(constraint.topology_key, set())
            if constraint.max_skew < 1:  # an invalid pod: every domain may be refused
                values.update(domains)
            else:
                values.update(domain for domain, count in domains.items() if count)
    if me.interpod is not None:
        incoming = me.interpod.incoming
        for term in (*incoming.affinity, *incoming.anti_affinity):
            live.setdefault(term.topology_key, set())
        for counter in (me.interpod.existing, me.interpod.affinity, me.interpod.anti):
            for (key, value), count in counter.items():
                if count > 0:
                    live.setdefault(key, set()).add(value)
    keys, sparse = list(raw), {}
    for key, values in live.items():
        if key in raw:
            continue
        by_value = index.by_value(key)
        if 4 * sum(len(by_value.get(v, ())) for v in values) > len(index.nodes):
            keys.append(key)
        else:
            sparse[key] = values
    return tuple(keys), sparse


def _by_class(
    me: PodFacts,
    snapshot: ClusterSnapshot,
    states: Mapping[str, NodeState],
    nominated: Mapping[str, list[PodOnNode]],
    changed: frozenset[str],
    label_keys: tuple[str, ...],
) -> list[tuple[list[int], Status | None]]:
    """Every node's filter verdict, the filters run once per class of nodes they cannot
    tell apart (:meth:`NodeIndex.refine`); a node whose pods differ for this pod (its own
    entry taken off, nominated pods) is run alone."""
    index = snapshot.node_index
    nodes = index.nodes
    alone = {name for name, pods in nominated.items() if pods} | changed
    raw, sparse = _sparse_keys(me, index, label_keys)
    classes: list[tuple[list[int], Status | None]] = []
    for positions in index.refine(raw, sparse):
        shared = [at for at in positions if nodes[at].name not in alone] if alone else positions
        if shared:
            classes.append((shared, run_filters(me, nodes[shared[0]])))
        if len(shared) < len(positions):
            for at in positions:
                name = nodes[at].name
                if name in alone:
                    status = run_filters_with_nominated(me, states[name], nominated.get(name, ()))
                    classes.append(([at], status))
    return classes


def _own_extended_claims(pod: Mapping[str, Any], dra: DraCluster) -> tuple[str, ...]:
    """The claims the scheduler made for this pod's extended resources in an earlier
    cycle: the pod is explained as if being placed now, so their devices are free."""
    name, uid = text(pod, "metadata", "name"), text(pod, "metadata", "uid")
    return tuple(
        claim.key
        for claim in (dra.claims or {}).values()
        if claim.extended_for is not None
        and claim.namespace == (text(pod, "metadata", "namespace") or "default")
        and (claim.extended_for[1] == uid if uid else claim.extended_for[0] == name)
    )


def _prefilter(me: PodFacts) -> tuple[Status | None, frozenset[str] | None, list[str]]:
    """``RunPreFilterPlugins`` for NodeName then NodeAffinity.

    Returns the rejection (if the pod cannot go anywhere), the node names
    the pod is pinned to (None: all nodes) and the plugins that pinned it.
    """
    unresolvable = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    names: set[str] | None = None
    plugins: list[str] = []
    pins: list[tuple[str, frozenset[str]]] = []
    if me.node_name:
        pins.append(("NodeName", frozenset({me.node_name})))
    if me.affinity is not None and me.affinity.pinned_names is not None:
        pins.append(("NodeAffinity", me.affinity.pinned_names))
    for plugin, pinned in pins:
        if plugin == "NodeAffinity" and not pinned:
            return Status(unresolvable, (_PREFILTER_CONFLICT,), plugin), None, []
        plugins.append(plugin)
        names = set(pinned) if names is None else names & pinned
        if not names:
            listed = sorted(plugins)
            message = (
                f"node(s) didn't satisfy plugin(s) [{' '.join(listed)}] simultaneously"
                if len(listed) > 1
                else f"node(s) didn't satisfy plugin {listed[0]}"
            )
            return Status(unresolvable, (message,), plugin), None, []
    return None, (frozenset(names) if names is not None else None), sorted(plugins)


def _post_filter(
    me: PodFacts,
    pod: Mapping[str, Any],
    states: Mapping[str, NodeState],
    statuses: Mapping[str, Status],
    nominated: Mapping[str, list[PodOnNode]],
    options: ExplainOptions,
    budgets: tuple[Budget, ...] = (),
    without_victims: int = 0,
) -> tuple[str, PreemptionOutcome, dict[str, tuple[str, ...]]]:
    """``RunPostFilterPlugins``: the message, preemption's outcome and per-node notes
    (see :func:`preempt` for `statuses` and `without_victims`)."""
    reasons: list[str] = []
    if options.dra_no_claims_message:
        reasons.append(_DRA_POSTFILTER)
    if not options.preemption:
        return ", ".join(reasons), PreemptionOutcome(), {}
    outcome, per_node = preempt(
        me,
        text(pod, "spec", "preemptionPolicy"),
        states,
        statuses,
        nominated,
        budgets,
        without_victims,
    )
    if outcome.candidates or outcome.error:
        # Success (or an error) ends RunPostFilterPlugins with that status alone.
        return f"preemption: {outcome.message}", outcome, per_node
    if outcome.message:
        reasons.append(f"preemption: {outcome.message}")
    return ", ".join(reasons), outcome, per_node


def explain_pod(
    pod: Mapping[str, Any],
    nodes: Iterable[Mapping[str, Any]],
    pods_on_nodes: Iterable[Mapping[str, Any]] = (),
    *,
    options: ExplainOptions | None = None,
    dra: DraCluster | None = None,
    snapshot: ClusterSnapshot | None = None,
) -> PodExplanation:
    """Which ``nodes`` would take ``pod``, and why the others would not.

    ``pods_on_nodes`` are the other pods of the cluster (for instance all
    of ``kubectl get pods -A -o json``): those bound to a node
    (``spec.nodeName``) and not ``Succeeded``/``Failed`` use its resources,
    pod slots and host ports; pending pods nominated to a node
    (``status.nominatedNodeName``) with at least the pod's priority are
    counted as the scheduler does.  The pod itself is skipped if listed.

    With ``dra`` (the cluster's ResourceSlices, DeviceClasses and claims), the pod's
    ResourceClaims go through the DynamicResources filter (:mod:`gpuop.explain.claims`);
    a claim that cannot be read raises :class:`gpuop.dra.model.DraInputError`.

    ``snapshot`` (:func:`cluster_snapshot` of the same nodes and pods, with the same
    options) spares reading the cluster again for each of many pods.
    """
    options = options or ExplainOptions()
    warnings: list[str] = []
    _pod_warnings(pod, options, warnings, dra=dra is not None)
    claims = pod_claims(pod, dra) if dra is not None else None
    exact = pod_requests(pod, [], pod_level_resources=options.pod_level_resources)
    requested = requested_extended_resources(exact.items())
    # DRAExtendedResource (GA in v1.37): extended resources a DeviceClass backs, its
    # implicit deviceclass.resource.kubernetes.io/<class> names included.
    mapped = (dra.extended or {}) if dra is not None else {}
    backed = {r: mapped[r] for r, amount in exact.items() if amount != 0 and r in mapped}
    if backed and claims is None:
        claims = PodClaims()
    warnings.extend(
        f"{resource}: where no device plugin advertises it, DeviceClass {device_class}"
        " provides it through DRA (the scheduler's claim for the pod's extended resources)"
        for resource, device_class in sorted(backed.items())
    )
    if dra is not None and claims is not None:
        warnings.extend((*dra.warnings, *claims.notes))
    me = _pod_facts(pod, options, warnings)
    if backed:
        me = dataclasses.replace(me, dra_backed=frozenset(backed))
    if snapshot is None:
        snapshot = cluster_snapshot(nodes, pods_on_nodes, options)
    warnings.extend(snapshot.node_warnings)
    states, nominated, changed = _without(snapshot, me)
    namespace = text(pod, "metadata", "namespace") or "default"
    constraints = spread_constraints_of(pod, me.labels)
    if constraints:
        spread = SpreadState.build(
            constraints,
            namespace,
            me.affinity,
            me.tolerations,
            me.comparison_operators,
            states,
            (snapshot.pod_index, snapshot.node_index, changed),
        )
        me = dataclasses.replace(me, spread=spread)
    interpod = InterPodState.build(
        pod,
        namespace,
        me.labels,
        states,
        snapshot.namespaces,
        snapshot.anti_affinity_nodes,
        (snapshot.pod_index, changed),
    )
    if interpod is not None:
        me = dataclasses.replace(me, interpod=interpod)

    missing = tuple(r for r in requested if r not in snapshot.advertised and r not in backed)
    requests = tuple(me.requests.as_quantities().items())

    if not states:
        return PodExplanation(
            pod=me.key,
            feasible=(),
            nodes=NodeVerdicts((), ()),
            summary=NO_NODES,
            filter_summary=NO_NODES,
            never_fits_anywhere=missing,
            requests=requests,
            warnings=tuple(warnings),
        )

    statuses: dict[str, Status] = {}
    prefilter_message = ""
    rejected, pinned, pinning = _prefilter(me)
    if rejected is None:
        rejected, volumes = pod_volumes(pod, snapshot.storage)
        if volumes is not None:
            me = dataclasses.replace(me, volumes=volumes)
    warnings.extend(volume_notes(pod, snapshot.storage))
    # A PreFilter that rejects before DynamicResources' PreFilter leaves that plugin no
    # state: its PostFilter then fails with "not found", which ends PostFilter (no
    # preemption) and is the message's last word.
    before_dra = rejected is not None
    if rejected is None and claims is not None and claims.problem is not None:
        rejected = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (claims.problem,), DRA_PLUGIN)
    claim_verdicts: list[dict[str, Any]] = []
    aborted: str | None = None
    own_claims = _own_extended_claims(pod, dra) if backed and dra is not None else ()
    shape_cache, label_keys = _shape_cache(me)
    names = tuple(states)
    classes: list[tuple[list[int], Status | None]] | None = None
    without_victims = 0
    if rejected is not None:
        prefilter_message = rejected.reasons[0]
        statuses = dict.fromkeys(states, rejected)
    elif shape_cache is not None and claims is None and pinned is None and me.volumes is None:
        classes = _by_class(me, snapshot, states, nominated, changed, label_keys)
    else:
        for name, state in states.items():
            if pinned is not None and name not in pinned:
                statuses[name] = Status(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    (f"node(s) didn't satisfy plugin(s) [{' '.join(pinning)}]",),
                    pinning[0] if len(pinning) == 1 else "",
                    (f"PreFilter ({', '.join(pinning)}) pinned the pod to {sorted(pinned)}",),
                )
                continue
            status = run_filters_with_nominated(
                me, state, nominated.get(name, ()), shape_cache, label_keys
            )
            # DynamicResources runs before NodeDeclaredFeatures, the last filter.
            last = status is not None and status.plugin == FEATURES_PLUGIN
            if (status is None or last) and claims is not None and dra is not None:
                here = {r: c for r, c in backed.items() if not state.allocatable.scalar.get(r)}
                claimed, verdict = claims_filter(
                    claims,
                    name,
                    state.labels,
                    dra,
                    skip=own_claims,
                    extended=extended_claim(pod, here) if here else None,
                )
                if verdict is not None:
                    claim_verdicts.append(verdict_to_dict(verdict))
                if claimed is not None and claimed.code is Code.ERROR and aborted is None:
                    aborted = f'running "{DRA_PLUGIN}" filter plugin: {claimed.reasons[0]}'
                status = claimed or status
            if status is not None:
                statuses[name] = status
    if classes is not None:
        fitting = [positions for positions, status in classes if status is None]
        feasible = tuple([names[at] for at in sorted(itertools.chain.from_iterable(fitting))])
        if not feasible:
            # What preemption may help, in node order; the rest is only counted.
            lower = snapshot.with_lower_priority(me.priority)
            helped = sorted(
                (at, status)
                for positions, status in classes
                if status is not None and status.resolvable
                for at in positions
                if at in lower
            )
            statuses = {names[at]: status for at, status in helped}
            without_victims = sum(
                len(p) for p, status in classes if status is not None and status.resolvable
            ) - len(helped)
    else:
        feasible = tuple(name for name in states if name not in statuses)
    if aborted is not None:
        # An Error from a filter ends the scheduling cycle: no node is chosen.
        warnings.append(f"the scheduling cycle fails with an error: {aborted}")
        feasible = ()

    summary: str | None = None
    filter_summary: str | None = None
    outcome = PreemptionOutcome()
    preemption_notes: dict[str, tuple[str, ...]] = {}
    gates = [text(g, "name") for g in sequence(pod, "spec", "schedulingGates")]
    if gates:
        # SchedulingGates' PreEnqueue: the pod is never tried while it has gates. The
        # verdicts below say where it would go once they are removed.
        fits = f"{len(feasible)} node(s) would fit" if feasible else "no node would fit"
        warnings.append(f"waiting for scheduling gates: [{' '.join(gates)}]; without them {fits}")
        feasible = ()
        summary = filter_summary = SCHEDULING_GATED
    elif aborted is not None:
        summary = filter_summary = aborted
    elif not feasible:
        counted: Counter[str] = Counter()
        if classes is not None:
            for positions, status in classes:
                for reason in status.reasons if status is not None else ():
                    counted[reason] += len(positions)
        else:
            counted.update(reason for s in statuses.values() for reason in s.reasons)
        filter_summary = fit_error_message(
            len(states), (), prefilter_message=prefilter_message, counted=counted
        )
        if before_dra:
            post = _NO_DRA_STATE
        else:
            post, outcome, preemption_notes = _post_filter(
                me, pod, states, statuses, nominated, options, snapshot.budgets, without_victims
            )
        summary = fit_error_message(
            len(states),
            (),
            prefilter_message=prefilter_message,
            postfilter_message=post,
            counted=counted,
        )

    verdicts = (
        NodeVerdicts(names, classes) if classes is not None else NodeVerdicts.of(names, statuses)
    ).with_preemption(preemption_notes, ran=outcome.ran and outcome.eligible)
    return PodExplanation(
        pod=me.key,
        feasible=feasible,
        nodes=verdicts,
        summary=summary,
        filter_summary=filter_summary,
        preemption=outcome,
        never_fits_anywhere=missing,
        requests=requests,
        warnings=tuple(warnings),
        claims=tuple(claim_verdicts),
    )


def explain_pods(
    pods: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
    pods_on_nodes: Iterable[Mapping[str, Any]] = (),
    *,
    options: ExplainOptions | None = None,
) -> list[PodExplanation]:
    """:func:`explain_pod` for each pod, against the same cluster state."""
    snapshot = cluster_snapshot(nodes, pods_on_nodes, options)
    return [explain_pod(p, (), (), options=options, snapshot=snapshot) for p in pods]
