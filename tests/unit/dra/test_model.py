"""Reading DRA objects: qualified names, pools, claims, templates, pods, bad input."""

from __future__ import annotations

from typing import Any

import pytest
from dra_builders import claim, counter_slice, device, device_class, device_slice, request, template
from hypothesis import given
from hypothesis import strategies as st

from gpuop.dra.model import (
    AllocatedDevice,
    DraInputError,
    Version,
    newest_generations,
    pod_claim_refs,
    read_claim,
    read_claim_template,
    read_class,
    read_slice,
)


def test_slice_qualifies_names_with_the_driver() -> None:
    dev = device(
        "gpu-0",
        extra={
            "driverVersion": {"version": "550.54.15"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        },
    )
    s = read_slice(device_slice("n1", [dev]))
    (d,) = s.devices
    assert d.attributes["gpu.nvidia.com/type"] == "gpu"
    assert d.attributes["gpu.nvidia.com/driverVersion"] == Version("550.54.15")
    assert d.attributes["resource.kubernetes.io/pcieRoot"] == "pci0000:00"
    assert d.capacity["gpu.nvidia.com/memory"] == 40 * 2**30
    assert (d.node, d.pool, d.driver) == ("n1", "n1", "gpu.nvidia.com")


def test_a_pool_is_its_newest_generation_and_complete_with_every_slice() -> None:
    counters = read_slice(counter_slice("n1", {"gpu-0-counter-set": 1}, count=2))
    devices = read_slice(
        device_slice("n1", [device("gpu-0", counter_set="gpu-0-counter-set")], count=2)
    )
    pool = newest_generations([counters, devices])[("gpu.nvidia.com", "n1")]
    assert len(pool) == pool[0].slice_count == 2
    assert [c.name for s in pool for c in s.counter_sets] == ["gpu-0-counter-set"]
    newer = read_slice(device_slice("n1", [device("gpu-1")], generation=2))
    (latest,) = newest_generations([counters, devices, newer]).values()
    assert [d.name for s in latest for d in s.devices] == ["gpu-1"] and latest[0].generation == 2


def test_counters_and_devices_in_one_slice_are_refused() -> None:
    s = device_slice("n1", [device("gpu-0")])
    s["spec"]["sharedCounters"] = [{"name": "x", "counters": {"card": {"value": "1"}}}]
    with pytest.raises(DraInputError, match="devices or sharedCounters"):
        read_slice(s)


def test_claim_with_requests_and_allocation() -> None:
    c = read_claim(
        claim(
            "c1",
            request("a", count=2),
            request("b", "vfio.gpu.nvidia.com", "true", mode="All"),
            namespace="ns",
            allocated=[("a", "n1", "gpu-0")],
        )
    )
    assert c.key == "ns/c1"
    assert [(r.name, r.device_class, r.count, r.mode) for r in c.requests] == [
        ("a", "gpu.nvidia.com", 2, "ExactCount"),
        ("b", "vfio.gpu.nvidia.com", 0, "All"),
    ]
    assert c.requests[1].selectors == ("true",)
    assert c.allocated == (AllocatedDevice("a", "gpu.nvidia.com", "n1", "gpu-0"),)


def test_first_available_becomes_subrequests() -> None:
    obj = claim("c1")
    obj["spec"]["devices"]["requests"] = [
        {
            "name": "r",
            "firstAvailable": [
                {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 2},
                {"name": "one", "deviceClassName": "gpu.nvidia.com"},
            ],
        }
    ]
    (r,) = read_claim(obj).requests
    assert [(s.name, s.count) for s in r.subrequests] == [("big", 2), ("one", 1)]


def test_template_makes_an_unallocated_claim() -> None:
    c = read_claim_template(template("t", request("gpu")), claim_name="pod-gpu-abcde")
    assert c.name == "pod-gpu-abcde" and c.allocated is None and c.requests[0].name == "gpu"


def test_pod_claim_refs_use_generated_names() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "resourceClaims": [
                {"name": "a", "resourceClaimName": "shared"},
                {"name": "b", "resourceClaimTemplateName": "t"},
            ]
        },
        "status": {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "p-b-x1"}]},
    }
    refs = pod_claim_refs(pod)
    assert [(r.name, r.claim_name, r.template_name) for r in refs] == [
        ("a", "shared", None),
        ("b", "p-b-x1", "t"),
    ]


def test_class_selectors() -> None:
    c = read_class(device_class("gpu.nvidia.com"))
    assert c.name == "gpu.nvidia.com" and "type == 'gpu'" in c.selectors[0]


@pytest.mark.parametrize(
    ("obj", "where"),
    [
        (
            {"kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": {"pool": {"name": "p"}}},
            "ResourceSlice s.spec.driver",
        ),
        (
            device_slice("n1", [{"name": "gpu-0", "capacity": {"memory": {"value": "lots"}}}]),
            "capacity[memory].value",
        ),
        (device_slice("n1", [{"name": "gpu-0", "attributes": {"type": {}}}]), "attributes[type]"),
        (claim("c", {"name": "r"}), "needs exactly or firstAvailable"),
        (claim("c", request("r", count=0)), "count: must be at least 1"),
        (claim("c", request("r", mode="Some")), "allocationMode"),
    ],
)
def test_bad_input_names_where(obj: dict[str, Any], where: str) -> None:
    reader = read_claim if obj["kind"] == "ResourceClaim" else read_slice
    with pytest.raises(DraInputError, match="^.*" + __import__("re").escape(where)):
        reader(obj)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


def _mutate(base: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    import copy

    obj = copy.deepcopy(base)
    node: Any = obj
    for key in path[:-1]:
        node = node[key] if isinstance(node, dict) else node[int(key)]
    if isinstance(node, dict):
        node[path[-1]] = value
    else:
        node[int(path[-1])] = value
    return obj


SLICE_PATHS = [
    ["spec"],
    ["spec", "driver"],
    ["spec", "pool"],
    ["spec", "pool", "generation"],
    ["spec", "devices"],
    ["spec", "devices", "0"],
    ["spec", "devices", "0", "attributes"],
    ["spec", "devices", "0", "capacity"],
    ["spec", "devices", "0", "consumesCounters"],
    ["metadata"],
    ["spec", "nodeName"],
]
CLAIM_PATHS = [
    ["spec"],
    ["spec", "devices"],
    ["spec", "devices", "requests"],
    ["spec", "devices", "requests", "0"],
    ["spec", "devices", "requests", "0", "exactly"],
    ["spec", "devices", "requests", "0", "exactly", "count"],
    ["spec", "devices", "requests", "0", "exactly", "selectors"],
    ["status"],
    ["status", "allocation"],
]


@given(st.sampled_from(SLICE_PATHS), json_values)
def test_slice_reader_never_fails_other_than_clearly(path: list[str], value: Any) -> None:
    base = device_slice("n1", [device("gpu-0", counter_set="cs")])
    try:
        read_slice(_mutate(base, path, value))
    except DraInputError as error:
        assert "ResourceSlice" in str(error) and "\n" not in str(error)


@given(st.sampled_from(CLAIM_PATHS), json_values)
def test_claim_reader_never_fails_other_than_clearly(path: list[str], value: Any) -> None:
    base = claim(
        "c", request("r", "gpu.nvidia.com", "true", count=1), allocated=[("r", "n1", "gpu-0")]
    )
    try:
        read_claim(_mutate(base, path, value))
    except DraInputError as error:
        assert "ResourceClaim" in str(error) and "\n" not in str(error)
