"""Each filter plugin, table-driven: one pod, one node, the reasons the node gets."""

from __future__ import annotations

from typing import Any

import pytest
from explain_builders import A10, A10_12Q, GPU, affinity, bound, container, expr, node, pod

from gpuop.explain import ExplainOptions, explain_pod
from gpuop.explain.filters import NodeState, PodFacts, node_name
from gpuop.explain.resources import Resource

UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NAME = "node(s) didn't match the requested node name"
TAINT = "node(s) had untolerated taint(s)"
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PORTS = "node(s) didn't have free ports for the requested pod ports"
PINNED_BY_NODE_NAME = "node(s) didn't satisfy plugin(s) [NodeName]"

GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}


def reasons_on(
    the_pod: dict[str, Any],
    the_node: dict[str, Any],
    others: list[dict[str, Any]] | None = None,
    options: ExplainOptions | None = None,
) -> list[str]:
    explanation = explain_pod(the_pod, [the_node], others or [], options=options)
    (verdict,) = explanation.nodes
    assert verdict.fits == (not verdict.reasons)
    return list(verdict.reasons)


# (id, pod, node, pods already on nodes, expected reasons)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[dict[str, Any]], list[str]]] = [
    # NodeUnschedulable
    ("cordoned", pod(), node("n", unschedulable=True), [], [UNSCHEDULABLE]),
    (
        "cordoned, tolerated by key",
        pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]),
        node("n", unschedulable=True),
        [],
        [],
    ),
    (
        "cordoned, tolerated by the empty-key Exists",
        pod(tolerations=[{"operator": "Exists"}]),
        node("n", unschedulable=True),
        [],
        [],
    ),
    (
        "cordoned, toleration for NoExecute only",
        pod(
            tolerations=[
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                }
            ]
        ),
        node("n", unschedulable=True),
        [],
        [UNSCHEDULABLE],
    ),
    (
        "cordoned beats the other filters",
        pod(nodeSelector={"x": "y"}, limits={GPU: 1}),
        node("n", unschedulable=True, taints=[GPU_TAINT]),
        [],
        [UNSCHEDULABLE],
    ),
    # NodeName (its PreFilter sets the other nodes aside)
    ("nodeName matches", pod(nodeName="n"), node("n"), [], []),
    ("nodeName differs", pod(nodeName="other"), node("n"), [], [PINNED_BY_NODE_NAME]),
    (
        "nodeName is checked before the cordon",
        pod(nodeName="other"),
        node("n", unschedulable=True),
        [],
        [PINNED_BY_NODE_NAME],
    ),
    # TaintToleration
    ("NoSchedule taint", pod(), node("n", taints=[GPU_TAINT]), [], [TAINT]),
    (
        "NoExecute taint",
        pod(),
        node("n", taints=[{"key": "k", "effect": "NoExecute"}]),
        [],
        [TAINT],
    ),
    (
        "PreferNoSchedule only scores",
        pod(),
        node("n", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
        [],
        [],
    ),
    (
        "Exists on the key",
        pod(tolerations=[{"key": GPU, "operator": "Exists"}]),
        node("n", taints=[GPU_TAINT]),
        [],
        [],
    ),
    (
        "Equal with the value",
        pod(tolerations=[{"key": GPU, "operator": "Equal", "value": "present"}]),
        node("n", taints=[GPU_TAINT]),
        [],
        [],
    ),
    (
        "operator defaults to Equal",
        pod(tolerations=[{"key": GPU, "value": "present", "effect": "NoSchedule"}]),
        node("n", taints=[GPU_TAINT]),
        [],
        [],
    ),
    (
        "Equal with another value",
        pod(tolerations=[{"key": GPU, "operator": "Equal", "value": "absent"}]),
        node("n", taints=[GPU_TAINT]),
        [],
        [TAINT],
    ),
    (
        "effect must match",
        pod(tolerations=[{"key": GPU, "operator": "Exists", "effect": "NoExecute"}]),
        node("n", taints=[GPU_TAINT]),
        [],
        [TAINT],
    ),
    (
        "empty key with Exists tolerates every taint of that effect",
        pod(tolerations=[{"operator": "Exists", "effect": "NoSchedule"}]),
        node("n", taints=[GPU_TAINT, {"key": "a", "value": "b", "effect": "NoSchedule"}]),
        [],
        [],
    ),
    (
        "empty key with Exists and NoSchedule leaves NoExecute",
        pod(tolerations=[{"operator": "Exists", "effect": "NoSchedule"}]),
        node("n", taints=[GPU_TAINT, {"key": "a", "effect": "NoExecute"}]),
        [],
        [TAINT],
    ),
    (
        "every taint must be tolerated",
        pod(tolerations=[{"key": GPU, "operator": "Exists"}]),
        node("n", taints=[GPU_TAINT, {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]),
        [],
        [TAINT],
    ),
    (
        "Gt/Lt need a feature gate that is off by default",
        pod(tolerations=[{"key": "sla", "operator": "Gt", "value": "500", "effect": "NoSchedule"}]),
        node("n", taints=[{"key": "sla", "value": "950", "effect": "NoSchedule"}]),
        [],
        [TAINT],
    ),
    (
        "Gt: taint value above the toleration's",
        pod(tolerations=[{"key": "sla", "operator": "Gt", "value": "500", "effect": "NoSchedule"}]),
        node("n", taints=[{"key": "sla", "value": "950", "effect": "NoSchedule"}]),
        [],
        [],
    ),
    (
        "Gt: equal is not greater",
        pod(tolerations=[{"key": "sla", "operator": "Gt", "value": "950"}]),
        node("n", taints=[{"key": "sla", "value": "950", "effect": "NoSchedule"}]),
        [],
        [TAINT],
    ),
    (
        "Lt: taint value below",
        pod(tolerations=[{"key": "sla", "operator": "Lt", "value": "950"}]),
        node("n", taints=[{"key": "sla", "value": "800", "effect": "NoSchedule"}]),
        [],
        [],
    ),
    (
        "Lt: leading zero is not a number",
        pod(tolerations=[{"key": "sla", "operator": "Lt", "value": "950"}]),
        node("n", taints=[{"key": "sla", "value": "0800", "effect": "NoSchedule"}]),
        [],
        [TAINT],
    ),
    # NodeAffinity: nodeSelector
    (
        "nodeSelector matches",
        pod(nodeSelector={"gpu": "a10"}),
        node("n", labels={"gpu": "a10"}),
        [],
        [],
    ),
    (
        "nodeSelector value differs",
        pod(nodeSelector={"gpu": "a10"}),
        node("n", labels={"gpu": "t4"}),
        [],
        [AFFINITY],
    ),
    ("nodeSelector label missing", pod(nodeSelector={"gpu": "a10"}), node("n"), [], [AFFINITY]),
    (
        "nodeSelector AND affinity",
        pod(
            nodeSelector={"gpu": "a10"},
            affinity=affinity({"matchExpressions": [expr("z", "Exists")]}),
        ),
        node("n", labels={"gpu": "a10"}),
        [],
        [AFFINITY],
    ),
    # NodeAffinity: required terms
    (
        "In",
        pod(affinity=affinity({"matchExpressions": [expr("z", "In", "a", "b")]})),
        node("n", labels={"z": "b"}),
        [],
        [],
    ),
    (
        "In, other value",
        pod(affinity=affinity({"matchExpressions": [expr("z", "In", "a")]})),
        node("n", labels={"z": "b"}),
        [],
        [AFFINITY],
    ),
    (
        "NotIn matches a missing label",
        pod(affinity=affinity({"matchExpressions": [expr("z", "NotIn", "a")]})),
        node("n"),
        [],
        [],
    ),
    (
        "NotIn",
        pod(affinity=affinity({"matchExpressions": [expr("z", "NotIn", "a")]})),
        node("n", labels={"z": "a"}),
        [],
        [AFFINITY],
    ),
    (
        "Exists",
        pod(affinity=affinity({"matchExpressions": [expr("z", "Exists")]})),
        node("n", labels={"z": ""}),
        [],
        [],
    ),
    (
        "DoesNotExist",
        pod(affinity=affinity({"matchExpressions": [expr("z", "DoesNotExist")]})),
        node("n", labels={"z": "1"}),
        [],
        [AFFINITY],
    ),
    (
        "Gt",
        pod(affinity=affinity({"matchExpressions": [expr("gpus", "Gt", "3")]})),
        node("n", labels={"gpus": "4"}),
        [],
        [],
    ),
    (
        "Gt, not greater",
        pod(affinity=affinity({"matchExpressions": [expr("gpus", "Gt", "4")]})),
        node("n", labels={"gpus": "4"}),
        [],
        [AFFINITY],
    ),
    (
        "Lt with a leading zero label (ParseInt accepts it)",
        pod(affinity=affinity({"matchExpressions": [expr("gpus", "Lt", "8")]})),
        node("n", labels={"gpus": "04"}),
        [],
        [],
    ),
    (
        "Gt on a non-numeric label",
        pod(affinity=affinity({"matchExpressions": [expr("gpus", "Gt", "1")]})),
        node("n", labels={"gpus": "many"}),
        [],
        [AFFINITY],
    ),
    (
        "expressions are ANDed",
        pod(affinity=affinity({"matchExpressions": [expr("a", "Exists"), expr("b", "Exists")]})),
        node("n", labels={"a": "1"}),
        [],
        [AFFINITY],
    ),
    (
        "terms are ORed",
        pod(
            affinity=affinity(
                {"matchExpressions": [expr("a", "Exists")]},
                {"matchExpressions": [expr("b", "Exists")]},
            )
        ),
        node("n", labels={"b": "1"}),
        [],
        [],
    ),
    (
        "an invalid term is skipped, another may match",
        pod(
            affinity=affinity(
                {"matchExpressions": [expr("a", "Near", "x")]},
                {"matchExpressions": [expr("b", "Exists")]},
            )
        ),
        node("n", labels={"a": "x", "b": "1"}),
        [],
        [],
    ),
    (
        "In without values is invalid",
        pod(affinity=affinity({"matchExpressions": [expr("a", "In")]})),
        node("n", labels={"a": "x"}),
        [],
        [AFFINITY],
    ),
    (
        "no terms select nothing",
        pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}),
        node("n"),
        [],
        [AFFINITY],
    ),
    ("an empty term selects nothing", pod(affinity=affinity({})), node("n"), [], [AFFINITY]),
    (
        "matchFields NotIn",
        pod(affinity=affinity({"matchFields": [expr("metadata.name", "NotIn", "n")]})),
        node("n"),
        [],
        [AFFINITY],
    ),
    (
        "matchFields In with two values is invalid",
        pod(affinity=affinity({"matchFields": [expr("metadata.name", "In", "n", "m")]})),
        node("n"),
        [],
        [AFFINITY],
    ),
    (
        "preferred affinity does not filter",
        pod(
            affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {"matchExpressions": [expr("a", "Exists")]}}
                    ]
                }
            }
        ),
        node("n"),
        [],
        [],
    ),
    # NodePorts
    (
        "host port free",
        pod(containers=[container(ports=[{"containerPort": 80, "hostPort": 8080}])]),
        node("n"),
        [bound("web", "n", ports=[{"containerPort": 80, "hostPort": 9090}])],
        [],
    ),
    (
        "host port taken",
        pod(containers=[container(ports=[{"containerPort": 80, "hostPort": 8080}])]),
        node("n"),
        [bound("web", "n", ports=[{"containerPort": 80, "hostPort": 8080}])],
        [PORTS],
    ),
    (
        "host port taken over UDP only",
        pod(containers=[container(ports=[{"containerPort": 80, "hostPort": 8080}])]),
        node("n"),
        [bound("web", "n", ports=[{"hostPort": 8080, "protocol": "UDP"}])],
        [],
    ),
    (
        "host port on two different IPs",
        pod(containers=[container(ports=[{"hostPort": 8080, "hostIP": "10.0.0.1"}])]),
        node("n"),
        [bound("web", "n", ports=[{"hostPort": 8080, "hostIP": "10.0.0.2"}])],
        [],
    ),
    (
        "host port on one IP, taken on all",
        pod(containers=[container(ports=[{"hostPort": 8080, "hostIP": "10.0.0.1"}])]),
        node("n"),
        [bound("web", "n", ports=[{"hostPort": 8080}])],
        [PORTS],
    ),
    (
        "host port of a sidecar counts",
        pod(
            initContainers=[container("side", restart_policy="Always", ports=[{"hostPort": 8080}])]
        ),
        node("n"),
        [bound("web", "n", ports=[{"hostPort": 8080}])],
        [PORTS],
    ),
    (
        "host port of a plain init container does not",
        pod(initContainers=[container("init", ports=[{"hostPort": 8080}])]),
        node("n"),
        [bound("web", "n", ports=[{"hostPort": 8080}])],
        [],
    ),
    (
        "ports of pods on other nodes do not count",
        pod(containers=[container(ports=[{"hostPort": 8080}])]),
        node("n"),
        [bound("web", "m", ports=[{"hostPort": 8080}])],
        [],
    ),
    # NodeResourcesFit
    (
        "fits",
        pod(requests={"cpu": "2", "memory": "1Gi"}, limits={GPU: 1}),
        node("n", extended={GPU: "1"}),
        [],
        [],
    ),
    (
        "extended resource not advertised",
        pod(limits={GPU: 1}),
        node("n"),
        [],
        [f"Insufficient {GPU}"],
    ),
    (
        "extended resource advertised as 0",
        pod(limits={A10: 1}),
        node("n", extended={A10: "0"}),
        [],
        [f"Insufficient {A10}"],
    ),
    (
        "every shortfall is reported, pods first",
        pod(requests={"cpu": "9", "memory": "64Gi"}, limits={A10_12Q: 2, GPU: 1}),
        node("n", pods="1"),
        [bound("other", "n")],
        [
            "Too many pods",
            "Insufficient cpu",
            "Insufficient memory",
            f"Insufficient {A10_12Q}",
            f"Insufficient {GPU}",
        ],
    ),
    (
        "used by pods on the node",
        pod(limits={GPU: 2}),
        node("n", extended={GPU: "4"}),
        [bound("a", "n", requests={GPU: "1"}), bound("b", "n", requests={GPU: "2"})],
        [f"Insufficient {GPU}"],
    ),
    (
        "finished pods free their resources",
        pod(limits={GPU: 2}),
        node("n", extended={GPU: "4"}),
        [
            bound("a", "n", requests={GPU: "3"}, phase="Succeeded"),
            bound("b", "n", requests={GPU: "3"}, phase="Failed"),
        ],
        [],
    ),
    (
        "a pod asking for nothing still takes a slot",
        pod(),
        node("n", pods="1"),
        [bound("other", "n")],
        ["Too many pods"],
    ),
    (
        "cpu rounds up to millicores",
        pod(requests={"cpu": "1001m"}),
        node("n", cpu="1"),
        [],
        ["Insufficient cpu"],
    ),
    (
        "zero requests are not checked",
        pod(requests={GPU: "0", "cpu": "0"}),
        node("n", cpu="0"),
        [],
        [],
    ),
    (
        "ephemeral storage",
        pod(requests={"ephemeral-storage": "20Gi"}),
        node("n"),
        [],
        ["Insufficient ephemeral-storage"],
    ),
    (
        "hugepages are scalar resources",
        pod(requests={"hugepages-2Mi": "2Mi"}),
        node("n"),
        [],
        ["Insufficient hugepages-2Mi"],
    ),
    ("unknown native names are ignored", pod(requests={"storage": "1"}), node("n"), [], []),
]


@pytest.mark.parametrize(
    ("the_pod", "the_node", "others", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_filter(
    request: pytest.FixtureRequest,
    the_pod: dict[str, Any],
    the_node: dict[str, Any],
    others: list[dict[str, Any]],
    expected: list[str],
) -> None:
    numeric = request.node.callspec.id.startswith(("Gt:", "Lt:"))
    options = ExplainOptions(toleration_comparison_operators=numeric)
    assert reasons_on(the_pod, the_node, others, options) == expected


def test_first_rejecting_plugin_stops_evaluation() -> None:
    the_pod = pod(nodeSelector={"gpu": "a10"}, limits={GPU: 1})
    verdict = explain_pod(the_pod, [node("n", taints=[GPU_TAINT])]).nodes[0]
    assert (verdict.plugin, verdict.reasons) == ("TaintToleration", (TAINT,))
    assert "untolerated taint {nvidia.com/gpu: present}" in verdict.details[0]


def test_comparison_operators_follow_the_feature_gate() -> None:
    the_pod = pod(tolerations=[{"key": "sla", "operator": "Gt", "value": "1"}])
    the_node = node("n", taints=[{"key": "sla", "value": "9", "effect": "NoSchedule"}])
    explanation = explain_pod(the_pod, [the_node])
    assert explanation.nodes[0].reasons == (TAINT,)
    assert "TaintTolerationComparisonOperators" in explanation.warnings[0]
    on = ExplainOptions(toleration_comparison_operators=True)
    assert reasons_on(the_pod, the_node, options=on) == []


def test_insufficient_carries_the_numbers() -> None:
    the_pod = pod(requests={"cpu": "3"}, limits={GPU: 2})
    others = [bound("a", "n", requests={"cpu": "6", GPU: "1"})]
    verdict = explain_pod(the_pod, [node("n", extended={GPU: "2"})], others).nodes[0]
    shortages = {i.resource: i.to_dict() for i in verdict.insufficient}
    assert shortages["cpu"] == {
        "resource": "cpu",
        "requested": 3000,
        "used": 6000,
        "allocatable": 8000,
        "unresolvable": False,
    }
    assert shortages[GPU]["used"] == 1
    assert not shortages[GPU]["unresolvable"]


def test_nominated_pods_of_higher_priority_hold_their_room() -> None:
    nominated = pod("big", requests={"cpu": "6"}, priority=10)
    nominated["status"] = {"phase": "Pending", "nominatedNodeName": "n"}
    the_pod = pod(requests={"cpu": "4"}, priority=5)
    assert reasons_on(the_pod, node("n"), [nominated]) == ["Insufficient cpu"]
    nominated["spec"]["priority"] = 1
    assert reasons_on(the_pod, node("n"), [nominated]) == []


def test_the_pod_itself_is_not_counted_on_a_node() -> None:
    the_pod = pod(requests={"cpu": "6"}, nodeName="n")
    the_pod["status"] = {"phase": "Running"}
    assert reasons_on(the_pod, node("n"), [the_pod]) == []


def test_older_clusters_named_the_taint() -> None:
    the_node = node(
        "n", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    )
    options = ExplainOptions(name_untolerated_taint=True)
    assert reasons_on(pod(), the_node, options=options) == [
        "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
    ]


def test_node_name_filter_wording() -> None:
    # The PreFilter normally sets other nodes aside first; the Filter itself still says this.
    facts = PodFacts("default/p", "", "other", (), None, Resource(), (), 0)
    state = NodeState("n", {}, (), False, Resource(), node("n"))
    status = node_name(facts, state)
    assert status is not None and status.reasons == (NODE_NAME,)


def test_a_pod_that_restarts_all_containers_needs_a_node_that_declares_it() -> None:
    """NodeDeclaredFeatures (GA in v1.37): the feature is inferred from the pod's spec and
    looked up in the node's status.declaredFeatures, after every other filter."""
    declaring = node("new")
    declaring["status"]["declaredFeatures"] = ["RestartAllContainersOnContainerExits"]
    nodes = [node("old"), declaring, node("cordoned", unschedulable=True)]
    restarting = container(requests={"cpu": "1"})
    restarting["restartPolicy"] = "Never"
    restarting["restartPolicyRules"] = [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    ]
    explanation = explain_pod(pod("p", containers=[restarting]), nodes)
    assert explanation.feasible == ("new",)
    old, _, cordoned = explanation.nodes
    assert old.plugin == "NodeDeclaredFeatures"
    assert old.reasons == ("node(s) didn't match Pod's required features",)
    assert old.details == (
        "the pod needs RestartAllContainersOnContainerExits; the node declares none",
    )
    assert cordoned.plugin == "NodeUnschedulable"
    alone = explain_pod(pod("p", containers=[restarting]), [node("old")])
    assert alone.summary == (
        "0/1 nodes are available: 1 node(s) didn't match Pod's required features."
        " preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    # A plain pod needs no feature.
    assert explain_pod(pod("q", requests={"cpu": "1"}), [node("old")]).feasible == ("old",)
