"""Simulated hardware: node manifests, cluster specs, and bad input."""

from __future__ import annotations

import json

import pytest

from gpuop.planner import plan
from gpuop.policy import default_policy
from gpuop.sim.hardware import (
    NodeSpec,
    SimError,
    hardware_entries,
    node_manifest,
    parse_cluster_spec,
)
from gpuop.sim.registry import parse_hardware


def test_node_manifest_looks_like_a_discovered_gpu_server() -> None:
    node = node_manifest(NodeSpec("gpu-a", "A10", 2))
    labels = node["metadata"]["labels"]
    # NVIDIA's default NFD configuration labels PCI devices by vendor only.
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert not [k for k in labels if "10de_" in k or "_10de" in k]
    assert not any(k.startswith("gpuop.io/") for k in node["metadata"]["annotations"])
    assert not any(k.startswith("nvidia.com/") for k in node["status"]["allocatable"])
    node_plan = plan(default_policy(), node)
    # Before GPU feature discovery runs nothing says how many cards there are.
    assert node_plan.gpu_node and node_plan.inventory.source == "none"


def test_the_cards_are_in_the_hardware_record() -> None:
    entries = hardware_entries([NodeSpec("gpu-a", "A10", 2), NodeSpec("gpu-b", "L4", 1)])
    machines = parse_hardware(entries)
    assert [card.pci for card in machines["gpu-a"]] == ["10de:2236", "10de:2236"]
    assert [card.model for card in machines["gpu-b"]] == ["L4"]
    assert json.loads(entries["gpu-b"])[0]["bdf"] == "0000:17:00.0"


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


def test_a_spec_of_too_many_nodes_is_refused_before_it_is_built() -> None:
    from gpuop.sim.hardware import MAX_SIM_NODES, SimError, parse_cluster_spec

    huge = {"nodes": [{"namePrefix": "p-", "replicas": 10**12, "gpu": "A10"}]}
    with pytest.raises(SimError, match=f"more than {MAX_SIM_NODES} simulated nodes"):
        parse_cluster_spec(huge)
    over = {
        "nodes": [
            {"namePrefix": "a-", "replicas": MAX_SIM_NODES, "gpu": "A10"},
            {"name": "one-more", "gpu": "A10"},
            {"namePrefix": "b-", "replicas": 1, "gpu": "A10"},
        ]
    }
    with pytest.raises(SimError, match=r"nodes\[2\]\.replicas"):
        parse_cluster_spec(over)
