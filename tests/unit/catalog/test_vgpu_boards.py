"""`vgpu-boards.yaml`: what scripts/derive-vgpu-boards.py makes of NVIDIA's default config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuop.catalog import vgpu_families

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT.parent / "shared" / "reference" / "data"


def test_the_shipped_file_is_what_the_script_derives() -> None:
    configmap = REFERENCE / "default-vgpu-devices-config.yaml"
    pci_ids = REFERENCE / "pci.ids"
    if not configmap.exists() or not pci_ids.exists():
        pytest.skip(f"the reference data is not beside this checkout ({REFERENCE})")
    derived = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "derive-vgpu-boards.py"),
            str(configmap),
            str(pci_ids),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    shipped = (ROOT / "src" / "gpuop" / "catalog" / "vgpu-boards.yaml").read_text()
    assert derived == shipped


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
