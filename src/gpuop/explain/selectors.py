"""Label selectors, node affinity and tolerations, matched as upstream does.

Ports of ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``
(``GetRequiredNodeAffinity`` and its lazy-error node selector),
``k8s.io/apimachinery/pkg/labels`` requirements, and
``v1.Toleration.ToleratesTaint`` including the numeric ``Gt``/``Lt``
operators of the ``TaintTolerationComparisonOperators`` feature gate
(alpha and off in v1.37: then such a toleration tolerates nothing, and the
API server refuses pods that use it).

Each matcher also returns a short note on why something did not match, for
the per-node details of a report; the scheduler's own reason strings live
in :mod:`gpuop.explain.filters`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpuop.explain.resources import is_label_value, is_qualified_name
from gpuop.manifests.fields import mapping, scalar_text, sequence, text

__all__ = [
    "NodeAffinity",
    "Taint",
    "Toleration",
    "find_untolerated_taint",
    "node_affinity_of",
    "taints_of",
    "tolerations_of",
]

_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_LABEL_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def go_parse_int(candidate: str) -> int | None:
    """``strconv.ParseInt(candidate, 10, 64)``: sign allowed, leading zeros allowed."""
    body = candidate[1:] if candidate[:1] in ("+", "-") else candidate
    if not body or not body.isascii() or not body.isdigit():
        return None
    number = int(candidate)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _strict_int(candidate: str) -> int | None:
    """A canonical decimal int64 (no sign ``+``, no leading zeros, no ``-0``).

    The toleration comparison operators parse both sides this way.
    """
    body = candidate[1:] if candidate.startswith("-") else candidate
    if not body or not body.isascii() or not body.isdigit():
        return None
    if body != "0" and body.startswith("0"):
        return None
    if candidate == "-0":
        return None
    number = int(candidate)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): scalar_text(v) for k, v in mapping(obj, "metadata", "labels").items()}


@dataclass(frozen=True)
class _Requirement:
    """One ``NodeSelectorRequirement``; ``error`` is set when it does not parse."""

    key: str
    operator: str
    values: tuple[str, ...]
    error: str = ""

    def describe(self) -> str:
        if self.operator in ("Exists", "DoesNotExist"):
            return f"{self.key} {self.operator}"
        return f"{self.key} {self.operator} [{', '.join(self.values)}]"


def _label_requirement(raw: Any) -> _Requirement:
    key = text(raw, "key")
    operator = text(raw, "operator")
    values = tuple(scalar_text(v) for v in sequence(raw, "values"))
    req = _Requirement(key, operator, values)
    problem = ""
    if operator not in _LABEL_OPERATORS:
        problem = f"unsupported operator {operator!r}"
    elif not is_qualified_name(key):
        problem = f"invalid label key {key!r}"
    elif operator in ("In", "NotIn") and not values:
        problem = "values must be non-empty for In and NotIn"
    elif operator in ("Exists", "DoesNotExist") and values:
        problem = "values must be empty for Exists and DoesNotExist"
    elif operator in ("Gt", "Lt") and (len(values) != 1 or go_parse_int(values[0]) is None):
        problem = "Gt and Lt need exactly one integer value"
    elif any(not is_label_value(v) for v in values):
        problem = "invalid label value"
    return _Requirement(key, operator, values, problem) if problem else req


def _field_requirement(raw: Any) -> _Requirement:
    key = text(raw, "key")
    operator = text(raw, "operator")
    values = tuple(scalar_text(v) for v in sequence(raw, "values"))
    problem = ""
    if operator not in ("In", "NotIn"):
        problem = f"unsupported field operator {operator!r}"
    elif len(values) != 1:
        problem = "field requirements need exactly one value"
    return _Requirement(key, operator, values, problem)


def _label_matches(req: _Requirement, labels: Mapping[str, str]) -> bool:
    present = req.key in labels
    found = labels.get(req.key, "")
    if req.operator == "In":
        return present and found in req.values
    if req.operator == "NotIn":
        return not present or found not in req.values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    if not present:
        return False
    have = go_parse_int(found)
    want = go_parse_int(req.values[0])
    if have is None or want is None:
        return False
    return have > want if req.operator == "Gt" else have < want


def _field_matches(req: _Requirement, fields: Mapping[str, str]) -> bool:
    found = fields.get(req.key, "")
    return found == req.values[0] if req.operator == "In" else found != req.values[0]


@dataclass(frozen=True)
class _Term:
    expressions: tuple[_Requirement, ...]
    fields: tuple[_Requirement, ...]

    def errors(self) -> list[str]:
        return [f"{r.describe()}: {r.error}" for r in (*self.expressions, *self.fields) if r.error]

    def mismatch(self, labels: Mapping[str, str], fields: Mapping[str, str]) -> str:
        """Why this term does not select the node ("" when it does)."""
        errors = self.errors()
        if errors:
            return "invalid term: " + "; ".join(errors)
        for req in self.expressions:
            if not _label_matches(req, labels):
                have = f"{req.key}={labels[req.key]}" if req.key in labels else f"no {req.key}"
                return f"{req.describe()} (node has {have})"
        if fields:
            for req in self.fields:
                if not _field_matches(req, fields):
                    return f"{req.describe()} (node is {fields.get(req.key, '')!r})"
        return ""


@dataclass(frozen=True)
class NodeAffinity:
    """``nodeaffinity.RequiredNodeAffinity``: ``nodeSelector`` AND required terms."""

    node_selector: tuple[tuple[str, str], ...]
    has_required: bool
    terms: tuple[_Term, ...]
    #: What the PreFilter pins the pod to: None for all nodes, else the
    #: union over terms of their ``metadata.name In`` values (empty: conflict).
    pinned_names: frozenset[str] | None = None

    @property
    def label_keys(self) -> tuple[str, ...]:
        """The node labels it reads, in order, each once."""
        keys = [key for key, _ in self.node_selector]
        keys += [r.key for t in self.terms for r in t.expressions]
        return tuple(dict.fromkeys(keys))

    def mismatch(self, node: Mapping[str, Any]) -> str:
        """Why the node is not selected, or ``""`` when it is."""
        labels = labels_of(node)
        for key, wanted in self.node_selector:
            if key not in labels or labels[key] != wanted:
                have = f"{key}={labels[key]}" if key in labels else f"no {key}"
                return f"nodeSelector {key}={wanted} (node has {have})"
        if not self.has_required:
            return ""
        name = text(node, "metadata", "name")
        fields = {"metadata.name": name} if name else {}
        notes: list[str] = []
        for index, term in enumerate(self.terms):
            note = term.mismatch(labels, fields)
            if not note:
                return ""
            notes.append(f"term {index}: {note}")
        if not notes:
            return "required node affinity has no usable nodeSelectorTerms"
        return "no required node affinity term matches: " + "; ".join(notes)


def node_affinity_of(pod: Mapping[str, Any]) -> NodeAffinity | None:
    """The pod's required node constraints, or None when it has none (PreFilter skips)."""
    spec = mapping(pod, "spec")
    selector_raw = spec.get("nodeSelector")
    required = mapping(spec, "affinity", "nodeAffinity").get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not isinstance(selector_raw, Mapping) and required is None:
        return None
    selector: tuple[tuple[str, str], ...] = ()
    if isinstance(selector_raw, Mapping):
        selector = tuple((str(k), scalar_text(v)) for k, v in selector_raw.items())
    terms: list[_Term] = []
    raw_terms = sequence(required, "nodeSelectorTerms")
    for raw in raw_terms:
        expressions = sequence(raw, "matchExpressions")
        fields = sequence(raw, "matchFields")
        if not expressions and not fields:
            continue  # an empty term selects nothing and is dropped
        terms.append(
            _Term(
                tuple(_label_requirement(r) for r in expressions),
                tuple(_field_requirement(r) for r in fields),
            )
        )
    return NodeAffinity(selector, required is not None, tuple(terms), _pinned_names(raw_terms))


def _pinned_names(raw_terms: list[Any]) -> frozenset[str] | None:
    """NodeAffinity's PreFilter over the raw terms (empty ones included).

    Every term must pin ``metadata.name`` with ``In`` for the pod to be
    restricted to named nodes; requirements inside a term intersect.
    """
    if not raw_terms:
        return None
    union: set[str] = set()
    for raw in raw_terms:
        pinned: set[str] | None = None
        for req in sequence(raw, "matchFields"):
            if text(req, "key") == "metadata.name" and text(req, "operator") == "In":
                values = {scalar_text(v) for v in sequence(req, "values")}
                pinned = values if pinned is None else pinned & values
        if pinned is None:
            return None
        union |= pinned
    return frozenset(union)


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return (
            f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"
        )


@dataclass(frozen=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint, comparison_operators: bool = True) -> bool:
        """``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        if self.operator == "Exists":
            return True
        if self.operator in ("Gt", "Lt") and comparison_operators:
            wanted = _strict_int(self.value)
            have = _strict_int(taint.value)
            if wanted is None or have is None:
                return False
            return have > wanted if self.operator == "Gt" else have < wanted
        return False


def taints_of(node: Mapping[str, Any]) -> list[Taint]:
    return [
        Taint(text(t, "key"), scalar_text(t.get("value")), text(t, "effect"))
        for t in sequence(node, "spec", "taints")
        if isinstance(t, Mapping)
    ]


def tolerations_of(pod: Mapping[str, Any]) -> list[Toleration]:
    return [
        Toleration(
            text(t, "key"), text(t, "operator"), scalar_text(t.get("value")), text(t, "effect")
        )
        for t in sequence(pod, "spec", "tolerations")
        if isinstance(t, Mapping)
    ]


def find_untolerated_taint(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], comparison_operators: bool = True
) -> Taint | None:
    """The first ``NoSchedule``/``NoExecute`` taint no toleration covers, if any."""
    for taint in taints:
        if taint.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.tolerates(taint, comparison_operators) for t in tolerations):
            return taint
    return None
