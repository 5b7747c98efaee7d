"""Nodes of one shape share the node-only filters' verdict: the cache changes no answer."""

from __future__ import annotations

import pytest

from gpuop.explain import engine, explain_pod
from kit.explain_corpus import generate_cases


@pytest.mark.parametrize(("spread", "interpod"), [(False, False), (True, True)])
def test_the_shape_cache_changes_no_verdict(
    monkeypatch: pytest.MonkeyPatch, spread: bool, interpod: bool
) -> None:
    cases = generate_cases(
        4242, 150, isolate=True, existing_pods=True, spread=spread, interpod=interpod
    )
    cached = [explain_pod(c.pod, c.nodes, c.existing_pods).to_dict() for c in cases]
    monkeypatch.setattr(engine, "_shape_cache", lambda me: (None, ()))
    plain = [explain_pod(c.pod, c.nodes, c.existing_pods).to_dict() for c in cases]
    assert cached == plain


def test_nodes_of_one_shape_are_judged_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from explain_builders import node, pod

    from gpuop.explain import filters

    calls: list[str] = []

    def counting(me, state):  # type: ignore[no-untyped-def]
        calls.append(state.name)

    monkeypatch.setattr(filters, "NODE_FILTERS", (counting,))
    nodes = [node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}) for i in range(50)]
    result = explain_pod(pod("p", requests={"cpu": "1"}), nodes)
    assert len(result.feasible) == 50
    assert calls == ["n0"]
    # A pod that reads the hostname label sees fifty shapes.
    calls.clear()
    picky = pod("q", nodeSelector={"kubernetes.io/hostname": "n7"})
    assert explain_pod(picky, nodes).feasible == tuple(f"n{i}" for i in range(50))
    assert len(calls) == 50
