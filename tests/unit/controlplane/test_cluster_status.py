"""`gpuop cluster status`: every local cluster with its processes, ports and memory.

The components are stand-ins: Python processes whose program name is the component's and whose
command line carries the cluster's state directory, which is all `status` goes by.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpuop.cli import main
from gpuop.controlplane import LocalCluster, local_clusters, procs


class FakeComponents:
    def __init__(self) -> None:
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, program: str, cluster_dir: Path, *, pid_file: bool = True) -> int:
        proc = subprocess.Popen(
            [program, "-c", "import time; time.sleep(120)", f"--data-dir={cluster_dir}/etcd-data"],
            executable=sys.executable,
        )
        self.started.append(proc)
        # Until the child has exec'd, /proc shows the parent's command line.
        deadline = time.monotonic() + 10
        while procs.cmdline(proc.pid) != proc.args and time.monotonic() < deadline:
            time.sleep(0.01)
        if pid_file:
            (cluster_dir / "pids").mkdir(parents=True, exist_ok=True)
            (cluster_dir / "pids" / f"{program}.pid").write_text(f"{proc.pid}\n")
        return proc.pid


@pytest.fixture
def fakes() -> Iterator[FakeComponents]:
    components = FakeComponents()
    try:
        yield components
    finally:
        for proc in components.started:
            proc.kill()
            proc.wait(5)


def write_info(cluster_dir: Path, ports: dict[str, int], pids: dict[str, int]) -> None:
    info = {
        "name": cluster_dir.name,
        "state_dir": str(cluster_dir),
        "api_url": f"https://127.0.0.1:{ports['kube-apiserver']}",
        "kubeconfig": str(cluster_dir / "kubeconfig"),
        "audit_log": str(cluster_dir / "logs" / "audit.log"),
        "ports": ports,
        "pids": pids,
        "versions": {},
        "started_at": "2026-01-01T00:00:00+00:00",
        "start_seconds": 3.0,
    }
    (cluster_dir / "cluster.json").write_text(json.dumps(info))


@pytest.fixture
def root(tmp_path: Path, fakes: FakeComponents, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three clusters: 'alpha' with etcd and kube-apiserver up, 'beta' stopped with a stale
    pid file, and 'gamma' whose directory is gone while its etcd still runs."""
    state = tmp_path / "state"
    monkeypatch.setenv("GPUOP_STATE_DIR", str(state))
    alpha = state / "clusters" / "alpha"
    alpha.mkdir(parents=True)
    pids = {name: fakes.start(name, alpha) for name in ("etcd", "kube-apiserver")}
    write_info(alpha, {"etcd": 40001, "etcd-peer": 40002, "kube-apiserver": 40003}, pids)
    beta = state / "clusters" / "beta"
    (beta / "pids").mkdir(parents=True)
    (beta / "pids" / "kwok.pid").write_text("999999999\n")
    fakes.start("etcd", state / "clusters" / "gamma", pid_file=False)
    return state


def test_every_local_cluster_is_found_even_one_whose_directory_is_gone(root: Path) -> None:
    assert [c.name for c in local_clusters(root)] == ["alpha", "beta", "gamma"]


def test_overview_gives_pid_liveness_ports_and_memory_of_each_process(root: Path) -> None:
    overview = LocalCluster("alpha", state_root_dir=root).overview()
    assert overview.state == "partial"
    processes = {p.name: p for p in overview.processes}
    assert processes["etcd"].alive and processes["etcd"].ports == [40001, 40002]
    assert processes["kube-apiserver"].alive and processes["kube-apiserver"].ports == [40003]
    assert processes["etcd"].rss_bytes and processes["etcd"].rss_bytes > 1_000_000
    assert not processes["kwok"].alive and processes["kwok"].pid is None
    assert overview.rss_bytes == sum(p.rss_bytes or 0 for p in processes.values())
    assert len(overview.alive) == 2

    gamma = {p.name: p for p in LocalCluster("gamma", state_root_dir=root).overview().processes}
    assert gamma["etcd"].alive and gamma["etcd"].detail == "running without a pid file"


def test_extra_processes_count_as_alive_only_when_they_belong_to_the_cluster(
    root: Path, fakes: FakeComponents
) -> None:
    alpha = root / "clusters" / "alpha"
    ours = fakes.start("python3", alpha, pid_file=False)
    someone_elses = fakes.start("python3", root / "elsewhere", pid_file=False)
    overview = LocalCluster("alpha", state_root_dir=root).overview(
        {"operator": ours, "simulator": someone_elses, "gone": 999999999}
    )
    extra = {p.name: p.alive for p in overview.processes[5:]}
    assert extra == {"operator": True, "simulator": False, "gone": False}


def invoke(*args: str) -> tuple[int, str]:
    """`gpuop cluster status ARGS` as the `gpuop` script runs it (errors become exit codes)."""
    with (
        pytest.MonkeyPatch.context() as patch,
        CliRunner().isolation(env={"COLUMNS": "100", "NO_COLOR": "1"}) as (stdout, stderr, _),
    ):
        patch.setattr(sys, "argv", ["gpuop", "cluster", "status", *args])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        sys.stdout.flush()
        sys.stderr.flush()
        return code, stdout.getvalue().decode() + stderr.getvalue().decode()


def test_status_without_a_name_lists_every_cluster(root: Path) -> None:
    code, output = invoke()
    assert code == 0, output
    lines = output.splitlines()
    alpha = next(line for line in lines if line.startswith("cluster 'alpha'"))
    assert "partial" in alpha and "API https://127.0.0.1:40003" in alpha and "2 processes" in alpha
    etcd = next(line for line in lines if line.strip().startswith("etcd "))
    assert " yes " in etcd and "40001,40002" in etcd and "MiB" in etcd
    assert any(line.startswith("cluster 'beta': stopped") for line in lines)
    assert "stale pid file" in output and "gpuop cluster down --name beta" in output
    assert any(line.startswith("cluster 'gamma': partial") for line in lines)
    assert lines[-1].startswith("3 local clusters in ")
    assert "2 with processes running, 3 processes" in lines[-1]


def test_status_without_a_name_as_json(root: Path) -> None:
    code, output = invoke("-o", "json")
    assert code == 0, output
    data = json.loads(output)
    assert [c["name"] for c in data["clusters"]] == ["alpha", "beta", "gamma"]
    assert data["processes_alive"] == 3
    etcd = data["clusters"][0]["processes"][0]
    assert etcd["name"] == "etcd" and etcd["alive"] is True and etcd["ports"] == [40001, 40002]
    assert etcd["rss_bytes"] > 0 and data["rss_bytes"] >= etcd["rss_bytes"]


def test_status_of_one_cluster_by_argument_or_option(root: Path) -> None:
    code, output = invoke("alpha")
    assert code == 1  # not every component runs
    assert output.startswith("cluster 'alpha': partial")
    assert "etcd" in output and "ports 40001,40002" in output and "cluster 'beta'" not in output

    def without_rss(text: str) -> str:
        return re.sub(r"rss [0-9.]+ MiB", "rss", text)

    by_option = invoke("--name", "alpha")
    assert (by_option[0], without_rss(by_option[1])) == (code, without_rss(output))
    code, output = invoke("beta", "-o", "json")
    assert code == 1 and json.loads(output)["state"] == "stopped"


def test_status_with_no_clusters_and_with_two_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUOP_STATE_DIR", str(tmp_path / "empty"))
    code, output = invoke()
    assert code == 0 and output.startswith("no local clusters in ")
    code, output = invoke("a", "--name", "b")
    assert code == 2 and "two cluster names given" in output
