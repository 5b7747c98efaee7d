"""DRA-backed extended resources (DRAExtendedResource, GA in v1.37): a pod asking for
`nvidia.com/gpu` fits a node whose device plugin advertises it and a node where a DeviceClass
with that `extendedResourceName` maps it to DRA devices, in one report."""

from __future__ import annotations

from typing import Any

from explain_builders import container, node, pod

from gpuop.dra.model import DeviceRequest
from gpuop.explain import explain_pod
from gpuop.explain.claims import extended_claim, extended_resources, read_dra
from kit.extended_corpus import DRIVER, device_class, device_slice, held_claim

GPU = "nvidia.com/gpu"


def held(name: str, node_name: str, device: str) -> dict[str, Any]:
    """A claim already allocated one device (another pod's)."""
    claim, status = held_claim(name, "default", node_name, device)
    return {**claim, "status": status}


NODES = [
    node("plugin", extended={GPU: "2"}),
    node("dra"),
    node("dra-taken"),
    node("bare"),
]
DRA_OBJECTS = [
    device_class("gpu", GPU),
    device_slice("dra", 2),
    device_slice("dra-taken", 1),
    held("someone", "dra-taken", "gpu-0"),
]


def _explain(the_pod: dict[str, Any], objects: list[dict[str, Any]] = DRA_OBJECTS):  # type: ignore[no-untyped-def]
    dra = read_dra(objects, [n["metadata"]["name"] for n in NODES])
    return explain_pod(the_pod, NODES, [], dra=dra)


def test_device_plugin_and_dra_nodes_in_one_report() -> None:
    result = _explain(pod("p", limits={GPU: "1"}))
    assert result.feasible == ("plugin", "dra")
    verdicts = {v.name: v for v in result.nodes}
    assert verdicts["dra-taken"].plugin == "DynamicResources"
    assert verdicts["dra-taken"].reasons == ("cannot allocate all claims",)
    assert verdicts["bare"].reasons == ("cannot allocate all claims",)
    (allocated,) = [c for c in result.claims if c["node"] == "dra"]
    assert allocated["allocation"] == {
        "default/p-extended-resources": [f"{DRIVER}/dra/gpu-0"],
    }
    assert result.never_fits_anywhere == ()


def test_without_a_device_class_the_plugin_alone_serves() -> None:
    result = _explain(pod("p", limits={GPU: "1"}), DRA_OBJECTS[1:])
    assert result.feasible == ("plugin",)
    assert {v.name: v.reasons for v in result.nodes if not v.fits} == {
        "dra": ("Insufficient nvidia.com/gpu",),
        "dra-taken": ("Insufficient nvidia.com/gpu",),
        "bare": ("Insufficient nvidia.com/gpu",),
    }


def test_more_than_a_node_has() -> None:
    result = _explain(pod("p", limits={GPU: "2"}))
    assert result.feasible == ("plugin", "dra")
    result = _explain(pod("p", limits={GPU: "3"}))
    assert result.feasible == ()
    assert result.summary == (
        "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 cannot allocate all claims."
        " preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )


def test_the_implicit_name_of_every_class() -> None:
    result = _explain(pod("p", limits={"deviceclass.resource.kubernetes.io/gpu": "1"}))
    assert result.feasible == ("dra",)


def test_the_special_claim_as_the_scheduler_builds_it() -> None:
    init = container("setup", limits={GPU: "3"})
    sidecar = container("proxy", limits={GPU: "1"}, restart_policy="Always")
    main = container("main", requests={"cpu": "1"}, limits={GPU: "2"})
    the_pod = pod("p", containers=[main], initContainers=[init, sidecar])
    claim = extended_claim(the_pod, {GPU: "gpu"})
    # Index 0 (the init container) reuses the sidecar's and main's 3 devices: no request of
    # its own. Requests are named by container index and the resource's place in the
    # container's sorted requests.
    assert claim.requests == (
        DeviceRequest("container-1-request-0", "gpu", count=1),
        DeviceRequest("container-2-request-1", "gpu", count=2),
    )
    bigger = container("setup", limits={GPU: "5"})
    claim = extended_claim(
        pod("p", containers=[main], initContainers=[bigger, sidecar]), {GPU: "gpu"}
    )
    assert DeviceRequest("container-0-request-0", "gpu", count=2) in claim.requests


def test_two_classes_for_one_name_the_newer_wins() -> None:
    dra = read_dra(
        [
            device_class("old", GPU, "2026-01-01T00:00:00Z"),
            device_class("new", GPU, "2026-02-01T00:00:00Z"),
            device_class("b-tie", "example.com/x", "2026-01-01T00:00:00Z"),
            device_class("a-tie", "example.com/x", "2026-01-01T00:00:00Z"),
        ],
        [],
    )
    assert dra.extended is not None
    assert dra.extended[GPU] == "new"
    assert dra.extended["example.com/x"] == "a-tie"
    assert dra.extended["deviceclass.resource.kubernetes.io/old"] == "old"
    assert extended_resources({}) == {}
