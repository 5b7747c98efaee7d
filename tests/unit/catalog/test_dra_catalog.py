"""The DRA stack's data: device classes and labels as NVIDIA's GPUCluster writes them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gpuop.api import labels
from gpuop.catalog import operand_table
from gpuop.catalog.dra import dra_catalog

# Upstream's DeviceClass templates and GPUCluster goldens (provenance in the README there).
UPSTREAM = Path(__file__).parents[2] / "data" / "upstream-v26.7.0"
MANIFESTS = UPSTREAM / "dra-deviceclasses"
GOLDEN = UPSTREAM / "gpucluster-golden"


def test_driver_and_classes() -> None:
    dra = dra_catalog()
    assert dra.driver == "gpu.nvidia.com"
    assert [c.name for c in dra.classes(compute_domains=False)] == [
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "vfio.gpu.nvidia.com",
    ]
    assert [c.name for c in dra.classes(compute_domains=True)] == [
        "gpu.nvidia.com",
        "mig.nvidia.com",
        "compute-domain-daemon.nvidia.com",
        "compute-domain-default-channel.nvidia.com",
        "vfio.gpu.nvidia.com",
    ]
    manifest = dra.device_class("vfio.gpu.nvidia.com").manifest(dra.api_version)
    assert manifest == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "vfio.gpu.nvidia.com"},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": "device.driver == 'gpu.nvidia.com' &&"
                        " device.attributes['gpu.nvidia.com'].type == 'vfio'"
                    }
                }
            ]
        },
    }


def test_classes_are_upstreams_manifests() -> None:
    expressions: dict[str, list[str]] = {}
    paths = sorted(MANIFESTS.glob("04*_deviceclass-*.yaml"))
    assert len(paths) == 4
    for path in paths:
        lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("{{")]
        text = re.sub(r"\{\{[^}]*\}\}", "x", "\n".join(lines))
        for doc in yaml.safe_load_all(text):
            if doc:
                sels = [s["cel"]["expression"] for s in doc["spec"]["selectors"]]
                expressions[doc["metadata"]["name"]] = sels
    ours = {c.name: list(c.selectors) for c in dra_catalog().device_classes}
    assert ours == expressions


def test_deploy_keys_are_upstreams() -> None:
    dra = dra_catalog()
    assert dra.deploy_keys == (
        "driver",
        "dra-driver",
        "dra-validator",
        "dcgm-dra",
        "dcgm-exporter-dra",
    )
    table = operand_table().deploy_labels
    assert set(table.dra_keys) == set(dra.deploy_keys) - {"driver"}
    assert tuple(labels.deploy_label(k) for k in table.dra_keys) == labels.DRA_DEPLOY_LABELS
    assert dra.plugin_deploy_key == "dra-driver"
    assert dra.stack_label == labels.GPU_STACK_LABEL


def test_gpucluster_operands_are_their_own_stack() -> None:
    table = operand_table()
    names = {op.name for op in table.operands}
    dra_ops = table.gpucluster_operands
    assert [op.daemonset for op in dra_ops] == [
        "nvidia-dra-driver-kubelet-plugin",
        "nvidia-dra-validator",
        "nvidia-dcgm-dra",
        "nvidia-dcgm-exporter-dra",
    ]
    assert not names & {op.name for op in dra_ops}
    assert not {op.daemonset for op in table.operands} & {op.daemonset for op in dra_ops}
    for op in dra_ops:
        assert op.stack == "dra"
        assert op.deploy_label in table.deploy_labels.dra_keys
        assert set(op.waits_for) <= {o.name for o in dra_ops} - {op.name}
        if op.image.version_key is not None:
            assert op.image.version_key in table.default_versions
        else:
            assert op.default_version


@pytest.mark.parametrize(
    ("name", "golden"),
    [
        ("dra-driver", "gpucluster-dra-driver-gpus-only.yaml"),
        ("dra-validator", "gpucluster-dra-validation.yaml"),
        ("dcgm-dra", "gpucluster-dcgm.yaml"),
        ("dcgm-exporter-dra", "gpucluster-dcgm-exporter-embedded.yaml"),
    ],
)
def test_operand_rows_match_upstreams_goldens(name: str, golden: str) -> None:
    op = operand_table().gpucluster_operand(name)
    docs = [d for d in yaml.safe_load_all((GOLDEN / golden).read_text()) if d]
    (daemonset,) = [d for d in docs if d["kind"] == "DaemonSet"]
    assert daemonset["metadata"]["name"] == op.daemonset
    assert daemonset["metadata"]["labels"]["app"] == op.app_label
    pod = daemonset["spec"]["template"]
    assert pod["metadata"]["labels"] == op.pod_labels
    assert pod["spec"]["serviceAccountName"] == op.service_account
    assert pod["spec"]["nodeSelector"] == {labels.deploy_label(op.deploy_label): "true"}
