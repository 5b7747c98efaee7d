"""GPUCluster rendering against NVIDIA GPU Operator's own golden renderings.

The inputs are upstream's test CRs (internal/state/gpucluster_render_test.go); the
expected objects are its goldens (internal/state/testdata/golden/gpucluster-*.yaml), kept
in tests/data/upstream-v26.7.0/gpucluster-golden/.
gpuop's own marks (managed-by and operand labels, owner reference, hash) are checked
apart and left out of the comparison.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuop.api.labels import HASH_ANNOTATION, MANAGED_BY_LABEL, OPERAND_LABEL
from gpuop.policy.gpucluster import default_gpu_cluster_object, parse_gpu_cluster
from gpuop.render.gpucluster import render_gpu_cluster, render_operand

GOLDEN = Path(__file__).parents[2] / "data" / "upstream-v26.7.0" / "gpucluster-golden"
ENV = {
    "VALIDATOR_IMAGE": "nvcr.io/nvidia/gpu-operator-validator:test",
    "DCGM_IMAGE": "nvcr.io/nvidia/cloud-native/dcgm:test",
    "DCGM_EXPORTER_IMAGE": "nvcr.io/nvidia/k8s/dcgm-exporter:test",
}
NAMESPACE = "test-operator"


def sample() -> dict[str, Any]:
    """upstream sampleGPUCluster(), named `gpu-cluster` as its CRD requires (the Go test's
    `gpucluster-sample` never meets that validation; the name is in none of the goldens)."""
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "GPUCluster",
        "metadata": {"name": "gpu-cluster"},
        "spec": {
            "draDriver": {
                "repository": "nvcr.io/nvidia",
                "image": "k8s-dra-driver-gpu",
                "version": "v0.1.0",
                "imagePullPolicy": "IfNotPresent",
                "featureGates": {"MPSSupport": True, "AdminAccess": False},
            },
            "daemonsets": {
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                ],
                "priorityClassName": "system-node-critical",
            },
            "hostPaths": {
                "driverInstallDir": "/run/nvidia/driver",
                "kubeletRootDir": "/var/lib/kubelet",
            },
        },
    }


def full_spec() -> dict[str, Any]:
    """upstream fullSpecGPUCluster()."""
    cr = sample()
    driver = cr["spec"]["draDriver"]
    driver["gpus"] = {
        "kubeletPlugin": {
            "env": [{"name": "GPUS_EXTRA", "value": "1"}],
            "resources": {
                "limits": {"cpu": "500m", "memory": "256Mi"},
                "requests": {"cpu": "100m", "memory": "128Mi"},
            },
            "healthcheck": {"port": 52000},
        }
    }
    driver["computeDomains"] = {
        "enabled": True,
        "controller": {"env": [{"name": "CD_CONTROLLER_EXTRA", "value": "1"}]},
        "kubeletPlugin": {
            "env": [{"name": "CD_PLUGIN_EXTRA", "value": "1"}],
            "resources": {
                "limits": {"cpu": "300m", "memory": "512Mi"},
                "requests": {"cpu": "200m", "memory": "64Mi"},
            },
        },
    }
    return cr


def passthrough() -> dict[str, Any]:
    cr = sample()
    cr["spec"]["draDriver"]["featureGates"]["PassthroughSupport"] = True
    return cr


def with_dcgm(cr: dict[str, Any], exporter: dict[str, Any] | None = None) -> dict[str, Any]:
    cr["spec"]["dcgm"] = {"enabled": True}
    if exporter is not None:
        cr["spec"]["dcgmExporter"] = exporter
    return cr


def with_exporter(exporter: dict[str, Any]) -> dict[str, Any]:
    cr = sample()
    cr["spec"]["dcgmExporter"] = exporter
    return cr


def unmarked(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    metadata = obj["metadata"]
    labels = metadata.get("labels", {})
    assert labels.pop(MANAGED_BY_LABEL) == "gpuop"
    labels.pop(OPERAND_LABEL)
    if not labels:
        metadata.pop("labels")
    assert metadata.pop("ownerReferences")[0]["kind"] == "GPUCluster"
    assert metadata["annotations"].pop(HASH_ANNOTATION)
    if not metadata["annotations"]:
        metadata.pop("annotations")
    return obj


@pytest.mark.parametrize(
    ("golden", "operand", "cr"),
    [
        ("gpucluster-dra-driver-gpus-only", "dra-driver", sample()),
        ("gpucluster-dra-driver-passthrough-support", "dra-driver", passthrough()),
        ("gpucluster-dra-driver-full-spec", "dra-driver", full_spec()),
        ("gpucluster-dra-validation", "dra-validator", sample()),
        ("gpucluster-dcgm", "dcgm-dra", with_dcgm(sample())),
        ("gpucluster-dcgm-exporter-embedded", "dcgm-exporter-dra", with_exporter({})),
        (
            "gpucluster-dcgm-exporter-pod-metadata",
            "dcgm-exporter-dra",
            with_exporter({"enablePodLabels": True}),
        ),
        (
            "gpucluster-dcgm-exporter-remote-engine",
            "dcgm-exporter-dra",
            with_dcgm(with_exporter({})),
        ),
    ],
)
def test_renders_as_upstream(golden: str, operand: str, cr: dict[str, Any]) -> None:
    expected = [d for d in yaml.safe_load_all((GOLDEN / f"{golden}.yaml").read_text()) if d]
    rendered = render_operand(parse_gpu_cluster(cr), operand, NAMESPACE, ENV)
    assert [unmarked(obj) for obj in rendered] == expected


def test_default_gpu_cluster_renders_every_enabled_operand() -> None:
    gc = parse_gpu_cluster(default_gpu_cluster_object())
    objects = render_gpu_cluster(gc, "gpu-operator")
    daemonsets = [o["metadata"]["name"] for o in objects if o["kind"] == "DaemonSet"]
    assert daemonsets == [
        "nvidia-dra-driver-kubelet-plugin",
        "nvidia-dra-validator",
        "nvidia-dcgm-exporter-dra",
    ]
    classes = [o["metadata"]["name"] for o in objects if o["kind"] == "DeviceClass"]
    assert "vfio.gpu.nvidia.com" in classes and "compute-domain-daemon.nvidia.com" in classes
    (plugin,) = [
        o
        for o in objects
        if o["metadata"]["name"] == "nvidia-dra-driver-kubelet-plugin" and o["kind"] == "DaemonSet"
    ]
    pod = plugin["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0"
    assert pod["initContainers"][0]["image"].endswith("gpu-operator-validator:v26.7.0")
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.dra-driver": "true"}
    assert all(
        o["metadata"]["namespace"] == "gpu-operator"
        for o in objects
        if o["kind"] in ("DaemonSet", "ServiceAccount")
    )
