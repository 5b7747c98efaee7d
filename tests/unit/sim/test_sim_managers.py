"""Simulated nodes of each manager (`gpuop sim node add --managed-by`) are what `gpuop check`
names that manager's, and find nothing wrong with."""

from __future__ import annotations

import pytest

from gpuop.api.labels import SIM_LABEL
from gpuop.catalog import gpu_catalog
from gpuop.catalog.managers import manager_catalog
from gpuop.check import run_checks
from gpuop.sim.hardware import NodeSpec, SimError, cards_for, node_manifest, parse_cluster_spec
from gpuop.sim.managers import managers, shape_objects, shape_of

SHAPED = [m for m in managers() if m != "gpu-operator"]
# A model each manager's platform offers.
MODELS = {"gke": "L4", "eks-auto-mode": "H100", "nvidia-dra-driver": "H100"}
# The static manifest AKS's guide applies is the standalone plugin's.
NAMED = {"aks": "nvidia-device-plugin"}


def _objects(manager: str, count: int = 2) -> list[dict]:  # type: ignore[type-arg]
    spec = NodeSpec(f"sim-{manager}", MODELS.get(manager, "A100"), count, managed_by=manager)
    shape = shape_of(manager)
    assert shape is not None
    return [node_manifest(spec), *shape_objects(shape, spec.name, cards_for(spec))]


def test_every_shape_is_a_manager_of_the_catalogue() -> None:
    assert set(SHAPED) <= set(manager_catalog().managers)
    assert set(MODELS) <= set(SHAPED)
    assert all(gpu_catalog().by_model(model) for model in MODELS.values())


@pytest.mark.parametrize("manager", SHAPED)
def test_a_simulated_node_is_named_with_its_manager_and_is_healthy(manager: str) -> None:
    report = run_checks(_objects(manager))
    (node,) = report.nodes
    assert node.managers[:1] == (NAMED.get(manager, manager),)
    assert [f.code for f in report.findings if f.severity != "info"] == []


@pytest.mark.parametrize("manager", SHAPED)
def test_the_simulator_leaves_a_shaped_node_alone(manager: str) -> None:
    node = node_manifest(NodeSpec("n", "A100", 1, managed_by=manager))
    # `gpuop sim run` and its DRA loop play the nodes labelled `true` only.
    assert node["metadata"]["labels"][SIM_LABEL] == manager


def test_gke_and_eks_nodes_carry_their_platform_labels_and_no_nfd() -> None:
    gke = _objects("gke")[0]["metadata"]["labels"]
    assert gke["cloud.google.com/gke-accelerator"] == "nvidia-l4"
    assert not any(key.startswith("feature.node.kubernetes.io/") for key in gke)
    eks = _objects("eks-auto-mode", 8)[0]
    assert eks["metadata"]["labels"]["eks.amazonaws.com/instance-gpu-count"] == "8"
    assert eks["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_a_cluster_spec_names_the_manager_and_an_unknown_one_is_refused() -> None:
    (spec,) = parse_cluster_spec(
        {"nodes": [{"name": "gke-l4", "gpu": "L4", "count": 1, "managedBy": "gke"}]}
    )
    assert spec.managed_by == "gke"
    with pytest.raises(SimError, match="unknown manager 'gcp'"):
        parse_cluster_spec({"nodes": [{"name": "x", "gpu": "L4", "managedBy": "gcp"}]})
