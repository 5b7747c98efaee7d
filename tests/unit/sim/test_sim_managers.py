"""Simulated nodes of each manager (`gpuop sim node add --managed-by`) are what `gpuop check`
names that manager's, and find nothing wrong with."""

from __future__ import annotations

import pytest

from gpuop.api.labels import SIM_LABEL
from gpuop.catalog import gpu_catalog
from gpuop.catalog.managers import manager_catalog
from gpuop.check import run_checks
from gpuop.sim.hardware import NodeSpec, SimError, cards_for, node_manifest, parse_cluster_spec
from gpuop.sim.managers import managers, permitted_entry, shape_objects, shape_of

SHAPED = [m for m in managers() if m != "gpu-operator"]
# A model each manager's platform offers.
MODELS = {"gke": "L4", "eks-auto-mode": "H100", "nvidia-dra-driver": "H100"}
# The static manifest AKS's and EKS's guides apply is the standalone plugin's.
NAMED = {"aks": "nvidia-device-plugin", "eks": "nvidia-device-plugin"}


def _kubevirt_cr(section: str, entry: dict[str, str]) -> dict:  # type: ignore[type-arg]
    """The KubeVirt CR as `gpuop.kube.ops.permit_host_devices` makes it."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
        "spec": {"configuration": {"permittedHostDevices": {section: [entry]}}},
    }


def _objects(manager: str, count: int = 2) -> list[dict]:  # type: ignore[type-arg]
    spec = NodeSpec(f"sim-{manager}", MODELS.get(manager, "A100"), count, managed_by=manager)
    shape = shape_of(manager)
    assert shape is not None
    objects = [node_manifest(spec), *shape_objects(shape, spec.name, cards_for(spec))]
    permitted = permitted_entry(shape, spec.gpu)
    if permitted is not None:
        objects.append(_kubevirt_cr(*permitted))
    return objects


def test_every_shape_is_a_manager_of_the_catalogue_and_every_manager_has_one() -> None:
    # KubeVirt's own plugin is known by its CR's permitted devices, not by node signals;
    # the GPU Operator's nodes are the simulator's own.
    assert set(SHAPED) == {*manager_catalog().managers, "kubevirt"} - {"gpu-operator"}
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


def test_a_kubevirt_node_is_permitted_in_the_cr_without_an_external_provider() -> None:
    shape = shape_of("kubevirt")
    assert shape is not None
    assert permitted_entry(shape, "A100") == (
        "pciHostDevices",
        {"pciVendorSelector": "10DE:20F1", "resourceName": "nvidia.com/GA100_A100_PCIE_40GB"},
    )
    node = _objects("kubevirt")[0]
    assert node["status"]["allocatable"]["nvidia.com/GA100_A100_PCIE_40GB"] == "2"
    assert permitted_entry(shape_of("gke"), "L4") is None  # type: ignore[arg-type]


def test_kubevirt_nodes_on_a_cluster_without_kubevirt_are_refused_before_any_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gpuop.kube.errors import NotFound
    from gpuop.sim import registry

    created: list[object] = []

    def refuse(_client: object, _permitted: object) -> str:
        raise NotFound(404, "404 NotFound: the server could not find the requested resource")

    monkeypatch.setattr(registry.ops, "permit_host_devices_sync", refuse)
    monkeypatch.setattr(registry.ops, "create_object_sync", lambda _c, o: created.append(o))
    spec = NodeSpec("kv-1", "A100", 1, managed_by="kubevirt")
    with pytest.raises(SimError, match=r"KubeVirt's CRD \(kubevirts.kubevirt.io\)"):
        registry.add_nodes(object(), [spec])  # type: ignore[arg-type]
    assert created == []


def test_a_hami_node_registers_its_cards_in_hamis_annotation_not_as_resources() -> None:
    from gpuop.dra.publish import gpu_uuid

    spec = NodeSpec("sim-hami", "A10", 2, managed_by="hami")
    node = node_manifest(spec)
    allocatable = node["status"]["allocatable"]
    assert allocatable["nvidia.com/gpu"] == "20"
    assert not {"nvidia.com/gpumem", "nvidia.com/gpucores"} & set(allocatable)
    register = node["metadata"]["annotations"]["hami.io/node-nvidia-register"]
    first, _second, rest = register.split(":")
    assert rest == ""
    assert first.split(",") == [
        gpu_uuid(spec.name, cards_for(spec)[0]),
        "10",
        "23028",
        "100",
        "NVIDIA-NVIDIA A10",
        "0",
        "true",
    ]
    # Its annotation alone names HAMi, as in a dump of the nodes without their pods.
    (summary,) = run_checks([node]).nodes
    assert summary.managers[:1] == ("hami",)
