"""explain_pod with ResourceClaims: the DynamicResources filter and its reasons per device."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuop.dra.model import DraInputError
from gpuop.explain import explain_pod
from gpuop.explain.claims import pod_for_claim, read_dra

DRA = Path(__file__).parents[2] / "corpus" / "explain" / "dra"
CLUSTER: list[dict[str, Any]] = json.loads((DRA / "cluster.json").read_text())["items"]
NODES = [o for o in CLUSTER if o["kind"] == "Node"]


def _load(name: str) -> dict[str, Any]:
    return yaml.safe_load((DRA / name).read_text())  # type: ignore[no-any-return]


def _explain(pod: dict[str, Any], extra: list[dict[str, Any]] = ()):  # type: ignore[no-untyped-def, assignment]
    dra = read_dra([*CLUSTER, *extra], [n["metadata"]["name"] for n in NODES])
    return explain_pod(pod, NODES, [], dra=dra)


def test_template_claim_fits_where_memory_allows() -> None:
    e = _explain(_load("pod-big-gpu.yaml"))
    assert e.feasible == ("dra-a",)
    by_node = {c["node"]: c for c in e.claims}
    assert by_node["dra-a"]["allocation"] == {"ml/trainer-gpu": ["gpu.nvidia.com/dra-a/gpu-1"]}
    b = next(n for n in e.nodes if n.name == "dra-b")
    assert (b.plugin, b.reasons) == ("DynamicResources", ("cannot allocate all claims",))
    assert "  gpu-0: selector #0 of request gpu is false" in b.details


def test_counters_and_held_devices_in_the_details() -> None:
    e = _explain(_load("pod-two-vfio.yaml"))
    assert e.feasible == () and e.summary is not None
    assert e.summary.startswith("0/3 nodes are available: 3 cannot allocate all claims.")
    a = next(n for n in e.nodes if n.name == "dra-a")
    assert "  gpu-vfio-0: counter set gpu-0-counter-set exhausted by gpu-0 (ml/cuda-0)" in a.details
    b = next(n for n in e.nodes if n.name == "dra-b")
    assert "  gpu-vfio-0: already allocated to vms/vm-0" in b.details


def test_cel_runtime_error_aborts_the_cycle() -> None:
    claim = _load("claim-missing-attribute.yaml")
    e = _explain(pod_for_claim(claim), [claim])
    assert e.feasible == ()
    assert e.summary is not None and e.summary.startswith(
        'running "DynamicResources" filter plugin:'
    )
    assert "no such key: 'serial'" in e.summary


def test_unknown_class_rejects_everywhere() -> None:
    claim = _load("claim-unknown-class.yaml")
    e = _explain(pod_for_claim(claim), [claim])
    assert e.feasible == ()
    assert {n.reasons for n in e.nodes} == {
        ("request gpu: device class gpu.example.com does not exist",)
    }


def test_missing_claim_and_template_reject_everywhere() -> None:
    pod = _load("pod-bad-cel.yaml")  # names a claim the cluster does not have
    e = _explain(pod)
    assert {n.reasons for n in e.nodes} == {('resourceclaim "bad-cel" not found',)}


def test_invalid_cel_is_an_input_error() -> None:
    with pytest.raises(DraInputError, match="CEL compile error"):
        _explain(_load("pod-bad-cel.yaml"), [_load("claim-bad-cel.yaml")])


def test_slice_for_an_unknown_node_is_a_warning() -> None:
    dra = read_dra([*CLUSTER, _load("slice-unknown-node.yaml")], ["dra-a", "dra-b", "dra-c"])
    assert any("node gone, which is not in the input" in w for w in dra.warnings)


def test_pod_without_claims_is_unchanged() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c"}]},
    }
    e = _explain(pod)
    assert (
        e.feasible == ("dra-a", "dra-b", "dra-c") and e.claims == () and "claims" not in e.to_dict()
    )
