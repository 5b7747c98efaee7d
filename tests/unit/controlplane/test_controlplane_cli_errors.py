"""`gpuop cluster` failure cases: one clear line (or a log excerpt), exit code 2, no traceback.

Each test runs the real CLI in a subprocess with its own empty state and cache directories, so
nothing here needs the real binaries or touches the user's clusters.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuop.controlplane import ComponentStartError, LocalCluster
from gpuop.controlplane.versions import COMPONENTS, HELM, TOOLS


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    no_go = tmp_path / "no-go-bin"
    no_go.mkdir()
    result = dict(os.environ)
    result.update(
        {
            "GPUOP_STATE_DIR": str(tmp_path / "state"),
            "GPUOP_CACHE_DIR": str(tmp_path / "cache"),
            "GPUOP_NO_DOWNLOAD": "1",
            "PATH": str(no_go),
        }
    )
    return result


def gpuop(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuop", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_clean_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error part of stderr (progress lines may come before it)."""
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    head, sep, error = result.stderr.partition("error: ")
    assert sep, result.stderr
    assert head == "" or head.endswith("\n")
    return sep + error


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_busy_port_is_named_with_its_owner(env: dict[str, str], busy_port: int) -> None:
    result = gpuop(env, "cluster", "up", "--name", "t", "--port", str(busy_port))
    stderr = assert_clean_error(result)
    assert stderr.count("\n") == 1
    assert f"port {busy_port} on 127.0.0.1 is already in use by pid {os.getpid()}" in stderr
    assert "--port" in stderr  # the fix


def test_missing_go_explains_how_to_get_it(env: dict[str, str]) -> None:
    result = gpuop(env, "cluster", "build")
    stderr = assert_clean_error(result)
    assert stderr.count("\n") == 1
    last = stderr.strip()
    assert "the Go toolchain ('go') is not on PATH" in last
    assert "GPUOP_NO_DOWNLOAD" in last
    assert "https://go.dev/dl/" in last


def test_build_reports_every_cached_binary_and_helm(env: dict[str, str]) -> None:
    cache = Path(env["GPUOP_CACHE_DIR"])
    for comp in (*COMPONENTS, *TOOLS):
        folder = cache / "bin" / comp.dir_name
        folder.mkdir(parents=True)
        for name in comp.binaries:
            (folder / name).write_text("#!/bin/sh\n")
            (folder / name).chmod(0o755)
    result = gpuop(env, "cluster", "build")
    assert result.returncode == 0, result
    listed = dict(line.split() for line in result.stdout.splitlines())
    assert listed["helm"] == str(cache / "bin" / f"helm-{HELM.version}" / "helm")
    assert listed["kube-apiserver"].startswith(str(cache / "bin"))


def test_up_without_go_fails_before_starting_anything(env: dict[str, str]) -> None:
    result = gpuop(env, "cluster", "up", "--name", "t")
    assert_clean_error(result)
    assert "not on PATH" in result.stderr
    assert not (Path(env["GPUOP_STATE_DIR"]) / "clusters" / "t" / "pids").exists()


def _pid_file(env: dict[str, str], component: str) -> Path:
    path = Path(env["GPUOP_STATE_DIR"]) / "clusters" / "t" / "pids" / f"{component}.pid"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _dead_pid() -> int:
    proc = subprocess.Popen(["/bin/true"])
    proc.wait()
    return proc.pid


def test_stale_pid_file_of_a_dead_process(env: dict[str, str]) -> None:
    pid_file = _pid_file(env, "etcd")
    pid = _dead_pid()
    pid_file.write_text(f"{pid}\n")

    status = gpuop(env, "cluster", "status", "--name", "t")
    assert status.returncode == 1
    assert "stale" in status.stdout
    assert f"pid {pid} is not running" in status.stdout
    assert "gpuop cluster down --name t" in status.stdout

    down = gpuop(env, "cluster", "down", "--name", "t")
    assert down.returncode == 0, down
    assert "removed it" in down.stderr
    assert not pid_file.exists()


def test_pid_file_naming_another_program_leaves_it_alone(env: dict[str, str]) -> None:
    other = subprocess.Popen(["/bin/sleep", "60"])
    try:
        pid_file = _pid_file(env, "kube-apiserver")
        pid_file.write_text(f"{other.pid}\n")

        status = gpuop(env, "cluster", "status", "--name", "t", "--output", "json")
        assert status.returncode == 1
        assert '"state": "foreign"' in status.stdout
        assert "/bin/sleep 60" in status.stdout

        down = gpuop(env, "cluster", "down", "--name", "t")
        assert down.returncode == 0, down
        assert "left that process alone" in down.stderr
        assert f"kill {other.pid}" in down.stderr
        assert other.poll() is None  # still running
        assert not pid_file.exists()
    finally:
        other.kill()
        other.wait()


def _fake_cache(cache: Path, etcd_script: str) -> None:
    for comp in COMPONENTS:
        folder = cache / "bin" / comp.dir_name
        folder.mkdir(parents=True)
        for name in comp.binaries:
            script = etcd_script if name == "etcd" else "#!/bin/sh\nexec sleep 60\n"
            (folder / name).write_text(script)
            (folder / name).chmod(0o755)


def test_component_exiting_at_start_shows_its_log(env: dict[str, str]) -> None:
    _fake_cache(
        Path(env["GPUOP_CACHE_DIR"]),
        "#!/bin/sh\necho 'fake etcd: listen tcp 127.0.0.1:2379: bind: address already in use'\n"
        "exit 3\n",
    )
    result = gpuop(env, "cluster", "up", "--name", "t")
    stderr = assert_clean_error(result)
    assert "etcd exited during start with status 3" in stderr
    assert "bind: address already in use" in stderr
    assert "logs/etcd.log" in stderr
    pids = Path(env["GPUOP_STATE_DIR"]) / "clusters" / "t" / "pids"
    assert list(pids.iterdir()) == []


def test_component_never_healthy_times_out_and_is_stopped(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = Path(env["GPUOP_CACHE_DIR"])
    _fake_cache(cache, "#!/bin/sh\necho 'fake etcd waiting forever'\nexec sleep 60\n")
    for key in ("GPUOP_STATE_DIR", "GPUOP_CACHE_DIR", "GPUOP_NO_DOWNLOAD"):
        monkeypatch.setenv(key, env[key])
    cluster = LocalCluster("t")
    started = time.monotonic()
    with pytest.raises(ComponentStartError, match="timed out waiting for etcd /health") as exc:
        cluster.up(timeout=1.0)
    assert time.monotonic() - started < 20
    assert "fake etcd waiting forever" in str(exc.value)
    assert cluster.status().state == "stopped"
    assert list((cluster.dir / "pids").iterdir()) == []


def test_kubeconfig_of_a_stopped_cluster(env: dict[str, str]) -> None:
    result = gpuop(env, "cluster", "kubeconfig", "--name", "t")
    stderr = assert_clean_error(result)
    assert "gpuop cluster up --name t" in stderr


def test_invalid_cluster_name(env: dict[str, str]) -> None:
    result = gpuop(env, "cluster", "status", "--name", "Not_Valid")
    stderr = assert_clean_error(result)
    assert "invalid cluster name" in stderr


def test_down_of_a_cluster_that_never_ran(env: dict[str, str]) -> None:
    result = gpuop(env, "cluster", "down", "--name", "t")
    assert result.returncode == 0
    assert "was not running" in result.stdout


@pytest.mark.skipif(shutil.which("go") is None, reason="needs the go command (CI has it)")
def test_unreachable_module_proxy_is_named(env: dict[str, str], tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port with nobody listening: the proxy is "down"
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    go = shutil.which("go")
    assert go is not None
    env.update(
        {
            "PATH": str(Path(go).parent),
            "GOPROXY": f"http://127.0.0.1:{dead}",
            "GOMODCACHE": str(tmp_path / "empty-modcache"),
            "GOFLAGS": "",
        }
    )
    result = gpuop(env, "cluster", "build")
    stderr = assert_clean_error(result)
    assert stderr.count("\n") == 1
    assert "could not download its modules from the Go module proxy" in stderr
    assert f"GOPROXY=http://127.0.0.1:{dead}" in stderr
    assert "build-etcd-v3.6.16.log" in stderr
