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
   reprieved from the most important down while the pod still fits; one
   candidate is picked (fewest PDB violations, then the lowest highest
   victim priority, the lowest priority sum, the fewest victims, the
   latest start) and preemption succeeds with ``found a potential
   placement for pod on node <node>, preempting <n> victims``;
5. with no candidate, the message is a fit error over all nodes.

The messages of steps 1, 3, 4 and 5 were checked against a running
kube-scheduler v1.37.2.

Upstream breaks the last ties at random (a Go map), and may stop the dry
run early on large clusters; here ties go to the first node in input
order.  PodDisruptionBudgets are not modelled (no victim counts as a
violation), nor are extenders, workload (pod group) victims, or the check
for victims still terminating on the pod's nominated node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpuop.explain.filters import NodeState, PodFacts, PodOnNode, run_filters_with_nominated
from gpuop.explain.model import Code, PreemptionCandidate, PreemptionOutcome, Status
from gpuop.explain.report import fit_error_message

__all__ = ["NOT_HELPFUL", "NO_VICTIMS", "preempt"]

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


def _importance(pod: PodOnNode) -> tuple[int, str]:
    """``util.MoreImportantPod``: higher priority, then earlier start, first."""
    return (-pod.priority, pod.start_time or "\uffff")


@dataclass(frozen=True)
class _Candidate:
    node: str
    victims: tuple[PodOnNode, ...]  # most important first

    @property
    def earliest_start_of_highest_priority(self) -> str:
        """``util.GetEarliestPodStartTime``; a pod not started yet counts as "now"."""
        top = max(v.priority for v in self.victims)
        return min(v.start_time or "\uffff" for v in self.victims if v.priority == top)


def _pick(candidates: list[_Candidate]) -> _Candidate:
    """``pickOneNodeForPreemption`` with the default score functions."""
    int32_offset = 2**31
    scores = (
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
    pod: PodFacts, node: NodeState, nominated: Sequence[PodOnNode]
) -> tuple[list[PodOnNode], Status | None]:
    """``SelectVictimsOnNode``: (victims, None) or ([], why not)."""
    potential = [p for p in node.pods if p.priority < pod.priority]
    if not potential:
        return [], Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_VICTIMS,), "DefaultPreemption")
    trial = node.clone()
    for victim in potential:
        trial.remove_pod(victim)
    status = run_filters_with_nominated(pod, trial, nominated)
    if status is not None:
        return [], status
    victims: list[PodOnNode] = []
    for candidate in sorted(potential, key=_importance):
        trial.add_pod(candidate)
        if run_filters_with_nominated(pod, trial, nominated) is not None:
            trial.remove_pod(candidate)
            victims.append(candidate)
    return victims, None


def preempt(
    pod: PodFacts,
    preemption_policy: str,
    nodes: Mapping[str, NodeState],
    statuses: Mapping[str, Status],
    nominated: Mapping[str, Sequence[PodOnNode]],
) -> tuple[PreemptionOutcome, dict[str, tuple[str, ...]]]:
    """The outcome, and the dry run's reasons per node (for the report)."""
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
    for name, state in nodes.items():
        status = statuses.get(name)
        if status is None or not status.resolvable:
            per_node[name] = (NOT_HELPFUL,)
            continue
        victims, why_not = _select_victims(pod, state, nominated.get(name, ()))
        if why_not is not None:
            per_node[name] = why_not.reasons
        elif victims:
            candidates.append(_Candidate(name, tuple(victims)))
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
    message = fit_error_message(len(nodes), per_node.values())
    return PreemptionOutcome(ran=True, message=message), per_node
