"""Run `gpuop` in-process through `gpuop.cli.main` (exit codes and error lines included),
and compare output with golden files (`--update-golden` rewrites them)."""

from __future__ import annotations

import sys

import pytest
from cli_support import GOLDEN_DIR, GoldenCheck, Run, RunCli
from click.testing import CliRunner

from gpuop.cli import main
from kit.golden import golden_in


@pytest.fixture
def gpuop(monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """`gpuop(*args, input=..., columns=100)` runs the command line as the `gpuop` script would,
    its stdout a terminal `columns` wide; `terminal=False` makes it a pipe (no width)."""

    def run(*args: str, input: str | None = None, columns: int = 100, terminal: bool = True) -> Run:
        monkeypatch.setattr("gpuop.cli.common.stdout_is_terminal", lambda: terminal)
        runner = CliRunner()
        env = {
            "COLUMNS": str(columns),
            "NO_COLOR": "1",
            "FORCE_COLOR": None,
            "TTY_COMPATIBLE": None,
        }
        with runner.isolation(input=input, env=env) as (stdout, stderr, _):
            monkeypatch.setattr(sys, "argv", ["gpuop", *args])
            try:
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            sys.stdout.flush()
            sys.stderr.flush()
            return Run(code, stdout.getvalue().decode(), stderr.getvalue().decode())

    return run


@pytest.fixture
def golden(update_golden: bool) -> GoldenCheck:
    return golden_in(GOLDEN_DIR, update=update_golden)
