"""Nodes of the GPU Operator's DRA stack (GPUCluster) are held to that stack's contract."""

from __future__ import annotations

import copy
from typing import Any

import managers_corpus

from gpuop.check import render_text, run_checks
from gpuop.check.stack import runs_dra_stack

DRA_LABELS = {
    "nvidia.com/gpu.deploy.driver": "true",
    "nvidia.com/gpu.deploy.dra-driver": "true",
}


def _codes(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    report = run_checks(objects)
    return sorted((f.code, f.subject) for f in report.findings if f.severity != "info")


def _node(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == "Node")


def test_without_either_cr_the_dra_stack_is_read_from_the_node_labels() -> None:
    assert runs_dra_stack(DRA_LABELS, cluster_policy=False, gpu_cluster=False)
    with_plugin = {**DRA_LABELS, "nvidia.com/gpu.deploy.device-plugin": "true"}
    assert not runs_dra_stack(with_plugin, cluster_policy=False, gpu_cluster=False)
    held = {**DRA_LABELS, "nvidia.com/gpu.deploy.dra-driver": "false"}
    assert not runs_dra_stack(held, cluster_policy=False, gpu_cluster=False)
    # A ClusterPolicy alone runs the device-plugin stack (and removes the DRA keys).
    assert not runs_dra_stack(DRA_LABELS, cluster_policy=True, gpu_cluster=False)


def test_with_a_gpucluster_the_stack_is_decided_as_the_operator_decides() -> None:
    assert runs_dra_stack({}, cluster_policy=False, gpu_cluster=True)
    assert not runs_dra_stack({}, cluster_policy=True, gpu_cluster=True)
    labelled = {"nvidia.com/gpu.stack": "dra"}
    assert runs_dra_stack(labelled, cluster_policy=True, gpu_cluster=True)


def test_a_dra_stack_node_missing_one_of_its_deploy_labels() -> None:
    objects = managers_corpus.gpu_operator_gpucluster()
    del _node(objects)["metadata"]["labels"]["nvidia.com/gpu.deploy.dra-validator"]
    report = run_checks(objects)
    found = [f for f in report.findings if f.code == "GPU302"]
    assert [f.subject for f in found] == ["Node/dra-1"]
    assert "runs the DRA stack" in found[0].message
    assert "nvidia.com/gpu.deploy.dra-validator=true" in found[0].message


def test_a_dra_stack_node_that_a_device_plugin_still_serves() -> None:
    objects = managers_corpus.gpu_operator_gpucluster()
    node = _node(objects)
    for field in ("capacity", "allocatable"):
        node["status"][field]["nvidia.com/gpu"] = "2"
    # Its cards published as well: GPU803 says it.
    assert _codes(objects) == [("GPU803", "Node/dra-1")]
    # Not published: the device plugin alone serves a node of the DRA stack.
    unpublished = [o for o in objects if o["kind"] != "ResourceSlice"]
    assert _codes(unpublished) == [("GPU201", "Node/dra-1")]


def test_an_unusable_gpucluster_is_reported_and_its_defaults_used() -> None:
    objects = managers_corpus.gpu_operator_gpucluster()
    broken = copy.deepcopy(objects)
    cr = next(o for o in broken if o["kind"] == "GPUCluster")
    cr["spec"]["draDriver"]["computeDomains"] = "yes"
    assert _codes(broken) == [("GPU007", "GPUCluster/gpu-cluster")]
    report = run_checks(broken)
    notice = next(f for f in report.findings if f.code == "GPU001")
    assert "checked against the GPUCluster's defaults" in notice.message


def test_the_node_title_names_the_dra_stack() -> None:
    objects = managers_corpus.gpu_operator_gpucluster(leftover=True)
    shown = render_text(run_checks(objects))
    assert "Node dra-1 (DRA stack, 2× NVIDIA-A100-SXM4-40GB" in shown


def test_the_heading_names_the_gpucluster_the_dra_stack_is_checked_against() -> None:
    objects = managers_corpus.gpu_operator_gpucluster()
    report = run_checks(objects)
    assert report.policy is not None and report.policy.gpu_cluster == "gpu-cluster"
    heading = render_text(report).splitlines()[0]
    assert heading.endswith("DRA stack per GPUCluster gpu-cluster")
    without_cr = [o for o in objects if o["kind"] != "GPUCluster"]
    report = run_checks(without_cr)
    assert report.policy is not None and report.policy.gpu_cluster == "default"
    assert "DRA stack per GPUCluster default" in render_text(report).splitlines()[0]
    # No node on the DRA stack: nothing said of a GPUCluster.
    report = run_checks(managers_corpus.SCENARIOS["standalone-plugin"][0]())
    assert report.policy is not None and report.policy.gpu_cluster is None
    assert "GPUCluster" not in render_text(report).splitlines()[0]


def _eviction(objects: list[dict[str, Any]]) -> list[str]:
    return [f.message for f in run_checks(objects).findings if f.code == "GPU812"]


def test_driver_upgrades_must_evict_the_dra_kubelet_plugin() -> None:
    assert _eviction(managers_corpus.gpu_operator_with_dra_driver()) == []
    objects = managers_corpus.gpu_operator_with_dra_driver(eviction_label=False)
    (message,) = _eviction(objects)
    assert "sets no NODE_LABEL_FOR_GPU_POD_EVICTION" in message and "dra-1" in message
    # A label the nodes do not carry evicts nothing there.
    objects = managers_corpus.gpu_operator_with_dra_driver()
    policy = next(o for o in objects if o["kind"] == "ClusterPolicy")
    policy["spec"]["driver"]["manager"]["env"][0]["value"] = "example.com/dra"
    (message,) = _eviction(objects)
    assert "names example.com/dra, which they do not carry as true" in message
    # The driver is the host's, or an NVIDIADriver's (with its own manager settings).
    for driver in ({"enabled": False}, {"useNvidiaDriverCRD": True}):
        objects = managers_corpus.gpu_operator_with_dra_driver(eviction_label=False)
        policy = next(o for o in objects if o["kind"] == "ClusterPolicy")
        policy["spec"]["driver"] = driver
        assert _eviction(objects) == []
    # Nodes alone: what the ClusterPolicy sets is not known.
    assert _eviction(managers_corpus.gpu_operator_with_dra_driver(nodes_only=True)) == []


def test_a_controller_pod_with_the_plugins_image_names_no_manager() -> None:
    """The DRA driver's controller is a Deployment's pod: on a GPU node it is not the node's
    kubelet plugin, though it runs the same image."""
    objects = managers_corpus.standalone()
    controller = managers_corpus._pod(
        "nvidia-dra-driver-controller-86dbfdb676-n945l",
        "nvdp-1",
        "unused",
        {"app": "nvidia-dra-driver-controller"},
        "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0",
        "gpu-operator",
    )
    controller["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "nvidia-dra-driver-controller-86dbfdb676",
        }
    ]
    (node,) = run_checks([*objects, controller]).nodes
    assert node.managers == ("nvidia-device-plugin",)
