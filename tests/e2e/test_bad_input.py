"""Bad input: invalid ClusterPolicies at admission, odd Nodes on a running operator.

Part one sends invalid ClusterPolicies to the real API server the way ``kubectl apply`` does
(``fieldValidation=Strict``, so unknown fields are rejected instead of silently pruned) and
expects each to be refused with the offending field path in the message.

Part two runs the operator (as its ServiceAccount) and the simulator, adds Nodes in odd
states, waits for convergence and then checks that every node carries the planner's labels,
that the Events and conditions gpuop promises are there, and that the operator makes no
write request at all for 30 s (counted in the API server's audit log): no write loop.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube.resources.core_v1 import Event

from gpuop.controlplane.audit import AuditMark, audit_mark, write_requests
from gpuop.controlplane.kubeconfig import api_request
from gpuop.kube import ops, sync_client
from gpuop.lab import stack
from gpuop.planner import plan
from gpuop.policy import parse_cluster_policy
from gpuop.sim.hardware import NodeSpec, node_manifest
from kit.waiting import wait_until

pytestmark = pytest.mark.e2e

OPERATOR_USER = "system:serviceaccount:gpu-operator:gpuop-operator"
POLICIES = "/apis/nvidia.com/v1/clusterpolicies"

# (case id, path under spec, value, text the API server's message must contain)
BAD_POLICIES: list[tuple[str, tuple[str | int, ...], Any, str]] = [
    (
        "enum-default-workload",
        ("sandboxWorkloads", "defaultWorkload"),
        "vm-everything",
        "spec.sandboxWorkloads.defaultWorkload",
    ),
    (
        "enum-sandbox-mode",
        ("sandboxWorkloads", "mode"),
        "firecracker",
        "spec.sandboxWorkloads.mode",
    ),
    ("enum-pull-policy", ("driver", "imagePullPolicy"), "Sometimes", "spec.driver.imagePullPolicy"),
    ("enum-mig-strategy", ("mig", "strategy"), "all", "spec.mig.strategy"),
    (
        "enum-update-strategy",
        ("daemonsets", "updateStrategy"),
        "Recreate",
        "spec.daemonsets.updateStrategy",
    ),
    (
        "enum-toleration-operator",
        ("daemonsets", "tolerations"),
        [{"operator": "Maybe"}],
        "spec.daemonsets.tolerations[0].operator",
    ),
    (
        "enum-kernel-module-type",
        ("driver", "kernelModuleType"),
        "closed",
        "spec.driver.kernelModuleType",
    ),
    ("enum-cc-mode", ("ccManager", "defaultMode"), "maybe", "spec.ccManager.defaultMode"),
    (
        "enum-service-type",
        ("dcgmExporter", "service"),
        {"type": "ExternalName"},
        "spec.dcgmExporter.service.type",
    ),
    (
        "enum-default-runtime",
        ("operator", "defaultRuntime"),
        "podman",
        "spec.operator.defaultRuntime",
    ),
    ("type-bool-string", ("driver", "enabled"), "yes", "spec.driver.enabled"),
    ("type-bool-int", ("cdi", "enabled"), 1, "spec.cdi.enabled"),
    ("type-port-string", ("dcgm", "hostPort"), "5555", "spec.dcgm.hostPort"),
    ("type-args-not-list", ("toolkit", "args"), "--debug", "spec.toolkit.args"),
    ("type-secret-int", ("driver", "imagePullSecrets"), [123], "spec.driver.imagePullSecrets[0]"),
    ("type-spec-block-string", ("devicePlugin",), "on", "spec.devicePlugin"),
    (
        "type-resource-list",
        ("driver", "resources"),
        {"limits": {"cpu": [1]}},
        "spec.driver.resources.limits.cpu",
    ),
    ("negative-host-port", ("dcgm", "hostPort"), -1, "spec.dcgm.hostPort"),
    ("huge-host-port", ("dcgm", "hostPort"), 70000, "spec.dcgm.hostPort"),
    (
        "negative-probe-delay",
        ("driver", "startupProbe"),
        {"initialDelaySeconds": -5},
        "spec.driver.startupProbe.initialDelaySeconds",
    ),
    (
        "zero-probe-period",
        ("driver", "livenessProbe"),
        {"periodSeconds": 0},
        "spec.driver.livenessProbe.periodSeconds",
    ),
    # Not a case: a negative tolerationSeconds, which Kubernetes accepts ("evict at once").
    (
        "negative-max-unavailable",
        ("daemonsets", "rollingUpdate"),
        {"maxUnavailable": -1},
        "spec.daemonsets.rollingUpdate.maxUnavailable",
    ),
    (
        "word-max-unavailable",
        ("daemonsets", "rollingUpdate"),
        {"maxUnavailable": "half"},
        "spec.daemonsets.rollingUpdate.maxUnavailable",
    ),
    ("huge-repository", ("driver", "repository"), "r" * 2000, "spec.driver.repository"),
    (
        "huge-priority-class",
        ("daemonsets", "priorityClassName"),
        "p" * 300,
        "spec.daemonsets.priorityClassName",
    ),
    (
        "huge-label-value",
        ("daemonsets", "labels"),
        {"team": "x" * 5000},
        "spec.daemonsets.labels.team",
    ),
    (
        "huge-env-name",
        ("validator", "plugin"),
        {"env": [{"name": "n" * 300}]},
        "spec.validator.plugin.env[0].name",
    ),
    ("empty-env-name", ("devicePlugin", "env"), [{"name": ""}], "spec.devicePlugin.env[0].name"),
    (
        "missing-env-name",
        ("devicePlugin", "env"),
        [{"value": "1"}],
        "spec.devicePlugin.env[0].name",
    ),
    ("unknown-field-nested", ("driver", "enabledd"), True, "spec.driver.enabledd"),
    ("unknown-field-block", ("frobnicator",), {"enabled": True}, "spec.frobnicator"),
    (
        "unknown-field-deep",
        ("dcgmExporter", "service", "nodePortt"),
        30000,
        "spec.dcgmExporter.service.nodePortt",
    ),
]


def _bad_policy(case: str, path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    policy = copy.deepcopy(stack.lab_policy(name=f"bad-{case}"))
    target: Any = policy["spec"]
    for key in path[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    target[path[-1]] = value
    return policy


@pytest.fixture(scope="module")
def crd_installed(kubeconfig_path: Path) -> Path:
    stack.install_crd(str(kubeconfig_path))
    return kubeconfig_path


@pytest.mark.parametrize(
    ("case", "path", "value", "field"), BAD_POLICIES, ids=[c[0] for c in BAD_POLICIES]
)
def test_invalid_cluster_policy_is_rejected_at_admission(
    crd_installed: Path, case: str, path: tuple[str | int, ...], value: Any, field: str
) -> None:
    body = _bad_policy(case, path, value)
    strict = f"{POLICIES}?fieldValidation=Strict"
    response = api_request(crd_installed, "POST", strict, json_body=body)
    if response.status_code < 300:
        api_request(crd_installed, "DELETE", f"{POLICIES}/{body['metadata']['name']}")
    assert response.status_code in (400, 422), (
        f"{case}: the API server accepted it ({response.status_code})"
    )
    message = response.json().get("message", "")
    assert field in message, f"{case}: {field!r} not named in {message!r}"


def test_the_valid_base_policy_is_accepted(crd_installed: Path) -> None:
    """The cases above differ from an accepted policy only in the field they break."""
    body = stack.lab_policy(name="bad-input-baseline")
    query = "fieldValidation=Strict&dryRun=All"
    response = api_request(crd_installed, "POST", f"{POLICIES}?{query}", json_body=body)
    assert response.status_code == 201, response.text


# ----------------------------------------------------------------------------- odd nodes


def _node(name: str, workload: str | None = None, **labels: str) -> dict[str, Any]:
    extra = dict(labels)
    if workload is not None:
        extra["nvidia.com/gpu.workload.config"] = workload
    manifest = node_manifest(NodeSpec(name, "A10", 2, {"gpuop.test/odd": "true"}))
    manifest["metadata"]["labels"].update(extra)
    return manifest


def _odd_nodes() -> dict[str, dict[str, Any]]:
    nodes: dict[str, dict[str, Any]] = {}
    nodes["odd-empty-workload"] = _node("odd-empty-workload", "")
    nodes["odd-unknown-workload"] = _node("odd-unknown-workload", "vm-everything")
    nodes["odd-wrong-case-workload"] = _node("odd-wrong-case-workload", "Container")
    nodes["odd-huge-workload"] = _node("odd-huge-workload", "w" * 63)
    conflicting = {
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.driver": "true",
        "nvidia.com/gpu.deploy.vgpu-manager": "true",
        "nvidia.com/gpu.deploy.vfio-manager": "true",
    }
    nodes["odd-conflicting-deploy"] = _node(
        "odd-conflicting-deploy", "vm-passthrough", **conflicting
    )
    nodes["odd-operands-false"] = _node(
        "odd-operands-false", "container", **{"nvidia.com/gpu.deploy.operands": "false"}
    )
    nodes["odd-empty-deploy-values"] = _node(
        "odd-empty-deploy-values",
        "container",
        **{"nvidia.com/gpu.deploy.driver": "", "nvidia.com/gpu.deploy.device-plugin": ""},
    )
    nodes["odd-user-values"] = _node(
        "odd-user-values",
        "container",
        **{
            "nvidia.com/gpu.deploy.driver": "pre-installed",
            "nvidia.com/gpu.deploy.dcgm-exporter": "false",
            "nvidia.com/gpu.deploy.frobnicator": "true",
        },
    )
    no_status = _node("odd-no-status", "container")
    no_status.pop("status")
    nodes["odd-no-status"] = no_status
    garbage = _node("odd-garbage-inventory", "container")
    garbage["metadata"]["annotations"]["gpuop.io/gpu-inventory"] = "{{not json" + "x" * 20000
    nodes["odd-garbage-inventory"] = garbage
    shape = _node("odd-inventory-shape", "vm-passthrough")
    shape["metadata"]["annotations"]["gpuop.io/gpu-inventory"] = json.dumps({"pci": 1})
    nodes["odd-inventory-shape"] = shape
    nfd_false = _node("odd-nfd-false", None, **{"nvidia.com/gpu.present": "true"})
    for key in list(nfd_false["metadata"]["labels"]):
        if key.startswith("feature.node.kubernetes.io/pci-") and key.endswith("10de.present"):
            nfd_false["metadata"]["labels"][key] = "false"
    nfd_false["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] = "true"
    nodes["odd-nfd-false"] = nfd_false
    nodes["odd-vgpu-infeasible"] = _node(
        "odd-vgpu-infeasible", "vm-vgpu", **{"nvidia.com/vgpu.config": "A10-999Q"}
    )
    nodes["odd-vgpu-unknown-config"] = _node(
        "odd-vgpu-unknown-config", "vm-vgpu", **{"nvidia.com/vgpu.config": ""}
    )
    return nodes


EVENTS_EXPECTED = {
    "odd-empty-workload": "InvalidWorkloadLabel",
    "odd-unknown-workload": "InvalidWorkloadLabel",
    "odd-wrong-case-workload": "InvalidWorkloadLabel",
    "odd-huge-workload": "InvalidWorkloadLabel",
    "odd-vgpu-infeasible": "VgpuConfigInfeasible",
}


def operator_writes(audit_log: Path, start: AuditMark) -> list[tuple[str, str]]:
    return write_requests(audit_log, start, OPERATOR_USER, leases=False)


@pytest.fixture(scope="module")
def odd_stack(
    kubeconfig_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    kubeconfig = str(kubeconfig_path)
    work = tmp_path_factory.mktemp("gpuop-odd")
    stack.install_crd(kubeconfig)
    client = sync_client(kubeconfig)
    nodes = _odd_nodes()
    for name in nodes:
        ops.delete_node_sync(client, name)
    operator_kubeconfig = stack.install_operator_access(kubeconfig, work)
    operator = stack.start_operator(operator_kubeconfig, work / "logs")
    simulator_kubeconfig = stack.install_simulator_access(kubeconfig, work)
    simulator = stack.start_simulator(str(simulator_kubeconfig), work / "logs", work / "hosts")
    for manifest in nodes.values():
        ops.create_object_sync(client, manifest)
    stack.apply_cluster_policy(kubeconfig, stack.lab_policy(sandbox=True))
    state = {"kubeconfig": kubeconfig, "nodes": nodes, "operator": operator}
    try:
        yield state
    finally:
        operator.stop()
        simulator.stop()
        print("operator log tail:\n" + operator.log_tail(40))
        stack.delete_cluster_policy(kubeconfig, "cluster-policy")
        for name in nodes:
            ops.delete_node_sync(client, name)


def _mismatches(kubeconfig: str, names: list[str]) -> dict[str, Any]:
    client = sync_client(kubeconfig)
    policy = parse_cluster_policy(stack.get_cluster_policy(kubeconfig, "cluster-policy"))
    wrong: dict[str, Any] = {}
    for name in names:
        node = ops.get_node(client, name)
        if node is None:
            wrong[name] = "missing"
            continue
        changes = plan(policy, node).label_changes
        if changes:
            wrong[name] = changes
    return wrong


def test_odd_nodes_converge_to_the_plan(odd_stack: dict[str, Any]) -> None:
    kubeconfig = odd_stack["kubeconfig"]
    names = sorted(odd_stack["nodes"])
    wait_until(lambda: (not (m := _mismatches(kubeconfig, names)), m), 120, "odd nodes to converge")
    client = sync_client(kubeconfig)
    labels = {n: (ops.get_node(client, n) or {})["metadata"]["labels"] for n in names}
    deploy = "nvidia.com/gpu.deploy."
    conflicting = {k for k in labels["odd-conflicting-deploy"] if k.startswith(deploy)}
    assert f"{deploy}vfio-manager" in conflicting
    assert not conflicting & {f"{deploy}device-plugin", f"{deploy}driver", f"{deploy}vgpu-manager"}
    assert not [
        k for k in labels["odd-operands-false"] if k.startswith(deploy) and k != f"{deploy}operands"
    ]
    assert labels["odd-empty-deploy-values"][f"{deploy}driver"] == "true"
    assert labels["odd-user-values"][f"{deploy}driver"] == "pre-installed"
    assert labels["odd-user-values"][f"{deploy}dcgm-exporter"] == "false"
    assert labels["odd-user-values"][f"{deploy}frobnicator"] == "true"
    assert labels["odd-nfd-false"]["nvidia.com/gpu.present"] == "false"
    assert not [k for k in labels["odd-nfd-false"] if k.startswith(deploy)]
    assert labels["odd-no-status"][f"{deploy}device-plugin"] == "true"


def test_odd_nodes_get_the_promised_events_and_conditions(odd_stack: dict[str, Any]) -> None:
    kubeconfig = odd_stack["kubeconfig"]
    client = sync_client(kubeconfig)

    def events() -> tuple[bool, Any]:
        seen = {
            (e.involvedObject.name, e.reason)
            for e in client.list(Event, namespace="default")
            if e.involvedObject and e.involvedObject.name in odd_stack["nodes"]
        }
        missing = {(n, r) for n, r in EVENTS_EXPECTED.items()} - seen
        return not missing, missing

    wait_until(events, 60, "the promised Warning events")

    def conditions() -> tuple[bool, Any]:
        policy = stack.get_cluster_policy(kubeconfig, "cluster-policy") or {}
        conds = {c["type"]: c for c in (policy.get("status") or {}).get("conditions") or []}
        invalid = conds.get("InvalidWorkloadLabels", {})
        vgpu = conds.get("VgpuConfigInvalid", {})
        ok = (
            invalid.get("status") == "True"
            and all(n in invalid.get("message", "") for n in EVENTS_EXPECTED if "workload" in n)
            and vgpu.get("status") == "True"
            and "odd-vgpu-infeasible" in vgpu.get("message", "")
        )
        return ok, (invalid, vgpu)

    wait_until(conditions, 60, "InvalidWorkloadLabels and VgpuConfigInvalid conditions")


def test_no_write_loop_on_odd_nodes(odd_stack: dict[str, Any], audit_log_path: Path) -> None:
    """Converged with odd nodes, the operator sends no write request for 30 s."""

    # Wait for a quiet stretch first (operand pods coming up still change the status).
    def settled() -> tuple[bool, Any]:
        start = audit_mark(audit_log_path)
        time.sleep(5)
        writes = operator_writes(audit_log_path, start)
        return not writes, writes[:5]

    wait_until(settled, 180, "the operator to settle")
    start = audit_mark(audit_log_path)
    time.sleep(30)
    writes = operator_writes(audit_log_path, start)
    assert writes == [], f"the operator wrote while converged: {writes[:10]}"
    assert odd_stack["operator"].alive()
