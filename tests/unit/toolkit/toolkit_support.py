"""Helpers shared by the toolkit tests: host roots in tmp, file snapshots, golden files."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

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


def check_golden(path: Path, actual: str) -> None:
    """Compare with the golden file; `UPDATE_GOLDEN=1` rewrites it instead."""
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"golden file {path} is missing; run with UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                fromfile=f"{path} (golden)",
                tofile="actual",
            )
        )
        raise AssertionError(
            f"output differs from {path}; if the change is intended, rerun with UPDATE_GOLDEN=1\n"
            + diff
        )
