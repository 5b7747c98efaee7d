"""Loopback TCP ports for the local cluster: pick free ones, check one, name who holds one.

Why this module exists: every component of a local cluster listens on 127.0.0.1 only, on ports
picked at start so several clusters (and CI jobs) can run side by side. When the user asks for a
specific API port and it is taken, the error should say by whom; Linux tells that through
``/proc/net/tcp`` and the processes' socket file descriptors.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from pathlib import Path

LOOPBACK = "127.0.0.1"


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports that are free on 127.0.0.1 right now."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_is_free(port: int) -> bool:
    """True when a listener could bind 127.0.0.1:``port`` (the same way Go servers bind)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        return True
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            return False
        raise
    finally:
        sock.close()


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) < 10:
                    continue
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    inodes.add(inode)
    return inodes


def port_owner(port: int) -> str | None:
    """``pid N (command line)`` of the process listening on ``port``, when Linux tells."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in wanted:
                        raw = (proc / "cmdline").read_bytes()
                        cmd = " ".join(
                            part.decode(errors="replace") for part in raw.split(b"\0") if part
                        )
                        return f"pid {proc.name} ({cmd[:120] or '?'})"
        except OSError:
            continue
    return None
