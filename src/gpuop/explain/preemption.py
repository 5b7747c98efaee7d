"""DefaultPreemption's dry run, reduced to what decides its message.

``Evaluator.Preempt`` (``pkg/scheduler/framework/preemption``) with the
``DefaultPreemption`` plugin:

1. a pod with ``preemptionPolicy: Never`` is not eligible: the message is
   ``not eligible due to preemptionPolicy=Never.``;
2. only nodes whose filter status is ``Unschedulable`` (not
   ``UnschedulableAndUnresolvable``) are tried; the others are reported as
   ``Preemption is not helpful for scheduling``;
3. on each tried node every pod of lower priority is a potential victim;
   with none, the node is reported as ``No preemption victims found for
   incoming pod``; otherwise the victims are removed and the filters run
   again, and their reasons are reported when the pod still does not fit;
4. if the pod fits somewhere the node is a candidate: victims are
   reprieved while the pod still fits, first those whose eviction would
   violate a PodDisruptionBudget, then the others, each group from the most
   important down (``FilterVictimsWithPDBViolation``: a budget's
   ``status.disruptionsAllowed`` is spent by the matching victims in that
   order, pods in its ``disruptedPods`` not counted); one candidate is
   picked (fewest PDB violations, then the lowest highest victim priority,
   the lowest priority sum, the fewest victims, the latest start) and
   preemption succeeds with ``found a potential placement for pod on node
   <node>, preempting <n> victims``;
5. with no candidate, the message is a fit error over all nodes.

The messages of steps 1, 3, 4 and 5 were checked against a running
kube-scheduler v1.37.2.

Upstream breaks the last ties at random (a Go map), and may stop the dry
run early on large clusters; here ties go to the first node in input
order.  Extenders, workload (pod group) victims and the check for victims
still terminating on the pod's nominated node are not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuop.explain.filters import NodeState, PodFacts, PodOnNode, run_filters_with_nominated
from gpuop.explain.model import (
    NO_VICTIMS,
    NOT_HELPFUL,
    Code,
    PreemptionCandidate,
    PreemptionOutcome,
    Status,
)
from gpuop.explain.report import fit_error_message
from gpuop.explain.spread import LabelSelector, label_selector
from gpuop.manifests.fields import get, mapping, text

__all__ = ["NOT_HELPFUL", "NO_VICTIMS", "Budget", "budgets_of", "preempt"]


def _importance(pod: PodOnNode) -> tuple[int, str]:
    """``util.MoreImportantPod``: higher priority, then earlier start, first."""
    return (-pod.priority, pod.start_time or "\uffff")


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget as preemption reads it."""

    namespace: str
    selector: LabelSelector
    allowed: int
    disrupted: frozenset[str]


def budgets_of(objects: Iterable[Any]) -> tuple[Budget, ...]:
    """The PodDisruptionBudgets among `objects`."""
    found = []
    for obj in objects:
        if not isinstance(obj, Mapping) or obj.get("kind") != "PodDisruptionBudget":
            continue
        allowed = get(obj, "status", "disruptionsAllowed")
        found.append(
            Budget(
                text(obj, "metadata", "namespace") or "default",
                label_selector(get(obj, "spec", "selector")),
                allowed if isinstance(allowed, int) and not isinstance(allowed, bool) else 0,
                frozenset(str(k) for k in mapping(obj, "status", "disruptedPods")),
            )
        )
    return tuple(found)


def _split_by_budget(
    victims: Sequence[PodOnNode], budgets: Sequence[Budget]
) -> tuple[list[PodOnNode], list[PodOnNode]]:
    """``FilterVictimsWithPDBViolation``: (violating, not violating), order kept."""
    allowed = [b.allowed for b in budgets]

    def violates(pod: PodOnNode) -> bool:
        if not pod.labels:
            return False
        name = pod.key.split("/", 1)[-1]
        for index, budget in enumerate(budgets):
            if budget.namespace != pod.namespace:
                continue
            if budget.selector.empty or not budget.selector.matches(pod.labels):
                continue
            if name in budget.disrupted:
                continue
            allowed[index] -= 1
            if allowed[index] < 0:
                return True
        return False

    violating: list[PodOnNode] = []
    others: list[PodOnNode] = []
    for pod in victims:
        (violating if violates(pod) else others).append(pod)
    return violating, others


@dataclass(frozen=True)
class _Candidate:
    node: str
    victims: tuple[PodOnNode, ...]  # budget violators first, each group most important first
    violations: int = 0

    @property
    def earliest_start_of_highest_priority(self) -> str:
        """``util.GetEarliestPodStartTime``; a pod not started yet counts as "now"."""
        top = max(v.priority for v in self.victims)
        return min(v.start_time or "\uffff" for v in self.victims if v.priority == top)


def _pick(candidates: list[_Candidate]) -> _Candidate:
    """``pickOneNodeForPreemption`` with the default score functions."""
    int32_offset = 2**31
    scores = (
        lambda c: -c.violations,
        lambda c: -max(v.priority for v in c.victims),
        lambda c: -sum(v.priority + int32_offset for v in c.victims),
        lambda c: -len(c.victims),
    )
    remaining = candidates
    for score in scores:
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
        if len(remaining) == 1:
            return remaining[0]
    latest = max(c.earliest_start_of_highest_priority for c in remaining)
    return next(c for c in remaining if c.earliest_start_of_highest_priority == latest)


def _select_victims(
    pod: PodFacts, node: NodeState, nominated: Sequence[PodOnNode], budgets: Sequence[Budget]
) -> tuple[list[PodOnNode], int, Status | None]:
    """``SelectVictimsOnNode``: (victims, PDB violations, None) or ([], 0, why not)."""
    potential = [p for p in node.pods if p.priority < pod.priority]
    if not potential:
        none = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,), "DefaultPreemption")
        return [], 0, none
    trial = node.clone()
    for victim in potential:
        trial.remove_pod(victim)
    status = run_filters_with_nominated(pod, trial, nominated)
    if status is not None:
        return [], 0, status
    violating, others = _split_by_budget(sorted(potential, key=_importance), budgets)
    victims: list[PodOnNode] = []
    violations = 0
    for group, violate in ((violating, True), (others, False)):
        for candidate in group:
            trial.add_pod(candidate)
            if run_filters_with_nominated(pod, trial, nominated) is not None:
                trial.remove_pod(candidate)
                victims.append(candidate)
                violations += violate
    return victims, violations, None


def preempt(
    pod: PodFacts,
    preemption_policy: str,
    nodes: Mapping[str, NodeState],
    statuses: Mapping[str, Status],
    nominated: Mapping[str, Sequence[PodOnNode]],
    budgets: Sequence[Budget] = (),
    without_victims: int = 0,
) -> tuple[PreemptionOutcome, dict[str, tuple[str, ...]]]:
    """The outcome, and the dry run's reasons per node (for the report) but the nodes
    that need no dry run: where preemption is not helpful (the status is unresolvable)
    and, beyond `statuses`, where no pod has a lower priority.

    `statuses`: in node order, the rejected nodes' statuses, at least those preemption
    may help that have a pod of lower priority; `without_victims`: how many nodes left out
    of `statuses` preemption may help but have no pod of lower priority."""
    if preemption_policy == "Never":
        return (
            PreemptionOutcome(
                ran=True, eligible=False, message="not eligible due to preemptionPolicy=Never."
            ),
            {},
        )
    per_node: dict[str, tuple[str, ...]] = {}
    candidates: list[_Candidate] = []
    errors: list[str] = []
    helpful = without_victims
    for name, status in statuses.items():
        if not status.resolvable:
            continue
        helpful += 1
        state = nodes[name]
        victims, violations, why_not = _select_victims(pod, state, nominated.get(name, ()), budgets)
        if why_not is not None:
            per_node[name] = why_not.reasons
        elif victims:
            candidates.append(_Candidate(name, tuple(victims), violations))
            per_node[name] = ()
        else:  # every victim was reprieved: upstream treats this as an error
            error = f'expected at least one victim pod on node "{name}"'
            errors.append(error)
            per_node[name] = (error,)
    if candidates:
        chosen = _pick(candidates)
        message = (
            f"found a potential placement for pod on node {chosen.node}, "
            f"preempting {len(chosen.victims)} victims"
        )
        outcome = PreemptionOutcome(
            ran=True,
            candidates=tuple(
                PreemptionCandidate(c.node, tuple(v.key for v in c.victims)) for c in candidates
            ),
            nominated_node=chosen.node,
            message=message,
        )
        return outcome, per_node
    if errors:
        # utilerrors.NewAggregate(errs).Error(); the PostFilter then fails
        # with an Error status, which drops the other plugins' messages.
        message = errors[0] if len(errors) == 1 else "[" + ", ".join(dict.fromkeys(errors)) + "]"
        return PreemptionOutcome(ran=True, message=message, error=True), per_node
    message = fit_error_message(
        len(nodes),
        per_node.values(),
        counted={NOT_HELPFUL: len(nodes) - helpful, NO_VICTIMS: without_victims},
    )
    return PreemptionOutcome(ran=True, message=message), per_node
