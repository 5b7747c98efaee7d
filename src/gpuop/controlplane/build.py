"""Build the control-plane binaries from the Go wrapper modules with ``go build``.

Why this module exists: the build machines have no internet but do reach the Go module proxy, so
kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and kwok are built from
source (``controlplane/<component>/go.mod`` pins every module and go.sum checks them). This
module runs exactly the commands the first manual build used::

    GOWORK=off GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=0 \\
      go build -trimpath [-tags=selinux,notest,grpcnotrace] -ldflags '-s -w [-X version stamps]' \\
        -o <out> <packages>

(plus ``-v``, which only makes go name each package it compiles, so the user sees progress).
GOPROXY is left as the machine's default unless the environment sets it. go's output goes to a
log file; a failure names that file and tells a missing toolchain or an unreachable module proxy
apart from a real compile error.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from gpuop.controlplane.errors import BuildError, ToolchainError
from gpuop.controlplane.paths import wrapper_dir
from gpuop.controlplane.versions import Component

Progress = Callable[[str], None]

PROGRESS_EVERY_S = 30.0

_NETWORK = re.compile(
    r"dial tcp|no such host|connection refused|i/o timeout|TLS handshake timeout|"
    r"network is unreachable|proxyconnect|server misbehaving|module lookup disabled|"
    r"GOPROXY=off|unexpected EOF|connection reset by peer"
)
_GO_VERSION = re.compile(r"go(\d+)\.(\d+)(?:\.(\d+))?")


def go_build_env() -> dict[str, str]:
    """The environment every go command runs with (GOPROXY inherited)."""
    env = dict(os.environ)
    env.update({"GOWORK": "off", "GOTOOLCHAIN": "local", "GOFLAGS": "", "CGO_ENABLED": "0"})
    return env


def format_duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _version_of(match: re.Match[str] | None) -> tuple[int, int, int] | None:
    """Major, minor and patch (0 when absent) of a ``go<major>.<minor>[.<patch>]`` match."""
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def _parse_go_version(text: str) -> tuple[int, int, int] | None:
    return _version_of(_GO_VERSION.search(text))


def required_go_version(module_dir: Path) -> tuple[int, int, int] | None:
    """The ``go`` directive of ``module_dir/go.mod``."""
    try:
        text = (module_dir / "go.mod").read_text(encoding="utf-8")
    except OSError:
        return None
    return _version_of(re.search(r"^go\s+(\d+)\.(\d+)(?:\.(\d+))?\s*$", text, re.MULTILINE))


def find_go(comp: Component, module_dir: Path, why: str = "") -> tuple[str, str]:
    """The path and version string of a usable ``go``; ToolchainError with a fix otherwise."""
    need = required_go_version(module_dir)
    need_text = "go{}.{}".format(*need[:2]) if need else "a recent go"
    context = f" ({why})" if why else ""
    go = shutil.which("go")
    if go is None:
        raise ToolchainError(
            f"cannot build {comp.label}: the Go toolchain ('go') is not on PATH{context}. "
            f"Install {need_text} or newer (https://go.dev/dl/, e.g. unpack it to /usr/local/go "
            "and add /usr/local/go/bin to PATH), then run the command again; the binaries are "
            "built once and cached."
        )
    try:
        out = _go_env(go, "GOVERSION", timeout_s=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(f"cannot run {go}: {exc}") from exc
    version_text = out.stdout.strip() or out.stderr.strip()
    have = _parse_go_version(version_text)
    if have is None:
        raise ToolchainError(
            f"cannot build {comp.label}: '{go} env GOVERSION' did not report a Go version "
            f"({version_text or 'no output'}); install {need_text} or newer from https://go.dev/dl/"
        )
    if need is not None and have < need:
        raise ToolchainError(
            f"cannot build {comp.label}: {go} is {version_text}, but {module_dir}/go.mod needs "
            f"{need_text} or newer (GOTOOLCHAIN=local forbids fetching another toolchain). "
            "Install a newer Go from https://go.dev/dl/ and put it first on PATH."
        )
    return go, version_text


def build_command(go: str, comp: Component, out_dir: Path) -> list[str]:
    # A single binary gets an explicit file name (etcd's package path ends in /v3).
    output = str(out_dir / comp.binaries[0]) if len(comp.packages) == 1 else f"{out_dir}/"
    cmd = [go, "build", "-v", "-trimpath"]
    if comp.tags:
        cmd.append("-tags=" + ",".join(comp.tags))
    cmd += ["-ldflags", " ".join(comp.ldflags), "-o", output, *comp.packages]
    return cmd


def _go_env(go: str, name: str, *, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run ``go env <name>`` in the build environment; the caller reads its output."""
    return subprocess.run(
        [go, "env", name],
        env=go_build_env(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def _goproxy(go: str) -> str:
    try:
        out = _go_env(go, "GOPROXY", timeout_s=30)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _tail(path: Path, lines: int = 15) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


def _count_progress(path: Path) -> tuple[int, int]:
    """(packages compiled, modules downloaded) according to go's -v output so far."""
    compiled = downloaded = 0
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("go: downloading "):
                    downloaded += 1
                elif line.strip() and " " not in line.strip():
                    compiled += 1
    except OSError:
        pass
    return compiled, downloaded


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def build_component(
    comp: Component,
    out_dir: Path,
    *,
    log_path: Path,
    progress: Progress | None = None,
    why: str = "",
) -> float:
    """Build every binary of ``comp`` into ``out_dir``; returns the seconds it took.

    Raises ToolchainError (no usable go, module proxy unreachable) or BuildError.
    """
    say = progress or (lambda _msg: None)
    module_dir = wrapper_dir(comp)
    go, go_version = find_go(comp, module_dir, why)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = build_command(go, comp, out_dir)
    say(
        f"building {comp.label} ({', '.join(comp.binaries)}) with {go_version} from "
        f"{module_dir}; go's output: {log_path}"
    )
    started = time.monotonic()
    with log_path.open("wb") as log:
        log.write(f"$ cd {module_dir}\n$ {' '.join(cmd)}\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=module_dir,
                env=go_build_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolchainError(f"cannot start {go}: {exc}") from exc
        next_report = started + PROGRESS_EVERY_S
        try:
            while proc.poll() is None:
                time.sleep(0.5)
                now = time.monotonic()
                if now >= next_report:
                    next_report = now + PROGRESS_EVERY_S
                    compiled, downloaded = _count_progress(log_path)
                    fetched = f", {downloaded} modules downloaded" if downloaded else ""
                    say(
                        f"  {comp.name}: {format_duration(now - started)} elapsed, "
                        f"{compiled} packages compiled{fetched}"
                    )
        except BaseException:
            _kill_group(proc)
            raise
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        tail = _tail(log_path)
        network = next((line for line in tail if _NETWORK.search(line)), None)
        if network is not None:
            raise ToolchainError(
                f"cannot build {comp.label}: go could not download its modules from the Go "
                f"module proxy (GOPROXY={_goproxy(go)}): {network.strip()}. Check that the "
                "proxy is reachable from this machine (try 'go mod download' in "
                f"{module_dir}), or set GOPROXY to a reachable proxy or mirror. "
                f"Full go output: {log_path}"
            )
        last = tail[-1].strip() if tail else "no output"
        raise BuildError(
            f"building {comp.label} failed after {format_duration(elapsed)} (go exited with "
            f"{proc.returncode}); last line: {last}. Full go output: {log_path}"
        )
    missing = [name for name in comp.binaries if not (out_dir / name).is_file()]
    if missing:
        raise BuildError(
            f"go build of {comp.label} succeeded but {', '.join(missing)} did not appear in "
            f"{out_dir}; see {log_path}"
        )
    say(f"built {comp.label} in {format_duration(elapsed)}")
    return elapsed
