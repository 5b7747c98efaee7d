"""The whole lab, end to end, asserted from its JSON report.

It runs `gpuop lab` as a user would, on a control plane of its own (a separate cluster
name and state directory), and checks every outcome the scenario promises, and that a lab
which passes leaves nothing of the cluster it started running, while a cluster that ran
before the lab is left running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuop.controlplane import LocalCluster, procs
from gpuop.controlplane.ports import port_is_free

pytestmark = pytest.mark.e2e


def gpuop(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuop", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def lab_env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "GPUOP_STATE_DIR": str(tmp_path / "state")}
    env.pop("KUBECONFIG", None)
    return env


def processes_under(state_dir: Path) -> dict[int, str]:
    """Every live process with the state directory on its command line."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            argv = procs.cmdline(int(entry.name)) or []
            if any(str(state_dir) in arg for arg in argv) and procs.is_alive(int(entry.name)):
                found[int(entry.name)] = " ".join(argv)[:160]
    return found


def assert_nothing_of_the_cluster_runs(state_dir: Path, name: str, cluster: dict[str, Any]) -> None:
    """By pid files, by the pids and ports the cluster had, and by any process at all."""
    local = LocalCluster(name, state_root_dir=state_dir)
    pid_dir = local.dir / "pids"
    assert not pid_dir.exists() or not list(pid_dir.iterdir())
    assert local.status().state == "stopped"
    assert cluster["pids"] and not [p for p in cluster["pids"].values() if procs.is_alive(p)]
    assert len(cluster["ports"]) == 6
    assert [port for port in cluster["ports"].values() if not port_is_free(port)] == []
    assert processes_under(state_dir) == {}


def test_lab_runs_the_whole_scenario_and_stops_everything_it_started(tmp_path: Path) -> None:
    env = lab_env(tmp_path)
    name = "e2elab"
    report_dir = tmp_path / "report"
    args = ["lab", "--cluster-name", name, "--seed", "5", "--report-dir", str(report_dir)]
    try:
        result = gpuop(env, *args, timeout=900)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
        report = json.loads((report_dir / "lab-report.json").read_text())
        assert report["cluster"]["started_by_lab"] is True
        assert_nothing_of_the_cluster_runs(tmp_path / "state", name, report["cluster"])
    finally:
        gpuop(env, "lab", "down", "--cluster-name", name)
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("stopped everything the lab started in ")
    assert f"cluster '{name}' (etcd, kube-apiserver, kube-controller-manager" in last
    listing = gpuop(env, "cluster", "status", "-o", "json")
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout)["processes_alive"] == 0

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
    rules = {p["name"]: p for p in report["steps"]["4"]["rules"]}
    assert rules["train-0"]["scheduler"]["node"] == "a10-container"
    assert (
        "didn't match pod topology spread constraints" in rules["train-1"]["scheduler"]["message"]
    )
    assert rules["infer-0"]["scheduler"]["node"] == "a10-container"
    assert "didn't match pod anti-affinity rules" in rules["infer-1"]["scheduler"]["message"]
    assert all(p["agrees"] for p in rules.values())
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


def test_lab_leaves_a_cluster_that_ran_before_it_running(tmp_path: Path) -> None:
    env = lab_env(tmp_path)
    name = "e2elabkept"
    report_dir = tmp_path / "report"
    try:
        up = gpuop(env, "cluster", "up", "--name", name, timeout=300)
        assert up.returncode == 0, up.stderr[-4000:]
        before = LocalCluster(name, state_root_dir=tmp_path / "state").status()
        assert before.state == "running"
        args = ["lab", "--cluster-name", name, "--seed", "3", "--report-dir", str(report_dir)]
        result = gpuop(env, *args, timeout=900)
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
        assert (
            f"cluster '{name}' was already running before the lab, so it is left running: "
            "export KUBECONFIG=" in result.stdout
        )
        assert f"stop it with: gpuop lab down --cluster-name {name}" in result.stdout
        report = json.loads((report_dir / "lab-report.json").read_text())
        assert report["ok"] is True and report["cluster"]["started_by_lab"] is False
        after = LocalCluster(name, state_root_dir=tmp_path / "state").status()
        assert after.state == "running" and after.api_ready
        assert [c.pid for c in after.components] == [c.pid for c in before.components]
        listing = gpuop(env, "cluster", "status", "-o", "json")
        clusters = json.loads(listing.stdout)["clusters"]
        assert [c["name"] for c in clusters] == [name]
        assert {p["name"] for p in clusters[0]["processes"] if p["alive"]} == {
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok",
        }
    finally:
        down = gpuop(env, "lab", "down", "--cluster-name", name)
    assert down.returncode == 0, down.stderr
    assert processes_under(tmp_path / "state") == {}
