"""Fuzzing `explain_pod` at engine level with counted inputs (see also the checker's file).

6,300 inputs by default (500 arbitrary JSON, 500 Kubernetes-shaped noise, 5,300 mutated
corpus cases: each Hypothesis example seeds a cheap random mutator that derives ten) under
the `ci` Hypothesis profile, a tenth under `dev`, ten times under `deep`; the `fuzz` marker
keeps the file out of `make unit`. Every input must return an explanation that
serialises and hangs together; an exception is a failure.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from fuzzing import mutate, scaled
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_explain_properties import check_consistent, json_values, k8s_like

from gpuop.explain import explain_pod
from kit.explain_corpus import generate_case

pytestmark = pytest.mark.fuzz
TARGETS = {"json": 500, "k8s": 500, "mutated": 5300}
BATCH = 10
RAN: dict[str, int] = {}


def _wanted(kind: str, batch: int = 1) -> int:
    """How many inputs of `kind` run under the loaded profile."""
    return max(1, scaled(TARGETS[kind]) // batch) * batch


def _fuzz(kind: str, batch: int = 1) -> settings:
    return settings(
        max_examples=_wanted(kind, batch) // batch,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


def _explain(kind: str, pod: Any, nodes: list[Any], others: list[Any]) -> None:
    RAN[kind] = RAN.get(kind, 0) + 1
    if not isinstance(pod, dict):
        pod = {"spec": pod}
    check_consistent(explain_pod(pod, nodes, others), len(nodes))


@pytest.fixture(scope="module", autouse=True)
def _print_counts() -> Iterator[None]:
    yield
    print(f"\nexplain_pod inputs: {RAN} = {sum(RAN.values())}")


@_fuzz("json")
@given(json_values, st.lists(json_values, max_size=4), st.lists(json_values, max_size=3))
def test_explain_pod_on_arbitrary_json(pod: Any, nodes: list[Any], others: list[Any]) -> None:
    _explain("json", pod, nodes, others)


_named_nodes = st.lists(
    st.fixed_dictionaries(
        {"metadata": st.fixed_dictionaries({"name": st.text(min_size=1, max_size=3)})},
        optional={"spec": k8s_like, "status": k8s_like},
    ),
    max_size=4,
)


@_fuzz("k8s")
@given(k8s_like, _named_nodes, st.lists(k8s_like, max_size=3))
def test_explain_pod_on_kubernetes_shaped_noise(
    pod: Any, nodes: list[Any], others: list[Any]
) -> None:
    _explain("k8s", pod, nodes, others)


@_fuzz("mutated", BATCH)
@given(st.integers(min_value=0, max_value=2**32))
def test_explain_pod_on_mutated_corpus_cases(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(BATCH):
        case = generate_case(rng.randrange(100_000), rng.randrange(7), existing_pods=True)
        objects = mutate([case.pod, *case.nodes, *case.existing_pods], rng, rng.randint(1, 4))
        count = len(case.nodes)
        _explain("mutated", objects[0], objects[1 : 1 + count], objects[1 + count :])


def test_zz_the_counts_were_reached() -> None:
    """Runs last in this file: every fuzz test above ran its full count."""
    if set(RAN) != set(TARGETS):
        pytest.skip("only part of this file ran")
    for kind in TARGETS:
        batch = BATCH if kind == "mutated" else 1
        assert RAN[kind] >= _wanted(kind, batch), (kind, RAN[kind])
