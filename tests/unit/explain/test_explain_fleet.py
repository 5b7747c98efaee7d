"""A fleet's pods are explained once per class of nodes and counted from an index of pods
by labels: neither changes an answer."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from explain_builders import node, pod

from gpuop.explain import engine, explain_pod
from gpuop.explain.engine import explain_pods
from gpuop.explain.interpod import InterPodState
from gpuop.explain.model import NO_VICTIMS, NOT_HELPFUL
from gpuop.explain.spread import SpreadState
from kit.explain_corpus import generate_cases

HOST = "kubernetes.io/hostname"


def _fleet(seed: int, spread: bool, interpod: bool) -> tuple[list[Any], list[Any], list[Any]]:
    """Forty cases in one cluster, each node with zero to three twins (its labels and
    capacity under another name), pods of mixed priorities, some pending pods nominated."""
    rng = random.Random(seed)
    nodes: list[Any] = []
    running: list[Any] = []
    pending: list[Any] = []
    for case in generate_cases(
        seed, 40, prefix="f", existing_pods=True, spread=spread, interpod=interpod
    ):
        for original in case.nodes:
            nodes.append(original)
            for twin_index in range(rng.choice((0, 1, 3))):
                twin = copy.deepcopy(original)
                name = f"{original['metadata']['name']}-t{twin_index}"
                twin["metadata"]["name"] = name
                labels = twin["metadata"].setdefault("labels", {})
                if HOST in labels:
                    labels[HOST] = name
                nodes.append(twin)
        for existing in case.existing_pods:
            existing = copy.deepcopy(existing)
            existing["spec"]["priority"] = rng.choice((0, 0, 100, 1000))
            running.append(existing)
        waiting = copy.deepcopy(case.pod)
        waiting["spec"]["priority"] = rng.choice((0, 100, 500, 2000))
        if rng.random() < 0.15:
            target = rng.choice(case.nodes)["metadata"]["name"]
            waiting.setdefault("status", {})["nominatedNodeName"] = target
        pending.append(waiting)
    return nodes, running, pending


ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"


def _uniform_fleet(seed: int) -> tuple[list[Any], list[Any], list[Any]]:
    """A fleet as fleets are: nodes of one make over zones and racks (a few cordoned or
    tainted), jobs' pods one GPU each on them, and pending pods that spread, attract or
    repel by zone, rack and host, some picky about the zone."""
    rng = random.Random(seed)
    nodes: list[Any] = []
    for i in range(90):
        name = f"g{i:03d}"
        labels = {HOST: name, ZONE: f"z{i % 3}"}
        if i % 7:
            labels[RACK] = f"r{i % 5}"
        taints = [{"key": "gpu", "effect": "NoSchedule"}] if i % 23 == 0 else None
        nodes.append(
            node(
                name,
                cpu="16",
                extended={"nvidia.com/gpu": "4"},
                labels=labels,
                taints=taints,
                unschedulable=i % 31 == 5,
            )
        )
    running: list[Any] = []
    for i in range(270):
        bound = pod(
            f"r{i}",
            requests={"cpu": "2"},
            limits={"nvidia.com/gpu": "1"},
            nodeName=rng.choice(nodes)["metadata"]["name"],
            priority=rng.choice((0, 0, 100)),
        )
        bound["metadata"]["labels"] = {"job": f"j{rng.randrange(12)}"}
        running.append(bound)
    pending: list[Any] = []
    for i in range(60):
        job = f"j{rng.randrange(12)}"
        key = rng.choice((ZONE, RACK, HOST))
        spec: dict[str, Any] = {"priority": rng.choice((0, 50, 200))}
        kind = i % 4
        selector = {"matchLabels": {"job": job}}
        if kind == 1:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": rng.choice((1, 2)),
                    "topologyKey": key,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": selector,
                }
            ]
        elif kind == 2:
            section = rng.choice(("podAffinity", "podAntiAffinity"))
            term = {"topologyKey": key, "labelSelector": selector}
            spec["affinity"] = {section: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        elif kind == 3:
            spec["nodeSelector"] = {ZONE: f"z{rng.randrange(3)}"}
        gpus = rng.choice(("1", "2", "4"))
        waiting = pod(f"w{i}", requests={"cpu": "2"}, limits={"nvidia.com/gpu": gpus}, **spec)
        waiting["metadata"]["labels"] = {"job": job}
        pending.append(waiting)
    return nodes, running, pending


def _one_node_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every node through the filters on its own, every pod counted on every node."""
    monkeypatch.setattr(engine, "_shape_cache", lambda me: (None, ()))
    spread_build, interpod_build = SpreadState.build.__func__, InterPodState.build.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        SpreadState,
        "build",
        classmethod(lambda cls, *args: spread_build(cls, *args[:6], None)),
    )
    monkeypatch.setattr(
        InterPodState,
        "build",
        classmethod(lambda cls, *args: interpod_build(cls, *args[:6], None)),
    )


@pytest.mark.parametrize(
    ("seed", "spread", "interpod"), [(11, False, False), (12, True, False), (13, True, True)]
)
def test_classes_and_indexes_change_no_answer(
    monkeypatch: pytest.MonkeyPatch, seed: int, spread: bool, interpod: bool
) -> None:
    nodes, running, pending = _fleet(seed, spread, interpod)
    fast = [r.to_dict() for r in explain_pods(pending, nodes, running + pending)]
    _one_node_at_a_time(monkeypatch)
    slow = [r.to_dict() for r in explain_pods(pending, nodes, running + pending)]
    assert fast == slow
    assert any(r["feasible"] for r in fast)
    assert any(not r["feasible"] for r in fast)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_uniform_fleet_gets_the_answers_node_by_node(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    nodes, running, pending = _uniform_fleet(seed)
    fast = [r.to_dict() for r in explain_pods(pending, nodes, running)]
    _one_node_at_a_time(monkeypatch)
    slow = [r.to_dict() for r in explain_pods(pending, nodes, running)]
    assert fast == slow
    assert {bool(r["feasible"]) for r in fast} == {True, False}


def test_a_fleet_of_one_shape_is_judged_once_per_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuop.explain import filters

    calls: list[str] = []
    run = filters.run_filters

    def counting(me, state, *args):  # type: ignore[no-untyped-def]
        calls.append(state.name)
        return run(me, state, *args)

    monkeypatch.setattr(engine, "run_filters", counting)
    nodes = [node(f"n{i:03d}", labels={HOST: f"n{i:03d}"}) for i in range(300)]
    result = explain_pod(pod("p", requests={"cpu": "1"}), nodes)
    assert len(result.feasible) == 300
    assert calls == ["n000"]


def test_preemption_notes_without_a_dry_run() -> None:
    """Nodes preemption cannot help, and nodes without a pod of lower priority, get the
    scheduler's reason though no dry run was made on them."""
    nodes = [
        node("full", cpu="1"),
        node("small", cpu="1"),
        node("cordoned", cpu="4", unschedulable=True),
    ]
    running = [
        pod("busy", requests={"cpu": "1"}, nodeName="full", priority=10),
        pod("low", requests={"cpu": "1"}, nodeName="small", priority=0),
    ]
    waiting = pod("w", requests={"cpu": "1"}, priority=5)
    result = explain_pod(waiting, nodes, running)
    notes = {v.name: v.preemption for v in result.nodes}
    assert notes == {"full": (NO_VICTIMS,), "small": (), "cordoned": (NOT_HELPFUL,)}
    assert result.preemption.nominated_node == "small"
    assert result.nodes == list(result.nodes)
    assert result.nodes[-1].name == "cordoned"
    assert [v.name for v in result.nodes[1:]] == ["small", "cordoned"]
