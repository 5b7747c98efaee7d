"""Reading and writing files under a host root, so that a failure never leaves a half-edit.

Why this module exists: the toolkit edits files that a running containerd reads on restart, on
every GPU node. A crash or a full disk in the middle of a write must not leave a truncated
config.toml, and a failure after the first of two files (drop-in mode writes two) must not leave
the host half-configured. So:

* every path is a *host path* (what the node sees, `/etc/containerd/config.toml`) mapped onto a
  *host root* (`/` on a node, a per-node directory in the simulator); the host path is what
  goes into configuration files and reports, the mapped path is what gets opened;
* `commit` first stages every new file as a temporary file in the target directory (written,
  fsynced, mode and owner copied), and only then renames them into place in order, fsyncing the
  directory; if anything fails, the temporary files are removed and the files already renamed
  are put back, and `ConfigWriteError` says that nothing was changed;
* temporary files are named `.<name>.<random>.gpuop-tmp`, which no containerd import glob
  (`*.toml`) can match.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import posixpath
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuop.toolkit.errors import ConfigPathError, ConfigWriteError

_MAX_LINKS = 16


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class HostPath:
    """A path as the host sees it (`host`) and where it lies under the host root (`real`)."""

    host: str
    real: Path


class HostRoot:
    """The directory that stands for `/` of one host."""

    def __init__(self, root: str | os.PathLike[str] = "/") -> None:
        self.root = Path(os.path.abspath(os.fspath(root)))

    def __repr__(self) -> str:
        return f"HostRoot({str(self.root)!r})"

    def path(self, host_path: str) -> HostPath:
        """Map a host path (absolute, or relative to `/`) under the root."""
        if not host_path or "\0" in host_path:
            raise ConfigPathError(f"invalid path {host_path!r}")
        normal = posixpath.normpath("/" + host_path.lstrip("/"))
        if normal == "/":
            raise ConfigPathError(f"{host_path!r} names the root directory, not a file")
        return HostPath(normal, self.root.joinpath(normal.lstrip("/")))

    def resolve(self, path: HostPath) -> HostPath:
        """Follow symbolic links in the last component, interpreting targets on the host."""
        current = path
        for _ in range(_MAX_LINKS):
            if not current.real.is_symlink():
                return current
            target = os.readlink(current.real)
            if not target.startswith("/"):
                target = posixpath.join(posixpath.dirname(current.host), target)
            current = self.path(target)
        raise ConfigPathError(f"{path.host}: too many levels of symbolic links")

    def read(self, path: HostPath) -> bytes | None:
        """The file's bytes, or None when it does not exist."""
        try:
            return path.real.read_bytes()
        except FileNotFoundError:
            return None
        except IsADirectoryError as exc:
            raise ConfigWriteError(f"{path.host} is a directory, not a file") from exc
        except OSError as exc:
            raise ConfigWriteError(f"cannot read {path.host}: {_reason(exc)}") from exc

    def exists(self, path: HostPath) -> bool:
        return path.real.exists() or path.real.is_symlink()


@dataclass(frozen=True, slots=True)
class FileWrite:
    """Replace `target` with `content`, or remove it when `content` is None.

    `like` names a file whose mode and owner the new file copies (itself, for an edit; the
    main config for a drop-in, whose copy of the CRI section may hold registry credentials).
    """

    target: HostPath
    content: bytes | None
    like: HostPath | None = None
    default_mode: int = 0o644


@dataclass(frozen=True, slots=True)
class CommitReport:
    created_dirs: tuple[str, ...]


def commit(writes: Sequence[FileWrite], root: HostRoot) -> CommitReport:
    """Apply `writes` in order, all or nothing (see the module docstring)."""
    staged: list[tuple[FileWrite, Path | None]] = []
    created_dirs: list[Path] = []
    current: FileWrite | None = None
    try:
        for write in writes:
            current = write
            if write.content is None:
                staged.append((write, None))
                continue
            created_dirs += _make_parents(write.target.real.parent)
            staged.append((write, _stage(write)))
    except OSError as exc:
        _discard(staged, created_dirs)
        assert current is not None
        raise ConfigWriteError(
            f"cannot write {current.target.host}: {_reason(exc)}; nothing was changed"
        ) from exc

    done: list[tuple[FileWrite, bytes | None]] = []
    try:
        for write, temp in staged:
            current = write
            previous = root.read(write.target)
            if temp is None:
                if previous is not None:
                    write.target.real.unlink()
            else:
                os.replace(temp, write.target.real)
            _fsync_dir(write.target.real.parent)
            done.append((write, previous))
    except OSError as exc:
        _discard([(w, t) for w, t in staged if t is not None and t.exists()], [])
        _undo(done)
        _remove_empty(created_dirs)
        assert current is not None
        raise ConfigWriteError(
            f"cannot write {current.target.host}: {_reason(exc)}; nothing was changed"
        ) from exc
    return CommitReport(tuple(_host_of(root, d) for d in created_dirs))


def remove_empty_dirs(root: HostRoot, host_dirs: Sequence[str]) -> list[str]:
    """Remove the given directories (deepest first) when empty; returns those removed."""
    removed: list[str] = []
    for host_dir in sorted(host_dirs, key=len, reverse=True):
        real = root.path(host_dir).real
        with contextlib.suppress(OSError):
            real.rmdir()
            removed.append(host_dir)
    return removed


def _host_of(root: HostRoot, real: Path) -> str:
    return "/" + str(real.relative_to(root.root)).lstrip("/")


def _make_parents(directory: Path) -> list[Path]:
    missing: list[Path] = []
    probe = directory
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for path in reversed(missing):
        path.mkdir(mode=0o755)
    return list(reversed(missing))


def _stage(write: FileWrite) -> Path:
    assert write.content is not None
    target = write.target.real
    mode, owner = write.default_mode, None
    reference = write.like.real if write.like is not None else target
    with contextlib.suppress(OSError):
        info = reference.stat()
        mode, owner = stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".gpuop-tmp")
    temp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(write.content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        if owner is not None and hasattr(os, "geteuid") and os.geteuid() == 0:
            os.chown(temp, *owner)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    return temp


def _discard(staged: Sequence[tuple[FileWrite, Path | None]], created: Sequence[Path]) -> None:
    for _, temp in staged:
        if temp is not None:
            with contextlib.suppress(OSError):
                temp.unlink()
    _remove_empty(created)


def _remove_empty(created: Sequence[Path]) -> None:
    for path in reversed(created):
        with contextlib.suppress(OSError):
            path.rmdir()


def _undo(done: Sequence[tuple[FileWrite, bytes | None]]) -> None:
    for write, previous in reversed(done):
        with contextlib.suppress(OSError):
            if previous is None:
                write.target.real.unlink(missing_ok=True)
            else:
                os.replace(_stage(FileWrite(write.target, previous, write.like)), write.target.real)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
