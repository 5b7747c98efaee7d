"""Property tests: arbitrary input never crashes the explainer, and its answers hang together."""

from __future__ import annotations

import json
from typing import Any

from fuzzing import replaced, value_paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuop.explain import PodExplanation, explain_pod
from kit.explain_corpus import generate_case

# The count comes from the Hypothesis profile (tests/conftest.py).
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(
        ["1", "2Gi", "500m", "NoSchedule", "Exists", "In", "Gt", "Always", "-1", "1e3"]
    )
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)

# Keys that the explainer reads, so random values land where they matter.
KEYS = [
    "metadata",
    "name",
    "namespace",
    "labels",
    "uid",
    "spec",
    "status",
    "containers",
    "initContainers",
    "resources",
    "requests",
    "limits",
    "overhead",
    "nodeSelector",
    "affinity",
    "nodeAffinity",
    "requiredDuringSchedulingIgnoredDuringExecution",
    "nodeSelectorTerms",
    "matchExpressions",
    "matchFields",
    "key",
    "operator",
    "values",
    "tolerations",
    "taints",
    "effect",
    "value",
    "unschedulable",
    "allocatable",
    "capacity",
    "ports",
    "hostPort",
    "nodeName",
    "priority",
    "phase",
    "restartPolicy",
    "preemptionPolicy",
    "nominatedNodeName",
    "containerStatuses",
    "allocatedResources",
    "cpu",
    "memory",
    "pods",
    "nvidia.com/gpu",
]
k8s_like = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=30,
)


def check_consistent(explanation: PodExplanation, node_count_max: int) -> None:
    json.dumps(explanation.to_dict())
    names = [n.name for n in explanation.nodes]
    assert len(names) == len(set(names)) <= node_count_max
    assert list(explanation.feasible) == [n.name for n in explanation.nodes if n.fits]
    for verdict in explanation.nodes:
        assert verdict.fits == (not verdict.reasons)
    if explanation.feasible:
        assert explanation.summary is None
    elif explanation.nodes:
        assert explanation.summary is not None and explanation.filter_summary is not None
        assert explanation.summary.startswith(explanation.filter_summary)
        assert explanation.filter_summary.startswith(f"0/{len(names)} nodes are available:")


@SETTINGS
@given(
    pod=json_values,
    nodes=st.lists(json_values, max_size=4),
    others=st.lists(json_values, max_size=3),
)
def test_arbitrary_json_never_crashes(pod: Any, nodes: list[Any], others: list[Any]) -> None:
    if not isinstance(pod, dict):
        pod = {"spec": pod}
    check_consistent(explain_pod(pod, nodes, others), len(nodes))


@SETTINGS
@given(
    pod=k8s_like,
    nodes=st.lists(
        st.fixed_dictionaries(
            {"metadata": st.fixed_dictionaries({"name": st.text(min_size=1, max_size=3)})},
            optional={"spec": k8s_like, "status": k8s_like},
        ),
        max_size=4,
    ),
    others=st.lists(k8s_like, max_size=3),
)
def test_kubernetes_shaped_noise_never_crashes(
    pod: Any, nodes: list[Any], others: list[Any]
) -> None:
    if not isinstance(pod, dict):
        pod = {"spec": pod}
    check_consistent(explain_pod(pod, nodes, others), len(nodes))


@SETTINGS
@given(
    seed=st.integers(min_value=0, max_value=10_000),
    data=st.data(),
)
def test_mutated_corpus_cases_never_crash(seed: int, data: st.DataObject) -> None:
    case = generate_case(seed, 0, existing_pods=True, comparison_operators=True)
    objects: list[Any] = [case.pod, *case.nodes, *case.existing_pods]
    target = data.draw(st.integers(min_value=0, max_value=len(objects) - 1))
    path = data.draw(st.sampled_from(value_paths(objects[target])))
    objects[target] = replaced(objects[target], path, data.draw(json_values))
    pod, nodes, others = (
        objects[0],
        objects[1 : 1 + len(case.nodes)],
        objects[1 + len(case.nodes) :],
    )
    if not isinstance(pod, dict):
        pod = {}
    check_consistent(explain_pod(pod, nodes, others), len(nodes))


@SETTINGS
@given(seed=st.integers(min_value=0, max_value=10**9), index=st.integers(min_value=0, max_value=50))
def test_corpus_cases_are_consistent(seed: int, index: int) -> None:
    case = generate_case(seed, index, existing_pods=True)
    explanation = explain_pod(case.pod, case.nodes, case.existing_pods)
    check_consistent(explanation, len(case.nodes))
    assert len(explanation.nodes) == len(case.nodes)
    # Feasible nodes really have room: adding the pod there keeps every count in bounds.
    for name in explanation.feasible:
        again = explain_pod(
            case.pod, [n for n in case.nodes if n["metadata"]["name"] == name], case.existing_pods
        )
        assert again.feasible == (name,)
