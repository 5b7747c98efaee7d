"""Simulated hardware: node manifests, cluster specs, and bad input."""

from __future__ import annotations

import json

import pytest

from gpuop.planner import plan
from gpuop.planner.inventory import INVENTORY_ANNOTATION
from gpuop.policy import default_policy
from gpuop.sim.hardware import NodeSpec, SimError, node_manifest, parse_cluster_spec


def test_node_manifest_looks_like_a_discovered_gpu_server() -> None:
    node = node_manifest(NodeSpec("gpu-a", "A10", 2))
    labels = node["metadata"]["labels"]
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
    cards = json.loads(node["metadata"]["annotations"][INVENTORY_ANNOTATION])
    assert [c["pci"] for c in cards] == ["10de:2236", "10de:2236"]
    assert not any(k.startswith("nvidia.com/") for k in node["status"]["allocatable"])
    node_plan = plan(default_policy(), node)
    assert node_plan.gpu_node and node_plan.advertises == {"nvidia.com/gpu": 2}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (NodeSpec("gpu-a", "Z99", 2), "unknown GPU model 'Z99'; known models: A10"),
        (NodeSpec("gpu-a", "A10", 0), "--count must be at least 1"),
        (NodeSpec("Bad_Name", "A10", 1), "not a valid node name"),
    ],
)
def test_bad_node_specs_are_refused_with_a_clear_message(spec: NodeSpec, message: str) -> None:
    with pytest.raises(SimError, match=message.split(";")[0].replace("(", r"\(")):
        node_manifest(spec)


def test_cluster_spec_with_replicas() -> None:
    specs = parse_cluster_spec(
        {
            "nodes": [
                {"namePrefix": "pool-", "replicas": 12, "gpu": "L40S", "count": 4},
                {"name": "one", "gpu": "A10"},
            ]
        }
    )
    assert len(specs) == 13 and specs[0].name == "pool-00" and specs[-1].name == "one"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"nodes": [{"name": "a", "gpu": "A10"}, {"name": "a", "gpu": "A10"}]}, "listed twice"),
        ({"nodes": [{"name": "a", "gpu": "A10", "colour": "red"}]}, "unknown field"),
        ({"nodes": [{"name": "a", "gpu": "A10", "count": "2"}]}, "expected an integer"),
        ({"nodes": [{"namePrefix": "p-", "gpu": "A10"}]}, "replicas"),
        ([], "a mapping with a `nodes` list"),
    ],
)
def test_bad_cluster_specs_name_the_problem(doc: object, message: str) -> None:
    with pytest.raises(SimError, match=message):
        parse_cluster_spec(doc)
