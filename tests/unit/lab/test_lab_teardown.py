"""What `gpuop lab` leaves running when it ends: the decision and what the lab says."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from gpuop.controlplane import ClusterInfo
from gpuop.lab import runner
from gpuop.lab.runner import LabContext, LabFailure, Teardown, teardown_for


@pytest.mark.parametrize(
    ("passed", "keep", "started_cluster", "expected"),
    [
        (True, False, True, Teardown.STOP_ALL),
        (True, False, False, Teardown.LEAVE_AS_FOUND),
        (True, True, True, Teardown.KEEP),
        (True, True, False, Teardown.KEEP),
        (False, False, True, Teardown.INSPECT),
        (False, False, False, Teardown.INSPECT),
        (False, True, True, Teardown.INSPECT),
    ],
)
def test_teardown_depends_on_the_outcome_keep_and_who_started_the_cluster(
    passed: bool, keep: bool, started_cluster: bool, expected: Teardown
) -> None:
    assert teardown_for(passed=passed, keep=keep, started_cluster=started_cluster) is expected


class FakeCluster:
    """Stands in for LocalCluster: records `down`, answers `up` as told."""

    downs: ClassVar[list[str]] = []
    already_running = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.kubeconfig_path = Path(f"/state/{name}/kubeconfig")

    def status(self) -> Any:
        class Status:
            state = "running" if FakeCluster.already_running else "stopped"

        return Status()

    def up(self, progress: Any = None) -> ClusterInfo:
        return ClusterInfo(
            name=self.name,
            state_dir=f"/state/{self.name}",
            api_url="https://127.0.0.1:1",
            kubeconfig=str(self.kubeconfig_path),
            audit_log="",
            ports={"kube-apiserver": 1},
            pids={"etcd": 2},
            versions={},
            started_at="",
            start_seconds=0.0,
            already_running=FakeCluster.already_running,
        )

    def down(self) -> list[str]:
        FakeCluster.downs.append(self.name)
        return []


@pytest.fixture
def lab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, list[str]]:
    """`gpuop lab` with a fake cluster and a one-step scenario; returns what was called."""
    calls: dict[str, list[str]] = {"background": []}
    FakeCluster.downs = []
    FakeCluster.already_running = False
    monkeypatch.setattr(runner, "Cluster", FakeCluster)
    monkeypatch.setattr(runner, "stop_background", lambda ctx: calls["background"].append("stop"))
    monkeypatch.setattr(
        runner, "_start_background", lambda ctx: calls["background"].append("start")
    )
    monkeypatch.setattr(runner, "_background_running", lambda ctx: False)

    def step_one(ctx: LabContext) -> dict[str, Any]:
        return {"kubernetes": "v1.37.2", "cluster": runner.ensure_cluster(ctx)}

    monkeypatch.setattr(runner, "STEPS", {1: step_one})
    monkeypatch.setenv("GPUOP_STATE_DIR", str(tmp_path / "state"))
    return calls


def run_lab(tmp_path: Path, *args: str) -> Any:
    from gpuop.cli import cli

    return CliRunner().invoke(cli, ["lab", "--report-dir", str(tmp_path / "report"), *args])


def test_a_passed_lab_stops_the_cluster_it_started_and_says_so_in_one_line(
    lab: dict[str, list[str]], tmp_path: Path
) -> None:
    result = run_lab(tmp_path)
    assert result.exit_code == 0, result.output
    assert FakeCluster.downs == ["gpuop"]
    assert lab["background"] == ["stop"]
    stopped = [line for line in result.output.splitlines() if line.startswith("stopped")]
    assert len(stopped) == 1
    assert "the operator, the simulator and cluster 'gpuop' (etcd, kube-apiserver, " in stopped[0]
    assert "kube-controller-manager, kube-scheduler, kwok)" in stopped[0]
    assert "KUBECONFIG" not in result.output


def test_a_passed_lab_leaves_a_cluster_that_ran_before_it_and_says_so(
    lab: dict[str, list[str]], tmp_path: Path
) -> None:
    FakeCluster.already_running = True
    result = run_lab(tmp_path, "--cluster-name", "dev")
    assert result.exit_code == 0, result.output
    assert FakeCluster.downs == []
    assert lab["background"] == ["stop"]
    assert (
        "cluster 'dev' was already running before the lab, so it is left running: "
        "export KUBECONFIG=/state/dev/kubeconfig" in result.output
    )
    assert "stop it with: gpuop lab down --cluster-name dev" in result.output


def test_a_cluster_that_ran_before_gets_back_the_operator_and_simulator_it_had(
    lab: dict[str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeCluster.already_running = True

    def step_one(ctx: LabContext) -> dict[str, Any]:
        runner.ensure_cluster(ctx)
        ctx.found_background = True
        return {}

    monkeypatch.setattr(runner, "STEPS", {1: step_one})
    result = run_lab(tmp_path)
    assert result.exit_code == 0, result.output
    assert FakeCluster.downs == []
    assert lab["background"] == ["stop", "start"]
    assert "left running with its operator and simulator" in result.output


def test_keep_leaves_everything_running(lab: dict[str, list[str]], tmp_path: Path) -> None:
    result = run_lab(tmp_path, "--keep")
    assert result.exit_code == 0, result.output
    assert FakeCluster.downs == []
    assert lab["background"] == ["start"]
    assert "cluster left running: export KUBECONFIG=/state/gpuop/kubeconfig" in result.output
    assert "stop everything with: gpuop lab down" in result.output


def test_a_failed_lab_leaves_everything_up_for_inspection(
    lab: dict[str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def step_two(ctx: LabContext) -> dict[str, Any]:
        raise LabFailure(2, "three nodes", "none")

    monkeypatch.setattr(runner, "STEPS", {1: runner.STEPS[1], 2: step_two})
    result = run_lab(tmp_path)
    assert result.exit_code == 1
    assert FakeCluster.downs == [] and lab["background"] == []
    assert "the cluster is left up for inspection: export KUBECONFIG=" in result.output
    assert "stop everything with: gpuop lab down" in result.output


def test_the_report_says_who_started_the_cluster(lab: dict[str, list[str]], tmp_path: Path) -> None:
    import json

    assert run_lab(tmp_path).exit_code == 0
    report = json.loads((tmp_path / "report" / "lab-report.json").read_text())
    assert report["cluster"]["started_by_lab"] is True
    assert report["cluster"]["ports"] == {"kube-apiserver": 1}
