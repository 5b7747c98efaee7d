"""DRA objects of resource.k8s.io/v1beta1, v1beta2 and v1alpha3 are read as v1.

The explain corpus's cluster (v1) is written back in each older version's schema, as a
Kubernetes 1.31, 1.32 or 1.33 cluster serves it, and must explain every pod the same.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuop.explain import explain_pod
from gpuop.explain.claims import read_dra
from gpuop.manifests import load_objects
from gpuop.manifests.dra_versions import as_v1

DRA = Path(__file__).parents[2] / "corpus" / "explain" / "dra"
CLUSTER: list[dict[str, Any]] = json.loads((DRA / "cluster.json").read_text())["items"]
_EXACT = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations")


def _older(obj: dict[str, Any], version: str) -> dict[str, Any]:
    """A v1 DRA object as `version` serves it (the inverse of the API server's conversion)."""
    obj = copy.deepcopy(obj)
    if not str(obj.get("apiVersion", "")).startswith("resource.k8s.io/"):
        return obj
    obj["apiVersion"] = f"resource.k8s.io/{version}"
    if version == "v1beta2":
        return obj
    if obj["kind"] == "ResourceSlice":
        devices = []
        for device in obj["spec"].get("devices", []):
            basic = {k: v for k, v in device.items() if k != "name"}
            if version == "v1alpha3" and "capacity" in basic:
                basic["capacity"] = {k: v["value"] for k, v in basic["capacity"].items()}
            devices.append({"name": device["name"], "basic": basic})
        obj["spec"]["devices"] = devices
    claim = obj["spec"].get("spec") if obj["kind"] == "ResourceClaimTemplate" else obj["spec"]
    if obj["kind"] in ("ResourceClaim", "ResourceClaimTemplate"):
        for request in claim["devices"].get("requests", []):
            request.update(request.pop("exactly", {}))
    return obj


def _explained(objects: list[dict[str, Any]], pod: dict[str, Any]) -> Any:
    nodes = [o for o in objects if o["kind"] == "Node"]
    dra = read_dra(objects, [n["metadata"]["name"] for n in nodes])
    result = explain_pod(pod, nodes, [], dra=dra)
    return (result.feasible, result.summary, [(n.name, n.reasons, n.details) for n in result.nodes])


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1", "v1alpha3"])
@pytest.mark.parametrize("pod", ["pod-big-gpu.yaml", "pod-two-vfio.yaml"])
def test_an_older_version_explains_as_v1_does(version: str, pod: str) -> None:
    text = json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": [_older(o, version) for o in CLUSTER]}
    )
    loaded = load_objects(text, "older.json")
    manifest = yaml.safe_load((DRA / pod).read_text())
    assert _explained(loaded, manifest) == _explained(CLUSTER, manifest)
    kinds = {o["apiVersion"] for o in loaded if o["kind"] == "ResourceSlice"}
    assert kinds == {"resource.k8s.io/v1"}


def test_a_v1beta1_request_moves_under_exactly_and_first_available_stays() -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2},
                    {"name": "any", "firstAvailable": [{"name": "a", "deviceClassName": "x"}]},
                ]
            }
        },
    }
    converted = as_v1(claim)
    requests = converted["spec"]["devices"]["requests"]
    assert requests[0] == {
        "name": "gpu",
        "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2},
    }
    assert requests[1] == claim["spec"]["devices"]["requests"][1]
    assert claim["apiVersion"] == "resource.k8s.io/v1beta1"  # the input is left as it was


def test_other_objects_are_left_as_they_are() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    assert as_v1(node) is node
    v1 = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "d"}}
    assert as_v1(v1) is v1
