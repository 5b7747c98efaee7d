"""Bad input and failing writes: a clear error naming the file, and nothing changed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from toolkit_support import CONFIG, INPUTS_DIR, make_root, snapshot

from gpuop.toolkit import (
    ConfigParseError,
    ConfigShapeError,
    ConfigVersionError,
    ConfigWriteError,
    RuntimeOptions,
    StateError,
    ToolkitError,
    configure_runtime,
    revert_runtime,
)

CUSTOM = (INPUTS_DIR / "commented-custom-runtimes.toml").read_text()


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("version = 2\n[plugins\nx = 1\n", ConfigParseError, "line 2, column"),
        ("version = 2\nversion = 3\n", ConfigParseError, "line 2"),
        ('version = 2\nroot = "unterminated\n', ConfigParseError, "line 2"),
        ('[plugins."io.containerd.grpc.v1.cri"]\n', ConfigVersionError, "version 1"),
        ("version = 1\n", ConfigVersionError, "supported versions: 2 (containerd 1.x), 3"),
        ("version = 5\n", ConfigVersionError, "config version 5"),
        ('version = "2"\n', ConfigVersionError, "must be an integer"),
        ('version = 2\nplugins = "none"\n', ConfigShapeError, "plugins must be a table"),
        (
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nruntimes = []\n',
            ConfigShapeError,
            "runtimes must be a table",
        ),
        (
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\nnvidia = 1\n',
            ConfigShapeError,
            "nvidia must be a table",
        ),
        ('version = 2\nimports = "conf.d/*.toml"\n', ConfigShapeError, "imports"),
    ],
)
@pytest.mark.parametrize("mode", ["in-place", "drop-in"])
def test_bad_config_is_refused_and_left_alone(
    tmp_path: Path, text: str, error: type[ToolkitError], message: str, mode: str
) -> None:
    root = make_root(tmp_path, text)
    before = snapshot(root)
    with pytest.raises(error) as caught:
        configure_runtime(str(root), RuntimeOptions(mode=mode))
    assert message in str(caught.value)
    assert "/etc/containerd/config.toml" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert snapshot(root) == before


def test_parse_error_carries_line_and_column(tmp_path: Path) -> None:
    root = make_root(tmp_path, "version = 2\n\n[grpc]\naddress = \n")
    with pytest.raises(ConfigParseError) as caught:
        configure_runtime(str(root))
    assert caught.value.path == "/etc/containerd/config.toml"
    assert caught.value.line == 4
    assert caught.value.column is not None


def test_not_utf8(tmp_path: Path) -> None:
    root = make_root(tmp_path, b"version = 2\n# caf\xe9\n")
    with pytest.raises(ConfigParseError, match="not UTF-8"):
        configure_runtime(str(root))


def test_broken_import_is_reported_with_its_own_name(tmp_path: Path) -> None:
    root = make_root(tmp_path, 'version = 2\nimports = ["extra.toml"]\n')
    (root / "etc/containerd/extra.toml").write_text("[[[\n")
    before = snapshot(root)
    with pytest.raises(ConfigParseError, match=r"/etc/containerd/extra\.toml"):
        configure_runtime(str(root))
    assert snapshot(root) == before


def test_unreadable_state_record(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    (root / "etc/containerd/config.toml.gpuop-state.json").write_text("{not json")
    before = snapshot(root)
    with pytest.raises(StateError, match=r"gpuop-state\.json"):
        revert_runtime(str(root))
    assert snapshot(root) == before


def _lock(directory: Path) -> bool:
    """Make `directory` unwritable, for root too (immutable attribute); False if impossible."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        return True
    chattr = shutil.which("chattr")
    if chattr is None:
        return False
    proc = subprocess.run([chattr, "+i", str(directory)], capture_output=True, check=False)
    return proc.returncode == 0


def _unlock(directory: Path) -> None:
    if os.geteuid() != 0:
        directory.chmod(0o755)
    else:
        subprocess.run(["chattr", "-i", str(directory)], capture_output=True, check=False)


@pytest.mark.parametrize("mode", ["in-place", "drop-in"])
def test_unwritable_directory(tmp_path: Path, mode: str) -> None:
    root = make_root(tmp_path, CUSTOM)
    directory = root / "etc/containerd"
    if not _lock(directory):
        pytest.skip("cannot make a directory unwritable here (root without chattr support)")
    try:
        before = snapshot(root)
        with pytest.raises(ConfigWriteError) as caught:
            configure_runtime(str(root), RuntimeOptions(mode=mode))
        assert "/etc/containerd/" in str(caught.value)
        assert "nothing was changed" in str(caught.value)
        assert snapshot(root) == before
    finally:
        _unlock(directory)


def test_unwritable_directory_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as above for a root user: creating the temporary file fails."""
    root = make_root(tmp_path, CUSTOM)
    before = snapshot(root)

    def refuse(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(ConfigWriteError) as caught:
        configure_runtime(str(root), RuntimeOptions(mode="in-place"))
    assert "Permission denied" in str(caught.value)
    assert "nothing was changed" in str(caught.value)
    assert snapshot(root) == before


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4])
def test_failure_while_renaming_rolls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    """Drop-in mode replaces four files (backup, state, drop-in, config); any may fail."""
    root = make_root(tmp_path, CUSTOM)
    before = {k: v.data for k, v in snapshot(root).items()}
    real_replace = os.replace
    calls = {"n": 0}

    def flaky(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(ConfigWriteError, match="No space left on device"):
        configure_runtime(str(root))
    monkeypatch.setattr(os, "replace", real_replace)
    assert {k: v.data for k, v in snapshot(root).items()} == before


def test_cli_error_is_one_line_exit_2(tmp_path: Path) -> None:
    root = make_root(tmp_path, "version = 2\n[plugins\n")
    proc = subprocess.run(
        [sys.executable, "-m", "gpuop", "toolkit", "configure-runtime", "--root", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: cannot parse /etc/containerd/config.toml:")
    assert "line 2" in lines[0]
    assert "Traceback" not in proc.stderr
    assert (root / CONFIG).read_text() == "version = 2\n[plugins\n"
