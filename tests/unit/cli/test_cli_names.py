"""`gpuop names pci|vgpu`: names, per-input JSON, stdin, and exit codes 0/1/2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_support import RunCli


def names_json(
    gpuop: RunCli, *args: str, input: str | None = None
) -> tuple[int, list[dict[str, object]]]:
    run = gpuop("names", *args, "-o", "json", input=input)
    data = json.loads(run.stdout)
    assert isinstance(data, list)
    return run.code, data


def test_pci_one_name_prints_just_the_resource(gpuop: RunCli, pci_ids_file: Path) -> None:
    run = gpuop("names", "pci", "10de:2236", "--pci-ids", str(pci_ids_file))
    assert run.code == 0
    assert run.stdout == "nvidia.com/GA102GL_A10\n"
    assert run.stderr == f"pci.ids: 2025.07.11 ({pci_ids_file})\n"


def test_pci_without_a_flag_uses_the_shipped_table(gpuop: RunCli) -> None:
    run = gpuop("names", "pci", "10de:2330")
    assert (run.code, run.stdout) == (0, "nvidia.com/GH100_H100_SXM5_80GB\n")
    assert run.stderr == "pci.ids: 2025.07.11 (shipped)\n"


def test_pci_ids_from_stdin(gpuop: RunCli, pci_ids_file: Path) -> None:
    text = pci_ids_file.read_text(encoding="utf-8").replace("[A10]", "[A10 from stdin]")
    run = gpuop("names", "pci", "2236", "--pci-ids", "-", input=text)
    assert (run.code, run.stdout) == (0, "nvidia.com/GA102GL_A10_FROM_STDIN\n")
    assert run.stderr == "pci.ids: 2025.07.11 (stdin)\n"
    both = gpuop("names", "pci", "--pci-ids", "-", input=text)
    assert both.code == 2 and both.stderr.startswith("error: --pci-ids - reads stdin")


def test_pci_ids_system_names_this_hosts_file(gpuop: RunCli) -> None:
    run = gpuop("names", "pci", "2236", "--pci-ids", "system")
    if Path("/usr/share/misc/pci.ids").is_file():
        assert run.code == 0 and run.stderr.endswith("(/usr/share/misc/pci.ids)\n")
    else:
        assert run.code == 2 and "cannot read /usr/share/misc/pci.ids" in run.stderr


def test_pci_one_problem_goes_to_stderr(gpuop: RunCli, pci_ids_file: Path) -> None:
    run = gpuop("names", "pci", "24fa", "--pci-ids", str(pci_ids_file))
    assert run.code == 1
    assert run.stdout == "nvidia.com/GA104_RTX_A4500_EMBEDDED_GPU_\n"
    assert run.stderr.startswith("problem: 'nvidia.com/GA104_RTX_A4500_EMBEDDED_GPU_': the name")
    bad = gpuop("names", "pci", "GA102", "--pci-ids", str(pci_ids_file))
    assert (bad.code, bad.stdout) == (2, "")
    assert bad.stderr.startswith("error: 'GA102' is not a PCI id")


def test_pci_several_print_a_table(gpuop: RunCli, pci_ids_file: Path) -> None:
    run = gpuop("names", "pci", "10de:2236", "ffff", "--pci-ids", str(pci_ids_file))
    assert run.code == 1
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["INPUT", "RESOURCE", "PCI", "NAME", "PROBLEM"]
    assert lines[1].split() == ["10de:2236", "nvidia.com/GA102GL_A10", "GA102GL", "[A10]"]
    assert lines[2].startswith("ffff ") and "not in the PCI database" in lines[2]


@pytest.mark.parametrize("args", [(), ("--pci-ids", "builtin")])
def test_pci_builtin_names(gpuop: RunCli, args: tuple[str, ...]) -> None:
    code, data = names_json(gpuop, "pci", "2236", "0x27B8", "2901", *args)
    assert code == 0
    assert [d["resource"] for d in data] == [
        "nvidia.com/GA102GL_A10",
        "nvidia.com/AD104GL_L4",
        "nvidia.com/GB100_B200",
    ]


def test_pci_json_objects(gpuop: RunCli, pci_ids_file: Path) -> None:
    code, data = names_json(
        gpuop, "pci", "10de:2236", "24fa", "ffff", "--pci-ids", str(pci_ids_file)
    )
    assert code == 1
    ok, invalid, unknown = data
    assert ok == {
        "input": "10de:2236",
        "resource": "nvidia.com/GA102GL_A10",
        "pci_id": "10de:2236",
        "pci_name": "GA102GL [A10]",
        "valid": True,
        "problem": None,
    }
    assert invalid["resource"] == "nvidia.com/GA104_RTX_A4500_EMBEDDED_GPU_"
    assert invalid["valid"] is False and "start and end" in str(invalid["problem"])
    assert unknown["resource"] == "nvidia.com/ffff" and unknown["pci_name"] is None
    assert unknown["valid"] is True and "not in the PCI database" in str(unknown["problem"])


def test_pci_unparsable_input_exits_2(gpuop: RunCli, pci_ids_file: Path) -> None:
    code, data = names_json(gpuop, "pci", "GA102", "2236", "--pci-ids", str(pci_ids_file))
    assert code == 2
    assert data[0] == {
        "input": "GA102",
        "resource": None,
        "pci_id": None,
        "pci_name": None,
        "valid": False,
        "problem": "'GA102' is not a PCI id (expected VVVV:DDDD, e.g. 10de:2236)",
    }
    assert data[1]["resource"] == "nvidia.com/GA102GL_A10"


@pytest.mark.parametrize("args", [(), ("-",)])
def test_pci_reads_stdin_one_per_line(
    gpuop: RunCli, pci_ids_file: Path, args: tuple[str, ...]
) -> None:
    text = "# from lspci\n10de:2236\n\n  10de:2331  \n"
    code, data = names_json(gpuop, "pci", *args, "--pci-ids", str(pci_ids_file), input=text)
    assert code == 0
    assert [d["input"] for d in data] == ["10de:2236", "10de:2331"]
    assert data[1]["resource"] == "nvidia.com/GH100_H100_PCIE"


def test_pci_yaml_output(gpuop: RunCli, pci_ids_file: Path) -> None:
    run = gpuop("names", "pci", "20b3", "--pci-ids", str(pci_ids_file), "-o", "yaml")
    assert yaml.safe_load(run.stdout)[0]["resource"] == "nvidia.com/GA100_A100SXM64GB"


@pytest.mark.parametrize(
    ("value", "resource", "mdev"),
    [
        ("NVIDIA A10-12Q", "nvidia.com/NVIDIA_A10-12Q", "NVIDIA A10-12Q"),
        ("A10-12Q", "nvidia.com/NVIDIA_A10-12Q", "NVIDIA A10-12Q"),
        ("T4-1Q", "nvidia.com/GRID_T4-1Q", "GRID T4-1Q"),
        ("GRID  T4-1Q", "nvidia.com/GRID_T4-1Q", "GRID T4-1Q"),
        ("A100-1-5C", "nvidia.com/NVIDIA_A100-1-5C", "NVIDIA A100-1-5C"),
    ],
)
def test_vgpu_names(gpuop: RunCli, value: str, resource: str, mdev: str) -> None:
    code, data = names_json(gpuop, "vgpu", value)
    assert code == 0
    assert data == [
        {
            "input": value,
            "resource": resource,
            "mdev_type_name": mdev,
            "valid": True,
            "problem": None,
        }
    ]


def test_vgpu_text(gpuop: RunCli) -> None:
    assert gpuop("names", "vgpu", "NVIDIA A10-12Q").stdout == "nvidia.com/NVIDIA_A10-12Q\n"
    run = gpuop("names", "vgpu", "NVIDIA A10-12Q", "A10-4Q")
    assert run.code == 0
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["INPUT", "RESOURCE", "MDEV", "TYPE", "NAME", "PROBLEM"]
    assert "nvidia.com/NVIDIA_A10-4Q" in lines[2]


def test_vgpu_unknown_type_exits_1(gpuop: RunCli) -> None:
    code, data = names_json(gpuop, "vgpu", "A10-12Q", "NVIDIA A10-99Q")
    assert code == 1
    assert data[1]["resource"] == "nvidia.com/NVIDIA_A10-99Q"
    assert data[1]["valid"] is True
    assert data[1]["problem"] == "A10-99Q is not a vGPU type of any GPU in gpuop's catalog"


@pytest.mark.parametrize("value", ["GA102GL", "  ", "a10-12q"])
def test_vgpu_unparsable_exits_2(gpuop: RunCli, value: str) -> None:
    code, data = names_json(gpuop, "vgpu", value)
    assert code == 2
    assert data[0]["resource"] is None and data[0]["problem"]


def test_vgpu_from_stdin(gpuop: RunCli) -> None:
    code, data = names_json(gpuop, "vgpu", input="NVIDIA A10-12Q\nGRID T4-1Q\n")
    assert code == 0
    assert [d["resource"] for d in data] == ["nvidia.com/NVIDIA_A10-12Q", "nvidia.com/GRID_T4-1Q"]


def test_help(gpuop: RunCli) -> None:
    for args in (("names", "--help"), ("names", "pci", "--help"), ("names", "vgpu", "--help")):
        run = gpuop(*args)
        assert run.code == 0
    assert "Examples:" in gpuop("names", "pci", "--help").stdout
    assert "Exit status" in gpuop("names", "--help").stdout


def test_every_vgpu_type_of_the_catalogue_is_named_without_a_problem() -> None:
    """All 710 types of `catalog/vgpu-boards.yaml` (NVIDIA's default vGPU config) are known,
    as `plan` knows them, with the mdev prefix of their family."""
    from gpuop.catalog import vgpu_families
    from gpuop.cli.names import vgpu_name

    checked = 0
    for family in vgpu_families().families.values():
        for vgpu_type in family.types:
            result = vgpu_name(vgpu_type)
            assert result.problem is None, (vgpu_type, result.problem)
            assert result.resource == f"nvidia.com/{family.mdev_prefix}_{vgpu_type}"
            checked += 1
    assert checked >= 700
