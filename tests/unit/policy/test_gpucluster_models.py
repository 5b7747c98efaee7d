"""GPUCluster models: upstream's fields, defaults and CRD (nvidia.com/v1alpha1)."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import BaseModel

from gpuop.policy import PolicyError
from gpuop.policy.gpucluster import (
    GpuClusterError,
    GpuClusterSpec,
    GpuClusterStatus,
    default_gpu_cluster_object,
    gpu_cluster_crd_manifest,
    parse_gpu_cluster,
)
from gpuop.policy.models import OpenObject

REPO = Path(__file__).resolve().parents[3]


def _model_of(annotation: Any) -> Any:
    """The model (or None) inside Optional/list/dict/Annotated."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_of(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, dict, tuple):
        for arg in typing.get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
        return None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _model_tree(model: type[BaseModel], path: str = "") -> set[str]:
    paths: set[str] = set()
    for name, field in model.model_fields.items():
        here = f"{path}.{name}"
        paths.add(here)
        inner = _model_of(field.annotation)
        if inner is not None and not issubclass(inner, OpenObject):
            paths |= _model_tree(inner, here)
    return paths


def _schema_tree(schema: dict[str, Any], path: str = "") -> set[str]:
    paths: set[str] = set()
    for name, child in (schema.get("properties") or {}).items():
        here = f"{path}.{name}"
        paths.add(here)
        if child.get("x-kubernetes-preserve-unknown-fields"):
            continue
        node = child.get("items", child) if child.get("type") == "array" else child
        node = node.get("additionalProperties", node) if "properties" not in node else node
        if isinstance(node, dict):
            paths |= _schema_tree(node, here)
    return paths


def _openapi() -> dict[str, Any]:
    (version,) = gpu_cluster_crd_manifest()["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


# Blocks upstream reuses from ClusterPolicy (nvidiav1): gpuop models them once, for both
# CRs; their sub-blocks may be kept open where upstream spells every field.
SHARED = (".dcgm", ".dcgmExporter", ".daemonsets")


def test_spec_fields_are_the_crds() -> None:
    crd = _schema_tree(_openapi()["properties"]["spec"])
    ours = _model_tree(GpuClusterSpec)
    own = {p for p in crd | ours if not p.startswith(SHARED)}
    assert {p for p in ours if p in own} == {p for p in crd if p in own}
    # The shared blocks' own fields (first level) are upstream's.
    for block in SHARED:
        first = {p for p in crd if p.startswith(block + ".") and p.count(".") == 2}
        assert {p for p in ours if p.startswith(block + ".") and p.count(".") == 2} == first


def test_status_fields_are_the_crds() -> None:
    crd = _schema_tree(_openapi()["properties"]["status"])
    assert _model_tree(GpuClusterStatus) == crd


def test_crd_is_upstreams_and_the_charts() -> None:
    crd = gpu_cluster_crd_manifest()
    assert crd["metadata"]["name"] == "gpuclusters.nvidia.com"
    assert crd["spec"]["names"]["kind"] == "GPUCluster"
    assert crd["spec"]["scope"] == "Cluster"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1"
    rules = version["schema"]["openAPIV3Schema"]["x-kubernetes-validations"]
    assert rules[0]["rule"] == "self.metadata.name == 'gpu-cluster'"
    chart = REPO / "deploy" / "helm" / "gpuop" / "crds" / "gpuclusters.nvidia.com.yaml"
    assert yaml.safe_load(chart.read_text()) == crd


def test_the_default_object_validates_against_the_crd_and_resolves() -> None:
    obj = default_gpu_cluster_object()
    jsonschema.validate(obj["spec"], _openapi()["properties"]["spec"])
    resolved = parse_gpu_cluster(obj)
    assert resolved.enabled_operands() == ("dra-driver", "dra-validator", "dcgm-exporter-dra")
    assert resolved.compute_domains_enabled
    assert resolved.gpus_healthcheck_port == 51516
    assert resolved.compute_domains_healthcheck_port == 51515
    assert resolved.driver_install_dir == "/run/nvidia/driver"
    assert resolved.kubelet_root_dir == "/var/lib/kubelet"


def test_controller_defaults_when_unset() -> None:
    resolved = parse_gpu_cluster({"metadata": {"name": "gpu-cluster"}, "spec": {"draDriver": {}}})
    assert not resolved.dcgm_enabled  # nil means off on the DRA stack
    assert resolved.dcgm_exporter_enabled
    assert not resolved.compute_domains_enabled  # no computeDomains block: off
    with_block = {
        "metadata": {"name": "gpu-cluster"},
        "spec": {"draDriver": {"computeDomains": {}}},
    }
    assert parse_gpu_cluster(with_block).compute_domains_enabled  # the CRD's default: true
    resolved = parse_gpu_cluster(
        {
            "metadata": {"name": "gpu-cluster"},
            "spec": {
                "draDriver": {
                    "gpus": {"kubeletPlugin": {"healthcheck": {"enabled": False}}},
                    "computeDomains": {
                        "enabled": False,
                        "kubeletPlugin": {"healthcheck": {"port": 6000}},
                    },
                },
                "dcgm": {"enabled": True},
                "dcgmExporter": {"enabled": False},
            },
        }
    )
    assert resolved.enabled_operands() == ("dra-driver", "dra-validator", "dcgm-dra")
    assert resolved.gpus_healthcheck_port is None
    assert resolved.compute_domains_healthcheck_port == 6000
    assert not resolved.compute_domains_enabled


@pytest.mark.parametrize(
    ("obj", "needle"),
    [
        ({"metadata": {"name": "other"}, "spec": {"draDriver": {}}}, "singleton"),
        ({"spec": {}}, "spec.draDriver"),
        ({"spec": {"draDriver": {"image": "a/b"}}}, "spec.draDriver.image"),
        ({"spec": {"draDriver": {}, "hostPaths": {"rootFS": "/"}}}, "spec.hostPaths.rootFS"),
        ({"kind": "ClusterPolicy", "spec": {"draDriver": {}}}, "kind"),
        ([], "mapping"),
    ],
)
def test_bad_input_names_the_field(obj: Any, needle: str) -> None:
    with pytest.raises(GpuClusterError) as caught:
        parse_gpu_cluster(obj, "gc.yaml")
    assert isinstance(caught.value, PolicyError)
    assert needle in str(caught.value)
    assert str(caught.value).startswith("gc.yaml: ")
