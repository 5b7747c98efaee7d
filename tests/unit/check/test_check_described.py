"""`gpuop check` on `kubectl describe node` output, the form most cluster states are posted in.

Describe output names a node's pods and nothing more of them, so the manager of a node is
read from its labels and from its pods' names: the DaemonSet each pod's name carries, in
the namespace each manager installs to (`managers.yaml`, `pod_names`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuop.check import Report, run_checks
from gpuop.check.plugin_signals import pod_name_match
from gpuop.check.state import PodView
from gpuop.manifests.describe import parse_describe

DATA = Path(__file__).resolve().parents[2] / "data" / "describe"

# file: ({node: its first manager}, [non-info findings as "CODE Kind/name"])
EXPECTED: dict[str, tuple[dict[str, str], list[str]]] = {
    "aks-gpu-two-nodes": (
        {
            "aks-gpunp-12345678-vmss000000": "nvidia-device-plugin",
            "aks-gpunp-12345678-vmss000001": "aks",
        },
        ["GPU211 Node/aks-gpunp-12345678-vmss000001"],
    ),
    "aks-guide-gpu-resources": (
        {
            "aks-gpunp-12345678-vmss000000": "nvidia-device-plugin",
            "aks-gpunp-12345678-vmss000001": "aks",
        },
        ["GPU211 Node/aks-gpunp-12345678-vmss000001"],
    ),
    "eks-device-plugin": (
        {
            "ip-192-168-10-22.us-west-2.compute.internal": "nvidia-device-plugin",
            "ip-192-168-41-7.us-west-2.compute.internal": "nvidia-device-plugin",
            "ip-192-168-77-150.us-west-2.compute.internal": "nvidia-device-plugin",
        },
        ["GPU211 Node/ip-192-168-77-150.us-west-2.compute.internal"],
    ),
    "gke-l4-time-sharing": (
        {
            "gke-ml-l4-pool-3f9a2c1d-7hxk": "gke",
            "gke-ml-shared-pool-5e1b7a90-q2mc": "gke",
            "gke-ml-shared-pool-5e1b7a90-x8vn": "gke",
        },
        ["GPU212 Node/gke-ml-shared-pool-5e1b7a90-x8vn"],
    ),
    "openshift-gpu-operator": ({"worker-gpu-0.ocp.example.com": "gpu-operator"}, []),
    "gpu-operator-1.7": ({"gpu-worker-1": "gpu-operator"}, []),
    "gpu-operator-1.6": ({"t4-node-1": "gpu-operator"}, []),
    # `kubectl describe kubevirt` alone: the CR's own mistakes, as its manifest gives them.
    "kubevirt-cr": ({}, ["GPU503 KubeVirt/kubevirt", "GPU508 KubeVirt/kubevirt"]),
    # `kubectl describe clusterpolicy` alone: NVIDIA's v26.7.0 policy, nothing to find.
    "clusterpolicy-v26.7.0": ({}, []),
    # `kubectl describe pod` alone: a waiting GPU pod is not compared with nodes not shown.
    "pod-pending-gpu": ({}, []),
    # `kubectl describe pod` alone: no Node, the operand's pod on a node not in the input.
    "pod-device-plugin-waiting": (
        {},
        ["GPU307 Pod/nvidia-device-plugin-daemonset-md7t8"],
    ),
    "gfd-own-chart-time-slicing": (
        {"ip-192-168-87-217.us-west-2.compute.internal": "nvidia-device-plugin"},
        ["GPU216 Node/ip-192-168-87-217.us-west-2.compute.internal"],
    ),
    "kubevirt-nvidia-plugin": ({"kv-gpu-1": "nvidia-kubevirt-gpu-device-plugin"}, []),
    "kubevirt-own-mdev": ({"kv-t4-2": "kubevirt"}, []),
    "dra-driver": ({"dra-h100-1": "nvidia-dra-driver"}, []),
    "bottlerocket-no-gpu": (
        {"ip-10-20-31-47.eu-central-1.compute.internal": "bottlerocket"},
        ["GPU214 Node/ip-10-20-31-47.eu-central-1.compute.internal"],
    ),
}


def _report(name: str) -> Report:
    described = parse_describe((DATA / f"{name}.txt").read_text(encoding="utf-8"))
    assert described is not None
    return run_checks(described.objects)


def test_every_file_is_expected() -> None:
    assert {path.stem for path in DATA.glob("*.txt")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_described_nodes_are_checked_against_their_manager(name: str) -> None:
    managers, findings = EXPECTED[name]
    report = _report(name)
    primary = {node.name: node.managers[0] for node in report.nodes if node.managers}
    assert primary == managers
    found = sorted(f"{f.code} {f.kind}/{f.name}" for f in report.findings if f.severity != "info")
    assert found == sorted(findings)


def test_the_evidence_names_the_pod_and_says_it_was_known_by_name() -> None:
    report = _report("gke-l4-time-sharing")
    node = next(n for n in report.nodes if n.name == "gke-ml-l4-pool-3f9a2c1d-7hxk")
    assert node.management is not None
    signals = [item["signal"] for item in node.management["evidence"]]
    assert (
        "runs pod kube-system/nvidia-gpu-device-plugin-small-cos-7wz9h (DaemonSet"
        " nvidia-gpu-device-plugin-small-cos, by the pod's name)" in signals
    )


def _pod(namespace: str, name: str) -> PodView:
    return PodView(name, namespace, "n", "Running", {}, (), (), {}, {})


@pytest.mark.parametrize(
    ("namespace", "name", "manager"),
    [
        # The plugin's static manifest and the operator name their DaemonSet alike.
        ("kube-system", "nvidia-device-plugin-daemonset-gf4qg", "nvidia-device-plugin"),
        ("gpu-operator", "nvidia-device-plugin-daemonset-gf4qg", "gpu-operator"),
        ("nvidia-device-plugin", "nvdp-nvidia-device-plugin-x8c9w", "nvidia-device-plugin"),
        ("kube-system", "nvidia-device-plugin-1706020371-x8c9w", "nvidia-device-plugin"),
        ("nvdp", "nvdp-nvidia-device-plugin-mps-control-daemon-x8c9w", "nvidia-device-plugin"),
        ("nvdp", "nvdp-gpu-feature-discovery-x8c9w", "nvidia-device-plugin"),
        ("node-feature-discovery", "gpu-feature-discovery-x8c9w", "nvidia-device-plugin"),
        ("gpu-operator", "gpu-feature-discovery-x8c9w", "gpu-operator"),
        (
            "gpu-operator",
            "nvidia-driver-daemonset-6.8.0-45-generic-ubuntu24.04-x8c9w",
            "gpu-operator",
        ),
        ("kube-system", "nvidia-gpu-device-plugin-5ffkm", "gke"),
        ("kube-system", "nvidia-driver-installer-6zwcn", "gke"),
        (
            "kube-system",
            "nvidia-kubevirt-gpu-dp-daemonset-tq6zl",
            "nvidia-kubevirt-gpu-device-plugin",
        ),
        (
            "nvidia-dra-driver-gpu",
            "nvidia-dra-driver-gpu-kubelet-plugin-4vx8r",
            "nvidia-dra-driver",
        ),
        (
            "nvidia-dra-driver",
            "nvidia-dra-driver-k8s-dra-driver-kubelet-plugin-7kdg9",
            "nvidia-dra-driver",
        ),
        ("nvidia-dra-driver", "nvidia-k8s-dra-driver-kubelet-plugin-qqq5b", "nvidia-dra-driver"),
        ("kube-system", "hami-device-plugin-4vx8r", "hami"),
        # Not a DaemonSet's pod name (a vowel in the suffix, no suffix at all).
        ("kube-system", "nvidia-device-plugin-daemonset-abcde", None),
        ("gpu-operator", "nvidia-device-plugin-daemonset", None),
        ("kube-system", "kube-proxy-w7qj2", None),
    ],
)
def test_a_pod_known_by_name_is_its_daemonsets(
    namespace: str, name: str, manager: str | None
) -> None:
    found = pod_name_match(_pod(namespace, name))
    assert (found[0] if found else None) == manager


def test_a_described_operand_pod_on_a_described_node_is_checked_there() -> None:
    name = "nvidia-device-plugin-daemonset-x4s8d"
    pod = (
        (DATA / "pod-device-plugin-waiting.txt")
        .read_text(encoding="utf-8")
        .replace("nvidia-device-plugin-daemonset-md7t8", name)
        .replace("gpu-node-3/", "worker-gpu-0.ocp.example.com/")
        .replace("gpu-operator-resources", "nvidia-gpu-operator")
    )
    node = (DATA / "openshift-gpu-operator.txt").read_text(encoding="utf-8")
    described = parse_describe(node + "\n" + pod)
    assert described is not None
    report = run_checks(described.objects)
    (finding,) = [f for f in report.findings if f.code == "GPU307"]
    assert finding.name == name
    assert finding.message == (
        "device-plugin on node worker-gpu-0.ocp.example.com is not Ready: Init:0/1"
    )


def test_a_described_pending_pod_beside_described_nodes_says_its_last_event() -> None:
    nodes = (DATA / "eks-device-plugin.txt").read_text(encoding="utf-8")
    # Every node's plugin registers 0 devices: no node advertises a GPU.
    nodes = re.sub(r"nvidia.com/gpu:( +)[0-9]+", r"nvidia.com/gpu:\g<1>0", nodes)
    pod = (DATA / "pod-pending-gpu.txt").read_text(encoding="utf-8")
    described = parse_describe(nodes + "\n" + pod)
    assert described is not None
    report = run_checks(described.objects)
    (finding,) = [f for f in report.findings if f.code == "GPU601"]
    assert finding.name == "cuda-vectoradd"
    assert "; last event: 0/2 nodes are available: 1 Insufficient nvidia.com/gpu" in finding.message


def test_a_pending_pod_without_nodes_is_not_checked() -> None:
    described = parse_describe((DATA / "pod-pending-gpu.txt").read_text(encoding="utf-8"))
    assert described is not None
    report = run_checks(described.objects)
    assert not [f for f in report.findings if f.code == "GPU601"]
    assert any(skip.check == "workloads" for skip in report.skipped)
