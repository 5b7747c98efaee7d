#!/usr/bin/env python3
"""Write catalog/operand-rbac.yaml from NVIDIA GPU Operator's state assets.

Each operand of NVIDIA's operator runs under a ServiceAccount of its own, bound to a Role
in the operator's namespace and (for most) a ClusterRole. Those rights are facts about what
NVIDIA's images do with the API, so gpuop takes them from upstream's assets rather than
guessing: `python scripts/derive-operand-rbac.py UPSTREAM_CHECKOUT`.
OpenShift-only objects (SecurityContextConstraints, Prometheus roles) are left out; the
`use` rule on SCCs inside the Roles is kept, as upstream grants it on every cluster.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

CATALOG = Path(__file__).resolve().parents[1] / "src" / "gpuop" / "catalog"
HEADER = """\
# The API identity of every operand: its ServiceAccount, the Role it gets in the operator's
# namespace and the ClusterRole it gets cluster-wide, with the exact rules.
#
# Derived by scripts/derive-operand-rbac.py from NVIDIA GPU Operator {tag} (commit {commit},
# assets/*/01xx-03xx, Apache-2.0): NVIDIA's operand images use the API with these rights, so
# gpuop grants the same, no more. Bindings carry the role's name. Keys are gpuop's operand
# names (catalog/operands.yaml).
"""


def _rules(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = ("apiGroups", "resources", "verbs", "resourceNames")
    return [{key: list(rule[key]) for key in keys if rule.get(key)} for rule in rules]


def main(upstream: Path, tag: str, commit: str) -> None:
    operands = yaml.safe_load((CATALOG / "operands.yaml").read_text())["operands"]
    result: dict[str, dict[str, object]] = {}
    for operand in operands:
        state_dir = upstream / "assets" / operand["state"]
        entry: dict[str, object] = {}
        for path in sorted(state_dir.glob("0[123]*.yaml")):
            if "openshift" in path.name:
                continue
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc:
                    continue
                kind, meta = doc["kind"], doc["metadata"]
                labels = dict(meta.get("labels") or {})
                if kind == "ServiceAccount":
                    entry["service_account"] = meta["name"]
                    if labels:
                        entry["labels"] = labels
                elif kind in ("Role", "ClusterRole"):
                    key = "role" if kind == "Role" else "cluster_role"
                    entry[key] = {"name": meta["name"], "rules": _rules(doc.get("rules") or [])}
        for path in sorted(state_dir.glob("0[4-9]*.y*ml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc and doc.get("kind") == "DaemonSet":
                    pod = doc["spec"]["template"]["spec"]
                    entry["pod_service_account"] = pod.get("serviceAccountName")
        if "service_account" in entry:
            result[operand["name"]] = entry
    text = HEADER.format(tag=tag, commit=commit) + yaml.safe_dump(
        {"schema_version": 1, "operands": result},
        sort_keys=False,
        width=100,
        default_flow_style=None,
    )
    (CATALOG / "operand-rbac.yaml").write_text(text)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: derive-operand-rbac.py UPSTREAM_CHECKOUT TAG COMMIT")
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
