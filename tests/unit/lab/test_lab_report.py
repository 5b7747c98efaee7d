"""The lab's report rendering and its failure path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuop.lab.report import render_html, render_markdown, write_reports
from gpuop.lab.runner import LabFailure

REPORT: dict[str, Any] = {
    "ok": True,
    "seed": 7,
    "kubernetes": "v1.37.2",
    "duration_seconds": 34.0,
    "steps": {
        "3": {
            "nodes": [
                {
                    "name": "a10-vgpu",
                    "workload": "vm-vgpu",
                    "operands": ["vgpu-manager"],
                    "deploy_labels": {},
                    "advertises": {"nvidia.com/NVIDIA_A10-12Q": 4},
                }
            ]
        },
        "4": {
            "placements": [
                {
                    "name": "cross",
                    "kind": "cross",
                    "requests": {"nvidia.com/gpu": "1"},
                    "expected_node": None,
                    "scheduler": {
                        "node": None,
                        "phase": "Pending",
                        "message": "0/3 nodes are available",
                    },
                    "explain": {"feasible": [], "summary": "0/3 nodes are available"},
                    "agrees": True,
                }
            ]
        },
        "7": {
            "seed": 7,
            "injected": [{"node": "a10-vgpu", "kind": "wrong-vgpu-count", "imitates": "x"}],
            "findings": [],
            "found_nodes": ["a10-vgpu"],
            "exact": True,
        },
    },
}


def test_reports_are_written_in_three_forms(tmp_path: Path) -> None:
    paths = write_reports(REPORT, tmp_path)
    assert set(paths) == {"json", "markdown", "html"}
    html = render_html(REPORT)
    assert "<svg" in html and "a10-vgpu" in html and "<script" not in html
    assert "nvidia.com/NVIDIA_A10-12Q: 4" in html
    markdown = render_markdown(REPORT)
    assert "| cross |" in markdown and "wrong-vgpu-count" in markdown


def test_a_failing_step_stops_the_lab_names_the_step_and_exits_non_zero(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from gpuop.cli import cli
    from gpuop.lab import runner

    def step_one(ctx: Any) -> dict[str, Any]:
        return {"kubernetes": "v1.37.2"}

    def step_two(ctx: Any) -> dict[str, Any]:
        raise LabFailure(2, "a10-vgpu to advertise nvidia.com/NVIDIA_A10-12Q: 4", "{}")

    monkeypatch.setattr(runner, "STEPS", {1: step_one, 2: step_two})
    monkeypatch.setenv("GPUOP_STATE_DIR", str(tmp_path / "state"))
    result = CliRunner().invoke(cli, ["lab", "--report-dir", str(tmp_path / "report")])
    assert result.exit_code == 1
    assert (
        "step 2 (Three GPU nodes, one per workload config): expected a10-vgpu to advertise"
        in result.output
    )
    assert (tmp_path / "report" / "lab-report.json").exists()


DRA_RECORD: dict[str, Any] = {
    "node": "a10-dra",
    "placements": [
        {
            "pod": "cuda",
            "class": "gpu.nvidia.com",
            "device": "gpu-0",
            "role": "gpu",
            "pciBusID": "0000:17:00.0",
        },
        {
            "pod": "vm",
            "class": "vfio.gpu.nvidia.com",
            "device": "gpu-vfio-1",
            "role": "vfio",
            "pciBusID": "0000:37:00.0",
        },
    ],
    "pending": [
        {"pod": "cuda-extra", "class": "gpu.nvidia.com", "reason": "cannot allocate all claims"}
    ],
    "race": [
        {"publication": "two-faced", "trials": 20, "double_allocations": 20, "one_pending": 0},
        {"publication": "race-free", "trials": 20, "double_allocations": 0, "one_pending": 20},
    ],
}


def test_the_dra_step_is_in_the_report_when_it_ran() -> None:
    report = {**REPORT, "steps": {**REPORT["steps"], "dra": DRA_RECORD}}
    markdown = render_markdown(report)
    assert "## Containers and VMs on one node (DRA)" in markdown
    assert "| two-faced | 20 | 20 | 0 |" in markdown and "| race-free | 20 | 0 | 20 |" in markdown
    assert "`gpu-vfio-1`, card 0000:37:00.0 as vfio" in markdown
    page = render_html(report)
    assert "Containers and VMs on one node (DRA): a10-dra" in page
    assert "(DRA)" not in render_markdown(REPORT)


MANAGERS_RECORD = {
    "nodes": [
        {"node": "lab-m-gke", "manager": "gke", "named": ["gke"]},
        {"node": "lab-m-aks", "manager": "aks", "named": ["nvidia-device-plugin"]},
    ],
    "zeroed": {"node": "lab-m-hami", "resource": "nvidia.com/gpu"},
}


def test_the_managers_step_is_in_the_report_when_it_ran() -> None:
    report = {**REPORT, "steps": {**REPORT["steps"], "managers": MANAGERS_RECORD}}
    markdown = render_markdown(report)
    assert "## Other managers of GPUs, checked live" in markdown
    assert "| `lab-m-aks` | aks | nvidia-device-plugin |" in markdown
    assert "`lab-m-hami` then registered `nvidia.com/gpu` with 0 devices: GPU211" in markdown
    assert "<td><code>lab-m-gke</code></td><td>gke</td>" in render_html(report)
    assert "Other managers" not in render_markdown(REPORT)
