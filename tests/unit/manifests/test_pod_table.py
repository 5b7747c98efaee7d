"""`kubectl get pods -o wide` tables as posted: Pods bound to nodes, with their readiness."""

from __future__ import annotations

from pathlib import Path

from gpuop.check import run_checks
from gpuop.check.operands import pod_status
from gpuop.manifests import load_objects
from gpuop.manifests.pod_table import parse_pod_table

DATA = Path(__file__).resolve().parents[2] / "data" / "tables"
PODS = (DATA / "gpu-operator-pods-wide.txt").read_text(encoding="utf-8")
NODES = (DATA / "nodes-show-labels.txt").read_text(encoding="utf-8")

ALL_NAMESPACES = """\
NAMESPACE      NAME                                   READY   STATUS    RESTARTS   AGE   IP          NODE     NOMINATED NODE   READINESS GATES
gpu-operator   nvidia-driver-daemonset-6kx2q          0/1     Running   3          2m    10.0.0.4    gpu-1    <none>           <none>
kube-system    coredns-5d78c9869d-2xk9q               1/1     Running   0          9d    10.1.0.3    cpu-1    <none>           <none>
default        cuda-vectoradd                         0/1     Pending   0          1m    <none>      <none>   <none>           <none>
"""


def test_rows_become_pods_on_their_nodes() -> None:
    table = parse_pod_table(PODS)
    assert table is not None and table.pods == 5
    gfd, operator, toolkit, validator, plugin = table.objects
    # The namespace of the pasted command line's -n.
    assert {pod["metadata"]["namespace"] for pod in table.objects} == {"gpu-operator"}
    assert gfd["spec"]["nodeName"] == "gpu-worker-1"
    assert pod_status(gfd) == (False, "Init:CrashLoopBackOff")
    assert pod_status(plugin) == (False, "Init:0/1")
    assert pod_status(toolkit) == (True, "Running")
    assert pod_status(validator) == (True, "Completed")
    assert operator["spec"]["nodeName"] == "master-1"


def test_all_namespaces_and_unscheduled_pods() -> None:
    table = parse_pod_table(ALL_NAMESPACES)
    assert table is not None
    driver, _coredns, pending = table.objects
    assert driver["metadata"]["namespace"] == "gpu-operator"
    assert pod_status(driver) == (False, "Running")  # 0/1 ready
    assert "nodeName" not in pending["spec"]
    assert (
        load_objects(ALL_NAMESPACES, "pods.txt")[0]["metadata"]["name"]
        == driver["metadata"]["name"]
    )


def test_other_tables_are_not_pod_tables() -> None:
    # Without -o wide no row names its node.
    assert (
        parse_pod_table(
            "NAME    READY   STATUS    RESTARTS   AGE\np-1     1/1     Running   0   1d\n"
        )
        is None
    )
    assert parse_pod_table(NODES) is None


def test_operands_that_are_not_ready_are_found_on_their_node() -> None:
    pods = parse_pod_table(PODS)
    assert pods is not None
    nodes = load_objects(NODES, "nodes.txt")
    found = sorted((f.code, f.subject) for f in run_checks([*nodes, *pods.objects]).findings)
    assert ("GPU307", "Pod/gpu-operator/gpu-feature-discovery-4szks") in found
    assert ("GPU307", "Pod/gpu-operator/nvidia-device-plugin-daemonset-k8s2x") in found
    assert not [f for f in found if "toolkit" in f[1]]


def test_the_static_manifests_pods_are_not_the_operators() -> None:
    # AKS's guide applies NVIDIA's static manifest in gpu-resources: its DaemonSet has the
    # operator's device-plugin name, but nothing else of the operator runs there.
    rows = """\
NAMESPACE       NAME                                   READY   STATUS             RESTARTS   AGE   IP         NODE           NOMINATED NODE   READINESS GATES
gpu-resources   nvidia-device-plugin-daemonset-4kq7w   0/1     CrashLoopBackOff   12         1h    10.0.0.9   gpu-worker-1   <none>           <none>
"""
    pods = parse_pod_table(rows)
    assert pods is not None
    nodes = load_objects(NODES, "nodes.txt")
    codes = {f.code for f in run_checks([*nodes, *pods.objects]).findings}
    assert "GPU307" not in codes


def test_a_table_without_namespaces_still_names_the_manager() -> None:
    rows = """\
NAME                                         READY   STATUS    RESTARTS   AGE   IP          NODE         NOMINATED NODE   READINESS GATES
nvidia-dra-driver-gpu-kubelet-plugin-7kdg9   2/2     Running   0          3d    10.0.0.11   dra-h100-1   <none>           <none>
"""
    node = """\
NAME         STATUS   ROLES    AGE   VERSION   LABELS
dra-h100-1   Ready    <none>   3d    v1.34.1   feature.node.kubernetes.io/pci-10de.present=true,nvidia.com/gpu.present=true
"""
    pods = parse_pod_table(rows)
    assert pods is not None and pods.objects[0]["metadata"]["namespace"] == ""
    report = run_checks([*load_objects(node, "node.txt"), *pods.objects])
    (subject,) = report.nodes
    assert subject.managers[0] == "nvidia-dra-driver"
    assert [f for f in report.findings if f.severity != "info"] == []
