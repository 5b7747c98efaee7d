"""`vgpu-boards.yaml`: what scripts/derive-vgpu-boards.py makes of NVIDIA's default config
(tests/reference derives it again from the upstream files)."""

from __future__ import annotations

from gpuop.catalog import vgpu_families


def test_every_card_of_the_default_config_has_a_family() -> None:
    families = vgpu_families()
    assert len(families.families) == 51
    for device, family in [
        ("2236", "A10"),
        ("26b9", "L40S"),
        ("2330", "H100XM"),
        ("2901", "B200X"),
    ]:
        assert family in [f.name for f in families.for_device(device)]
    assert [f.name for f in families.for_device("25b6")] == ["A16", "A2"]
    dc = families.families["DC"]
    assert dc.devices["2bb5"].default_count == 2 and dc.devices["2c3a"].default_type == "DC-16Q"
    assert (
        families.for_type("T4-8Q") is not None and families.for_type("T4-8Q").mdev_prefix == "GRID"
    )
