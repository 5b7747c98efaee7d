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


def _click_help(path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> str:
    """`--help` as click alone lays it out at 80 columns, before gpuop fits any line."""
    import gpuop.cli as package

    monkeypatch.setattr(package.FittingHelpFormatter, "getvalue", click.HelpFormatter.getvalue)
    monkeypatch.setenv("COLUMNS", "80")
    command: click.Command = cli
    ctx = click.Context(cli, info_name="gpuop")
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(ctx, name)
        assert found is not None
        command = found
        ctx = click.Context(command, info_name=name, parent=ctx)
    return command.get_help(ctx)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "gpuop")
def test_help_prose_is_wrapped_once(path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """Prose is wrapped by click alone: no paragraph kept as written (`\\b`) is wider than
    the help, which would be wrapped a second time into orphan words. Only example and
    table lines (indented further) may be fitted after click."""
    text = _click_help(path, monkeypatch)
    prose = [line for line in text.splitlines() if len(line) > 80 and not line.startswith("    ")]
    assert not prose, prose[:3]
