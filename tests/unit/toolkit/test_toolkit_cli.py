"""`gpuop toolkit configure-runtime` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from toolkit_support import CONFIG, INPUTS_DIR, contents, make_root

from gpuop.cli import cli

CUSTOM = (INPUTS_DIR / "commented-custom-runtimes.toml").read_text()


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["toolkit", "configure-runtime", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_help_teaches_with_an_example() -> None:
    code, out = run("--help")
    assert code == 0
    for text in (
        "--mode",
        "drop-in",
        "in-place",
        "--revert",
        "--dry-run",
        "Examples:",
        "gpuop toolkit configure-runtime --with-cdi-runtimes --enable-cdi --dry-run",
    ):
        assert text in out


def test_group_help_lists_the_command() -> None:
    result = CliRunner().invoke(cli, ["toolkit", "--help"])
    assert result.exit_code == 0
    assert "configure-runtime" in result.output


def test_dry_run_prints_diff_then_summary(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    before = contents(root)
    code, out = run("--root", str(root), "--mode", "in-place", "--dry-run")
    assert code == 0
    assert out.startswith("--- /etc/containerd/config.toml\n+++ /etc/containerd/config.toml\n")
    assert "would configure runtime handlers" in out
    assert out.rstrip().endswith("dry run: nothing was written")
    assert contents(root) == before


def test_configure_json_then_revert_text(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    code, out = run("--root", str(root), "--with-cdi-runtimes", "--enable-cdi", "--output", "json")
    assert code == 0
    data = json.loads(out)
    assert data["changed"] is True
    assert [f["action"] for f in data["files"]] == ["created", "modified"]

    code, out = run("--root", str(root), "--with-cdi-runtimes", "--enable-cdi", "--output", "json")
    assert code == 0 and json.loads(out)["changed"] is False

    code, out = run("--root", str(root), "--revert")
    assert code == 0
    assert out.startswith("reverted /etc/containerd/config.toml (drop-in)")
    assert (root / CONFIG).read_text() == CUSTOM


def test_options_reach_the_library(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    code, _ = run(
        "--root",
        str(root),
        "--mode",
        "in-place",
        "--runtime-class",
        "gpu",
        "--set-as-default",
        "--install-dir",
        "/opt/nvidia",
    )
    assert code == 0
    text = (root / CONFIG).read_text()
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpu]' in text
    assert 'BinaryName = "/opt/nvidia/toolkit/nvidia-container-runtime"' in text
    assert 'default_runtime_name = "gpu"' in text


def test_custom_config_and_drop_in_paths(tmp_path: Path) -> None:
    root = make_root(tmp_path, None)
    (root / "etc/k3s").mkdir()
    (root / "etc/k3s/containerd.toml").write_text(CUSTOM)
    code, _ = run(
        "--root",
        str(root),
        "--config",
        "etc/k3s/containerd.toml",
        "--drop-in",
        "/etc/k3s/conf.d/nvidia.toml",
        "--import",
        "glob",
    )
    assert code == 0
    assert 'imports = ["/etc/k3s/conf.d/*.toml"]' in (root / "etc/k3s/containerd.toml").read_text()
    assert (root / "etc/k3s/conf.d/nvidia.toml").exists()
