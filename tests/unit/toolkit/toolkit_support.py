"""Helpers shared by the toolkit tests: host roots in tmp, file snapshots, golden files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kit.golden import check_golden  # noqa: F401  (the toolkit tests import it from here)

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden" / "toolkit"
INPUTS_DIR = GOLDEN_DIR / "inputs"
CONFIG = "etc/containerd/config.toml"


def make_root(base: Path, config: str | bytes | None, *, name: str = "root") -> Path:
    """A host root under `base` whose /etc/containerd/config.toml holds `config`."""
    root = base / name
    (root / "etc" / "containerd").mkdir(parents=True)
    if config is not None:
        data = config.encode() if isinstance(config, str) else config
        (root / CONFIG).write_bytes(data)
    return root


@dataclass(frozen=True)
class Entry:
    data: bytes | None
    mode: int
    mtime_ns: int
    inode: int


def snapshot(root: Path) -> dict[str, Entry]:
    """Every file and directory under `root`, with content, mode, mtime and inode."""
    out: dict[str, Entry] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory) / name
            info = path.lstat()
            rel = str(path.relative_to(root))
            data = path.read_bytes() if path.is_file() else None
            out[rel] = Entry(data, info.st_mode, info.st_mtime_ns, info.st_ino)
    return out


def contents(root: Path) -> dict[str, bytes | None]:
    return {k: v.data for k, v in snapshot(root).items()}
