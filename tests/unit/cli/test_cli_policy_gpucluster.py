"""`gpuop policy validate|defaults|crd` with a GPUCluster (nvidia.com/v1alpha1)."""

from __future__ import annotations

import json

import yaml
from cli_support import RunCli

from gpuop.policy.gpucluster import default_gpu_cluster_object, gpu_cluster_crd_manifest


def test_defaults_round_trip(gpuop: RunCli) -> None:
    run = gpuop("policy", "defaults", "--kind", "GPUCluster")
    assert run.code == 0
    assert yaml.safe_load(run.stdout) == default_gpu_cluster_object()
    valid = gpuop("policy", "validate", "-", input=run.stdout)
    assert valid.code == 0 and valid.stdout == "stdin: valid GPUCluster gpu-cluster\n"
    assert gpuop("policy", "defaults", "--kind", "GPUCluster", "-o", "name").stdout == (
        "gpucluster.nvidia.com/gpu-cluster\n"
    )


def test_crd(gpuop: RunCli) -> None:
    run = gpuop("policy", "crd", "--kind", "GPUCluster", "-o", "json")
    assert run.code == 0 and json.loads(run.stdout) == gpu_cluster_crd_manifest()


def test_invalid_gpucluster_names_every_field(gpuop: RunCli) -> None:
    text = (
        "kind: GPUCluster\nmetadata: {name: gpu-cluster}\nspec:\n  draDriver: {version: 5, x: 1}\n"
    )
    run = gpuop("policy", "validate", "-", input=text)
    assert run.code == 2
    assert run.stdout.splitlines() == [
        "stdin: invalid GPUCluster gpu-cluster (2 problems)",
        "  spec.draDriver.version: expected a string, got a number",
        "  spec.draDriver.x: unknown field",
    ]
    data = json.loads(gpuop("policy", "validate", "-", "-o", "json", input=text).stdout)
    assert data["kind"] == "GPUCluster" and not data["valid"]


def test_a_gpucluster_that_is_not_the_singleton(gpuop: RunCli) -> None:
    text = "kind: GPUCluster\nmetadata: {name: mine}\nspec: {draDriver: {}}\n"
    run = gpuop("policy", "validate", "-", input=text)
    assert run.code == 2 and "must be 'gpu-cluster'" in run.stdout


def test_a_list_of_both_kinds(gpuop: RunCli) -> None:
    policy = yaml.safe_load(gpuop("policy", "defaults").stdout)
    items = {"kind": "List", "items": [policy, default_gpu_cluster_object()]}
    run = gpuop("policy", "validate", "-", input=json.dumps(items))
    assert run.code == 0
    assert run.stdout.splitlines() == [
        "stdin items[0]: valid ClusterPolicy cluster-policy",
        "stdin items[1]: valid GPUCluster gpu-cluster",
    ]


def test_render_a_gpucluster(gpuop: RunCli) -> None:
    text = yaml.safe_dump(default_gpu_cluster_object())
    run = gpuop("render", "--policy", "-", "-o", "name", input=text)
    assert run.code == 0, run.stderr
    names = run.stdout.splitlines()
    assert "daemonset.apps/nvidia-dra-driver-kubelet-plugin" in names
    assert "deviceclass.resource.k8s.io/vfio.gpu.nvidia.com" in names
    assert not any("nvidia-device-plugin" in name for name in names)


def test_render_both_stacks_from_one_dump(gpuop: RunCli) -> None:
    policy = yaml.safe_load(gpuop("policy", "defaults").stdout)
    items = {"kind": "List", "items": [policy, default_gpu_cluster_object()]}
    run = gpuop("render", "-f", "-", "-o", "name", input=json.dumps(items))
    assert run.code == 0, run.stderr
    assert "daemonset.apps/nvidia-device-plugin-daemonset" in run.stdout
    assert "daemonset.apps/nvidia-dra-driver-kubelet-plugin" in run.stdout
