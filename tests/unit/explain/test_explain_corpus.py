"""The differential-test corpus: reproducible, small, and valid for the API server."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any

import pytest

from gpuop.explain import explain_pod
from gpuop.explain.resources import is_extended_resource_name, is_label_value, is_qualified_name
from gpuop.manifests import parse_quantity
from kit.explain_corpus import CASE_LABEL, EXTENDED_RESOURCES, generate_case, generate_cases

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
CASES = generate_cases(20260101, 60, existing_pods=True)


def test_same_seed_same_cases() -> None:
    assert generate_cases(5, 10) == generate_cases(5, 10)
    assert generate_case(5, 3) == generate_cases(5, 4)[3]
    assert generate_cases(5, 10) != generate_cases(6, 10)


def test_rejects_negative_seeds() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        generate_case(-1, 0)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_is_small_and_valid(case: Any) -> None:
    assert 3 <= len(case.nodes) <= 6
    names = [o["metadata"]["name"] for o in case.objects()]
    assert len(set(names)) == len(names)
    assert all(DNS_LABEL.match(name) and len(name) <= 63 for name in names)
    for the_node in case.nodes:
        labels = the_node["metadata"]["labels"]
        assert labels[CASE_LABEL] == case.name
        assert all(is_qualified_name(k) and is_label_value(v) for k, v in labels.items())
        taints = the_node["spec"].get("taints", [])
        assert len({(t["key"], t["effect"]) for t in taints}) == len(taints)
        for amount in the_node["status"]["allocatable"].values():
            parse_quantity(amount)
    for the_pod in (case.pod, *case.existing_pods):
        for container in the_pod["spec"]["containers"] + the_pod["spec"].get("initContainers", []):
            resources = container.get("resources", {})
            requests, limits = resources.get("requests", {}), resources.get("limits", {})
            for name, request in requests.items():
                if is_extended_resource_name(name):
                    assert limits[name] == request  # extended resources cannot overcommit
                elif name in limits:
                    assert parse_quantity(request) <= parse_quantity(limits[name])
        for term in (
            the_pod["spec"]
            .get("affinity", {})
            .get("nodeAffinity", {})
            .get("requiredDuringSchedulingIgnoredDuringExecution", {})
            .get("nodeSelectorTerms", [])
        ):
            assert term.get("matchExpressions") or term.get("matchFields")
            for field in term.get("matchFields", []):
                assert field["key"] == "metadata.name" and len(field["values"]) == 1
    assert not any(
        t.get("operator") in ("Gt", "Lt") for t in case.pod["spec"].get("tolerations", [])
    )


def test_corpus_covers_the_interesting_outcomes() -> None:
    seen: Counter[str] = Counter()
    for case in generate_cases(11, 150, existing_pods=True):
        explanation = explain_pod(case.pod, case.nodes, case.existing_pods)
        seen["feasible" if explanation.feasible else "pending"] += 1
        for verdict in explanation.nodes:
            seen.update(verdict.reasons)
        if explanation.never_fits_anywhere:
            seen["never fits anywhere"] += 1
    assert seen["feasible"] >= 15 and seen["pending"] >= 15 and seen["never fits anywhere"]
    for reason in (
        "node(s) were unschedulable",
        "node(s) had untolerated taint(s)",
        "node(s) didn't match Pod's node affinity/selector",
        "node(s) didn't satisfy plugin(s) [NodeAffinity]",
        "Too many pods",
        "Insufficient cpu",
        "Insufficient memory",
        *(f"Insufficient {r}" for r in EXTENDED_RESOURCES),
    ):
        assert seen[reason] > 0, reason


def test_isolation_and_node_annotations() -> None:
    case = generate_case(1, 2, isolate=True, node_annotations={"kwok.x-k8s.io/node": "fake"})
    assert case.pod["spec"]["nodeSelector"][CASE_LABEL] == case.name
    assert all(n["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"} for n in case.nodes)


def test_series_3_is_the_one_checked_against_kube_scheduler() -> None:
    # The corpus docstring reports a hand-run differential check of this exact series
    # against kube-scheduler v1.37.2. Changing the generator changes this digest: rerun
    # that check (or the e2e test, once it exists) and update both.
    data = json.dumps(
        [c.objects() for c in generate_cases(3, 80, existing_pods=True)], sort_keys=True
    )
    digest = hashlib.sha256(data.encode()).hexdigest()
    assert digest == "b1192014ad66a555c9dee1460d9fc6cd9ca650415b2f2aaa9745b455a6725cd6"
