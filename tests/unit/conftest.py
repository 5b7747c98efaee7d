"""Fixtures the domain-core tests share: repository paths and pci.ids inputs.

The full NVIDIA table of pci.ids 2025.07.11 (the copy the KubeVirt GPU device plugin
ships) is package data, `PciDatabase.builtin()`. `PCI_IDS_EXCERPT` is lines taken verbatim
from that pci.ids plus traps for the parser. The tests that compare the shipped table with
the complete upstream pci.ids are in tests/reference.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# Verbatim lines of pci.ids 2025.07.11 (TAB-indented), plus traps: device 2236 under the
# vendor before NVIDIA, a subsystem line that starts with a device id, a duplicate id later
# in the section (the first wins), and devices of the vendor after NVIDIA.
PCI_IDS_EXCERPT = """\
#
#\tList of PCI ID's
#
#\tVersion: 2025.07.11
#\tDate:    2025-07-11 03:15:02
#

# Vendors, devices and subsystems. Please keep sorted.

10dd  Evans & Sutherland
\t0100  Lightning 1200
\t2236  Not an NVIDIA device
\t\t10dd 0023  Lightning 1200 15+16M
10de  NVIDIA Corporation
\t0008  NV1 [STG2000X-B Series]
\t1aef  GA102 High Definition Audio Controller
\t1db4  GV100GL [Tesla V100 PCIe 16GB]
\t1eb8  TU104GL [Tesla T4]
\t\t10de 12a2  T4 16GB
\t\t2236 0001  A subsystem line is never a device
# GRID K1 USM
\t20b1  GA100 [A100 PCIe 40GB]
\t20b3  GA100 [A100-SXM-64GB]
\t20b5  GA100 [A100 PCIe 80GB]
\t20b7  GA100GL [A30 PCIe]
\t20f1  GA100 [A100 PCIe 40GB]
\t2235  GA102GL [A40]
\t2236  GA102GL [A10]
\t2330  GH100 [H100 SXM5 80GB]
\t2331  GH100 [H100 PCIe]
\t2342  GH100 [GH200 120GB / 480GB]
\t24fa  GA104 [RTX A4500 Embedded GPU ]
\t25b6  GA107GL [A2 / A16]
\t25f9  GA107 [RTX A1000 Embedded GPU ]
\t26b9  AD102GL [L40S]
\t27b8  AD104GL [L4]
\t2236  A later duplicate never wins
10df  Emulex Corporation
\t0720  OneConnect NIC (Skyhawk)
\tffff  Not an NVIDIA device either
"""


@pytest.fixture
def pci_ids_excerpt() -> str:
    return PCI_IDS_EXCERPT


@pytest.fixture
def pci_ids_file(tmp_path: Path) -> Path:
    """The excerpt as a file, for commands that take `--pci-ids FILE`."""
    path = tmp_path / "pci.ids"
    path.write_text(PCI_IDS_EXCERPT, encoding="utf-8")
    return path


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT
