"""Passthrough resource names: pci.ids lookup and the KubeVirt plugin's normalisation.

Examples are resource-naming.md §1.2 and the §6 table; the parser's assertions run on the
inline excerpt (with its traps), and the §6 table runs on the excerpt and on the shipped
pci.ids table (`PciDatabase.builtin()`, the full 2025.07.11 NVIDIA section).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuop.catalog import gpu_catalog
from gpuop.naming import (
    NamingError,
    PciDatabase,
    normalise_pci_name,
    normalise_pci_name_kata,
    parse_pci_id,
    passthrough_resource,
    resource_name_problem,
)

# resource-naming.md §6: (PCI device id, pci.ids name, kubevirt-gpu-device-plugin resource).
SECTION_6 = [
    ("1eb8", "TU104GL [Tesla T4]", "nvidia.com/TU104GL_TESLA_T4"),
    ("1db4", "GV100GL [Tesla V100 PCIe 16GB]", "nvidia.com/GV100GL_TESLA_V100_PCIE_16GB"),
    ("1db5", "GV100GL [Tesla V100 SXM2 32GB]", "nvidia.com/GV100GL_TESLA_V100_SXM2_32GB"),
    ("1df6", "GV100GL [Tesla V100S PCIe 32GB]", "nvidia.com/GV100GL_TESLA_V100S_PCIE_32GB"),
    ("20b0", "GA100 [A100 SXM4 40GB]", "nvidia.com/GA100_A100_SXM4_40GB"),
    ("20b1", "GA100 [A100 PCIe 40GB]", "nvidia.com/GA100_A100_PCIE_40GB"),
    ("20b2", "GA100 [A100 SXM4 80GB]", "nvidia.com/GA100_A100_SXM4_80GB"),
    ("20b3", "GA100 [A100-SXM-64GB]", "nvidia.com/GA100_A100SXM64GB"),
    ("20b5", "GA100 [A100 PCIe 80GB]", "nvidia.com/GA100_A100_PCIE_80GB"),
    ("20b8", "GA100 [A100X]", "nvidia.com/GA100_A100X"),
    ("20f1", "GA100 [A100 PCIe 40GB]", "nvidia.com/GA100_A100_PCIE_40GB"),
    ("20f3", "GA100 [A800-SXM4-80GB]", "nvidia.com/GA100_A800SXM480GB"),
    ("20f5", "GA100 [A800 80GB PCIe]", "nvidia.com/GA100_A800_80GB_PCIE"),
    ("20b7", "GA100GL [A30 PCIe]", "nvidia.com/GA100GL_A30_PCIE"),
    ("20b9", "GA100 [A30X]", "nvidia.com/GA100_A30X"),
    ("2235", "GA102GL [A40]", "nvidia.com/GA102GL_A40"),
    ("2236", "GA102GL [A10]", "nvidia.com/GA102GL_A10"),
    ("2237", "GA102GL [A10G]", "nvidia.com/GA102GL_A10G"),
    ("2233", "GA102GL [RTX A5500]", "nvidia.com/GA102GL_RTX_A5500"),
    ("25b6", "GA107GL [A2 / A16]", "nvidia.com/GA107GL_A2___A16"),
    ("27b8", "AD104GL [L4]", "nvidia.com/AD104GL_L4"),
    ("26b5", "AD102GL [L40]", "nvidia.com/AD102GL_L40"),
    ("26b9", "AD102GL [L40S]", "nvidia.com/AD102GL_L40S"),
    ("26ba", "AD102GL [L20]", "nvidia.com/AD102GL_L20"),
    ("26b1", "AD102GL [RTX 6000 Ada Generation]", "nvidia.com/AD102GL_RTX_6000_ADA_GENERATION"),
    ("2330", "GH100 [H100 SXM5 80GB]", "nvidia.com/GH100_H100_SXM5_80GB"),
    ("2331", "GH100 [H100 PCIe]", "nvidia.com/GH100_H100_PCIE"),
    ("2321", "GH100 [H100L 94GB]", "nvidia.com/GH100_H100L_94GB"),
    ("2336", "GH100 [H100]", "nvidia.com/GH100_H100"),
    ("2339", "GH100 [H100 SXM5 94GB]", "nvidia.com/GH100_H100_SXM5_94GB"),
    ("2322", "GH100 [H800 PCIe]", "nvidia.com/GH100_H800_PCIE"),
    ("2324", "GH100 [H800]", "nvidia.com/GH100_H800"),
    ("2329", "GH100 [H20]", "nvidia.com/GH100_H20"),
    ("2335", "GH100 [H200 SXM 141GB]", "nvidia.com/GH100_H200_SXM_141GB"),
    ("233b", "GH100 [H200 NVL]", "nvidia.com/GH100_H200_NVL"),
    ("2342", "GH100 [GH200 120GB / 480GB]", "nvidia.com/GH100_GH200_120GB___480GB"),
    ("2348", "GH100 [GH200 144G HBM3e]", "nvidia.com/GH100_GH200_144G_HBM3E"),
    ("2901", "GB100 [B200]", "nvidia.com/GB100_B200"),
    ("2941", "GB100 [HGX GB200]", "nvidia.com/GB100_HGX_GB200"),
    (
        "2bb5",
        "GB202GL [RTX PRO 6000 Blackwell Server Edition]",
        "nvidia.com/GB202GL_RTX_PRO_6000_BLACKWELL_SERVER_EDITION",
    ),
    ("1e30", "TU102GL [Quadro RTX 6000/8000]", "nvidia.com/TU102GL_QUADRO_RTX_6000_8000"),
    ("1e78", "TU102GL [Quadro RTX 6000/8000]", "nvidia.com/TU102GL_QUADRO_RTX_6000_8000"),
    ("1af1", "GA100 [A100 NVSwitch]", "nvidia.com/GA100_A100_NVSWITCH"),
    ("22a3", "GH100 [H100 NVSwitch]", "nvidia.com/GH100_H100_NVSWITCH"),
    (
        "1aef",
        "GA102 High Definition Audio Controller",
        "nvidia.com/GA102_HIGH_DEFINITION_AUDIO_CONTROLLER",
    ),
]
# Rows of §6 whose device lines the inline excerpt carries.
IN_EXCERPT = {"1eb8", "1db4", "20b1", "20b3", "20b5", "20b7", "20f1", "2235", "2236"}
IN_EXCERPT |= {"2330", "2331", "2342", "25b6", "26b9", "27b8", "1aef"}


# --- the parser -------------------------------------------------------------------------


def test_parse_reads_version_and_only_the_nvidia_section(pci_ids_excerpt: str) -> None:
    db = PciDatabase.parse(pci_ids_excerpt)
    assert db.version == "2025.07.11"
    assert db.name_of("2236") == "GA102GL [A10]"  # not the 10dd device, not the later duplicate
    assert db.name_of("0720") is None  # next vendor's devices are outside the section
    assert db.name_of("ffff") is None
    assert db.name_of("0100") is None  # previous vendor's
    assert db.name_of("12a2") is None  # subsystem lines are never devices
    assert db.name_of("1EB8") == "TU104GL [Tesla T4]"  # lookup is case-insensitive
    assert len(db.devices) == 19


def test_parse_skips_comments_inside_the_section() -> None:
    text = "10de  NVIDIA Corporation\n# a comment\n\t2236  GA102GL [A10]\n"
    assert PciDatabase.parse(text).devices == {"2236": "GA102GL [A10]"}


def test_parse_stops_at_the_first_line_without_a_tab() -> None:
    text = "10de  NVIDIA Corporation\n\t2235  GA102GL [A40]\n\n\t2236  GA102GL [A10]\n"
    assert PciDatabase.parse(text).devices == {"2235": "GA102GL [A40]"}


@pytest.mark.parametrize(
    "text",
    ["", "no vendor at all\n", "10df  Emulex\n\t2236  x\n", "# Version only\n", "10de\n"],
)
def test_parse_without_nvidia_devices_is_empty(text: str) -> None:
    assert PciDatabase.parse(text).devices == {}


def test_parse_without_version_header() -> None:
    assert PciDatabase.parse("10de  NVIDIA\n\t2236  GA102GL [A10]\n").version is None


def test_builtin_database_has_every_catalog_model() -> None:
    db = PciDatabase.builtin()
    assert db.version == "2025.07.11"
    assert len(db.devices) == 1931  # resource-naming.md: "1,931 device IDs"
    for gpu in gpu_catalog().gpus:
        assert db.name_of(gpu.pci_device_id) == gpu.pci_name, gpu.model


def test_catalog_pci_names_match_the_excerpt(pci_ids_excerpt: str) -> None:
    db = PciDatabase.parse(pci_ids_excerpt)
    for gpu in gpu_catalog().gpus:
        assert db.name_of(gpu.pci_device_id) == gpu.pci_name, gpu.model


# --- normalisation (§1.2) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("GA102GL [A10]", "GA102GL_A10"),
        ("GH100 [H100 PCIe]", "GH100_H100_PCIE"),
        ("gk104.gl [grid/k./520]", "GK104_GL_GRID_K__520"),
        ("GA107GL [A2 / A16]", "GA107GL_A2___A16"),
        ("GA100 [A100-SXM-64GB]", "GA100_A100SXM64GB"),
        ("GA104 [RTX A4500 Embedded GPU ]", "GA104_RTX_A4500_EMBEDDED_GPU_"),
        ("GH100[H100 SXM5 80GB]", "GH100H100_SXM5_80GB"),  # the 2023.05.23 spelling
        ("TU102GL [Quadro RTX 6000/8000]", "TU102GL_QUADRO_RTX_6000_8000"),
        ("a\t \tb", "A_B"),
        ("x (y) +z, w", "X_Y_Z_W"),
        ("", ""),
    ],
)
def test_normalise_pci_name(name: str, expected: str) -> None:
    assert normalise_pci_name(name) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("GA100 [A100-SXM-64GB]", "GA100_A100-SXM-64GB"),
        ("GA100 [A800-SXM4-80GB]", "GA100_A800-SXM4-80GB"),
        ("GA102GL [A10]", "GA102GL_A10"),
    ],
)
def test_normalise_pci_name_kata_keeps_hyphens(name: str, expected: str) -> None:
    assert normalise_pci_name_kata(name) == expected


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_normalised_names_use_only_upper_case_digits_and_underscores(name: str) -> None:
    assert re.fullmatch(r"[A-Z0-9_]*", normalise_pci_name(name))


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_pci_ids_parser_never_raises(text: str) -> None:
    db = PciDatabase.parse(text)
    assert all(re.fullmatch(r"[0-9a-f]{4}", device) for device in db.devices)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "\t", "\t\t", "#", "10de  ", "10df  "]),
            st.text(alphabet="0123456789abcdefABCDEF [] /.-\t", max_size=20),
        ),
        max_size=30,
    )
)
def test_pci_ids_parser_never_raises_on_pci_ids_like_text(lines: list[tuple[str, str]]) -> None:
    PciDatabase.parse("\n".join(prefix + body for prefix, body in lines))


# --- ids and resources ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10de:2236", ("10de", "2236")),
        ("10DE:2236", ("10de", "2236")),
        ("0x2236", ("10de", "2236")),
        ("2236", ("10de", "2236")),
        (" 10de:20B5 ", ("10de", "20b5")),
        ("0x10de:0x2236", ("10de", "2236")),
    ],
)
def test_parse_pci_id(text: str, expected: tuple[str, str]) -> None:
    assert parse_pci_id(text) == expected


@pytest.mark.parametrize("text", ["", "10de:", "2236x", "10de:22366", "zz:2236", "GA102"])
def test_parse_pci_id_rejects(text: str) -> None:
    with pytest.raises(NamingError, match="not a PCI id"):
        parse_pci_id(text)


@pytest.mark.parametrize(("device", "pci_name", "resource"), SECTION_6)
def test_section_6_table_on_the_shipped_table(device: str, pci_name: str, resource: str) -> None:
    name = passthrough_resource(f"10de:{device}", PciDatabase.builtin())
    assert (name.pci_name, name.resource, name.valid, name.problem) == (
        pci_name,
        resource,
        True,
        None,
    )


@pytest.mark.parametrize(
    ("device", "pci_name", "resource"), [row for row in SECTION_6 if row[0] in IN_EXCERPT]
)
def test_section_6_table_on_the_excerpt(
    pci_ids_excerpt: str, device: str, pci_name: str, resource: str
) -> None:
    name = passthrough_resource(device, PciDatabase.parse(pci_ids_excerpt))
    assert (name.pci_id, name.pci_name, name.resource) == (f"10de:{device}", pci_name, resource)
    assert name.valid and name.problem is None


def test_unknown_device_falls_back_to_the_raw_id(pci_ids_excerpt: str) -> None:
    name = passthrough_resource("10de:FFFF", PciDatabase.parse(pci_ids_excerpt))
    assert name.resource == "nvidia.com/ffff"
    assert name.pci_name is None
    assert name.valid  # a valid name, but not the model name: reported
    assert name.problem is not None
    assert "not in the PCI database (2025.07.11)" in name.problem


def test_empty_database_falls_back_to_raw_ids() -> None:
    name = passthrough_resource("2235", PciDatabase(version=None))
    assert name.resource == "nvidia.com/2235"  # the A40 seen in the field with an old pci.ids
    assert name.problem is not None and "unknown version" in name.problem


@pytest.mark.parametrize(
    ("device", "resource"),
    [
        ("24fa", "nvidia.com/GA104_RTX_A4500_EMBEDDED_GPU_"),
        ("25f9", "nvidia.com/GA107_RTX_A1000_EMBEDDED_GPU_"),
    ],
)
def test_names_ending_in_underscore_are_invalid(
    pci_ids_excerpt: str, device: str, resource: str
) -> None:
    name = passthrough_resource(device, PciDatabase.parse(pci_ids_excerpt))
    assert name.resource == resource
    assert not name.valid
    assert name.problem is not None and "start and end with a letter or digit" in name.problem


@pytest.mark.parametrize(
    ("resource", "problem"),
    [
        ("nvidia.com/GA102GL_A10", None),
        ("nvidia.com/NVIDIA_A10-12Q", None),
        ("nvidia.com/gpu", None),
        ("example.org/x.y-z_0", None),
        ("nvidia.com/GA104_X_", "start and end"),
        ("nvidia.com/_X", "start and end"),
        ("nvidia.com/", "start and end"),
        ("nvidia.com/A B", "start and end"),
        ("gpu", "no domain prefix"),
        ("nvidia.com/" + "A" * 64, "longer than 63"),
    ],
)
def test_resource_name_problem(resource: str, problem: str | None) -> None:
    found = resource_name_problem(resource)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found
