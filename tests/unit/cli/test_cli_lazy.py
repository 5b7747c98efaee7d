"""The command line loads a command only when it runs: `--help` and `--version` stay light,
and the table that lists the commands agrees with the commands themselves."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from cli_support import REPO_ROOT, RunCli

from gpuop.cli import COMMANDS, LazyGroup, cli

HEAVY_MODULES = ("gpuop.check", "gpuop.policy.models", "pydantic", "lightkube", "yaml", "rich")


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(REPO_ROOT / "src"), "COLUMNS": "100", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )


@pytest.mark.parametrize("argv", [[], ["--help"], ["--version"]], ids=["import", "help", "version"])
def test_import_and_help_load_no_command(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "from gpuop.cli import main\n"
        f"sys.argv = ['gpuop', *{argv!r}]\n"
        "try:\n"
        "    main() if len(sys.argv) > 1 else None\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(__import__('json').dumps(sorted(sys.modules)))\n"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stderr)
    heavy = [m for m in loaded if m.startswith(HEAVY_MODULES)]
    # The shared text layout (re and click only) fits help to the terminal, and the exit
    # status table is part of it; no command loads.
    shared = ("gpuop.cli.common", "gpuop.cli.exits", "gpuop.cli.layout")
    commands = [m for m in loaded if m.startswith("gpuop.cli.") and m not in shared]
    assert heavy == []
    assert commands == []


def test_help_lists_commands_as_click_would_with_all_loaded() -> None:
    """The summaries in the table print exactly what the loaded commands would."""
    code = (
        "import click\n"
        "from gpuop.cli import cli, COMMANDS\n"
        "def render():\n"
        "    with click.Context(cli, info_name='gpuop') as ctx:\n"
        "        return cli.get_help(ctx)\n"
        "lazy = render()\n"
        "assert not cli.commands, cli.commands\n"
        "for name in COMMANDS:\n"
        "    cli.get_command(click.Context(cli), name)\n"
        "eager = click.Group(name='gpuop', commands=cli.commands, help=cli.help,\n"
        "    context_settings=cli.context_settings, params=cli.params, epilog=cli.epilog)\n"
        "with click.Context(eager, info_name='gpuop') as ctx:\n"
        "    print(lazy == eager.get_help(ctx))\n"
        "print(lazy)\n"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    same, _, text = result.stdout.partition("\n")
    assert same == "True", text
    for name in COMMANDS:
        assert f"\n  {name} " in text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_listed_command_loads_with_its_summary(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert isinstance(command, click.Command)
    assert command.name == name
    assert command.get_short_help_str(1000) == COMMANDS[name].summary


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_help_runs(gpuop: RunCli, name: str) -> None:
    result = gpuop(name, "--help")
    assert result.code == 0, result.stderr
    assert result.stdout.startswith(f"Usage: gpuop {name} ")


def test_help_lists_every_command(gpuop: RunCli) -> None:
    result = gpuop("--help")
    assert result.code == 0
    table = result.stdout.split("Commands:\n")[1].split("\n\n")[0]
    listed = [line.split()[0] for line in table.splitlines()]
    assert listed == sorted(COMMANDS)


def test_help_shows_the_exit_status_table(gpuop: RunCli) -> None:
    from gpuop.cli.exits import EXIT_CODES

    text = " ".join(gpuop("--help", columns=80).stdout.split())
    assert "Exit status:" in text
    for code, meaning in EXIT_CODES:
        assert " ".join(f"{code:<4} {meaning}".split()) in text


def test_unknown_command_is_a_usage_error(gpuop: RunCli) -> None:
    result = gpuop("no-such-command")
    assert result.code == 2
    assert "No such command 'no-such-command'" in result.stderr


def test_an_added_command_wins_over_the_table() -> None:
    @click.command(name="plan")
    def stand_in() -> None:
        """A stand-in."""

    group = LazyGroup(name="gpuop", commands={"plan": stand_in})
    assert group.get_command(click.Context(group), "plan") is stand_in
    assert group.list_commands(click.Context(group)) == sorted(COMMANDS)
