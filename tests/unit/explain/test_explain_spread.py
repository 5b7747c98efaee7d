"""PodTopologySpread's Filter, as kube-scheduler v1.37.2's `podtopologyspread` package."""

from __future__ import annotations

from typing import Any

from explain_builders import node, pod

from gpuop.explain import explain_pod
from gpuop.explain.spread import REASON_SPREAD, REASON_SPREAD_LABEL, label_selector

ZONE = "topology.kubernetes.io/zone"


def _zones(*zones: str) -> list[dict[str, Any]]:
    return [node(f"n-{zone}", labels={ZONE: zone}) for zone in zones]


def _running(name: str, on: str, labels: dict[str, str], namespace: str = "ml") -> dict[str, Any]:
    body = pod(name, namespace=namespace)
    body["metadata"]["labels"] = labels
    body["spec"]["nodeName"] = on
    body["status"] = {"phase": "Running"}
    return body


def _spread(**constraint: Any) -> dict[str, Any]:
    body = pod("train-9", namespace="ml")
    body["metadata"]["labels"] = {"job": "train"}
    body["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"job": "train"}},
            **constraint,
        }
    ]
    return body


def test_the_fullest_domains_are_refused() -> None:
    running = [
        _running("t1", "n-a", {"job": "train"}),
        _running("t2", "n-a", {"job": "train"}),
        _running("t3", "n-c", {"job": "train"}),
    ]
    result = explain_pod(_spread(), _zones("a", "b", "c"), running)
    assert result.feasible == ("n-b",)
    refused = {v.name: v for v in result.nodes if not v.fits}
    assert refused["n-a"].reasons == (REASON_SPREAD,)
    assert refused["n-a"].plugin == "PodTopologySpread"
    assert not result.warnings


def test_pods_of_other_namespaces_and_labels_do_not_count() -> None:
    running = [
        _running("t1", "n-a", {"job": "train"}, namespace="other"),
        _running("t2", "n-a", {"job": "serve"}),
    ]
    assert explain_pod(_spread(), _zones("a", "b"), running).feasible == ("n-a", "n-b")


def test_a_node_without_the_key_is_unresolvable() -> None:
    nodes = [*_zones("a", "b"), node("bare")]
    nodes[1]["spec"]["unschedulable"] = True
    result = explain_pod(_spread(), nodes, [_running("t1", "n-a", {"job": "train"})])
    assert result.feasible == ()
    assert result.summary == (
        f"0/3 nodes are available: 1 {REASON_SPREAD}, 1 {REASON_SPREAD_LABEL},"
        " 1 node(s) were unschedulable. preemption: 0/3 nodes are available:"
        " 1 No preemption victims found for incoming pod,"
        " 2 Preemption is not helpful for scheduling."
    )


def test_min_domains_counts_missing_domains_as_empty() -> None:
    running = [_running("t1", "n-a", {"job": "train"}), _running("t2", "n-b", {"job": "train"})]
    assert explain_pod(_spread(), _zones("a", "b"), running).feasible == ("n-a", "n-b")
    # Fewer domains than minDomains: the global minimum is taken as 0.
    assert explain_pod(_spread(minDomains=3), _zones("a", "b"), running).feasible == ()


def test_node_affinity_policy_decides_which_nodes_count() -> None:
    nodes = _zones("a", "b")
    nodes[1]["metadata"]["labels"]["pool"] = "other"
    running = [_running("t1", "n-a", {"job": "train"})]
    honoured = _spread()
    honoured["spec"]["nodeSelector"] = {ZONE: "a"}
    # Honor (the default): zone b is outside the pod's node selector and not a domain.
    assert explain_pod(honoured, nodes, running).feasible == ("n-a",)
    ignored = _spread(nodeAffinityPolicy="Ignore")
    ignored["spec"]["nodeSelector"] = {ZONE: "a"}
    # Ignore: zone b (empty) counts, so zone a (1 + 1 - 0) is over the skew.
    assert explain_pod(ignored, nodes, running).feasible == ()


def test_match_label_keys_narrow_the_selector() -> None:
    body = _spread(matchLabelKeys=["revision"])
    body["metadata"]["labels"]["revision"] = "2"
    running = [
        _running("old1", "n-a", {"job": "train", "revision": "1"}),
        _running("old2", "n-a", {"job": "train", "revision": "1"}),
    ]
    assert explain_pod(body, _zones("a", "b"), running).feasible == ("n-a", "n-b")


def test_schedule_anyway_constraints_do_not_filter() -> None:
    running = [_running(f"t{i}", "n-a", {"job": "train"}) for i in range(3)]
    body = _spread(whenUnsatisfiable="ScheduleAnyway")
    assert explain_pod(body, _zones("a", "b"), running).feasible == ("n-a", "n-b")


def test_preemption_counts_the_victims_out_of_their_domain() -> None:
    running = [_running(f"t{i}", "n-a", {"job": "train"}) for i in range(2)]
    body = _spread()
    body["spec"]["priority"] = 100
    result = explain_pod(body, _zones("a"), running)
    # One domain: its own minimum, so the skew is 1; add a second, empty zone.
    assert result.feasible == ("n-a",)
    result = explain_pod(body, [*_zones("a"), node("n-b", labels={ZONE: "b"}, pods="0")], running)
    assert result.feasible == ()
    assert result.preemption.nominated_node == "n-a"


def test_selectors() -> None:
    assert not label_selector(None).matches({})
    assert label_selector({}).matches({"a": "b"}) and label_selector({}).empty
    chosen = label_selector(
        {
            "matchLabels": {"job": "train"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}],
        }
    )
    assert chosen.matches({"job": "train"}) and not chosen.matches({"job": "train", "tier": "x"})


def test_a_gated_pod_fits_nowhere_with_the_api_servers_message() -> None:
    body = pod("gated", schedulingGates=[{"name": "example.com/quota"}, {"name": "b"}])
    result = explain_pod(body, [node("n1"), node("n2", unschedulable=True)])
    assert result.feasible == ()
    assert result.summary == "Scheduling is blocked due to non-empty scheduling gates"
    assert result.warnings == (
        "waiting for scheduling gates: [example.com/quota b]; without them 1 node(s) would fit",
    )
    assert [v.fits for v in result.nodes] == [True, False]


def _budget(allowed: int, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "keep", "namespace": "ml"},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed},
    }


def test_preemption_prefers_the_node_whose_victims_no_budget_protects() -> None:
    from gpuop.explain.engine import cluster_snapshot

    nodes = [node("n1", pods="1"), node("n2", pods="1")]
    running = [_running("guarded", "n1", {"app": "db"}), _running("plain", "n2", {"app": "web"})]
    body = pod("urgent", namespace="ml")
    body["spec"]["priority"] = 100
    no_budget = explain_pod(body, nodes, running)
    assert no_budget.preemption.nominated_node == "n1"  # the first of two equal candidates
    snapshot = cluster_snapshot(nodes, running, budgets=[_budget(0, app="db")])
    guarded = explain_pod(body, (), (), snapshot=snapshot)
    assert guarded.preemption.nominated_node == "n2"
    # A budget that still allows a disruption is not violated.
    snapshot = cluster_snapshot(nodes, running, budgets=[_budget(1, app="db")])
    assert explain_pod(body, (), (), snapshot=snapshot).preemption.nominated_node == "n1"
