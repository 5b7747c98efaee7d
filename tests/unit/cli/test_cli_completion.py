"""`gpuop completion` and docs/cli.md's exit-status table."""

from __future__ import annotations

import pytest
from cli_support import REPO_ROOT, Run, RunCli

from gpuop.cli.exits import EXIT_CODES


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


def _values(args: list[str], incomplete: str) -> list[str]:
    from click.shell_completion import ShellComplete

    from gpuop.cli import cli

    items = ShellComplete(cli, {}, "gpuop", "_GPUOP_COMPLETE").get_completions(args, incomplete)
    return [item.value for item in items if item.type == "plain"]


def test_catalogue_names_complete_where_a_flag_takes_them() -> None:
    from gpuop.catalog import gpu_catalog, vgpu_families
    from gpuop.catalog.versions import version_matrix
    from gpuop.check.rules import REGISTRY

    models = {gpu.model for gpu in gpu_catalog().gpus}
    assert set(_values(["plan", "--gpu"], "")) == models
    assert set(_values(["sim", "node", "add", "--gpu"], "")) == models
    assert "A100" in _values(["plan", "--gpu"], "a1")  # any case
    vgpu_types = {t for f in vgpu_families().families.values() for t in f.types}
    assert set(_values(["plan", "--vgpu-config"], "")) == vgpu_types
    assert set(_values(["check", "--ignore"], "")) == set(REGISTRY)
    assert set(_values(["versions", "check", "--ignore"], "VER")) == {
        c for c in REGISTRY if c.startswith("VER")
    }
    releases = [r.version for r in version_matrix().releases]
    assert set(_values(["check", "--operator-version"], "")) == set(releases)
    assert set(_values(["versions", "check", "--operator-release"], "26.")) == {
        r for r in releases if r.startswith("26.")
    }
    assert set(_values(["upgrade", "preview"], "2")) == {r for r in releases if r[0] == "2"}


def test_an_upgrade_side_completes_a_file_when_it_does_not_look_like_a_release() -> None:
    from click.shell_completion import ShellComplete

    from gpuop.cli import cli

    complete = ShellComplete(cli, {}, "gpuop", "_GPUOP_COMPLETE").get_completions
    assert [i.type for i in complete(["upgrade", "preview"], "dumps/")] == ["file"]
    assert [i.type for i in complete(["upgrade", "preview", "26.7.0"], "./")] == ["file"]
