"""Every example in every `--help` and in README.md's command table runs as shown.

Examples are the indented `gpuop ...` lines of each command's help and the `gpuop ...`
code spans of the README table. They run in a directory holding the files they name
(dump.json, nodes.json, pod.yaml, ./bundle, ...), in-process through `gpuop.cli.main`, and
must exit 0 or 1 (1: the example shows a problem being found). Examples that need a
cluster, a lab or a host to change are listed with the reason they are skipped.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path

import click
import pytest
from cli_support import REPO_ROOT, RunCli

from gpuop.cli import COMMANDS, cli

CORPUS = REPO_ROOT / "tests" / "corpus"
SKIPPED = {
    "--live": "reads a live cluster",
    "gpuop lab": "runs the lab on a local cluster",
    "gpuop cluster": "starts a local control plane",
    "gpuop sim": "drives simulated nodes on a cluster",
    "gpuop operator": "runs the operator against a cluster",
    "gpuop collect": "reads a live cluster",
    "gpuop toolkit": "changes a host's containerd config",
    "kubectl ": "needs kubectl and a cluster",
    "|": "a pipeline from another program",
    "…": "a placeholder, not a command",
    "FILE": "a placeholder, not a command",
    "POD.yaml": "a placeholder, not a command",
    "OLD NEW": "a placeholder, not a command",
    " / ": "a list of subcommands, not a command",
}


def _walk(command: click.Command, path: list[str]) -> list[tuple[list[str], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                found.extend(_walk(sub, [*path, name]))
    return found


def help_examples() -> list[str]:
    examples = []
    for _path, command in _walk(cli, []):
        text = "\n".join(filter(None, [command.help, command.epilog]))
        for line in text.splitlines():
            stripped = line.strip()
            words = stripped.split()
            if (
                line.startswith("  ")
                and words[:1] == ["gpuop"]
                and words[1:2] != []
                and (words[1] in COMMANDS or words[1].startswith("-"))
            ):
                examples.append(re.split(r"\s{2,}#|\s{3,}", stripped)[0].strip())
    return sorted(set(examples))


def readme_examples() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    spans = [span for span in re.findall(r"`([^`\n]+)`", text) if span.startswith("gpuop ")]
    return sorted({span.replace("\\|", "|") for span in spans})


def skip_reason(example: str) -> str | None:
    for needle, reason in SKIPPED.items():
        if needle in example:
            return reason
    return None


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The files the examples name, from the test corpus."""
    check = CORPUS / "check"
    explain = CORPUS / "explain"
    shutil.copy(check / "healthy-lab.json", tmp_path / "dump.json")
    shutil.copy(explain / "nodes.json", tmp_path / "nodes.json")
    shutil.copy(explain / "pods.json", tmp_path / "pods.json")
    shutil.copy(explain / "pod-gpu.yaml", tmp_path / "pod.yaml")
    shutil.copy(explain / "vmi-vgpu.yaml", tmp_path / "vmi.yaml")
    shutil.copytree(explain / "bundle", tmp_path / "bundle")
    upgrade = REPO_ROOT / "tests" / "golden" / "upgrade" / "inputs"
    for name in ("old.yaml", "cp.yaml", "cluster-policy.yaml", "my-policy.yaml"):
        shutil.copy(upgrade / "policy-26.3.2.yaml", tmp_path / name)
    shutil.copy(upgrade / "policy-26.3.2-driver-595.yaml", tmp_path / "new.yaml")
    shutil.copy(next((REPO_ROOT / "src" / "gpuop" / "catalog").glob("*.ids")), tmp_path / "pci.ids")
    (tmp_path / "values.yaml").write_text("gpuResource: nvidia.com/GA102GL_A10\n")
    (tmp_path / "ids.txt").write_text("10de:2236\n# a comment\n20b5\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


EXAMPLES = sorted(set(help_examples()) | set(readme_examples()))


def test_examples_were_found() -> None:
    assert len(help_examples()) >= 20
    assert len(readme_examples()) >= 5
    assert len(COMMANDS) >= 15


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_runs_as_shown(gpuop: RunCli, workdir: Path, example: str) -> None:
    reason = skip_reason(example)
    if reason:
        pytest.skip(reason)
    try:
        words = shlex.split(example.split(" > ")[0].split(" >")[0])
    except ValueError:
        pytest.fail(f"{example}: not a command a shell can run (unbalanced quotes)")
    assert words[0] == "gpuop"
    result = gpuop(*words[1:])
    # A command named in prose (`gpuop check`) may only ask for its input.
    if all(re.fullmatch(r"[a-z-]+", word) for word in words) and result.code == 2:
        assert result.stderr.startswith(("error: give", "error: nothing to")), result.stderr
        return
    assert result.code in (0, 1), f"{example}: exit {result.code}: {result.stderr[-500:]}"
    assert "Traceback" not in result.stderr
    sys.stdout.flush()
