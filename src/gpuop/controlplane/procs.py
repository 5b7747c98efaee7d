"""Start, recognise and stop the component processes of a local cluster.

Why this module exists: the cluster outlives the command that started it, so a later ``down``
or ``status`` (another process) must find its processes again and be sure they are its own
before it signals anything. Each component runs in its own session and process group (so a
group kill also gets any children), writes its output to a log file, and is recognised by two
facts: its program name and the cluster's state directory on its command line. A pid that is
alive but fails that test belongs to someone else and is never signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

# Popen objects of the components this Python process started, so it can reap them (a dead
# child stays a zombie, which looks alive to kill(pid, 0), until its parent waits for it).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
_EXIT_CODES: dict[int, int] = {}


def spawn(argv: Sequence[str], log_path: Path, env: Mapping[str, str], cwd: Path) -> int:
    """Start ``argv`` detached (own session), output appended to ``log_path``; return its pid."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        log.write(f"=== {time.strftime('%Y-%m-%dT%H:%M:%S%z')} {' '.join(argv)}\n".encode())
        log.flush()
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    _CHILDREN[proc.pid] = proc
    return proc.pid


def _reap(pid: int) -> None:
    proc = _CHILDREN.get(pid)
    if proc is not None and proc.poll() is not None:
        _EXIT_CODES[pid] = proc.returncode
        _CHILDREN.pop(pid, None)


def exit_code(pid: int) -> int | None:
    """The exit status of a child this process started and that has ended, else None."""
    _reap(pid)
    return _EXIT_CODES.get(pid)


def is_alive(pid: int) -> bool:
    """True when ``pid`` is a live process (zombies count as dead)."""
    if pid <= 0:
        return False
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        state = stat.rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return True


def cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def describe(pid: int) -> str:
    """A short human name of a process: its command line, shortened."""
    argv = cmdline(pid)
    if not argv:
        return "an unknown program"
    text = " ".join(argv)
    return text if len(text) <= 80 else text[:77] + "..."


def belongs_to(pid: int, program: str, marker: str) -> bool:
    """True when ``pid`` runs ``program`` with ``marker`` (the state dir) on its command line."""
    argv = cmdline(pid)
    if not argv or not is_alive(pid):
        return False
    return Path(argv[0]).name == program and any(marker in arg for arg in argv[1:])


def find_processes(programs: Iterable[str], marker: str) -> dict[int, str]:
    """Every live process running one of ``programs`` with ``marker`` on its command line."""
    wanted = set(programs)
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        argv = cmdline(pid)
        if not argv:
            continue
        name = Path(argv[0]).name
        if name in wanted and any(marker in arg for arg in argv[1:]) and is_alive(pid):
            found[pid] = name
    return found


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
                return
        except ProcessLookupError:
            return
        os.kill(pid, sig)


def _wait_gone(pids: Iterable[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    left = [pid for pid in pids if is_alive(pid)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [pid for pid in left if is_alive(pid)]
    return left


def stop(pids: Sequence[int], grace: float = 10.0) -> list[int]:
    """SIGTERM each process group, SIGKILL what is left after ``grace`` seconds.

    Returns the pids that needed SIGKILL. Callers must have checked the pids are theirs.
    """
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    stubborn = _wait_gone(pids, grace)
    for pid in stubborn:
        _signal(pid, signal.SIGKILL)
    _wait_gone(stubborn, 5.0)
    for pid in pids:
        _reap(pid)
    return stubborn


def rss_bytes(pid: int) -> int | None:
    """Resident memory of ``pid`` (VmRSS), or None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def log_tail(path: Path, lines: int = 12) -> list[str]:
    """The last non-empty lines of a log file (reads at most its last 64 KiB)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 65536))
            text = handle.read().decode(errors="replace")
    except OSError:
        return []
    return [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
