"""Driver version drift (GPU701) only where one version is the contract: the nodes whose
driver the GPU Operator installs, within the pool of the NVIDIADriver that owns them."""

from __future__ import annotations

from typing import Any

import corpus_gen
import managers_corpus

from gpuop.check import run_checks

Obj = dict[str, Any]
VERSION = "nvidia.com/cuda.driver-version.full"
OWNER = "nvidia.com/gpu-operator.driver.owner"


def _drift(objects: list[Obj]) -> list[tuple[str, str]]:
    report = run_checks(objects)
    return sorted((f.subject, f.message) for f in report.findings if f.code == "GPU701")


def _labels(objects: list[Obj], name: str) -> dict[str, str]:
    node = next(o for o in objects if o["kind"] == "Node" and o["metadata"]["name"] == name)
    labels: dict[str, str] = node["metadata"]["labels"]
    return labels


def _operator_cluster() -> list[Obj]:
    objects = corpus_gen.driver_drift()
    _labels(objects, "gpu-2").pop("nvidia.com/gpu-driver-upgrade-state")
    return objects


def test_a_node_off_the_operators_one_driver_version_is_drift() -> None:
    (found,) = _drift(_operator_cluster())
    assert found[0] == "Node/gpu-4"
    assert "while 3 other container nodes run" in found[1]


def test_each_nvidiadriver_pool_runs_its_own_version() -> None:
    objects = _operator_cluster()
    for name in ("gpu-1", "gpu-2", "gpu-3"):
        _labels(objects, name)[OWNER] = "a100-pool"
    _labels(objects, "gpu-4")[OWNER] = "h100-pool"
    assert _drift(objects) == []
    # Within one pool, a node on another version is drift, and said to be that pool's.
    _labels(objects, "gpu-3")[VERSION] = "535.230.02"
    (found,) = _drift(objects)
    assert found[0] == "Node/gpu-3" and "of NVIDIADriver a100-pool" in found[1]


def test_drivers_the_operator_does_not_install_are_not_compared() -> None:
    objects = _operator_cluster()
    policy = next(o for o in objects if o["kind"] == "ClusterPolicy")
    policy["spec"]["driver"] = {**policy["spec"].get("driver", {}), "enabled": False}
    assert _drift(objects) == []
    # A host's driver, found by the driver manager, is the host's.
    objects = _operator_cluster()
    _labels(objects, "gpu-4")["nvidia.com/gpu.deploy.driver"] = "pre-installed"
    assert _drift(objects) == []


def test_nodes_another_manager_serves_are_not_compared() -> None:
    """The standalone plugin's nodes run the driver their host or image brings."""
    objects: list[Obj] = []
    for index, version in enumerate(("550.127.08", "550.127.08", "570.86.15"), 1):
        name = f"nvdp-{index}"
        labels = {**managers_corpus._gfd("NVIDIA-A100-SXM4-40GB", 4), VERSION: version}
        objects.append(managers_corpus._node(name, labels, {"nvidia.com/gpu": "4"}))
        objects += managers_corpus._standalone(name)
    assert _drift(objects) == []
    report = run_checks(objects)
    assert {n.managers[:1] for n in report.nodes} == {("nvidia-device-plugin",)}
