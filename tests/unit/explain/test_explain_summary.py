"""The FailedScheduling sentence, word for word, and what preemption adds to it."""

from __future__ import annotations

import pytest
from explain_builders import A10, GPU, affinity, bound, expr, node, pod

from gpuop.explain import ExplainOptions, explain_pod
from gpuop.explain.report import fit_error_message

DRA = "no new claims to deallocate"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


def test_the_briefs_example() -> None:
    the_pod = pod(nodeSelector={"gpu": "yes"}, limits={GPU: 1})
    nodes = [node("a", labels={"gpu": "yes"}), node("b"), node("c", labels={"gpu": "no"})]
    explanation = explain_pod(the_pod, nodes)
    assert explanation.summary == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match "
        "Pod's node affinity/selector. preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )


def test_older_releases_added_the_dynamic_resources_postfilter() -> None:
    the_pod = pod(nodeSelector={"gpu": "yes"}, limits={GPU: 1})
    nodes = [node("a", labels={"gpu": "yes"}), node("b"), node("c", labels={"gpu": "no"})]
    explanation = explain_pod(the_pod, nodes, options=ExplainOptions(dra_no_claims_message=True))
    assert explanation.filter_summary == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match "
        "Pod's node affinity/selector."
    )
    assert explanation.summary == (
        f"{explanation.filter_summary} {DRA}, preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}."
    )


def test_one_node_can_give_several_reasons() -> None:
    # The request exceeds the node's allocatable: preemption cannot help.
    explanation = explain_pod(pod(requests={"cpu": "50", "memory": "100Gi"}), [node("minikube")])
    assert explanation.summary == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. "
        f"preemption: 0/1 nodes are available: 1 {NOT_HELPFUL}."
    )


def test_busy_node_without_lower_priority_pods() -> None:
    others = [bound("busy", "n", requests={"cpu": "7"})]
    explanation = explain_pod(pod(requests={"cpu": "2"}), [node("n")], others)
    assert explanation.summary == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        f"preemption: 0/1 nodes are available: 1 {NO_VICTIMS}."
    )
    assert explanation.nodes[0].preemption == (NO_VICTIMS,)


def test_histogram_is_sorted_as_strings() -> None:
    nodes = [node(f"n{i:02d}") for i in range(10)] + [
        node("gpu-1", labels={"pool": "gpu"}),
        node("gpu-2", labels={"pool": "gpu"}),
    ]
    the_pod = pod(
        affinity=affinity({"matchExpressions": [expr("pool", "In", "gpu")]}), limits={A10: 1}
    )
    assert explain_pod(the_pod, nodes).filter_summary == (
        "0/12 nodes are available: 10 node(s) didn't match Pod's node affinity/selector, "
        "2 Insufficient nvidia.com/GA102GL_A10."
    )


def test_fit_error_message_directly() -> None:
    assert fit_error_message(3, [["b"], ["a", "b"], ["b"]]) == "0/3 nodes are available: 1 a, 3 b."
    assert (
        fit_error_message(2, [["x"]], prefilter_message="pod affinity terms conflict")
        == "0/2 nodes are available: pod affinity terms conflict."
    )
    assert fit_error_message(1, [["x"]], postfilter_message="p: q.") == (
        "0/1 nodes are available: 1 x. p: q."
    )


def test_schedulable_pod_has_no_summary() -> None:
    explanation = explain_pod(pod(limits={GPU: 1}), [node("a"), node("b", extended={GPU: "1"})])
    assert explanation.feasible == ("b",)
    assert explanation.summary is None
    assert explanation.filter_summary is None
    assert explanation.to_dict()["summary"] is None


def test_no_nodes() -> None:
    explanation = explain_pod(pod(), [])
    assert explanation.summary == "no nodes available to schedule pods"
    assert explanation.nodes == ()


def test_prefilter_pins_to_named_nodes() -> None:
    the_pod = pod(
        affinity=affinity({"matchFields": [expr("metadata.name", "In", "b")]}), limits={GPU: 1}
    )
    explanation = explain_pod(the_pod, [node("a"), node("b"), node("c")])
    assert [n.reasons for n in explanation.nodes] == [
        ("node(s) didn't satisfy plugin(s) [NodeAffinity]",),
        ("Insufficient nvidia.com/gpu",),
        ("node(s) didn't satisfy plugin(s) [NodeAffinity]",),
    ]
    assert explanation.filter_summary == (
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_prefilter_conflict() -> None:
    the_pod = pod(
        affinity=affinity(
            {
                "matchFields": [
                    expr("metadata.name", "In", "a"),
                    expr("metadata.name", "In", "b"),
                ]
            }
        )
    )
    explanation = explain_pod(the_pod, [node("a"), node("b")])
    # The PreFilter rejects before DynamicResources' PreFilter runs, so that plugin's
    # PostFilter fails on its missing state: "not found" ends the message, no preemption
    # (as kube-scheduler v1.37.2 says, tests/e2e/test_explain_differential.py).
    assert explanation.summary == "0/2 nodes are available: pod affinity terms conflict. not found"
    assert not explanation.preemption.ran
    assert all(n.reasons == ("pod affinity terms conflict",) for n in explanation.nodes)


def test_node_name_pins_the_pod() -> None:
    explanation = explain_pod(pod(nodeName="b", limits={GPU: 1}), [node("a"), node("b")])
    assert explanation.filter_summary == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "1 node(s) didn't satisfy plugin(s) [NodeName]."
    )


def test_node_name_and_affinity_pins_intersect() -> None:
    pinned = affinity({"matchFields": [expr("metadata.name", "In", "b")]})
    both = explain_pod(pod(nodeName="b", affinity=pinned), [node("a"), node("b"), node("c")])
    assert both.feasible == ("b",)
    assert both.nodes[0].reasons == ("node(s) didn't satisfy plugin(s) [NodeAffinity NodeName]",)
    apart = explain_pod(pod(nodeName="a", affinity=pinned), [node("a"), node("b")])
    assert apart.summary == (
        "0/2 nodes are available: node(s) didn't satisfy plugin(s) [NodeAffinity NodeName] "
        "simultaneously. not found"
    )


def test_node_name_of_a_missing_node() -> None:
    explanation = explain_pod(pod(nodeName="gone"), [node("a"), node("b")])
    assert explanation.filter_summary == (
        "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeName]."
    )


def test_preemption_picks_the_node_with_the_least_important_victims() -> None:
    others = [
        bound("mid", "a", requests={"cpu": "8"}, priority=50),
        bound("low", "b", requests={"cpu": "8"}, priority=10),
    ]
    explanation = explain_pod(
        pod(requests={"cpu": "4"}, priority=100), [node("a"), node("b")], others
    )
    assert explanation.preemption.nominated_node == "b"
    assert [c.node for c in explanation.preemption.candidates] == ["a", "b"]
    assert explanation.summary is not None
    assert explanation.summary.endswith("on node b, preempting 1 victims")


def test_a_term_without_name_pins_keeps_all_nodes() -> None:
    the_pod = pod(
        affinity=affinity(
            {"matchFields": [expr("metadata.name", "In", "a")]},
            {"matchExpressions": [expr("pool", "Exists")]},
        )
    )
    explanation = explain_pod(the_pod, [node("a"), node("b", labels={"pool": "x"}), node("c")])
    assert explanation.feasible == ("a", "b")
    assert explanation.nodes[2].reasons == ("node(s) didn't match Pod's node affinity/selector",)


def test_preemption_succeeds_when_lower_priority_pods_make_room() -> None:
    others = [
        bound("low-1", "n", requests={"cpu": "3"}, priority=0),
        bound("low-2", "n", requests={"cpu": "3"}, priority=0),
        bound("high", "n", requests={"cpu": "1"}, priority=1000),
    ]
    the_pod = pod(requests={"cpu": "4"}, priority=100)
    explanation = explain_pod(the_pod, [node("n")], others)
    assert explanation.feasible == ()
    assert explanation.summary == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential "
        "placement for pod on node n, preempting 1 victims"
    )
    assert explanation.preemption.to_dict()["possible"] is True
    (candidate,) = explanation.preemption.candidates
    assert candidate.node == "n"
    assert len(candidate.victims) == 1  # one of the two low pods is reprieved


def test_preemption_fails_when_the_higher_priority_pods_remain() -> None:
    others = [
        bound("low", "n", requests={"cpu": "1"}, priority=0),
        bound("high", "n", requests={"cpu": "6"}, priority=1000),
    ]
    explanation = explain_pod(
        pod(requests={"cpu": "4"}, priority=100), [node("n"), node("m", cpu="1")], others
    )
    assert explanation.summary == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        f"preemption: 0/2 nodes are available: 1 Insufficient cpu, 1 {NOT_HELPFUL}."
    )


def test_preemption_policy_never() -> None:
    others = [bound("busy", "n", requests={"cpu": "7"})]
    the_pod = pod(requests={"cpu": "2"}, preemptionPolicy="Never")
    explanation = explain_pod(the_pod, [node("n")], others)
    assert explanation.summary == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )
    assert explanation.preemption.eligible is False


def test_too_many_pods_is_resolvable() -> None:
    others = [bound("busy", "n")]
    explanation = explain_pod(pod(), [node("n", pods="1")], others)
    assert explanation.summary == (
        "0/1 nodes are available: 1 Too many pods. "
        f"preemption: 0/1 nodes are available: 1 {NO_VICTIMS}."
    )


@pytest.mark.parametrize(
    ("options", "tail"),
    [
        (ExplainOptions(), f" preemption: 0/1 nodes are available: 1 {NOT_HELPFUL}."),
        (
            ExplainOptions(dra_no_claims_message=True),
            f" {DRA}, preemption: 0/1 nodes are available: 1 {NOT_HELPFUL}.",
        ),
        (ExplainOptions(preemption=False, dra_no_claims_message=True), f" {DRA}"),
        (ExplainOptions(preemption=False), ""),
    ],
)
def test_postfilter_options(options: ExplainOptions, tail: str) -> None:
    explanation = explain_pod(pod(limits={GPU: 1}), [node("n")], options=options)
    assert explanation.summary == f"0/1 nodes are available: 1 Insufficient nvidia.com/gpu.{tail}"


def test_never_fits_anywhere_lists_resources_no_node_advertises() -> None:
    the_pod = pod(limits={GPU: 1, A10: 1, "nvidia.com/NVIDIA_A10-12Q": 1})
    nodes = [node("a", extended={GPU: "0"}), node("b", extended={A10: "2"})]
    explanation = explain_pod(the_pod, nodes)
    assert explanation.never_fits_anywhere == ("nvidia.com/NVIDIA_A10-12Q",)


def test_json_shape() -> None:
    explanation = explain_pod(
        pod("web", namespace="ml", requests={"cpu": "500m"}, limits={GPU: 1}), [node("a")]
    )
    data = explanation.to_dict()
    assert list(data) == [
        "pod",
        "feasible",
        "nodes",
        "summary",
        "filter_summary",
        "preemption",
        "never_fits_anywhere",
        "requests",
        "warnings",
    ]
    assert data["pod"] == "ml/web"
    assert data["requests"] == {"cpu": "500m", GPU: "1"}
    assert list(data["nodes"][0]) == [
        "name",
        "fits",
        "plugin",
        "reasons",
        "details",
        "insufficient",
        "preemption",
    ]
    assert list(data["preemption"]) == [
        "ran",
        "eligible",
        "possible",
        "candidates",
        "nominated_node",
        "message",
    ]
