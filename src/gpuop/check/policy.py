"""Which ClusterPolicy the nodes are checked against.

An override (``--policy``) wins; otherwise the ClusterPolicy the operator reconciles
(`gpuop.api.policies.select_active`: the oldest one not being deleted), otherwise the
default policy. A policy with fields gpuop does not know
is used without them (GPU005), because a newer operator's field should not stop every
other check; a policy with wrong types cannot be used (GPU003) and the plan checks skip.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuop.api.policies import select_active
from gpuop.check.model import Finding, PolicyInfo, Skip
from gpuop.policy import PolicyError, ResolvedPolicy, default_policy, parse_cluster_policy

_UNKNOWN_FIELD = re.compile(r"^(?P<path>.+): unknown field$")
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True)
class PolicyChoice:
    policy: ResolvedPolicy | None
    info: PolicyInfo | None
    findings: tuple[Finding, ...]
    skips: tuple[Skip, ...]
    # No ClusterPolicy in the input: `policy` is the default one, assumed, not known.
    assumed: bool = False


def _name_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) and name else "(unnamed)"


def _info(source: str, policy: ResolvedPolicy | None) -> PolicyInfo:
    if policy is None:
        return PolicyInfo(source, None, None, None)
    return PolicyInfo(source, policy.sandbox_enabled, policy.default_workload, policy.sandbox_mode)


def _delete_path(obj: Any, path: str) -> bool:
    parts: list[str | int] = []
    for match in _PATH_PART.finditer(path):
        parts.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
    if not parts:
        return False
    current = obj
    for part in parts[:-1]:
        if isinstance(part, int):
            if not isinstance(current, list) or part >= len(current):
                return False
            current = current[part]
        else:
            if not isinstance(current, dict) or part not in current:
                return False
            current = current[part]
    last = parts[-1]
    if isinstance(last, str) and isinstance(current, dict) and last in current:
        del current[last]
        return True
    return False


def salvage(
    obj: Mapping[str, Any], problems: Sequence[str]
) -> tuple[dict[str, Any], list[str]] | None:
    """A copy without the unknown fields `problems` name, and those fields; None if other problems."""
    paths = []
    for problem in problems:
        match = _UNKNOWN_FIELD.match(problem)
        if match is None:
            return None
        paths.append(match.group("path"))
    trimmed = copy.deepcopy(dict(obj))
    for path in paths:
        if not _delete_path(trimmed, path):
            return None
    return trimmed, paths


def shown_problems(problems: Sequence[str], limit: int = 8) -> str:
    """The first problems of a CR that cannot be used, and how many more there are."""
    more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
    return "; ".join(problems[:limit]) + more


def choose_policy(
    cluster_policies: Sequence[Mapping[str, Any]],
    override: ResolvedPolicy | None = None,
    override_source: str = "--policy",
) -> PolicyChoice:
    findings: list[Finding] = []
    skips: list[Skip] = []
    if override is not None:
        for warning in override.warnings:
            findings.append(_warning_finding(override.name or override_source, warning))
        return PolicyChoice(override, _info(override_source, override), tuple(findings), ())
    selection = select_active(cluster_policies)
    chosen = selection.active
    if chosen is None:
        default = default_policy()
        going = ", ".join(_name_of(p) for p in selection.deleting)
        findings.append(
            Finding(
                "GPU001",
                "info",
                "ClusterPolicy",
                "(default)",
                f"every ClusterPolicy in the input is being deleted ({going}): using the"
                " default policy, sandbox workloads off"
                if selection.deleting
                else "no ClusterPolicy in the input: using the default policy, sandbox"
                " workloads off",
                "add the ClusterPolicy to the input (`kubectl get clusterpolicies -o json`) or"
                " pass one with --policy FILE",
            )
        )
        return PolicyChoice(default, _info("default", default), tuple(findings), (), assumed=True)
    name = _name_of(chosen)
    for other in selection.ignored:
        findings.append(
            Finding(
                "GPU002",
                "warning",
                "ClusterPolicy",
                _name_of(other),
                f"ClusterPolicy {_name_of(other)} is ignored: the operator reconciles only"
                f" {name}, the oldest",
                f"delete ClusterPolicy {_name_of(other)} and keep the settings in {name}",
            )
        )
    policy: ResolvedPolicy | None
    try:
        policy = parse_cluster_policy(dict(chosen), f"ClusterPolicy {name}")
    except PolicyError as exc:
        salvaged = salvage(chosen, exc.problems)
        policy = None
        if salvaged is not None:
            trimmed, paths = salvaged
            try:
                policy = parse_cluster_policy(trimmed, f"ClusterPolicy {name}")
            except PolicyError:
                policy = None
        if policy is None:
            findings.append(
                Finding(
                    "GPU003",
                    "error",
                    "ClusterPolicy",
                    name,
                    f"ClusterPolicy {name} cannot be used: {shown_problems(exc.problems)}",
                    f"fix the fields named; `gpuop policy validate` on the {name} manifest lists"
                    " every problem",
                )
            )
            skips.append(
                Skip(
                    "nodes",
                    f"ClusterPolicy {name} cannot be used, so what the nodes should run is unknown",
                )
            )
            return PolicyChoice(
                None, _info(f"ClusterPolicy {name}", None), tuple(findings), tuple(skips)
            )
        findings.append(
            Finding(
                "GPU005",
                "warning",
                "ClusterPolicy",
                name,
                f"ClusterPolicy {name} has fields gpuop does not know, ignored for the checks: "
                + ", ".join(paths[:8])
                + (f" (and {len(paths) - 8} more)" if len(paths) > 8 else ""),
                "check the names against the installed CRD (`kubectl explain"
                " clusterpolicy.spec`); a typo here is pruned by the API server",
            )
        )
    for warning in policy.warnings:
        findings.append(_warning_finding(name, warning))
    return PolicyChoice(
        policy, _info(f"ClusterPolicy {name}", policy), tuple(findings), tuple(skips)
    )


def _warning_finding(name: str, warning: str) -> Finding:
    return Finding(
        "GPU006",
        "info",
        "ClusterPolicy",
        name,
        warning,
        "remove the field, or enable what it depends on",
    )


__all__ = ["PolicyChoice", "choose_policy", "salvage"]
