"""`gpuop plan --gpu-cluster`: which stack a node runs, and why (text and JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from cli_support import RunCli

from gpuop.policy.gpucluster import default_gpu_cluster_object

STACK = "nvidia.com/gpu.stack"


def test_text_says_the_stack_and_why(gpuop: RunCli) -> None:
    run = gpuop("plan", "--gpu", "A10", "--count", "2", "--gpu-cluster", "default",
                "--label", f"{STACK}=dra")  # fmt: skip
    assert run.code == 0, run.stderr
    assert f"  stack      dra (label): {STACK}=dra" in run.stdout
    assert "set     nvidia.com/gpu.deploy.dra-driver=true" in run.stdout
    assert "nvidia-dra-driver-kubelet-plugin" in run.stdout
    assert "disabled by the GPUCluster: dcgm-dra" in run.stdout
    assert "nvidia.com/gpu.deploy.device-plugin=true" not in run.stdout


def test_json_for_a_cluster_moving_node_by_node(gpuop: RunCli, tmp_path: Path) -> None:
    nfd = {"feature.node.kubernetes.io/pci-10de.present": "true"}
    nodes = {
        "kind": "List",
        "items": [
            {"kind": "Node", "metadata": {"name": "a", "labels": nfd}},
            {"kind": "Node", "metadata": {"name": "b", "labels": {**nfd, STACK: "dra"}}},
            {"kind": "Node", "metadata": {"name": "c", "labels": {**nfd, STACK: "nope"}}},
        ],
    }
    (tmp_path / "nodes.json").write_text(json.dumps(nodes))
    (tmp_path / "gc.yaml").write_text(yaml.safe_dump(default_gpu_cluster_object()))
    run = gpuop("plan", "-f", str(tmp_path / "nodes.json"), "--gpu-cluster",
                str(tmp_path / "gc.yaml"), "-o", "json")  # fmt: skip
    assert run.code == 0, run.stderr
    plans = [json.loads(line) for line in run.stdout.splitlines()]
    assert [(p["node"], p["stack"]["stack"], p["stack"]["reason"]) for p in plans] == [
        ("a", "device-plugin", "default"),
        ("b", "dra", "label"),
        ("c", "device-plugin", "invalid-label"),
    ]
    assert plans[0]["inputs"]["gpu_cluster"] == str(tmp_path / "gc.yaml")
    assert any(n["code"] == "StackLabelIgnored" for n in plans[2]["notices"])


def test_without_a_gpu_cluster_the_plan_is_unchanged(gpuop: RunCli) -> None:
    run = gpuop("plan", "--gpu", "A10", "-o", "json")
    assert "stack" not in json.loads(run.stdout)
    ignored = gpuop("plan", "--gpu", "A10", "--label", f"{STACK}=dra", "-o", "json")
    data = json.loads(ignored.stdout)
    assert data["stack"]["stack"] == "device-plugin"
    assert any(n["code"] == "StackLabelIgnored" for n in data["notices"])


def test_gpu_cluster_alone(gpuop: RunCli) -> None:
    run = gpuop("plan", "--gpu", "H100", "--gpu-cluster", "default", "--no-cluster-policy")
    assert run.code == 0
    assert "policy     none (a GPUCluster alone)" in run.stdout
    assert "stack      dra (gpu-cluster-only)" in run.stdout


def test_bad_gpu_cluster(gpuop: RunCli) -> None:
    run = gpuop("plan", "--gpu", "A10", "--gpu-cluster", "-", input="kind: GPUCluster\nspec: {}\n")
    assert run.code == 2
    assert "not a valid GPUCluster" in run.stderr and "spec.draDriver" in run.stderr
    assert "Traceback" not in run.stderr
    run = gpuop("plan", "--gpu", "A10", "--no-cluster-policy")
    assert run.code == 2 and "--no-cluster-policy needs --gpu-cluster" in run.stderr
