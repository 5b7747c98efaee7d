"""What the simulated node side does when operand pods are Ready."""

from __future__ import annotations

from typing import Any

from gpuop.naming import PciDatabase
from gpuop.sim.drift import DRIFT_KINDS, applicable_kinds, drift_patch
from gpuop.sim.effects import OperandPod, node_changes
from gpuop.sim.hardware import NodeSpec, cards_for, node_manifest
from gpuop.vgpu import default_vgpu_config

HOSTS: dict[str, dict[str, str]] = {}


def _cards(node: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(cards_for(NodeSpec(node["metadata"]["name"], "A10", 2)))


def _apply(node: dict[str, Any], pods: dict[str, OperandPod], rounds: int = 4) -> dict[str, Any]:
    name = node["metadata"]["name"]
    for _ in range(rounds):
        changes = node_changes(
            node,
            _cards(node),
            HOSTS.get(name, {}),
            pods,
            default_vgpu_config(),
            PciDatabase.builtin(),
        )
        HOSTS[name] = changes.host
        for key, value in changes.labels.items():
            if value is None:
                node["metadata"]["labels"].pop(key, None)
            else:
                node["metadata"]["labels"][key] = value
        for key, value in changes.resources.items():
            if value is None:
                node["status"]["allocatable"].pop(key, None)
            else:
                node["status"]["allocatable"][key] = value
    return node


def _pods(*names: str, ready: bool = True) -> dict[str, OperandPod]:
    return {n: OperandPod(n, ready) for n in names}


def _gpu(node: dict[str, Any]) -> dict[str, str]:
    return {k: v for k, v in node["status"]["allocatable"].items() if k.startswith("nvidia.com/")}


def setup_function() -> None:
    HOSTS.clear()


def test_the_node_carries_no_host_state() -> None:
    node = node_manifest(NodeSpec("n", "A10", 2))
    pods = _pods(
        "vgpu-manager", "vgpu-device-manager", "sandbox-validator", "sandbox-device-plugin"
    )
    _apply(node, pods)
    assert not any(key.startswith("gpuop.io/") for key in node["metadata"]["annotations"])
    assert HOSTS["n"]["gpu-driver"] == "nvidia-vgpu"


def test_container_node_advertises_gpus_once_the_chain_is_ready() -> None:
    node = node_manifest(NodeSpec("n", "A10", 2))
    chain = (
        "driver",
        "container-toolkit",
        "operator-validator",
        "device-plugin",
        "gpu-feature-discovery",
    )
    assert _gpu(_apply(node, _pods(*chain))) == {"nvidia.com/gpu": "2"}
    assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A10"
    assert node["metadata"]["labels"]["nvidia.com/gpu.count"] == "2"


def test_device_plugin_waits_for_the_toolkit() -> None:
    node = node_manifest(NodeSpec("n", "A10", 2))
    pods = _pods("driver", "device-plugin")
    pods["container-toolkit"] = OperandPod("container-toolkit", False)
    assert _gpu(_apply(node, pods)) == {}


def test_passthrough_node_advertises_the_pci_model() -> None:
    node = node_manifest(NodeSpec("n", "A10", 2))
    assert _gpu(
        _apply(node, _pods("vfio-manager", "sandbox-validator", "sandbox-device-plugin"))
    ) == {"nvidia.com/GA102GL_A10": "2"}


def test_vgpu_node_follows_the_vgpu_config_label() -> None:
    node = node_manifest(NodeSpec("n", "A10", 2))
    pods = _pods(
        "vgpu-manager", "vgpu-device-manager", "sandbox-validator", "sandbox-device-plugin"
    )
    assert _gpu(_apply(node, pods)) == {"nvidia.com/NVIDIA_A10-12Q": "4"}
    assert node["metadata"]["labels"]["nvidia.com/vgpu.config.state"] == "success"
    node["metadata"]["labels"]["nvidia.com/vgpu.config"] = "A10-4Q"
    assert _gpu(_apply(node, pods)) == {"nvidia.com/NVIDIA_A10-4Q": "12"}


def test_an_infeasible_vgpu_config_fails_visibly() -> None:
    node = node_manifest(NodeSpec("n", "A10", 2))
    node["metadata"]["labels"]["nvidia.com/vgpu.config"] = "T4-8Q"
    pods = _pods(
        "vgpu-manager", "vgpu-device-manager", "sandbox-validator", "sandbox-device-plugin"
    )
    _apply(node, pods)
    assert node["metadata"]["labels"]["nvidia.com/vgpu.config.state"] == "failed"
    assert _gpu(node) == {}


def test_resources_are_withdrawn_when_the_plugin_goes_away() -> None:
    node = node_manifest(NodeSpec("n", "A10", 2))
    _apply(node, _pods("vfio-manager", "sandbox-validator", "sandbox-device-plugin"))
    assert _gpu(_apply(node, _pods("vfio-manager", "sandbox-validator"))) == {}


def test_every_drift_kind_applies_to_a_node_of_its_mode() -> None:
    vgpu = _apply(
        node_manifest(NodeSpec("v", "A10", 2)),
        _pods("vgpu-manager", "vgpu-device-manager", "sandbox-validator", "sandbox-device-plugin"),
    )
    passthrough = _apply(
        node_manifest(NodeSpec("p", "A10", 2)), _pods("vfio-manager", "sandbox-device-plugin")
    )
    container = _apply(
        node_manifest(NodeSpec("c", "A10", 2)),
        _pods("driver", "container-toolkit", "device-plugin"),
    )
    covered = set()
    for node in (vgpu, passthrough, container):
        for kind in applicable_kinds(node):
            patch = drift_patch(kind, node, _cards(node))
            assert patch.labels or patch.resources
            covered.add(kind)
    assert covered == set(DRIFT_KINDS)


def test_drift_docs_are_in_sync() -> None:
    from pathlib import Path

    from gpuop.sim.drift import render_drift_docs

    doc = (Path(__file__).resolve().parents[3] / "docs" / "sim.md").read_text()
    assert render_drift_docs() in doc


def test_kata_plugin_names_gpus_by_model_with_an_empty_alias() -> None:
    node = node_manifest(NodeSpec("k", "A10", 2))
    pods = _pods("vfio-manager", "sandbox-validator")
    assert _gpu(_apply(node, {**pods, **_pods("kata-sandbox-device-plugin")})) == {
        "nvidia.com/pgpu": "2"
    }
    kata = {
        "kata-sandbox-device-plugin": OperandPod(
            "kata-sandbox-device-plugin", True, {"P_GPU_ALIAS": ""}
        )
    }
    assert _gpu(_apply(node, {**pods, **kata})) == {"nvidia.com/GA102GL_A10": "2"}


def test_feature_discovery_reports_the_driver_the_pod_installed_and_keeps_it_while_it_restarts() -> (
    None
):
    node = node_manifest(NodeSpec("upgrading", "A10", 2))
    chain = ("driver", "container-toolkit", "device-plugin", "gpu-feature-discovery")
    pods = _pods(*chain)
    _apply(node, pods)
    assert node["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] == "595.91.07"
    pods["driver"] = OperandPod(
        "driver", True, image="nvcr.io/nvidia/driver:595.100.01-ubuntu24.04"
    )
    _apply(node, pods)
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/cuda.driver-version.full"] == "595.100.01"
    assert labels["nvidia.com/cuda.driver-version.minor"] == "100"
    del pods["driver"]
    _apply(node, pods)
    assert node["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] == "595.100.01"


def test_a_node_that_ran_the_driver_advertises_passthrough_after_a_switch() -> None:
    node = node_manifest(NodeSpec("switched", "A10", 2))
    _apply(node, _pods("driver", "container-toolkit", "device-plugin", "gpu-feature-discovery"))
    _apply(node, _pods("vfio-manager", "sandbox-validator", "sandbox-device-plugin"))
    assert _gpu(node) == {"nvidia.com/GA102GL_A10": "2"}
