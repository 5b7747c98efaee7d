"""The corpus: every dump gives exactly its expected findings, and the files stay generated."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import corpus_gen
import pytest

from gpuop.check import Report, run_checks
from gpuop.check import engine as check_engine
from gpuop.check.context import CheckContext
from gpuop.check.nodes import check_nodes
from gpuop.check.state import ClusterState
from gpuop.manifests import load_objects
from gpuop.naming import PciDatabase
from gpuop.planner import NodeFacts, plan
from gpuop.policy import default_policy

CORPUS = corpus_gen.CORPUS
EXPECTED: dict[str, list[list[str]]] = json.loads((CORPUS / "expected.json").read_text())


@functools.cache
def _report(name: str) -> Report:
    path = CORPUS / f"{name}.json"
    return run_checks(load_objects(path.read_text(encoding="utf-8"), str(path)))


def test_corpus_files_are_generated() -> None:
    """The committed JSON is what corpus_gen.py writes (run it after changing the generator)."""
    files = {path.name for path in CORPUS.glob("*.json")}
    assert files == {f"{name}.json" for name in corpus_gen.SCENARIOS} | {"expected.json"}
    assert (CORPUS / "expected.json").read_text() == corpus_gen.expected_document()
    for name, (build, _) in corpus_gen.SCENARIOS.items():
        assert (CORPUS / f"{name}.json").read_text() == corpus_gen.render(build()), name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_findings_are_exactly_the_expected_ones(name: str) -> None:
    report = _report(name)
    assert report.codes() == {tuple(pair) for pair in EXPECTED[name]}
    assert not [f for f in report.findings if f.code == "GPU000"]


def test_healthy_dumps_have_no_findings() -> None:
    healthy = [name for name in EXPECTED if name.startswith("healthy-")]
    assert len(healthy) == 4
    for name in healthy:
        report = _report(name)
        assert report.findings == (), name
        assert report.exit_code == 0


@pytest.mark.parametrize("kind", sorted(corpus_gen.DRIFTS))
def test_every_drift_is_found_on_the_drifted_node_only(kind: str) -> None:
    node, _ = corpus_gen.DRIFTS[kind]
    report = _report(f"drift-{kind}")
    on_nodes = {f.node for f in report.findings if f.node}
    assert on_nodes == {node}, [f.subject for f in report.findings]
    # A node that lost its NFD labels still has GPUs: a warning and a note, not an error.
    assert report.exit_code == (0 if kind == "non-gpu-advertising" else 1)


def test_the_nine_simulator_drift_kinds_are_covered() -> None:
    assert set(corpus_gen.DRIFTS) == {
        "stale-resource",
        "wrong-vgpu-count",
        "wrong-vgpu-type",
        "label-flip",
        "two-kinds",
        "deploy-label-edited",
        "vgpu-config-failed",
        "non-gpu-advertising",
        "too-many-devices",
    }


def test_findings_use_their_rules_severity() -> None:
    from gpuop.check import RULES

    for name in EXPECTED:
        for finding in _report(name).findings:
            assert finding.severity == RULES[finding.code].severity, finding


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_healthy_shape_memo_changes_nothing(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = CORPUS / f"{name}.json"
    objects = load_objects(path.read_text(encoding="utf-8"))
    monkeypatch.setattr(check_engine, "check_nodes", functools.partial(check_nodes, memo=False))
    assert run_checks(objects).findings == _report(name).findings


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_planning_projection_gives_the_full_plan(name: str) -> None:
    """Plans are cached on the projection of a node the planner reads; it must not differ."""
    path = CORPUS / f"{name}.json"
    objects = load_objects(path.read_text(encoding="utf-8"))
    state = ClusterState.from_objects(objects)
    raw_nodes = {o["metadata"].get("name"): o for o in objects if o.get("kind") == "Node"}
    for policy in (default_policy(), corpus_gen.resolved(corpus_gen.lab_policy())):
        ctx = CheckContext(state, policy, PciDatabase.builtin())
        for view in state.nodes:
            projected = ctx.plan_for(view)
            full = plan(policy, NodeFacts.from_object(raw_nodes[view.name]))
            assert projected is not None
            expected, got = full.to_dict(), projected.to_dict()
            expected.pop("node"), got.pop("node")
            assert got == expected, view.name


def test_corpus_dumps_are_kubectl_lists() -> None:
    for path in Path(CORPUS).glob("*.json"):
        if path.name == "expected.json":
            continue
        data = json.loads(path.read_text())
        assert data["kind"] == "List" and isinstance(data["items"], list)
