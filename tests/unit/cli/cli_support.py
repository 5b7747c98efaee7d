"""Types and paths the CLI tests share (the fixtures are in conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kit.golden import GoldenCheck  # noqa: F401  (the CLI tests import it from here)

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden" / "cli"
REPO_ROOT = GOLDEN_DIR.parents[2]


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


RunCli = Callable[..., Run]
