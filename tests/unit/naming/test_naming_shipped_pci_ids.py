"""The pci.ids table gpuop ships: every NVIDIA device named as the KubeVirt GPU plugin names it.

These run from the repository alone. The plugin's lookup and normalisation are written out
again here, line for line after its Go code (`getDeviceName` in
kubevirt-gpu-device-plugin's `pkg/device_plugin/device_plugin.go`), and run over every
device line of the shipped file, so a change to `gpuop.naming` or to the data shows up as
a named device. Where the reference pci.ids (the copy in the plugin's image) is beside
the clone, the shipped file must be exactly its NVIDIA section.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from gpuop.catalog.pci_ids import SHIPPED_PCI_IDS_FILE, SHIPPED_PCI_IDS_VERSION, shipped_pci_ids
from gpuop.naming import PciDatabase, passthrough_resource
from kit.pci_plugin import (
    DEVICE_IDS,
    load_script,
    plugin_device_name,
    plugin_device_names,
    plugin_resource,
    plugin_resources,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
SHIPPED_PATH = REPO_ROOT / "src" / "gpuop" / "catalog" / SHIPPED_PCI_IDS_FILE


def test_the_one_scan_names_every_device_as_the_line_by_line_scan(pci_ids_excerpt: str) -> None:
    lines = pci_ids_excerpt.split("\n")
    names = plugin_device_names(lines)
    ids = {line[1:5] for line in lines if re.match(r"^\t[0-9a-f]{4}\s", line)}
    for device in sorted(ids):
        assert names.get(device, "") == plugin_device_name(lines, device), device
    shipped = shipped_pci_ids().split("\n")
    sample = DEVICE_IDS[:: max(1, len(DEVICE_IDS) // 25)]
    every = plugin_device_names(shipped)
    assert all(every[device] == plugin_device_name(shipped, device) for device in sample)


# --- the shipped table ------------------------------------------------------------------


def test_builtin_is_the_shipped_table_loaded_once() -> None:
    db = PciDatabase.builtin()
    assert db is PciDatabase.builtin()
    assert db.version == SHIPPED_PCI_IDS_VERSION == "2025.07.11"
    assert len(db.devices) == len(DEVICE_IDS) == 1931  # resource-naming.md: 1,931 device IDs
    assert list(db.devices) == DEVICE_IDS


def test_every_device_is_named_as_the_plugin_names_it() -> None:
    text = shipped_pci_ids().split("\n")
    db = PciDatabase.builtin()
    theirs = plugin_resources(text)
    wrong = {}
    for device in DEVICE_IDS:
        ours = passthrough_resource(f"10de:{device}", db).resource
        if ours != theirs[device]:
            wrong[device] = (ours, theirs[device])
    assert wrong == {}
    names = plugin_device_names(text)
    assert all(names.get(device) for device in DEVICE_IDS)  # no raw ids


def test_known_quirks_of_the_2025_07_11_names() -> None:
    db = PciDatabase.builtin()
    names = {device: passthrough_resource(device, db) for device in DEVICE_IDS}
    # resource-naming.md: 230 names are shared by several device ids (mostly GeForce).
    shared = Counter(name.resource for name in names.values())
    assert sum(1 for count in shared.values() if count > 1) == 230
    # Two names end in `_` and one is longer than 63 characters: the kubelet refuses them.
    assert sorted(device for device, name in names.items() if not name.valid) == [
        "05be",
        "24fa",
        "25f9",
    ]
    assert all(name.problem is None for name in names.values() if name.valid)


@pytest.mark.parametrize(
    ("device", "resource"),
    [
        ("2330", "nvidia.com/GH100_H100_SXM5_80GB"),  # Debian's 2023.04.10: GH100H100_SXM5_80GB
        ("2335", "nvidia.com/GH100_H200_SXM_141GB"),
        ("233b", "nvidia.com/GH100_H200_NVL"),
        ("26b9", "nvidia.com/AD102GL_L40S"),
        ("2901", "nvidia.com/GB100_B200"),
        ("2329", "nvidia.com/GH100_H20"),
        ("232c", "nvidia.com/GH100_H20_HBM3E"),
        ("2342", "nvidia.com/GH100_GH200_120GB___480GB"),
        ("2348", "nvidia.com/GH100_GH200_144G_HBM3E"),
        ("2bb5", "nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION"),
        ("2bb1", "nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_WORKSTATION_EDITION"),
        ("2bb4", "nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_MAXQ_WORKSTATION_EDITION"),
        ("2c31", "nvidia.com/GB203GL_RTX_PRO_4500_BLACKWELL"),
    ],
)
def test_cards_people_buy(device: str, resource: str) -> None:
    name = passthrough_resource(f"10de:{device}", PciDatabase.builtin())
    assert (name.resource, name.valid, name.problem) == (resource, True, None)
    assert name.resource == plugin_resource(shipped_pci_ids().split("\n"), device)


def test_the_file_says_where_it_comes_from_and_its_licence() -> None:
    text = shipped_pci_ids()
    header = text[: text.index("\n10de  NVIDIA Corporation\n")]
    for needed in (
        "#\tVersion: 2025.07.11",
        "https://pci-ids.ucw.cz/",
        "kubevirt-gpu-device-plugin",
        "SPDX-License-Identifier: BSD-3-Clause",
        "3-clause BSD License",
        "Redistributions of source code must retain the above copyright notice",
        'THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"',
    ):
        assert needed in header, needed
    body = text[len(header) + 1 :].splitlines()
    assert body[0] == "10de  NVIDIA Corporation"
    assert all(re.match(r"^\t[0-9a-f]{4}  \S", line) for line in body[1:])  # no subsystems


def test_the_file_is_package_data() -> None:
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"catalog/*.ids"' in pyproject
    assert SHIPPED_PATH.read_text(encoding="utf-8") == shipped_pci_ids()


# --- scripts/pci_ids_nvidia.py ----------------------------------------------------------


def test_script_keeps_the_nvidia_devices_and_nothing_else(pci_ids_excerpt: str) -> None:
    extract = load_script().extract(pci_ids_excerpt)
    assert PciDatabase.parse(extract) == PciDatabase.parse(pci_ids_excerpt)
    assert "Lightning" not in extract and "Emulex" not in extract  # other vendors
    assert "T4 16GB" not in extract  # subsystem lines
    assert "#\tDate:    2025-07-11 03:15:02\n" in extract
    assert "SPDX-License-Identifier: BSD-3-Clause" in extract


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("10de  NVIDIA\n\t2236  GA102GL [A10]\n", "no '#\\tVersion:' line"),
        ("#\tVersion: 1\n10df  Emulex\n\t0720  x\n", "no vendor line"),
        ("#\tVersion: 1\n10de  NVIDIA\n10df  Emulex\n", "no device lines"),
    ],
)
def test_script_refuses_what_is_not_a_pci_ids(text: str, problem: str) -> None:
    script = load_script()
    with pytest.raises(script.ExtractError, match=re.escape(problem)):
        script.extract(text)


def test_script_check_reports_a_stale_file(
    pci_ids_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script()
    shipped = tmp_path / "shipped.ids"
    shipped.write_text(script.extract(pci_ids_file.read_text(encoding="utf-8")), encoding="utf-8")
    assert script.main([str(pci_ids_file), "--check", str(shipped)]) == 0
    shipped.write_text(shipped.read_text(encoding="utf-8").replace("[A10]", "[A10G]"))
    assert script.main([str(pci_ids_file), "--check", str(shipped)]) == 1
    assert script.main([str(tmp_path / "absent"), "--check", str(shipped)]) == 2
    assert "differs from the NVIDIA section" in capsys.readouterr().err
