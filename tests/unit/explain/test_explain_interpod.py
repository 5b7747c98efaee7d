"""InterPodAffinity's Filter, as kube-scheduler v1.37.2's `interpodaffinity` package."""

from __future__ import annotations

from typing import Any

from explain_builders import node, pod

from gpuop.explain import explain_pod
from gpuop.explain.interpod import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _nodes(*zones: str) -> list[dict[str, Any]]:
    return [node(f"n{i}", labels={ZONE: zone, HOST: f"n{i}"}) for i, zone in enumerate(zones)]


def _running(
    name: str, on: str, labels: dict[str, str], namespace: str = "ml", **spec: Any
) -> dict[str, Any]:
    body = pod(name, namespace=namespace, **spec)
    body["metadata"]["labels"] = labels
    body["spec"]["nodeName"] = on
    body["status"] = {"phase": "Running"}
    return body


def _term(key: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": labels}, **extra}


def _pending(labels: dict[str, str] | None = None, **affinity: Any) -> dict[str, Any]:
    body = pod("p", namespace="ml", affinity=affinity)
    body["metadata"]["labels"] = labels or {}
    return body


def test_affinity_follows_the_matching_pods_domain() -> None:
    body = _pending(
        podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [_term(ZONE, {"app": "db"})]}
    )
    result = explain_pod(body, _nodes("a", "a", "b"), [_running("db", "n1", {"app": "db"})])
    assert result.feasible == ("n0", "n1")
    refused = next(v for v in result.nodes if v.name == "n2")
    assert refused.reasons == (REASON_AFFINITY,)
    assert refused.plugin == "InterPodAffinity"


def test_the_first_pod_of_a_group_may_go_anywhere() -> None:
    term = _term(ZONE, {"app": "web"})
    body = _pending(
        {"app": "web"}, podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    )
    assert explain_pod(body, _nodes("a", "b")).feasible == ("n0", "n1")
    # Not matching its own term: with no matching pod anywhere, no node will do.
    other = _pending(
        {"app": "cache"}, podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    )
    result = explain_pod(other, _nodes("a", "b"))
    assert result.feasible == ()
    assert result.summary == (
        f"0/2 nodes are available: 2 {REASON_AFFINITY}. preemption: 0/2 nodes are available:"
        " 2 Preemption is not helpful for scheduling."
    )


def test_anti_affinity_keeps_replicas_apart() -> None:
    body = _pending(
        {"app": "serve"},
        podAntiAffinity={
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(HOST, {"app": "serve"})]
        },
    )
    result = explain_pod(body, _nodes("a", "a"), [_running("s1", "n0", {"app": "serve"})])
    assert result.feasible == ("n1",)
    assert next(v for v in result.nodes if v.name == "n0").reasons == (REASON_ANTI_AFFINITY,)


def test_running_pods_anti_affinity_is_honoured() -> None:
    guard = _running(
        "guard",
        "n0",
        {"app": "guard"},
        affinity={
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [_term(ZONE, {"app": "noisy"})]
            }
        },
    )
    body = _pending({"app": "noisy"})
    result = explain_pod(body, _nodes("a", "a", "b"), [guard])
    assert result.feasible == ("n2",)
    assert next(v for v in result.nodes if v.name == "n1").reasons == (
        REASON_EXISTING_ANTI_AFFINITY,
    )


def test_namespaces_limit_the_terms() -> None:
    term = _term(ZONE, {"app": "db"})
    body = _pending(podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [term]})
    elsewhere = [_running("db", "n0", {"app": "db"}, namespace="data")]
    assert explain_pod(body, _nodes("a", "b"), elsewhere).feasible == ()
    listed = _term(ZONE, {"app": "db"}, namespaces=["data"])
    body = _pending(podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [listed]})
    assert explain_pod(body, _nodes("a", "b"), elsewhere).feasible == ("n0",)
    chosen = _term(
        ZONE,
        {"app": "db"},
        namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "data"}},
    )
    body = _pending(podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [chosen]})
    assert explain_pod(body, _nodes("a", "b"), elsewhere).feasible == ("n0",)
    everywhere = _term(ZONE, {"app": "db"}, namespaceSelector={})
    body = _pending(podAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [everywhere]})
    assert explain_pod(body, _nodes("a", "b"), elsewhere).feasible == ("n0",)


def test_match_label_keys_are_merged_as_admission_does() -> None:
    term = _term(HOST, {"app": "serve"}, matchLabelKeys=["rev"])
    body = _pending(
        {"app": "serve", "rev": "2"},
        podAntiAffinity={"requiredDuringSchedulingIgnoredDuringExecution": [term]},
    )
    old = [_running("s1", "n0", {"app": "serve", "rev": "1"})]
    assert explain_pod(body, _nodes("a", "a"), old).feasible == ("n0", "n1")


def test_preemption_removes_the_pods_that_repel() -> None:
    body = _pending(
        {"app": "serve"},
        podAntiAffinity={
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(HOST, {"app": "serve"})]
        },
    )
    body["spec"]["priority"] = 1000
    result = explain_pod(body, _nodes("a"), [_running("s1", "n0", {"app": "serve"})])
    assert result.feasible == ()
    assert result.preemption.nominated_node == "n0"
    assert result.preemption.candidates[0].victims == ("ml/s1",)
