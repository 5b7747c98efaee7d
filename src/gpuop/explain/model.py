"""The values the explainer computes and returns.

Plain frozen dataclasses; :meth:`PodExplanation.to_dict` gives the stable
JSON shape documented in :mod:`gpuop.explain`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, overload

__all__ = [
    "NOT_HELPFUL",
    "NO_VICTIMS",
    "Code",
    "ExplainOptions",
    "Insufficient",
    "NodeVerdict",
    "NodeVerdicts",
    "PodExplanation",
    "PreemptionCandidate",
    "PreemptionOutcome",
    "Status",
]


#: DefaultPreemption's reasons for a node where preemption cannot help, and for one
#: without a pod of lower priority to evict.
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_VICTIMS: Final = "No preemption victims found for incoming pod"


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


class NodeVerdicts(Sequence[NodeVerdict]):
    """Every node's verdict in node order, kept as classes of nodes that got one status
    (a fleet's thousands of nodes come in few), each :class:`NodeVerdict` made when asked
    for."""

    def __init__(
        self,
        names: Sequence[str],
        classes: Sequence[tuple[Sequence[int], Status | None]],
        preemption: Mapping[str, tuple[str, ...]] | None = None,
        preemption_ran: bool = False,
    ) -> None:
        self.names = names
        self.classes = classes
        self.preemption: Mapping[str, tuple[str, ...]] = preemption or {}
        self.preemption_ran = preemption_ran
        self._status_at: list[Status | None] | None = None

    @classmethod
    def of(cls, names: Sequence[str], statuses: Mapping[str, Status]) -> NodeVerdicts:
        """From each rejected node's status (the others fit)."""
        by_status: dict[int, tuple[list[int], Status | None]] = {}
        for position, name in enumerate(names):
            status = statuses.get(name)
            by_status.setdefault(id(status), ([], status))[0].append(position)
        return cls(names, list(by_status.values()))

    def with_preemption(self, notes: Mapping[str, tuple[str, ...]], *, ran: bool) -> NodeVerdicts:
        """With preemption's dry-run reasons per node; where it `ran`, a rejected node not
        in `notes` had no dry run: not helpful, or (preemption may help) no pod of lower
        priority."""
        return NodeVerdicts(self.names, self.classes, notes, ran)

    def status_of(self, position: int) -> Status | None:
        if self._status_at is None:
            self._status_at = [None] * len(self.names)
            for positions, status in self.classes:
                for at in positions:
                    self._status_at[at] = status
        return self._status_at[position]

    def verdict(self, position: int) -> NodeVerdict:
        name, status = self.names[position], self.status_of(position)
        if status is None:
            return NodeVerdict(name, True)
        return NodeVerdict(
            name,
            False,
            status.plugin,
            status.reasons,
            status.details,
            status.insufficient,
            self._preemption_of(name, status),
        )

    def _preemption_of(self, name: str, status: Status) -> tuple[str, ...]:
        found = self.preemption.get(name)
        if found is not None or not self.preemption_ran:
            return found or ()
        return (NO_VICTIMS,) if status.resolvable else (NOT_HELPFUL,)

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, index: int) -> NodeVerdict: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[NodeVerdict]: ...
    def __getitem__(self, index: int | slice) -> NodeVerdict | Sequence[NodeVerdict]:
        if isinstance(index, slice):
            return [self.verdict(i) for i in range(len(self.names))[index]]
        return self.verdict(range(len(self.names))[index])

    def __iter__(self) -> Iterator[NodeVerdict]:
        return (self.verdict(i) for i in range(len(self.names)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"NodeVerdicts({list(self)!r})"


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
    nodes: NodeVerdicts
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
