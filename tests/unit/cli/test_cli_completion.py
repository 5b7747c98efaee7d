"""`gpuop completion` and docs/cli.md's exit-status table."""

from __future__ import annotations

import pytest
from cli_support import REPO_ROOT, Run, RunCli

from gpuop.cli.common import EXIT_CODES


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script_for_each_shell(gpuop: RunCli, shell: str) -> None:
    result = gpuop("completion", shell)
    assert result.code == 0, result.stderr
    assert "_GPUOP_COMPLETE" in result.stdout


def test_unknown_shell_is_a_usage_error(gpuop: RunCli) -> None:
    result = gpuop("completion", "tcsh")
    assert result.code == 2
    assert "Traceback" not in result.stderr


def _complete(gpuop: RunCli, monkeypatch: pytest.MonkeyPatch, words: str, cword: int) -> Run:
    monkeypatch.setenv("_GPUOP_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(cword))
    return gpuop()


def test_completes_commands_options_and_choices(
    gpuop: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "plain,check" in _complete(gpuop, monkeypatch, "gpuop che", 1).stdout
    assert "plain,--severity" in _complete(gpuop, monkeypatch, "gpuop check --sev", 2).stdout
    choices = _complete(gpuop, monkeypatch, "gpuop check -o ", 3).stdout
    assert {"plain,json", "plain,yaml", "plain,name", "plain,wide"} <= set(choices.split())


def test_docs_exit_status_table_is_the_code_table() -> None:
    text = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for code, meaning in EXIT_CODES:
        assert f"| {code} | {meaning} |" in text


@pytest.mark.parametrize(
    "args",
    [
        ["check"],
        ["adopt"],
        ["plan", "-f"],
        ["plan", "--policy"],
        ["render", "--policy"],
        ["render", "--nodes"],
        ["policy", "validate"],
        ["explain", "--cluster"],
        ["kubevirt", "vmi-example", "--values"],
        ["check", "--live", "--kubeconfig"],
    ],
    ids=" ".join,
)
def test_file_arguments_complete_file_names(args: list[str]) -> None:
    """Where a command takes a file, the shell completes file names (click's `file` items)."""
    from click.shell_completion import ShellComplete

    from gpuop.cli import cli

    items = ShellComplete(cli, {}, "gpuop", "_GPUOP_COMPLETE").get_completions(args, "")
    assert [item.type for item in items] == ["file"], args
