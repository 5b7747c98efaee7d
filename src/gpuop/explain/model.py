"""The values the explainer computes and returns.

Plain frozen dataclasses; :meth:`PodExplanation.to_dict` gives the stable
JSON shape documented in :mod:`gpuop.explain`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "Code",
    "ExplainOptions",
    "Insufficient",
    "NodeVerdict",
    "PodExplanation",
    "PreemptionCandidate",
    "PreemptionOutcome",
    "Status",
]


class Code(Enum):
    """The rejection codes of ``framework.Status`` that the filters use."""

    #: Rejected here, but preemption might help.
    UNSCHEDULABLE = "Unschedulable"
    #: Rejected here, and removing pods would not change that.
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"
    #: Something went wrong evaluating (upstream's ``Error``).
    ERROR = "Error"


@dataclass(frozen=True)
class Insufficient:
    """``noderesources.InsufficientResource``: one resource a node is short of."""

    resource: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "requested": self.requested,
            "used": self.used,
            "allocatable": self.capacity,
            "unresolvable": self.unresolvable,
        }


@dataclass(frozen=True)
class Status:
    """A filter's verdict on one node: who rejected it, in the scheduler's words."""

    code: Code
    reasons: tuple[str, ...]
    plugin: str = ""
    details: tuple[str, ...] = ()
    insufficient: tuple[Insufficient, ...] = ()

    @property
    def resolvable(self) -> bool:
        """Whether preemption is worth trying on this node."""
        return self.code is Code.UNSCHEDULABLE


@dataclass(frozen=True)
class ExplainOptions:
    """Which scheduler to reproduce.

    The defaults match an unconfigured kube-scheduler v1.37 (default
    profile, default feature gates).  The other settings exist to compare
    with clusters that differ.
    """

    #: The DefaultPreemption PostFilter and its ``preemption: ...`` message.
    preemption: bool = True
    #: PodLevelResources (beta, on): ``spec.resources`` replaces container totals.
    pod_level_resources: bool = True
    #: TaintTolerationComparisonOperators (alpha, off in v1.37): numeric
    #: ``Gt``/``Lt`` tolerations.  Off, such a toleration tolerates nothing.
    toleration_comparison_operators: bool = False
    #: Older releases: the DynamicResources PostFilter said ``no new claims to
    #: deallocate`` for pods without ResourceClaims, before ``preemption:``.
    #: In v1.37 it rejects without a message.
    dra_no_claims_message: bool = False
    #: Older releases: name the taint in the reason, ``node(s) had
    #: untolerated taint {key: value}``, as kube-scheduler did before
    #: kubernetes PR #134740 (v1.35, backported to v1.34 patch releases).
    name_untolerated_taint: bool = False


@dataclass(frozen=True)
class NodeVerdict:
    """What the filters made of one node."""

    name: str
    fits: bool
    plugin: str = ""
    reasons: tuple[str, ...] = ()
    details: tuple[str, ...] = ()
    insufficient: tuple[Insufficient, ...] = ()
    #: The reasons preemption's dry run gave for this node (empty if it fits
    #: or preemption did not run).
    preemption: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "fits": self.fits,
            "plugin": self.plugin or None,
            "reasons": list(self.reasons),
            "details": list(self.details),
            "insufficient": [i.to_dict() for i in self.insufficient],
            "preemption": list(self.preemption),
        }


@dataclass(frozen=True)
class PreemptionCandidate:
    """A node where evicting ``victims`` (namespace/name) would make room."""

    node: str
    victims: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "victims": list(self.victims)}


@dataclass(frozen=True)
class PreemptionOutcome:
    """What DefaultPreemption's PostFilter would conclude."""

    ran: bool = False
    eligible: bool = True
    candidates: tuple[PreemptionCandidate, ...] = ()
    #: The candidate preemption would nominate the pod to.
    nominated_node: str | None = None
    #: The PostFilter's own message, without the ``preemption: `` prefix;
    #: None when preemption did not run.
    message: str | None = None
    #: The PostFilter failed with an error rather than a rejection.
    error: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "ran": self.ran,
            "eligible": self.eligible,
            "possible": bool(self.candidates),
            "candidates": [c.to_dict() for c in self.candidates],
            "nominated_node": self.nominated_node,
            "message": self.message,
        }


@dataclass(frozen=True)
class PodExplanation:
    """Why a pod can or cannot be placed, node by node."""

    pod: str
    feasible: tuple[str, ...]
    nodes: tuple[NodeVerdict, ...]
    summary: str | None
    filter_summary: str | None
    preemption: PreemptionOutcome = field(default_factory=PreemptionOutcome)
    never_fits_anywhere: tuple[str, ...] = ()
    requests: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()
    #: For pods with ResourceClaims: the allocator's verdict per node it reached
    #: (:func:`gpuop.explain.claims.verdict_to_dict`).
    claims: tuple[dict[str, Any], ...] = ()

    @property
    def schedulable(self) -> bool:
        return bool(self.feasible)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (see :mod:`gpuop.explain`)."""
        return {
            "pod": self.pod,
            "feasible": list(self.feasible),
            "nodes": [n.to_dict() for n in self.nodes],
            "summary": self.summary,
            "filter_summary": self.filter_summary,
            "preemption": self.preemption.to_dict(),
            "never_fits_anywhere": list(self.never_fits_anywhere),
            "requests": dict(self.requests),
            "warnings": list(self.warnings),
            **({"claims": list(self.claims)} if self.claims else {}),
        }
