"""What a node's DRA driver publishes: NVIDIA's two-faced slices and gpuop's race-free ones."""

from __future__ import annotations

import re
import uuid
from collections import Counter
from typing import Any

import pytest

from gpuop.api.cards import GpuCard
from gpuop.catalog import gpu_catalog
from gpuop.dra.publish import (
    DRIVER,
    PCI_BUS_ID_ATTRIBUTE,
    PublishError,
    card_devices,
    cuda_driver_version,
    publish,
    quantity,
    slice_name,
    vfio_uuid,
    vgpu_share,
)
from gpuop.sim.hardware import NodeSpec, cards_for

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
VALUE_KEYS = {"string", "int", "bool", "version"}


def _qualified_ok(name: str) -> bool:
    domain, _, ident = name.rpartition("/")
    if domain and (len(domain) > 63 or not DNS_SUBDOMAIN.match(domain)):
        return False
    return len(ident) <= 32 and bool(C_IDENTIFIER.match(ident))


def api_problems(slices: list[dict[str, Any]]) -> list[str]:
    """The resource.k8s.io/v1 validation rules a driver's slices must pass (1.35 and later)."""
    problems: list[str] = []
    pools: dict[str, list[dict[str, Any]]] = {}
    for manifest in slices:
        name = manifest["metadata"]["name"]
        spec = manifest["spec"]
        where = f"slice {name}"
        if manifest["apiVersion"] != "resource.k8s.io/v1" or manifest["kind"] != "ResourceSlice":
            problems.append(f"{where}: not a resource.k8s.io/v1 ResourceSlice")
        if len(name) > 253 or not DNS_SUBDOMAIN.match(name):
            problems.append(f"{where}: name is not a DNS subdomain")
        placement = [
            k
            for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
            if spec.get(k)
        ]
        if len(placement) != 1:
            problems.append(
                f"{where}: exactly one of nodeName/nodeSelector/allNodes/perDeviceNodeSelection"
            )
        if ("devices" in spec) == ("sharedCounters" in spec):
            problems.append(f"{where}: exactly one of devices and sharedCounters")
        pool = spec["pool"]
        if pool["resourceSliceCount"] < 1 or pool["generation"] < 0:
            problems.append(f"{where}: pool counts")
        pools.setdefault(pool["name"], []).append(spec)
        devices = spec.get("devices", [])
        limit = 64 if any("consumesCounters" in d for d in devices) else 128
        if len(devices) > limit:
            problems.append(f"{where}: {len(devices)} devices, at most {limit}")
        names = [d["name"] for d in devices]
        if len(set(names)) != len(names):
            problems.append(f"{where}: device names repeat")
        for device in devices:
            if len(device["name"]) > 63 or not DNS_LABEL.match(device["name"]):
                problems.append(f"{where}: device {device['name']!r} is not a DNS label")
            entries = {**device.get("attributes", {}), **device.get("capacity", {})}
            if len(entries) > 32:
                problems.append(f"{where}: {device['name']} has over 32 attributes and capacities")
            for key, value in device.get("attributes", {}).items():
                if not _qualified_ok(key) or len(value) != 1 or set(value) - VALUE_KEYS:
                    problems.append(f"{where}: {device['name']} attribute {key}")
                if isinstance(value.get("string"), str) and len(value["string"]) > 64:
                    problems.append(f"{where}: {device['name']} attribute {key} over 64 characters")
            for key in device.get("capacity", {}):
                if not _qualified_ok(key):
                    problems.append(f"{where}: {device['name']} capacity {key}")
            if len(device.get("consumesCounters", [])) > 2:
                problems.append(f"{where}: {device['name']} consumes from over 2 counter sets")
            for use in device.get("consumesCounters", []):
                if len(use["counters"]) > 32:
                    problems.append(f"{where}: {device['name']} consumes over 32 counters")
                if not all(DNS_LABEL.match(c) for c in use["counters"]):
                    problems.append(f"{where}: {device['name']} counter names")
        sets = spec.get("sharedCounters", [])
        if len(sets) > 8:
            problems.append(f"{where}: {len(sets)} counter sets, at most 8")
        for counter_set in sets:
            if not DNS_LABEL.match(counter_set["name"]) or not counter_set["counters"]:
                problems.append(f"{where}: counter set {counter_set['name']}")
            if len(counter_set["counters"]) > 32:
                problems.append(f"{where}: counter set {counter_set['name']} over 32 counters")
            if not all(DNS_LABEL.match(c) for c in counter_set["counters"]):
                problems.append(f"{where}: counter set {counter_set['name']} counter names")
    for pool_name, specs in pools.items():
        if {s["pool"]["resourceSliceCount"] for s in specs} != {len(specs)}:
            problems.append(f"pool {pool_name}: resourceSliceCount is not the number of slices")
        if len({s["pool"]["generation"] for s in specs}) != 1:
            problems.append(f"pool {pool_name}: generations differ")
        declared = {c["name"]: c["counters"] for s in specs for c in s.get("sharedCounters", [])}
        for spec in specs:
            for device in spec.get("devices", []):
                for use in device.get("consumesCounters", []):
                    if use["counterSet"] not in declared:
                        problems.append(
                            f"pool {pool_name}: {device['name']} consumes an undeclared set"
                        )
                    elif set(use["counters"]) - set(declared[use["counterSet"]]):
                        problems.append(
                            f"pool {pool_name}: {device['name']} consumes unknown counters"
                        )
    return problems


def _cards(model: str = "A10", count: int = 2) -> list[GpuCard]:
    return cards_for(NodeSpec("node-a", model, count))


def _devices(slices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}


def test_two_faced_is_one_slice_with_a_gpu_and_a_vfio_device_per_card_and_no_counters() -> None:
    slices = publish("node-a", _cards(), shared_counters=False, driver_version="580.95.05")
    assert len(slices) == 1
    spec = slices[0]["spec"]
    assert spec["driver"] == DRIVER and spec["nodeName"] == "node-a"
    assert spec["pool"] == {"name": "node-a", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1", "gpu-vfio-0", "gpu-vfio-1"]
    assert "sharedCounters" not in spec
    assert not any("consumesCounters" in d for d in spec["devices"])
    assert api_problems(slices) == []


def test_race_free_has_one_counter_set_per_card_consumed_whole_by_every_role() -> None:
    slices = publish("node-a", _cards(), shared_counters=True, driver_version="580.95.05")
    assert [("sharedCounters" in s["spec"]) for s in slices] == [True, False, False]
    counters = slices[0]["spec"]["sharedCounters"]
    assert counters == [
        {"name": "gpu-0-counter-set", "counters": {"memory": {"value": "23028Mi"}}},
        {"name": "gpu-1-counter-set", "counters": {"memory": {"value": "23028Mi"}}},
    ]
    per_card = [[d["name"] for d in s["spec"]["devices"]] for s in slices[1:]]
    assert per_card == [["gpu-0", "gpu-vfio-0"], ["gpu-1", "gpu-vfio-1"]]
    for device in _devices(slices).values():
        card = device["name"].rsplit("-", 1)[-1]
        assert device["consumesCounters"] == [
            {"counterSet": f"gpu-{card}-counter-set", "counters": {"memory": {"value": "23028Mi"}}}
        ]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {3}
    assert api_problems(slices) == []


def test_attributes_are_the_drivers() -> None:
    devices = _devices(
        publish("node-a", _cards(), shared_counters=False, driver_version="580.95.05")
    )
    gpu = devices["gpu-1"]
    assert gpu["attributes"]["type"] == {"string": "gpu"}
    assert gpu["attributes"]["productName"] == {"string": "NVIDIA A10"}
    assert gpu["attributes"]["architecture"] == {"string": "Ampere"}
    assert gpu["attributes"]["brand"] == {"string": "Nvidia"}
    assert gpu["attributes"]["cudaComputeCapability"] == {"version": "8.6.0"}
    assert gpu["attributes"]["driverVersion"] == {"version": "580.95.5"}
    assert gpu["attributes"]["cudaDriverVersion"] == {"version": "13.0.0"}
    assert gpu["attributes"][PCI_BUS_ID_ATTRIBUTE] == {"string": "0000:37:00.0"}
    assert gpu["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:36"}
    assert gpu["attributes"]["uuid"]["string"].startswith("GPU-")
    assert gpu["capacity"] == {"memory": {"value": "23028Mi"}}
    vfio = devices["gpu-vfio-1"]
    assert vfio["attributes"]["type"] == {"string": "vfio"}
    assert vfio["attributes"]["deviceID"] == {"string": "0x2236"}
    assert vfio["attributes"]["vendorID"] == {"string": "0x10de"}
    assert vfio["attributes"]["productName"] == {"string": "GA102GL [A10]"}
    assert vfio["attributes"]["iommuFDEnabled"] == {"bool": False}
    assert vfio["attributes"]["numa"] == {"int": 1}
    assert vfio["attributes"]["uuid"] == {"string": vfio_uuid("0000:37:00.0")}
    assert vfio["capacity"] == {"addressableMemory": {"value": "32816Mi"}}


def test_vfio_uuid_is_the_drivers_sha1_of_the_pci_address() -> None:
    # uuid.NewSHA1(uuid.NameSpaceDNS, []byte(address)) in nvlib.go
    assert vfio_uuid("0000:17:00.0") == str(uuid.uuid5(uuid.NAMESPACE_DNS, "0000:17:00.0"))


def test_one_cards_two_devices_share_the_pci_address_not_the_uuid() -> None:
    found = card_devices(
        publish("node-a", _cards(), shared_counters=False, driver_version="580.95.05")
    )
    by_bus = Counter(d.pci_bus_id for d in found)
    assert by_bus == {"0000:17:00.0": 2, "0000:37:00.0": 2}
    assert len({d.uuid for d in found}) == 4


def test_vgpu_role_only_with_counters_and_shares_the_card_exactly() -> None:
    slices = publish(
        "node-a",
        _cards(),
        ("gpu", "vfio", "vgpu"),
        shared_counters=True,
        driver_version="580.95.05",
    )
    devices = _devices(slices)
    assert vgpu_share(_cards()[0]) == ("A10-12Q", 2)
    vgpus = [d for d in devices.values() if d["attributes"]["type"] == {"string": "vgpu"}]
    assert len(vgpus) == 4
    share = vgpus[0]["consumesCounters"][0]["counters"]["memory"]["value"]
    assert share == quantity((23028 << 20) // 2)
    assert vgpus[0]["attributes"]["vgpuType"] == {"string": "A10-12Q"}
    assert api_problems(slices) == []
    with pytest.raises(PublishError, match="vgpu role"):
        publish("node-a", _cards(), ("vgpu",), shared_counters=False, driver_version="580.95.05")


def test_models_without_a_clean_vgpu_share_publish_no_vgpu_devices() -> None:
    for model in gpu_catalog().gpus:
        cards = cards_for(NodeSpec("node-a", model.model, 1))
        devices = _devices(
            publish("node-a", cards, ("vgpu",), shared_counters=True, driver_version="580.95.05")
        )
        assert bool(devices) == (vgpu_share(cards[0]) is not None), model.model


@pytest.mark.parametrize("model", [g.model for g in gpu_catalog().gpus])
@pytest.mark.parametrize("count", [1, 2, 8, 9, 16])
@pytest.mark.parametrize("shared", [False, True])
def test_every_model_and_count_validates(model: str, count: int, shared: bool) -> None:
    roles = ("gpu", "vfio", "vgpu") if shared else ("gpu", "vfio")
    slices = publish(
        "a-rather-long-node-name-in-a-big-cluster.example.com",
        cards_for(NodeSpec("n", model, count)),
        roles,
        shared_counters=shared,
        driver_version="570.172.08",
        generation=3,
    )
    assert api_problems(slices) == []
    assert {s["spec"]["pool"]["generation"] for s in slices} == {3}
    names = [s["metadata"]["name"] for s in slices]
    assert len(set(names)) == len(names) and all(len(n) <= 63 for n in names)


def test_sixteen_cards_split_the_counter_sets_over_two_slices() -> None:
    slices = publish("n", _cards(count=16), shared_counters=True, driver_version="580.95.05")
    assert [len(s["spec"].get("sharedCounters", [])) for s in slices[:3]] == [8, 8, 0]
    assert len(slices) == 18


def test_slice_names_follow_the_controllers_generate_name_and_are_stable() -> None:
    assert slice_name("node-a", 0, 3).startswith("00000-gpu.nvidia.com-node-a-")
    assert slice_name("node-a", 0, 3) == slice_name("node-a", 0, 3)
    assert slice_name("node-a", 0, 3) != slice_name("node-b", 0, 3)
    assert len(slice_name("n" * 200, 1, 2)) == 63


def test_owner_reference_is_the_node_when_its_uid_is_known() -> None:
    slices = publish(
        "node-a", _cards(), shared_counters=False, driver_version="580.95.05", node_uid="u-1"
    )
    assert slices[0]["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "u-1", "controller": True}
    ]


def test_no_cards_publish_nothing_and_bad_input_is_a_clear_error() -> None:
    assert publish("n", [], shared_counters=True, driver_version="580.95.05") == []
    with pytest.raises(PublishError, match="unknown role"):
        publish("n", _cards(), ("mig",), shared_counters=True, driver_version="580.95.05")
    with pytest.raises(PublishError, match="no PCI address"):
        publish("n", [GpuCard(0, "2236")], shared_counters=False, driver_version="580.95.05")
    with pytest.raises(PublishError, match="repeat"):
        publish("n", _cards()[:1] * 2, shared_counters=False, driver_version="580.95.05")


def test_quantities_and_cuda_versions() -> None:
    assert quantity(24 << 30) == "24Gi"
    assert quantity(23028 << 20) == "23028Mi"
    assert quantity(1000) == "1000"
    assert cuda_driver_version("580.95.05") == "13.0"
    assert cuda_driver_version("570.172.08") == "12.8"
    assert cuda_driver_version("535.261.03") == "12.2"
