"""The whole lab, end to end, asserted from its JSON report.

It runs `gpuop lab` as a user would, on a control plane of its own (a separate cluster
name and state directory), and checks every outcome the scenario promises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_lab_runs_the_whole_scenario(tmp_path: Path) -> None:
    env = {**os.environ, "GPUOP_STATE_DIR": str(tmp_path / "state")}
    env.pop("KUBECONFIG", None)
    name = "e2elab"
    report_dir = tmp_path / "report"
    command = [
        sys.executable,
        "-m",
        "gpuop",
        "lab",
        "--cluster-name",
        name,
        "--seed",
        "5",
        "--report-dir",
        str(report_dir),
    ]
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    finally:
        subprocess.run(
            [sys.executable, "-m", "gpuop", "lab", "down", "--cluster-name", name],
            env=env,
            capture_output=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    report = json.loads((report_dir / "lab-report.json").read_text())
    assert report["ok"] is True
    nodes = {n["name"]: n for n in report["steps"]["3"]["nodes"]}
    assert nodes["a10-container"]["advertises"] == {"nvidia.com/gpu": 2}
    assert nodes["a10-passthrough"]["advertises"] == {"nvidia.com/GA102GL_A10": 2}
    assert nodes["a10-vgpu"]["advertises"] == {"nvidia.com/NVIDIA_A10-12Q": 4}
    assert "device-plugin" in nodes["a10-container"]["operands"]
    assert "vfio-manager" in nodes["a10-passthrough"]["operands"]
    assert "vgpu-device-manager" in nodes["a10-vgpu"]["operands"]

    placements = {p["name"]: p for p in report["steps"]["4"]["placements"]}
    assert placements["cuda-pod"]["scheduler"]["node"] == "a10-container"
    assert placements["virt-launcher-vm-passthrough"]["scheduler"]["node"] == "a10-passthrough"
    assert placements["virt-launcher-vm-vgpu"]["scheduler"]["node"] == "a10-vgpu"
    for name, resource in (
        ("cross-container-asks-a10", "nvidia.com/GA102GL_A10"),
        ("cross-passthrough-asks-vgpu", "nvidia.com/NVIDIA_A10-12Q"),
        ("cross-vgpu-asks-gpu", "nvidia.com/gpu"),
    ):
        item = placements[name]
        assert item["scheduler"]["node"] is None and item["scheduler"]["phase"] == "Pending"
        assert f"1 Insufficient {resource}" in item["scheduler"]["message"]
        assert item["explain"]["summary"] == item["scheduler"]["message"]
    assert all(p["agrees"] for p in placements.values())
    permitted = report["steps"]["4"]["kubevirt"]["patch"]["spec"]["configuration"][
        "permittedHostDevices"
    ]
    assert permitted["pciHostDevices"][0]["pciVendorSelector"] == "10DE:2236"
    assert permitted["mediatedDevices"][0]["mdevNameSelector"] == "NVIDIA A10-12Q"

    vgpu = report["steps"]["5"]
    assert vgpu["before"] == {"nvidia.com/NVIDIA_A10-12Q": 4}
    assert vgpu["after"] == {"nvidia.com/NVIDIA_A10-4Q": 12}

    trap = report["steps"]["6"]
    assert {w["node"] for w in trap["warnings"]} == {"a10-passthrough", "a10-vgpu"}
    assert all(w["type"] == "Warning" for w in trap["warnings"])
    assert trap["condition"]["status"] == "True"

    drift = report["steps"]["7"]
    assert drift["exact"] is True
    assert sorted(drift["found_nodes"]) == sorted(i["node"] for i in drift["injected"])
    assert (report_dir / "lab-report.html").read_text().count("<svg") == 1
