"""Properties over generated containerd configs (see toolkit_configs.py).

* configure succeeds and registers the handlers, whatever the layout of the file;
* the main config keeps every original line, in order (only keys gpuop changes differ);
* configure -> configure is a no-op: not a single write the second time;
* configure -> revert is the identity, byte for byte, for every file under the root;
* configure -> someone edits -> revert removes only gpuop's keys and keeps the edit.

tomlkit, the format-preserving parser, cannot read a few valid arrangements of tables (a
parent's header after its sub-tables, with other tables in between). For those the property
is the refusal: a ConfigShapeError, and nothing changed.
"""

from __future__ import annotations

import difflib
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from fuzzing import scaled
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from toolkit_configs import PLUGIN, containerd_configs
from toolkit_support import CONFIG, contents, make_root, snapshot

from gpuop.toolkit import (
    ConfigShapeError,
    RuntimeOptions,
    RuntimeResult,
    configure_runtime,
    revert_runtime,
)
from gpuop.toolkit.containerd import merge_plugin_sections
from gpuop.toolkit.tomledit import LayoutError, parse

# Each example configures a containerd root through tomlkit (and reverts it): 40 under the
# `ci` profile, scaled like every count by the Hypothesis profile (tests/conftest.py).
SETTINGS = settings(
    max_examples=scaled(40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DROP_IN = "etc/containerd/conf.d/99-nvidia.toml"


@st.composite
def runtime_options(draw: st.DrawFn) -> RuntimeOptions:
    return RuntimeOptions(
        mode=draw(st.sampled_from(["in-place", "drop-in"])),
        with_cdi_runtimes=draw(st.booleans()),
        set_as_default=draw(st.booleans()),
        enable_cdi=draw(st.booleans()),
        import_style=draw(st.sampled_from(["file", "glob"])),
    )


def configured(root: Path, options: RuntimeOptions) -> RuntimeResult | None:
    """Configure `root`; None where the format-preserving parser refuses, after checking the
    refusal.

    Two refusals are expected: text the parser cannot keep the layout of, and an edit
    whose result tomlkit cannot read back (out-of-order tables); either changes nothing.
    """
    text = (root / CONFIG).read_text()
    before = snapshot(root)
    try:
        parse(text)
    except LayoutError:
        with pytest.raises(ConfigShapeError, match="format-preserving"):
            configure_runtime(str(root), options)
        assert snapshot(root) == before
        return None
    try:
        return configure_runtime(str(root), options)
    except ConfigShapeError as exc:
        assert "could not be edited again" in str(exc)
        assert snapshot(root) == before
        return None


def effective_runtimes(root: Path, options: RuntimeOptions) -> tuple[dict[str, Any], int]:
    """The CRI runtime section containerd would load after configure (config, then drop-in)."""
    config = tomllib.loads((root / CONFIG).read_text())
    version = config["version"]
    sections = [config.get("plugins", {}).get(PLUGIN[version], {})]
    if options.mode == "drop-in" and (root / DROP_IN).exists():
        drop = tomllib.loads((root / DROP_IN).read_text())
        sections.append(drop.get("plugins", {}).get(PLUGIN[version], {}))
    merged = merge_plugin_sections(sections, version)
    assert merged is not None
    return merged, version


def removed_lines(before: str, after: str) -> list[str]:
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    out: list[str] = []
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            out += before.splitlines()[i1:i2]
    return out


@SETTINGS
@given(text=containerd_configs(), options=runtime_options())
def test_configure_registers_keeps_lines_and_is_idempotent(
    text: str, options: RuntimeOptions
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = make_root(Path(tmp), text)
        result = configured(root, options)
        if result is None:
            return

        section, version = effective_runtimes(root, options)
        runtimes = section["containerd"]["runtimes"]
        for handler in options.handlers():
            assert runtimes[handler.name]["runtime_type"] == "io.containerd.runc.v2"
            assert runtimes[handler.name]["options"]["BinaryName"] == handler.binary
        if options.set_as_default:
            assert section["containerd"]["default_runtime_name"] == "nvidia"
        if options.enable_cdi and version < 4:  # version 4: CDI is always on, no such key
            assert section["enable_cdi"] is True

        after = (root / CONFIG).read_text()
        changed_keys = {c.key[-1] for c in result.changes if c.kind == "changed"}
        for line in removed_lines(text, after):
            # Lines may only change where gpuop changes a value, appends to `imports`, or adds
            # to an inline table (which TOML keeps on one line).
            key = line.split("=")[0].strip().split(".")[-1].strip("\"'")
            inline = "= {" in line
            assert key in changed_keys or key == "imports" or inline or not line.strip(), line

        first = snapshot(root)
        again = configure_runtime(str(root), options)
        assert not again.changed
        assert snapshot(root) == first


OUT_OF_ORDER_TABLES = (
    '# containerd configuration\nversion = 2\n  [plugins."io.containerd.gc.v1.scheduler"]\n'
    "    pause_threshold = 0.02\n"
    '        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n[grpc]\n'
    '  address = "/run/containerd/containerd.sock"\n'
    '        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]\n'
    '          runtime_type = "io.containerd.runc.v2"\n'
    '          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]\n'
    '            BinaryName = "/usr/bin/crun"\n'
    '        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
    '          runtime_type = "io.containerd.kata.v2"\n'
    "          privileged_without_host_devices = true"
)


@SETTINGS
@given(text=containerd_configs(), options=runtime_options())
@example(
    text=OUT_OF_ORDER_TABLES,
    options=RuntimeOptions(
        config="/etc/containerd/config.toml",
        mode="in-place",
        runtime_class="nvidia",
        with_cdi_runtimes=False,
        set_as_default=True,
        enable_cdi=False,
        install_dir="/usr/local/nvidia",
        drop_in="/etc/containerd/conf.d/99-nvidia.toml",
        import_style="file",
        runtime_type="io.containerd.runc.v2",
        new_config_version=2,
    ),
)
def test_configure_then_revert_is_the_identity(text: str, options: RuntimeOptions) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = make_root(Path(tmp), text)
        before = contents(root)
        if configured(root, options) is None:
            return
        revert_runtime(str(root), options)
        assert contents(root) == before


@SETTINGS
@given(text=containerd_configs(), options=runtime_options())
def test_revert_after_an_edit_keeps_the_edit(text: str, options: RuntimeOptions) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = make_root(Path(tmp), text)
        if configured(root, options) is None:
            return
        config = root / CONFIG
        current = config.read_text()
        edited = current + ("" if current.endswith("\n") else "\n") + "# edited later\n"
        config.write_text(edited)

        revert_runtime(str(root), options)

        reverted = config.read_text()
        assert tomllib.loads(reverted) == tomllib.loads(text)
        assert "# edited later" in reverted
        assert not (root / DROP_IN).exists()
        assert not list(config.parent.glob("*.gpuop-*"))
