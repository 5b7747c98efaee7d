"""gpuop's shipped tables are what the upstream files derive to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from gpuop.catalog.pci_ids import SHIPPED_PCI_IDS_FILE, shipped_pci_ids
from gpuop.naming import PciDatabase
from gpuop.vgpu import default_vgpu_config, parse_vgpu_config
from kit.pci_plugin import REPO_ROOT, load_script, plugin_resources

SHIPPED_PCI_IDS = REPO_ROOT / "src" / "gpuop" / "catalog" / SHIPPED_PCI_IDS_FILE


def test_shipped_table_is_the_reference_files_nvidia_section(reference_data: Path) -> None:
    pci_ids = reference_data / "pci.ids"
    assert PciDatabase.parse(pci_ids.read_text(encoding="utf-8")) == PciDatabase.builtin()
    assert load_script().main([str(pci_ids), "--check", str(SHIPPED_PCI_IDS)]) == 0


def test_reference_file_names_agree_with_the_plugin_reading_it(reference_data: Path) -> None:
    reference = (reference_data / "pci.ids").read_text(encoding="utf-8").split("\n")
    assert plugin_resources(reference) == plugin_resources(shipped_pci_ids().split("\n"))


def test_the_shipped_vgpu_boards_are_what_the_script_derives(reference_data: Path) -> None:
    derived = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "scripts" / "derive-vgpu-boards.py"),
            str(reference_data / "default-vgpu-devices-config.yaml"),
            str(reference_data / "pci.ids"),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    shipped = (REPO_ROOT / "src" / "gpuop" / "catalog" / "vgpu-boards.yaml").read_text()
    assert derived == shipped


def test_default_vgpu_config_matches_nvidias_configmap(reference_data: Path) -> None:
    upstream = reference_data / "default-vgpu-devices-config.yaml"
    document = yaml.safe_load(yaml.safe_load(upstream.read_text())["data"]["config.yaml"])
    theirs = parse_vgpu_config(document)
    ours = default_vgpu_config()
    assert set(ours.vgpu_configs) == set(theirs.vgpu_configs)
    for name, entries in theirs.vgpu_configs.items():
        if name != "default":
            assert ours.vgpu_configs[name] == entries
    # `default`: the same device filters and types, each filter once (first entry wins).
    first: dict[object, dict[str, int]] = {}
    for entry in theirs.vgpu_configs["default"]:
        first.setdefault(entry.device_filter, entry.vgpu_devices)
    mine = {e.device_filter: e.vgpu_devices for e in ours.vgpu_configs["default"]}
    assert {k: v for k, v in mine.items() if k not in ("0x25B610DE", "0x1E7810DE")} == {
        k: v for k, v in first.items() if k not in ("0x25B610DE", "0x1E7810DE")
    }
    assert set(mine) == set(first)
