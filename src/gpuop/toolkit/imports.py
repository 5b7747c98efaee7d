"""Which files containerd loads besides its main config, found the way containerd finds them.

Why this module exists: `imports` decides whether an edit takes effect at all. On containerd
1.x an imported file that defines the CRI plugin section replaces the whole section of the main
file, so handlers added in place can silently vanish; a drop-in has to carry the section the
host actually uses; and the drop-in must not be imported twice or not at all. This module
resolves the `imports` array like containerd does (relative paths against the directory of
the importing file, `*` globs matched per path component and sorted, imports of imports
breadth-first, each file once) but under a host root, and reads what each file says.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuop.toolkit.errors import ConfigWriteError, parse_error
from gpuop.toolkit.hostfs import HostPath, HostRoot

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class LoadedFile:
    """One file in containerd's load order. `data` is None when the file does not exist."""

    path: str
    data: Mapping[str, Any] | None


def resolve_entry(entry: str, importer: str) -> str:
    """An `imports` entry as an absolute host path or pattern, like containerd resolves it."""
    if not entry.startswith("/"):
        entry = posixpath.join(posixpath.dirname(importer), entry)
    return posixpath.normpath(entry)


def has_glob(pattern: str) -> bool:
    return any(c in _GLOB_CHARS for c in pattern)


def matches(pattern: str, path: str) -> bool:
    """Go `filepath.Match` semantics: `*` never crosses a `/`."""
    parts, names = pattern.split("/"), path.split("/")
    return len(parts) == len(names) and all(
        fnmatch.fnmatchcase(name, part) for part, name in zip(parts, names, strict=True)
    )


def covers(entries: Sequence[str], importer: str, target: str) -> bool:
    """Whether one of the `imports` entries of `importer` already loads `target`."""
    for entry in entries:
        resolved = resolve_entry(entry, importer)
        if resolved == target or (has_glob(resolved) and matches(resolved, target)):
            return True
    return False


def expand(root: HostRoot, pattern: str) -> list[str]:
    """Existing host paths matching `pattern` under `root`, sorted like Go's `filepath.Glob`.

    A pattern without wildcards is returned as is (containerd fails on a missing plain path).
    """
    if not has_glob(pattern):
        return [pattern]
    found = ["/"]
    for part in [p for p in pattern.split("/") if p]:
        if not has_glob(part):
            found = [posixpath.join(base, part) for base in found]
            continue
        nxt: list[str] = []
        for base in found:
            directory = root.root if base == "/" else root.path(base).real
            try:
                names = sorted(os.listdir(directory))
            except OSError:
                continue
            nxt += [posixpath.join(base, n) for n in names if fnmatch.fnmatchcase(n, part)]
        found = nxt
    return [path for path in found if root.exists(root.path(path))]


def load_order(root: HostRoot, config: HostPath, data: Mapping[str, Any]) -> list[LoadedFile]:
    """The files containerd merges after `config`, in order (the config itself excluded)."""
    out: list[LoadedFile] = []
    seen = {config.host}
    pending: list[tuple[str, Mapping[str, Any]]] = [(config.host, data)]
    while pending:
        importer, importer_data = pending.pop(0)
        entries = importer_data.get("imports") or []
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if not isinstance(entry, str):
                continue
            for path in expand(root, resolve_entry(entry, importer)):
                if path in seen:
                    continue
                seen.add(path)
                loaded = read_toml(root, root.path(path))
                out.append(LoadedFile(path, loaded))
                if loaded is not None:
                    pending.append((path, loaded))
    return out


def read_toml(root: HostRoot, path: HostPath) -> Mapping[str, Any] | None:
    raw = root.read(path)
    if raw is None:
        return None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigWriteError(f"cannot read {path.host}: not UTF-8 text") from exc
    except tomllib.TOMLDecodeError as exc:
        raise parse_error(path.host, exc) from exc
