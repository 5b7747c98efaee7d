"""The generated operand table: what it says, and that the docs carry the current copy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuop.catalog import operand_table
from gpuop.planner.tables import COLUMNS, operand_rows, operands_markdown

BEGIN = "<!-- BEGIN generated operand table: gpuop operands --markdown -->\n"
END = "<!-- END generated operand table -->"


def embedded_table(path: Path) -> str | None:
    text = path.read_text(encoding="utf-8")
    match = re.search(re.escape(BEGIN) + r"(.*?)" + re.escape(END), text, re.DOTALL)
    return match.group(1) if match else None


def test_docs_operands_md_is_current(repo_root: Path) -> None:
    table = embedded_table(repo_root / "docs" / "operands.md")
    assert table is not None, "docs/operands.md lost its generated-table markers"
    assert table == operands_markdown(), (
        "docs/operands.md is stale: replace the table between the markers with"
        " `gpuop operands --markdown`"
    )


def test_readme_table_is_current_when_it_embeds_one(repo_root: Path) -> None:
    readme = repo_root / "README.md"
    table = embedded_table(readme) if readme.is_file() else None
    if table is None:
        pytest.skip("README.md does not embed the operand table (yet)")
    assert table == operands_markdown(), "README.md's operand table is stale"


def test_one_row_per_operand_in_state_order() -> None:
    assert [r.operand.name for r in operand_rows()] == [o.name for o in operand_table().operands]


@pytest.mark.parametrize(
    ("name", "placements"),
    [
        ("driver", {"container": "yes"}),
        ("mig-manager", {"container": "mig-capable"}),
        ("mps-control-daemon", {"container": "mps-capable"}),
        ("vfio-manager", {"vm-passthrough": "yes", "vm-passthrough-kata": "yes"}),
        ("sandbox-device-plugin", {"vm-passthrough": "yes", "vm-vgpu": "yes"}),
        ("kata-sandbox-device-plugin", {"vm-passthrough-kata": "yes"}),
        (
            "sandbox-validator",
            {"vm-passthrough": "yes", "vm-passthrough-kata": "yes", "vm-vgpu": "yes"},
        ),
        ("vgpu-manager", {"vm-vgpu": "yes"}),
        ("kata-manager", {"vm-passthrough": "label-only", "vm-passthrough-kata": "label-only"}),
        (
            "cc-manager",
            {"vm-passthrough": "label-only", "vm-passthrough-kata": "yes", "vm-vgpu": "label-only"},
        ),
    ],
)
def test_placements(name: str, placements: dict[str, str]) -> None:
    row = next(r for r in operand_rows() if r.operand.name == name)
    expected = dict.fromkeys((c.key for c in COLUMNS), "no") | placements
    assert row.placements == expected


@pytest.mark.parametrize(
    ("name", "enabled_by", "default", "unset"),
    [
        ("driver", "driver.enabled", "on", True),
        ("dcgm", "dcgm.enabled", "off", True),
        ("operator-validator", "always", "on", True),
        ("vfio-manager", "sandboxWorkloads.enabled + vfioManager.enabled", "on", False),
        ("sandbox-validator", "sandboxWorkloads.enabled", "on", True),
        ("cc-manager", "sandboxWorkloads.enabled + ccManager.enabled + mode=kata", "on", False),
        ("kata-manager", "never (deprecated)", "never", False),
    ],
)
def test_enabled_by_and_default(name: str, enabled_by: str, default: str, unset: bool) -> None:
    row = next(r for r in operand_rows() if r.operand.name == name)
    assert (row.enabled_by, row.default, row.enabled_when_unset) == (enabled_by, default, unset)


def test_markdown_filter_by_workload() -> None:
    text = operands_markdown("vm-vgpu")
    header = text.splitlines()[0]
    assert header.endswith("| vm-vgpu |") and "container |" not in header
    assert "| vgpu-manager |" in text and "| driver |" not in text
    assert "| cc-manager |" in text  # label only still shows


def test_row_dicts() -> None:
    data = next(r for r in operand_rows() if r.operand.name == "sandbox-device-plugin").to_dict()
    assert data["deploy_label"] == "nvidia.com/gpu.deploy.sandbox-device-plugin"
    assert data["workloads"] == ["vm-passthrough", "vm-vgpu"]
    assert data["advertises"] == ["nvidia.com/<PCI device name>", "nvidia.com/<vGPU type>"]
