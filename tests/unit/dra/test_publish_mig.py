"""MIG partitions published as NVIDIA's driver does with DynamicMIG, and what they exclude."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import pytest
import yaml
from dra_builders import claim, request
from test_publish import api_problems

from gpuop.catalog import gpu_catalog
from gpuop.catalog.dra import dra_catalog
from gpuop.catalog.mig import mig_catalog
from gpuop.dra.allocate import allocated_devices, fit
from gpuop.dra.cel import compile_selector
from gpuop.dra.mig import counter_name, rfc1123
from gpuop.dra.model import read_claim, read_classes, read_slices
from gpuop.dra.publish import mig_profiles, publish
from gpuop.sim.hardware import NodeSpec, cards_for

DRIVER_VERSION = "580.95.05"
MIG_MODELS = [g.model for g in gpu_catalog().gpus if g.mig_capable]
CLASSES = read_classes(
    [c.manifest(dra_catalog().api_version) for c in dra_catalog().classes(compute_domains=False)]
)
CANONICAL = re.compile(r"^gpu-(\d+)-mig-(.+)-(\d+)-(\d+)$")  # mig.go canonicalMigNameRegex


def _publish(model: str, count: int = 1, *, shared: bool = True) -> list[dict[str, Any]]:
    return publish(
        "node-a",
        cards_for(NodeSpec("node-a", model, count)),
        shared_counters=shared,
        driver_version=DRIVER_VERSION,
        mig=True,
    )


def _devices(slices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}


def _type(device: dict[str, Any]) -> str:
    return str(device["attributes"]["type"]["string"])


def test_every_mig_capable_model_has_mig_geometry() -> None:
    assert MIG_MODELS == ["A30", "A100", "H100"]
    for model in MIG_MODELS:
        assert mig_catalog().profiles(model), model
    for model in gpu_catalog().gpus:
        if not model.mig_capable:
            assert not mig_profiles(cards_for(NodeSpec("n", model.model, 1))[0])


def _parted_counts(device_id: str) -> dict[str, int]:
    """Per MIG profile, how many mig-parted's `all-<profile>` layout puts on this board."""
    text = resources.files("gpuop.catalog").joinpath("mig-parted-config.yaml").read_text("utf-8")
    configs = yaml.safe_load(text)["mig-configs"]
    wanted = f"0x{device_id}10de".lower()
    counts: dict[str, int] = {}
    for name, entries in configs.items():
        if not name.startswith("all-") or name in ("all-disabled", "all-enabled", "all-balanced"):
            continue
        for entry in entries:
            filters = [f.lower() for f in entry.get("device-filter", [])]
            if filters and wanted not in filters:
                continue
            for profile, count in (entry.get("mig-devices") or {}).items():
                counts.setdefault(profile, count)
    return counts


@pytest.mark.parametrize("model", MIG_MODELS)
def test_profiles_are_mig_parteds_and_as_many_fit_a_card(model: str) -> None:
    gpu = gpu_catalog().by_model(model)
    assert gpu is not None
    counts = _parted_counts(gpu.pci_device_id)
    for profile in mig_catalog().profiles(model):
        assert profile.name in counts, (model, profile.name)
        disjoint = len({start // profile.size for start in profile.placements})
        plus_me = profile.name.endswith("+me")  # one media-engine instance per card
        assert (1 if plus_me else disjoint) == counts[profile.name], (model, profile.name)


def test_names_follow_the_drivers_canonical_form_and_are_dns_labels() -> None:
    devices = _devices(_publish("H100"))
    mig = sorted(name for name, d in devices.items() if _type(d) == "mig")
    assert mig[:3] == ["gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1", "gpu-0-mig-1g10gb-19-2"]
    assert "gpu-0-mig-1g10gb-me-20-6" in mig and "gpu-0-mig-7g80gb-0-0" in mig
    assert len(mig) == 7 + 7 + 4 + 3 + 2 + 1 + 1
    assert all(CANONICAL.match(name) for name in mig)
    assert rfc1123("1g5gb+me") == "1g5gb-me"
    assert counter_name("copyEngines") == "copy-engines"
    assert counter_name("ofaEngines") == "ofa-engines"


def test_mig_device_attributes_capacities_and_counters_are_the_drivers() -> None:
    devices = _devices(_publish("H100"))
    gpu, part = devices["gpu-0"], devices["gpu-0-mig-2g20gb-14-2"]
    attributes = part["attributes"]
    assert attributes["type"] == {"string": "mig"}
    assert attributes["profile"] == {"string": "2g.20gb"}
    assert attributes["parentUUID"] == gpu["attributes"]["uuid"]
    assert "uuid" not in attributes  # an abstract partition has no MIG UUID yet
    for shared in ("productName", "brand", "architecture", "cudaComputeCapability"):
        assert attributes[shared] == gpu["attributes"][shared]
    assert attributes["resource.kubernetes.io/pciBusID"] == {"string": "0000:17:00.0"}
    assert part["capacity"] == {
        "multiprocessors": {"value": "32"},
        "copyEngines": {"value": "2"},
        "decoders": {"value": "2"},
        "encoders": {"value": "0"},
        "jpegEngines": {"value": "2"},
        "ofaEngines": {"value": "0"},
        "memory": {"value": "20096Mi"},
    }
    (use,) = part["consumesCounters"]
    assert use["counterSet"] == "gpu-0-counter-set"
    assert set(use["counters"]) == {
        "multiprocessors",
        "copy-engines",
        "decoders",
        "encoders",
        "jpeg-engines",
        "ofa-engines",
        "memory",
        "memory-slice-2",
        "memory-slice-3",
    }
    # The full GPU: capacity and consumption are the per-dimension maxima and every slice.
    assert gpu["capacity"]["multiprocessors"] == {"value": "114"}
    assert gpu["capacity"]["memory"] == {"value": "81152Mi"}
    counter_sets = [c for s in _publish("H100") for c in s["spec"].get("sharedCounters", [])]
    assert counter_sets == [
        {"name": "gpu-0-counter-set", "counters": gpu["consumesCounters"][0]["counters"]}
    ]
    assert len(counter_sets[0]["counters"]) == 7 + 8


@pytest.mark.parametrize("model", MIG_MODELS)
@pytest.mark.parametrize("count", [1, 2, 8, 9, 16])
@pytest.mark.parametrize("shared", [False, True])
def test_every_mig_model_and_count_validates(model: str, count: int, shared: bool) -> None:
    slices = publish(
        "a-rather-long-node-name-in-a-big-cluster.example.com",
        cards_for(NodeSpec("n", model, count)),
        shared_counters=shared,
        driver_version="570.172.08",
        generation=2,
        mig=True,
    )
    assert api_problems(slices) == []
    assert all(len(s["spec"].get("devices", [])) <= 64 for s in slices)
    assert len(_devices(slices)) == sum(len(s["spec"].get("devices", [])) for s in slices)


def test_ampere_in_mig_mode_offers_no_full_gpu_hopper_does() -> None:
    a100 = _devices(_publish("A100"))
    assert "gpu-0" not in a100 and "gpu-vfio-0" in a100
    assert {_type(d) for d in a100.values()} == {"mig", "vfio"}
    assert len(a100) == 7 + 7 + 4 + 3 + 2 + 1 + 1 + 1
    h100 = _devices(_publish("H100"))
    assert {_type(d) for d in h100.values()} == {"gpu", "mig", "vfio"}


def test_two_faced_mig_is_the_driver_as_it_is_no_vfio_device_on_a_partitioned_card() -> None:
    slices = _publish("H100", 2, shared=False)
    devices = _devices(slices)
    assert not any(_type(d) == "vfio" for d in devices.values())
    assert all("consumesCounters" in d for d in devices.values())
    assert [len(s["spec"].get("sharedCounters", [])) for s in slices] == [2, 0, 0]


def test_mig_is_off_by_default_and_changes_nothing_on_other_models() -> None:
    cards = cards_for(NodeSpec("n", "H100", 2))
    for shared in (False, True):
        plain = publish("n", cards, shared_counters=shared, driver_version=DRIVER_VERSION)
        assert not any(_type(d) == "mig" for d in _devices(plain).values())
        a10 = cards_for(NodeSpec("n", "A10", 2))
        assert publish("n", a10, shared_counters=shared, driver_version=DRIVER_VERSION) == (
            publish("n", a10, shared_counters=shared, driver_version=DRIVER_VERSION, mig=True)
        )


def test_mig_class_selector_matches_exactly_the_mig_devices() -> None:
    slices = read_slices(_publish("H100", 2))
    devices = [d for s in slices for d in s.devices]
    for class_name, kind in (
        ("mig.nvidia.com", "mig"),
        ("gpu.nvidia.com", "gpu"),
        ("vfio.gpu.nvidia.com", "vfio"),
    ):
        (expression,) = dra_catalog().device_class(class_name).selectors
        selector = compile_selector(expression)
        matched = {d.name for d in devices if selector.evaluate(d)}
        assert matched == {d.name for d in devices if d.attributes["gpu.nvidia.com/type"] == kind}
        assert matched


def _fits(
    slices: list[dict[str, Any]], wanted: dict[str, Any], held: list[tuple[str, str]]
) -> bool:
    others = [
        read_claim(claim(f"held-{i}", request("r"), allocated=[("r", "node-a", name)]))
        for i, (_, name) in enumerate(held)
    ]
    verdict = fit(
        [read_claim(wanted)], "node-a", read_slices(slices), CLASSES, allocated_devices(others)
    )
    return verdict.fits


def _one(class_name: str, name: str | None = None) -> dict[str, Any]:
    exprs = (f"device.attributes['gpu.nvidia.com'].profile == '{name}'",) if name else ()
    return claim("wanted", request("r", class_name, *exprs))


@pytest.mark.parametrize("model", MIG_MODELS)
def test_any_partition_blocks_the_full_gpu_and_vfio_and_they_block_every_partition(
    model: str,
) -> None:
    slices = _publish(model)
    devices = _devices(slices)
    partitions = [name for name, d in devices.items() if _type(d) == "mig"]
    wholes = [name for name, d in devices.items() if _type(d) in ("gpu", "vfio")]
    class_of = {"gpu": "gpu.nvidia.com", "vfio": "vfio.gpu.nvidia.com"}
    for partition in partitions:
        held = [("mig", partition)]
        for whole in wholes:
            assert not _fits(slices, _one(class_of[_type(devices[whole])]), held), (
                partition,
                whole,
            )
    for whole in wholes:
        held = [(_type(devices[whole]), whole)]
        assert not _fits(slices, _one("mig.nvidia.com"), held), whole
    assert _fits(slices, _one("mig.nvidia.com"), [])
    for whole in wholes:
        assert _fits(slices, _one(class_of[_type(devices[whole])]), [])


def test_partitions_share_a_card_as_the_hardware_does() -> None:
    slices = _publish("H100")
    ones = [f"gpu-0-mig-1g10gb-19-{i}" for i in range(7)]
    one_g = _one("mig.nvidia.com", "1g.10gb")
    assert _fits(slices, one_g, [("mig", n) for n in ones[:6]])
    assert not _fits(slices, one_g, [("mig", n) for n in ones])
    three_g = [("mig", "gpu-0-mig-3g40gb-9-0")]
    assert _fits(slices, _one("mig.nvidia.com", "4g.40gb"), [("mig", "gpu-0-mig-3g40gb-9-4")])
    assert not _fits(slices, _one("mig.nvidia.com", "4g.40gb"), three_g)
    assert _fits(slices, _one("mig.nvidia.com", "3g.40gb"), three_g)
    # One media-engine partition per card: the OFA counter holds one.
    me = [("mig", "gpu-0-mig-1g10gb-me-20-0")]
    assert not _fits(slices, _one("mig.nvidia.com", "1g.10gb+me"), me)
    assert _fits(slices, one_g, me)


def test_the_other_card_stays_free() -> None:
    slices = _publish("H100", 2)
    held = [("gpu", "gpu-0"), ("mig", "gpu-1-mig-1g10gb-19-0")]
    assert _fits(slices, _one("mig.nvidia.com", "7g.80gb"), held[:1])
    assert not _fits(slices, _one("vfio.gpu.nvidia.com"), held)
