"""The scheduler's "0/N nodes are available: ..." sentence.

``FitError.Error`` (``pkg/scheduler/framework/types.go``) counts every
reason of every rejected node, writes each as ``"<count> <reason>"``,
sorts those strings (bytewise, so ``"10 x"`` sorts before ``"2 y"``) and
joins them with ``", "``.  When a PreFilter plugin rejected the pod, its
message replaces the histogram.  The PostFilter plugins' message follows
after a space; kube-scheduler's event is exactly this string, e.g.::

    0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't
    match Pod's node affinity/selector. preemption: 0/3 nodes are available:
    3 Preemption is not helpful for scheduling.

(one line).  Older releases put ``no new claims to deallocate, `` (the
DynamicResources PostFilter) before ``preemption:``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

__all__ = ["NO_NODES", "fit_error_message"]

#: ``ErrNoNodesAvailable``: the message when the cluster has no nodes at all.
NO_NODES: Final = "no nodes available to schedule pods"


def fit_error_message(
    num_all_nodes: int,
    reasons_per_node: Iterable[Sequence[str]],
    *,
    prefilter_message: str = "",
    postfilter_message: str = "",
    counted: Mapping[str, int] | None = None,
) -> str:
    """``FitError.Error()`` for the given per-node reasons, and the reasons `counted`
    already (how many nodes gave each)."""
    message = f"0/{num_all_nodes} nodes are available:"
    if prefilter_message:
        message += f" {prefilter_message}."
    else:
        counts = Counter(reason for reasons in reasons_per_node for reason in reasons)
        counts.update(counted or {})
        counts = +counts
        histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if postfilter_message:
        message += f" {postfilter_message}"
    return message
