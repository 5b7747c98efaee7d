"""10,000-input fuzzing, engine level: `run_checks` and `explain_pod` never raise.

The checker turns an exception inside a check into a GPU000 finding, so "no traceback"
means: `run_checks` returns, no GPU000 finding, and the report serialises. Inputs come
from the adversarial strategies of `test_check_fuzz` (wrong types everywhere, huge
strings, bad quantities) and from mutating the generated corpus at a random path.

Default: 3,800 inputs through `run_checks` here and 6,300 through `explain_pod` in
`tests/unit/explain/test_explain_fuzz_counts.py` (10,100 in all, under a minute).
Hypothesis draws the structured inputs; for the mutated corpus each Hypothesis example
seeds a cheap random mutator that derives ten inputs, so most of the time goes to the
engine, not to generating. The Hypothesis profile sizes every count (`scaled`: a tenth under
`dev`, ten times under `deep`), and the `fuzz` marker keeps the file out of `make unit`. Counts are checked,
not assumed: each test counts the inputs it ran and the last test asserts the totals.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import corpus_gen
import pytest
from fuzzing import mutate, scaled, value_paths
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_check_fuzz import _objects, nodes

from gpuop.check import run_checks, to_sarif

pytestmark = pytest.mark.fuzz
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
RAN: dict[str, int] = {}
TARGETS = {"objects": 800, "nodes": 500, "mutated": 2500}
BATCH = 10  # inputs derived from one Hypothesis example by the random mutator


def _wanted(kind: str) -> int:
    """How many inputs of `kind` run under the loaded profile."""
    batch = BATCH if kind == "mutated" else 1
    return max(1, scaled(TARGETS[kind]) // batch) * batch


def _corpus_objects() -> list[Any]:
    policy = corpus_gen.policy_object(sandbox=True)
    resolved = corpus_gen.resolved(policy)
    objects: list[Any] = [policy]
    for index, (model, workload) in enumerate(
        [("A10", "container"), ("A10", "vm-vgpu"), ("A100", "vm-passthrough")]
    ):
        node, node_plan = corpus_gen.node_object(
            f"n{index}", resolved, model=model, workload=workload
        )
        objects.append(node)
        objects.extend(corpus_gen.operand_pods(node, node_plan))
    return objects


def _assert_sound(objects: list[Any], kind: str) -> None:
    RAN[kind] = RAN.get(kind, 0) + 1
    report = run_checks(objects)
    crashes = [f for f in report.findings if f.code == "GPU000"]
    assert not crashes, crashes
    json.loads(report.to_json())
    json.dumps(to_sarif(report))


@pytest.fixture(scope="module", autouse=True)
def _print_counts() -> Iterator[None]:
    yield
    print(f"\nrun_checks inputs: {RAN} = {sum(RAN.values())}")


@settings(FUZZ, max_examples=_wanted("objects"))
@given(_objects)
def test_run_checks_on_adversarial_objects(objects: list[Any]) -> None:
    _assert_sound(objects, "objects")


@settings(FUZZ, max_examples=_wanted("nodes"))
@given(st.lists(nodes(), min_size=1, max_size=5), st.booleans())
def test_run_checks_on_adversarial_nodes(node_list: list[Any], sandbox: bool) -> None:
    _assert_sound([corpus_gen.policy_object(sandbox=sandbox), *node_list], "nodes")


_CORPUS = _corpus_objects()
_CORPUS_PATHS = [(i, p) for i, obj in enumerate(_CORPUS) for p in value_paths(obj)]


@settings(FUZZ, max_examples=_wanted("mutated") // BATCH)
@given(st.integers(min_value=0, max_value=2**32))
def test_run_checks_on_a_mutated_corpus(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(BATCH):
        _assert_sound(mutate(_CORPUS, rng, rng.randint(1, 4)), "mutated")


def test_zz_the_counts_were_reached() -> None:
    """Runs last in this file: every fuzz test above ran its full count."""
    if set(RAN) != set(TARGETS):
        pytest.skip("only part of this file ran")
    for kind in TARGETS:
        assert RAN[kind] >= _wanted(kind), (kind, RAN[kind])
