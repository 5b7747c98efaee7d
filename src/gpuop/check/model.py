"""Findings and the report that carries them (the JSON schema is documented in docs/checks.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gpuop import __version__
from gpuop.check.release import OperatorRelease
from gpuop.check.rules import SEVERITIES, Severity, rule

SCHEMA_VERSION = 1
_SEVERITY_ORDER = {severity: index for index, severity in enumerate(SEVERITIES)}
# Nodes first (the text output groups by node), then the objects people fix most often.
_KIND_ORDER = {"Node": 0, "ClusterPolicy": 1, "KubeVirt": 2}


@dataclass(frozen=True)
class Finding:
    """One problem on one object: what it is, the evidence, and how to fix it."""

    code: str
    severity: Severity
    kind: str
    name: str
    message: str
    hint: str
    namespace: str | None = None
    # The node the finding is about, for a Node or an object placed on one (a pod).
    node: str | None = None

    @property
    def title(self) -> str:
        return rule(self.code).title

    @property
    def subject(self) -> str:
        """`Kind/name` or `Kind/namespace/name`."""
        if self.namespace:
            return f"{self.kind}/{self.namespace}/{self.name}"
        return f"{self.kind}/{self.name}"

    def sort_key(self) -> tuple[int, str, str, str, int, str, str]:
        return (
            _KIND_ORDER.get(self.kind, 9),
            self.kind,
            self.namespace or "",
            self.name,
            _SEVERITY_ORDER[self.severity],
            self.code,
            self.message,
        )

    def to_dict(self) -> dict[str, str]:
        data = {
            "code": self.code,
            "severity": self.severity,
            "title": self.title,
            "kind": self.kind,
            "name": self.name,
        }
        if self.namespace:
            data["namespace"] = self.namespace
        if self.node:
            data["node"] = self.node
        data["message"] = self.message
        data["hint"] = self.hint
        return data


@dataclass(frozen=True)
class Skip:
    """A check that could not run, and why."""

    check: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"check": self.check, "reason": self.reason}


@dataclass(frozen=True)
class PolicyInfo:
    """Which ClusterPolicy the nodes were checked against, and which GPUCluster the nodes
    of the GPU Operator's DRA stack were (`gpu_cluster`: its name, `default` for its
    defaults, None where no node is on that stack)."""

    source: str
    sandbox_enabled: bool | None
    default_workload: str | None
    sandbox_mode: str | None
    gpu_cluster: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "sandbox_enabled": self.sandbox_enabled,
            "default_workload": self.default_workload,
            "sandbox_mode": self.sandbox_mode,
            "gpu_cluster": self.gpu_cluster,
        }


class InventoryEvidence(NamedTuple):
    """One signal the node's GPUs were learnt from, and what it implies."""

    source: str
    signal: str
    implies: str


class NodeSummary(NamedTuple):
    """What the checker decided about one node, and what its GPUs were learnt from."""

    name: str
    gpu_node: bool
    workload: str | None
    gpus: int | None
    model: str | None
    inventory_source: str | None = None
    evidence: tuple[InventoryEvidence, ...] = ()
    # What manages the node's GPUs: {"managers": [...], "certain": bool, "evidence": [...]}.
    management: Mapping[str, Any] | None = None

    @property
    def managers(self) -> tuple[str, ...]:
        return tuple((self.management or {}).get("managers") or ())

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "gpu_node": self.gpu_node,
            "workload": self.workload,
            "gpus": self.gpus,
            "model": self.model,
            "inventory": {
                "source": self.inventory_source,
                "evidence": [item._asdict() for item in self.evidence],
            },
            "management": dict(self.management or {"managers": [], "evidence": []}),
        }


@dataclass(frozen=True)
class Report:
    """The result of `gpuop check`: findings, what was checked, and what was skipped."""

    findings: tuple[Finding, ...]
    skipped: tuple[Skip, ...]
    policy: PolicyInfo | None
    objects: Mapping[str, int]
    nodes: tuple[NodeSummary, ...] = field(default=())
    # The operator release the nodes were checked against (None: not determined).
    release: OperatorRelease | None = None
    # Findings taken out by a `FindingFilter`, by reason (below_severity, ignored, annotation).
    suppressed: Mapping[str, int] = field(default_factory=dict)
    # The lowest severity that makes the exit status 1.
    fail_on: Severity = "error"

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
        for finding in self.findings:
            counts[finding.severity] += 1
        return counts

    @property
    def has_errors(self) -> bool:
        return any(finding.severity == "error" for finding in self.findings)

    @property
    def exit_code(self) -> int:
        """1 with a finding at `fail_on` severity or above (errors by default), else 0."""
        limit = _SEVERITY_ORDER[self.fail_on]
        failing = any(_SEVERITY_ORDER[f.severity] <= limit for f in self.findings)
        return 1 if failing else 0

    def code_counts(self) -> dict[str, int]:
        """How many findings each code has, by code."""
        counts: dict[str, int] = {}
        for finding in self.findings:
            counts[finding.code] = counts.get(finding.code, 0) + 1
        return dict(sorted(counts.items()))

    def codes(self) -> set[tuple[str, str]]:
        """(code, subject) pairs, e.g. ("GPU202", "Node/lab-2"): handy in tests."""
        return {(finding.code, finding.subject) for finding in self.findings}

    def summary(self) -> dict[str, Any]:
        counts = self.counts
        return {
            "error": counts["error"],
            "warning": counts["warning"],
            "info": counts["info"],
            "findings": len(self.findings),
            "by_code": self.code_counts(),
            **({"suppressed": dict(self.suppressed)} if self.suppressed else {}),
            "nodes_checked": len(self.nodes),
            "gpu_nodes": sum(1 for node in self.nodes if node.gpu_node),
            "managers": self.manager_counts(),
            "objects": dict(sorted(self.objects.items())),
            "skipped": [skip.to_dict() for skip in self.skipped],
        }

    def manager_counts(self) -> dict[str, int]:
        """How many nodes each manager of GPUs runs (a node with two counts for both)."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            for manager in node.managers:
                counts[manager] = counts.get(manager, 0) + 1
        return dict(sorted(counts.items()))

    def to_dict(self, tool_name: str = "gpuop check", *, all_nodes: bool = False) -> dict[str, Any]:
        """The report as `-o json` prints it; `all_nodes` lists every node, with its
        manager and evidence, not only those findings are about."""
        about = self._nodes_with_findings
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": tool_name, "version": __version__},
            "policy": self.policy.to_dict() if self.policy else None,
            **({"operator_release": self.release.to_dict()} if self.release else {}),
            "summary": self.summary(),
            "findings": [finding.to_dict() for finding in self.findings],
            # The nodes findings are about, with what their GPUs were learnt from (all nodes
            # would make a 10,000-node report mostly inventory).
            "nodes": [
                node.to_dict()
                for node in sorted(self.nodes, key=lambda n: n.name)
                if all_nodes or node.name in about
            ],
        }

    @property
    def _nodes_with_findings(self) -> frozenset[str]:
        return frozenset(finding.node for finding in self.findings if finding.node)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


def ordered_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Each finding once (by code, subject and message), in the report's order."""
    unique: dict[tuple[str, ...], Finding] = {}
    for finding in findings:
        unique.setdefault((finding.code, finding.subject, finding.message), finding)
    return tuple(sorted(unique.values(), key=Finding.sort_key))


__all__ = [
    "SCHEMA_VERSION",
    "Finding",
    "InventoryEvidence",
    "NodeSummary",
    "PolicyInfo",
    "Report",
    "Skip",
    "ordered_findings",
]
