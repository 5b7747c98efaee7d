"""Every command's `--help` fits an 80-column terminal, its example blocks included."""

from __future__ import annotations

import click
import pytest
from cli_support import RunCli

from gpuop.cli import cli


def _paths(
    group: click.Group, ctx: click.Context, prefix: tuple[str, ...]
) -> list[tuple[str, ...]]:
    found = [prefix]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found += _paths(command, ctx, (*prefix, name))
        elif command is not None:
            found.append((*prefix, name))
    return found


COMMANDS = _paths(cli, click.Context(cli), ())


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "gpuop")
def test_help_fits_80_columns(gpuop: RunCli, path: tuple[str, ...]) -> None:
    run = gpuop(*path, "--help", columns=80)
    assert run.code == 0, run.stderr
    wide = [line for line in run.stdout.splitlines() if len(line) > 80]
    assert not wide, wide[:3]
