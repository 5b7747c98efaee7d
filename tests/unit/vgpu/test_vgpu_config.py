"""vGPU device configs: parsing (resource-naming.md §3.1) and the apply loop (§3.1, §3.3)."""

from __future__ import annotations

from typing import Any

import pytest

from gpuop.catalog import gpu_catalog, vgpu_families
from gpuop.vgpu import (
    DEFAULT_CONFIG_NAME,
    Card,
    VgpuConfigError,
    apply_vgpu_config,
    default_vgpu_config,
    default_vgpu_config_object,
    parse_vgpu_config,
    vgpu_type_kind,
)

A10 = "2236"
A40 = "2235"


def config(*entries: dict[str, Any], name: str = "test") -> dict[str, Any]:
    return {"version": "v1", "vgpu-configs": {name: list(entries)}}


def entry(devices: Any = "all", **types: int) -> dict[str, Any]:
    return {"devices": devices, "vgpu-devices": {k.replace("_", "-"): v for k, v in types.items()}}


def a10s(count: int) -> list[Card]:
    return [Card(index, A10) for index in range(count)]


# --- parsing ----------------------------------------------------------------------------


def test_minimal_config_parses() -> None:
    parsed = parse_vgpu_config(
        config({"device-filter": "0x223610DE", "devices": "all", "vgpu-devices": {"A10-12Q": 2}})
    )
    first = parsed.vgpu_configs["test"][0]
    assert first.filters() == [("2236", "10de", None)]
    assert first.devices == "all"
    assert first.vgpu_devices == {"A10-12Q": 2}


def test_filters_with_subsystem_and_lists() -> None:
    parsed = parse_vgpu_config(
        config(
            {
                "device-filter": ["0x223610DE", "0x223510de:0x145F10DE"],
                "devices": [0, 2],
                "vgpu-devices": {"A10-12Q": 2},
            }
        )
    )
    assert parsed.vgpu_configs["test"][0].filters() == [
        ("2236", "10de", None),
        ("2235", "10de", "145f10de"),
    ]


@pytest.mark.parametrize(
    ("document", "path", "message"),
    [
        ({"vgpu-configs": {"a": [entry(A10_12Q=2)]}}, "version", "Field required"),
        ({"version": "v2", "vgpu-configs": {"a": [entry(A10_12Q=2)]}}, "version", "'v1'"),
        ({"version": "v1"}, "vgpu-configs", "Field required"),
        ({"version": "v1", "vgpu-configs": {}}, "vgpu-configs", "at least 1 item"),
        ({"version": "v1", "vgpu-configs": {"a": []}}, "vgpu-configs.a", "at least 1 item"),
        (config(entry(A10_12Q=0)), "vgpu-configs.test.0.vgpu-devices.A10-12Q", "greater than 0"),
        (config(entry(A10_12Q=-1)), "vgpu-configs.test.0.vgpu-devices.A10-12Q", "greater than 0"),
        (
            config({**entry(A10_12Q=2), "extra": 1}),
            "vgpu-configs.test.0.extra",
            "unknown field",
        ),
        ({**config(entry(A10_12Q=2)), "extra": 1}, "extra", "unknown field"),
        (
            config({**entry(A10_12Q=2), "device-filter": "0x2236"}),
            "vgpu-configs.test.0.device-filter",
            "'0x2236' is not a device filter",
        ),
        (
            config({**entry(A10_12Q=2), "device-filter": ["0x223610DE", "A10"]}),
            "vgpu-configs.test.0.device-filter",
            "'A10' is not a device filter",
        ),
        (
            config({**entry(A10_12Q=2), "device-filter": "0x223610DE:0x1"}),
            "vgpu-configs.test.0.device-filter",
            "is not a device filter",
        ),
        (
            config(entry(A100_20C=1, A100_1_5C=2)),
            "vgpu-configs.test.0.vgpu-devices",
            "time-sliced and MIG-backed vGPU types cannot be mixed",
        ),
        (
            config(entry(bogus=2)),
            "vgpu-configs.test.0.vgpu-devices",
            "'bogus' is not a vGPU type name",
        ),
        (config({"devices": "all"}), "vgpu-configs.test.0.vgpu-devices", "Field required"),
        (config({"vgpu-devices": {"A10-12Q": 1}}), "vgpu-configs.test.0.devices", "Field required"),
        (config(entry("some", A10_12Q=2)), "vgpu-configs.test.0.devices", "'all'"),
        (config(entry([-1], A10_12Q=2)), "vgpu-configs.test.0.devices.0", "greater than or equal"),
    ],
)
def test_config_errors_name_the_path(document: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(VgpuConfigError) as caught:
        parse_vgpu_config(document)
    assert any(
        problem.startswith(f"{path}:") and message in problem for problem in caught.value.problems
    ), caught.value.problems


@pytest.mark.parametrize("document", [None, [], "version: v1", 3])
def test_config_must_be_a_mapping(document: Any) -> None:
    with pytest.raises(VgpuConfigError, match="expected a mapping"):
        parse_vgpu_config(document)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("A10-12Q", "time-sliced"),
        ("T4-1B", "time-sliced"),
        ("A40-0Q", "time-sliced"),  # 0 means 512 MB
        ("RTX6000-Ada-24Q", "time-sliced"),
        ("A100-1-5C", "mig-backed"),
        ("A100-1-5CME", "mig-backed"),
        ("DC-1-24QGFX", "mig-backed"),
        ("H100-1-10CNOME", "mig-backed"),
        ("A10-12X", None),
        ("a10-12Q", None),
        ("A10-012Q", None),
        ("A10", None),
        ("", None),
    ],
)
def test_vgpu_type_grammar(name: str, kind: str | None) -> None:
    assert vgpu_type_kind(name) == kind


# --- apply ------------------------------------------------------------------------------


def test_filter_selects_cards_by_pci_id() -> None:
    parsed = parse_vgpu_config(
        config(
            {"device-filter": "0x223610DE", "devices": "all", "vgpu-devices": {"A10-12Q": 2}},
            {"device-filter": "0x223510DE", "devices": "all", "vgpu-devices": {"A40-24Q": 2}},
        )
    )
    result = apply_vgpu_config(parsed, "test", [Card(0, A10), Card(1, A40), Card(2, "1eb8")])
    assert result.ok and result.state == "success"
    assert [(c.index, c.devices, c.entry) for c in result.cards] == [
        (0, {"A10-12Q": 2}, 0),
        (1, {"A40-24Q": 2}, 1),
        (2, {}, None),  # matches no entry: left untouched
    ]
    assert result.totals == {"A10-12Q": 2, "A40-24Q": 2}
    assert result.resources() == {"nvidia.com/NVIDIA_A10-12Q": 2, "nvidia.com/NVIDIA_A40-24Q": 2}
    assert result.untouched == (2,)


def test_cards_reached_by_an_entry_are_not_untouched() -> None:
    parsed = parse_vgpu_config(config(entry([1], A10_12Q=2), entry([0], A10_99Q=1)))
    result = apply_vgpu_config(parsed, "test", a10s(3))
    assert not result.ok  # card 0's entry fails: it is reached, not untouched
    assert result.untouched == (2,)


def test_filter_with_subsystem_must_match_it() -> None:
    parsed = parse_vgpu_config(
        config(
            {
                "device-filter": "0x223610DE:0x14A910DE",
                "devices": "all",
                "vgpu-devices": {"A10-12Q": 2},
            }
        )
    )
    cards = [Card(0, A10, subsystem="14a910de"), Card(1, A10), Card(2, A10, subsystem="0000")]
    result = apply_vgpu_config(parsed, "test", cards)
    assert [c.devices for c in result.cards] == [{"A10-12Q": 2}, {}, {}]


def test_devices_are_positions_in_index_order() -> None:
    parsed = parse_vgpu_config(config(entry([0, 2], A10_4Q=6)))
    cards = [Card(7, A10), Card(3, A10), Card(5, A10)]  # positions: 3 -> 0, 5 -> 1, 7 -> 2
    result = apply_vgpu_config(parsed, "test", cards)
    assert [(c.index, c.devices) for c in result.cards] == [
        (3, {"A10-4Q": 6}),
        (5, {}),
        (7, {"A10-4Q": 6}),
    ]
    assert result.totals == {"A10-4Q": 12}


def test_later_entry_wins() -> None:
    parsed = parse_vgpu_config(config(entry(A10_12Q=2), entry([1], A10_4Q=6)))
    result = apply_vgpu_config(parsed, "test", a10s(2))
    assert [(c.devices, c.entry) for c in result.cards] == [
        ({"A10-12Q": 2}, 0),
        ({"A10-4Q": 6}, 1),
    ]
    assert result.resources() == {"nvidia.com/NVIDIA_A10-12Q": 2, "nvidia.com/NVIDIA_A10-4Q": 6}


def test_later_entry_that_fails_fails_the_config() -> None:
    parsed = parse_vgpu_config(config(entry(A10_12Q=2), entry(A40_24Q=2)))
    result = apply_vgpu_config(parsed, "test", a10s(1))
    assert result.state == "failed"
    assert result.errors == ("vGPU type A40-24Q is not supported on GPU 0 (A10)",)
    assert result.resources() == {}


def test_unsupported_type() -> None:
    parsed = parse_vgpu_config(config(entry(T4_1Q=16)))
    result = apply_vgpu_config(parsed, "test", a10s(2))
    assert not result.ok
    assert result.errors == (
        "vGPU type T4-1Q is not supported on GPU 0 (A10)",
        "vGPU type T4-1Q is not supported on GPU 1 (A10)",
    )


def test_too_many_instances() -> None:
    parsed = parse_vgpu_config(config(entry(A10_12Q=3)))
    result = apply_vgpu_config(parsed, "test", a10s(1))
    assert result.errors == (
        "failed to create 3 A10-12Q vGPU devices on GPU 0: A10 supports at most 2",
    )


def test_mixed_types_on_one_card_fail() -> None:
    parsed = parse_vgpu_config(config(entry(A10_4Q=3, A10_6Q=2)))  # the docs' mixed-size example
    result = apply_vgpu_config(parsed, "test", a10s(1))
    assert len(result.errors) == 1
    assert "mix vGPU types on one card" in result.errors[0]


def test_unknown_card_cannot_be_checked() -> None:
    parsed = parse_vgpu_config(config(entry(A10_12Q=2)))
    result = apply_vgpu_config(parsed, "test", [Card(0, "ffff")])
    assert result.errors and "no vGPU types are known" in result.errors[0]


def test_unknown_config_name() -> None:
    result = apply_vgpu_config(parse_vgpu_config(config(entry(A10_12Q=2))), "nope", a10s(1))
    assert result.state == "failed"
    assert result.errors[0].startswith("unknown vGPU config 'nope'")


def test_card_model_overrides_the_shared_device_id() -> None:
    # A2 and A16 share 10de:25b6; the card's model decides which types it has.
    parsed = parse_vgpu_config(config(entry(A2_8Q=2)))
    assert apply_vgpu_config(parsed, "test", [Card(0, "25b6", model="A2")]).ok
    assert not apply_vgpu_config(parsed, "test", [Card(0, "25b6", model="A16")]).ok


def test_no_cards_is_success_with_nothing() -> None:
    result = apply_vgpu_config(parse_vgpu_config(config(entry(A10_12Q=2))), "test", [])
    assert result.ok and result.resources() == {}


# --- the default config -----------------------------------------------------------------


def test_default_config_parses_and_names_every_family_type() -> None:
    parsed = default_vgpu_config()
    for family in vgpu_families().families.values():
        for name, maximum in family.types.items():
            assert parsed.vgpu_configs[name][0].vgpu_devices == {name: maximum}
            assert parsed.vgpu_configs[name][0].devices == "all"


def test_default_config_takes_the_upstream_types_of_catalogued_cards() -> None:
    parsed = default_vgpu_config()
    for gpu in gpu_catalog().gpus:
        for name, spec in gpu.vgpu_types.items():
            if name[-1] in "AB":  # A- and B-series types are not in NVIDIA's default config
                assert name not in parsed.vgpu_configs
            else:
                assert parsed.vgpu_configs[name][0].vgpu_devices == {name: spec.max_per_gpu}


def test_default_config_round_trips_as_a_document() -> None:
    assert parse_vgpu_config(default_vgpu_config_object()) == default_vgpu_config()


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("A10", {"A10-12Q": 2}),
        ("A40", {"A40-24Q": 2}),
        ("L4", {"L4-12Q": 2}),
        ("L40S", {"L40S-24Q": 2}),
        ("T4", {"T4-8Q": 2}),
        ("A30", {"A30-12C": 2}),
        ("A100", {"A100-20C": 2}),
        ("H100", {"H100-40C": 2}),
        ("A16", {"A16-8Q": 2}),
    ],
)
def test_default_config_per_card(model: str, expected: dict[str, int]) -> None:
    gpu = gpu_catalog().by_model(model)
    assert gpu is not None
    result = apply_vgpu_config(
        default_vgpu_config(), DEFAULT_CONFIG_NAME, [Card(0, gpu.pci_device_id, model=model)]
    )
    assert result.ok, result.errors
    assert result.cards[0].devices == expected


def test_default_config_two_a10s_give_four_12q() -> None:
    result = apply_vgpu_config(default_vgpu_config(), DEFAULT_CONFIG_NAME, a10s(2))
    assert result.resources() == {"nvidia.com/NVIDIA_A10-12Q": 4}


def test_a10_4q_config_gives_twelve() -> None:
    result = apply_vgpu_config(default_vgpu_config(), "A10-4Q", a10s(2))
    assert result.resources() == {"nvidia.com/NVIDIA_A10-4Q": 12}


def test_default_config_has_one_entry_per_device_filter() -> None:
    filters = [e.device_filter for e in default_vgpu_config().vgpu_configs[DEFAULT_CONFIG_NAME]]
    assert len(filters) == len(set(map(str, filters)))
    assert "0x223610DE" in filters
