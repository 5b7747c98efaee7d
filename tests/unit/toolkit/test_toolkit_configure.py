"""Behaviour of configure_runtime / revert_runtime on a host root in a temporary directory."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from toolkit_support import CONFIG, INPUTS_DIR, contents, make_root, snapshot

from gpuop.toolkit import (
    RuntimeOptions,
    StateError,
    configure_runtime,
    revert_runtime,
    runtime_handlers,
)
from gpuop.toolkit.errors import ConfigPathError, ConfigShapeError

DEFAULT_16 = (INPUTS_DIR / "containerd-1.6-default.toml").read_text()
CUSTOM = (INPUTS_DIR / "commented-custom-runtimes.toml").read_text()
V3 = (INPUTS_DIR / "containerd-2.x-v3-default.toml").read_text()
V4 = (INPUTS_DIR / "containerd-2.4-default.toml").read_text()
MINIMAL = 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "pause:3.10"\n'
CRI = ("plugins", "io.containerd.grpc.v1.cri")
OPERATOR = RuntimeOptions(with_cdi_runtimes=True, enable_cdi=True)


def runtimes(data: dict, plugin: str = "io.containerd.grpc.v1.cri") -> dict:
    return data["plugins"][plugin]["containerd"]["runtimes"]


def read(root: Path, path: str = CONFIG) -> dict:
    return tomllib.loads((root / path.lstrip("/")).read_text())


# --------------------------------------------------------------------------------------------
# configure


@pytest.mark.parametrize("mode", ["in-place", "drop-in"])
@pytest.mark.parametrize(
    "text", [DEFAULT_16, CUSTOM, V3, MINIMAL], ids=["1.6", "custom", "v3", "min"]
)
def test_configure_twice_writes_nothing_the_second_time(
    tmp_path: Path, mode: str, text: str
) -> None:
    root = make_root(tmp_path, text)
    options = RuntimeOptions(mode=mode, with_cdi_runtimes=True, enable_cdi=True)
    first = configure_runtime(str(root), options)
    assert first.changed
    after_first = snapshot(root)

    second = configure_runtime(str(root), options)

    assert not second.changed
    assert second.changes == ()
    assert snapshot(root) == after_first  # same bytes, same inodes, same mtimes: no write at all


@pytest.mark.parametrize("mode", ["in-place", "drop-in"])
@pytest.mark.parametrize(
    "text", [DEFAULT_16, CUSTOM, V3, MINIMAL], ids=["1.6", "custom", "v3", "min"]
)
def test_configure_then_revert_restores_every_byte(tmp_path: Path, mode: str, text: str) -> None:
    root = make_root(tmp_path, text)
    before = contents(root)
    options = RuntimeOptions(
        mode=mode, with_cdi_runtimes=True, enable_cdi=True, set_as_default=True
    )
    configure_runtime(str(root), options)
    assert contents(root) != before

    result = revert_runtime(str(root), options)

    assert contents(root) == before  # also: no backup, state file or conf.d directory left
    assert {f.path: f.action for f in result.files}[f"/{CONFIG}"] == "restored"


def test_in_place_registers_handlers_copying_runc_options(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    result = configure_runtime(str(root), RuntimeOptions(mode="in-place", with_cdi_runtimes=True))
    data = read(root)
    handlers = runtimes(data)
    for name, suffix in [("nvidia", ""), ("nvidia-cdi", ".cdi"), ("nvidia-legacy", ".legacy")]:
        assert handlers[name]["runtime_type"] == "io.containerd.runc.v2"
        assert handlers[name]["options"] == {
            "BinaryName": f"/usr/local/nvidia/toolkit/nvidia-container-runtime{suffix}",
            "SystemdCgroup": True,  # copied from runc, the default runtime
        }
    assert (
        data["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"] == "runc"
    )
    assert data["plugins"]["io.containerd.grpc.v1.cri"]["enable_cdi"] is False
    # every original line is still there, in order
    original = CUSTOM.splitlines()
    new = (root / CONFIG).read_text().splitlines()
    it = iter(new)
    assert all(line in it for line in original)
    assert [c.kind for c in result.changes] == ["added", "added", "added"]


def test_set_as_default_and_enable_cdi_record_previous_values(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    result = configure_runtime(
        str(root), RuntimeOptions(mode="in-place", set_as_default=True, enable_cdi=True)
    )
    changed = {c.key[-1]: c for c in result.changes if c.kind == "changed"}
    assert changed["default_runtime_name"].previous == "runc"
    assert changed["default_runtime_name"].value == "nvidia"
    assert changed["enable_cdi"].previous is False
    cri = read(root)["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["containerd"]["default_runtime_name"] == "nvidia"
    assert cri["enable_cdi"] is True


def test_kata_default_runtime_is_not_copied(tmp_path: Path) -> None:
    text = CUSTOM.replace('default_runtime_name = "runc"', 'default_runtime_name = "kata"')
    root = make_root(tmp_path, text)
    configure_runtime(str(root), RuntimeOptions(mode="in-place"))
    nvidia = runtimes(read(root))["nvidia"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2"
    assert "ConfigPath" not in nvidia["options"]  # kata's option; runc's are used instead
    assert nvidia["options"]["SystemdCgroup"] is True


def test_config_without_runtimes_keeps_builtin_runc(tmp_path: Path) -> None:
    root = make_root(tmp_path, MINIMAL)
    result = configure_runtime(str(root), RuntimeOptions(mode="in-place"))
    handlers = runtimes(read(root))
    assert set(handlers) == {"runc", "nvidia"}
    assert handlers["runc"]["runtime_type"] == "io.containerd.runc.v2"
    assert any(c.key[-1] == "runc" and "built-in" in c.note for c in result.changes)


def test_v3_uses_the_containerd_2_plugin(tmp_path: Path) -> None:
    root = make_root(tmp_path, V3)
    configure_runtime(str(root), RuntimeOptions(mode="in-place", enable_cdi=True))
    data = read(root)
    nvidia = runtimes(data, "io.containerd.cri.v1.runtime")["nvidia"]
    assert nvidia["sandboxer"] == "podsandbox"
    assert nvidia["options"]["BinaryName"] == "/usr/local/nvidia/toolkit/nvidia-container-runtime"
    assert (
        "io.containerd.grpc.v1.cri" not in data["plugins"]
        or "containerd" not in data["plugins"]["io.containerd.grpc.v1.cri"]
    )


def test_v4_has_no_enable_cdi(tmp_path: Path) -> None:
    root = make_root(tmp_path, V4)
    result = configure_runtime(str(root), RuntimeOptions(mode="in-place", enable_cdi=True))
    cri = read(root)["plugins"]["io.containerd.cri.v1.runtime"]
    assert "enable_cdi" not in cri
    assert "nvidia" in cri["containerd"]["runtimes"]
    assert any("always enable CDI" in n for n in result.notes)


def test_v3_drop_in_holds_only_what_is_added(tmp_path: Path) -> None:
    text = (
        "version = 3\n"
        "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n"
        "  default_runtime_name = 'runc'\n"
        "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n"
        "  SystemdCgroup = true\n"
    )
    root = make_root(tmp_path, text)
    configure_runtime(str(root), RuntimeOptions(set_as_default=True))
    drop = read(root, "/etc/containerd/conf.d/99-nvidia.toml")
    assert drop == {
        "version": 3,
        "plugins": {
            "io.containerd.cri.v1.runtime": {
                "containerd": {
                    "default_runtime_name": "nvidia",
                    "runtimes": {
                        "nvidia": {
                            "runtime_type": "io.containerd.runc.v2",
                            "options": {
                                "BinaryName": "/usr/local/nvidia/toolkit/nvidia-container-runtime",
                                "SystemdCgroup": True,
                            },
                        }
                    },
                }
            }
        },
    }


def test_drop_in_mode_adds_one_import_and_a_drop_in(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    result = configure_runtime(str(root), OPERATOR)
    config = read(root)
    assert config["imports"] == ["/etc/containerd/conf.d/99-nvidia.toml"]
    without_imports = {k: v for k, v in config.items() if k != "imports"}
    assert without_imports == tomllib.loads(CUSTOM)
    drop = read(root, "/etc/containerd/conf.d/99-nvidia.toml")
    assert drop["version"] == 2
    cri = drop["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["enable_cdi"] is True
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.9"  # the section is repeated whole
    assert set(cri["containerd"]["runtimes"]) == {
        "runc",
        "kata",
        "crun",
        "nvidia",
        "nvidia-cdi",
        "nvidia-legacy",
    }
    assert [f.action for f in result.files] == ["created", "modified"]
    text = (root / "etc/containerd/conf.d/99-nvidia.toml").read_text()
    assert text.startswith("# Written by gpuop")


def test_drop_in_reflects_the_latest_options(tmp_path: Path) -> None:
    """The drop-in belongs to gpuop: each run rewrites it from that run's options."""
    root = make_root(tmp_path, CUSTOM)
    configure_runtime(str(root), OPERATOR)
    result = configure_runtime(str(root), RuntimeOptions())
    assert [f.action for f in result.files] == ["modified", "unchanged"]
    cri = read(root, "/etc/containerd/conf.d/99-nvidia.toml")["plugins"][
        "io.containerd.grpc.v1.cri"
    ]
    assert "nvidia-cdi" not in cri["containerd"]["runtimes"]
    assert cri["enable_cdi"] is False  # as in config.toml again
    state = json.loads((root / "etc/containerd/config.toml.gpuop-state.json").read_text())
    drop_keys = [c["keyText"] for c in state["changes"] if c["file"].endswith("99-nvidia.toml")]
    assert not any("nvidia-cdi" in k for k in drop_keys)
    revert_runtime(str(root))
    assert (root / CONFIG).read_text() == CUSTOM


def test_drop_in_glob_import_style(tmp_path: Path) -> None:
    root = make_root(tmp_path, DEFAULT_16)
    configure_runtime(str(root), RuntimeOptions(import_style="glob"))
    assert read(root)["imports"] == ["/etc/containerd/conf.d/*.toml"]


def test_existing_glob_import_covers_the_drop_in(tmp_path: Path) -> None:
    text = "version = 3\nimports = ['conf.d/*.toml']\n"
    root = make_root(tmp_path, text)
    result = configure_runtime(str(root))
    assert (root / CONFIG).read_text() == text
    assert [f.action for f in result.files] == ["created", "unchanged"]


def test_drop_in_copies_the_section_from_the_last_import(tmp_path: Path) -> None:
    root = make_root(tmp_path, 'version = 2\nimports = ["/etc/containerd/extra.toml"]\n')
    (root / "etc/containerd/extra.toml").write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "mirror/pause"\n'
    )
    result = configure_runtime(str(root))
    drop = read(root, "/etc/containerd/conf.d/99-nvidia.toml")
    assert drop["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"] == "mirror/pause"
    assert any("/etc/containerd/extra.toml" in c.note for c in result.changes)


def test_in_place_warns_when_an_import_shadows_the_section(tmp_path: Path) -> None:
    root = make_root(tmp_path, 'version = 2\nimports = ["extra.toml"]\n')
    (root / "etc/containerd/extra.toml").write_text(
        'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n'
    )
    result = configure_runtime(str(root), RuntimeOptions(mode="in-place"))
    assert any("use --mode drop-in" in w for w in result.warnings)


def test_missing_config_is_created_and_reverted(tmp_path: Path) -> None:
    root = make_root(tmp_path, None)
    before = contents(root)
    configure_runtime(str(root))
    assert read(root) == {"version": 2, "imports": ["/etc/containerd/conf.d/99-nvidia.toml"]}
    revert_runtime(str(root))
    assert contents(root) == before


def test_config_already_configured_needs_no_drop_in(tmp_path: Path) -> None:
    text = (INPUTS_DIR / "already-configured.toml").read_text()
    root = make_root(tmp_path, text)
    before = snapshot(root)
    result = configure_runtime(str(root), OPERATOR)
    assert not result.changed
    assert snapshot(root) == before


def test_backup_is_made_once_and_revert_undoes_all_runs(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    configure_runtime(str(root), RuntimeOptions(mode="in-place"))
    backup = root / "etc/containerd/config.toml.gpuop-backup"
    assert backup.read_text() == CUSTOM
    configure_runtime(
        str(root), RuntimeOptions(mode="in-place", enable_cdi=True, install_dir="/opt/nv")
    )
    assert backup.read_text() == CUSTOM  # not overwritten by the second run
    state = json.loads((root / "etc/containerd/config.toml.gpuop-state.json").read_text())
    assert [c["kind"] for c in state["changes"]] == ["added", "changed", "changed"]
    revert_runtime(str(root), RuntimeOptions(mode="in-place"))
    assert (root / CONFIG).read_text() == CUSTOM
    assert not backup.exists()


def test_an_existing_backup_is_never_overwritten(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    old = root / "etc/containerd/config.toml.gpuop-backup"
    old.write_text("someone else's backup\n")
    result = configure_runtime(str(root), RuntimeOptions(mode="in-place"))
    assert old.read_text() == "someone else's backup\n"
    assert result.files[0].backup == "/etc/containerd/config.toml.gpuop-backup.1"
    revert_runtime(str(root), RuntimeOptions(mode="in-place"))
    assert (root / CONFIG).read_text() == CUSTOM
    assert old.exists()


def test_file_mode_is_kept_and_the_drop_in_copies_it(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    os.chmod(root / CONFIG, 0o600)
    configure_runtime(str(root))
    assert (root / CONFIG).stat().st_mode & 0o777 == 0o600
    assert (root / "etc/containerd/conf.d/99-nvidia.toml").stat().st_mode & 0o777 == 0o600
    assert (root / "etc/containerd/config.toml.gpuop-state.json").stat().st_mode & 0o777 == 0o600


def test_symlinked_config_is_edited_through_the_link(tmp_path: Path) -> None:
    root = make_root(tmp_path, None)
    (root / "opt").mkdir()
    (root / "opt/containerd.toml").write_text(CUSTOM)
    (root / CONFIG).symlink_to("../../opt/containerd.toml")
    result = configure_runtime(str(root), RuntimeOptions(mode="in-place"))
    assert (root / CONFIG).is_symlink()
    assert result.config == "/opt/containerd.toml"
    assert "nvidia" in runtimes(read(root, "/opt/containerd.toml"))
    revert_runtime(str(root), RuntimeOptions(mode="in-place"))
    assert (root / "opt/containerd.toml").read_text() == CUSTOM


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    before = snapshot(root)
    result = configure_runtime(str(root), OPERATOR, dry_run=True)
    assert result.changed and result.dry_run
    assert snapshot(root) == before
    assert "+++ /etc/containerd/conf.d/99-nvidia.toml" in result.diff()
    assert "dry run: nothing was written" in result.render_text()


def test_mode_switch_requires_a_revert_first(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    configure_runtime(str(root))
    with pytest.raises(StateError, match="drop-in mode"):
        configure_runtime(str(root), RuntimeOptions(mode="in-place"))


def test_config_path_cannot_escape_the_root(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    (tmp_path / "outside.toml").write_text(CUSTOM)
    with pytest.raises(ConfigPathError):
        configure_runtime(str(root), RuntimeOptions(config="/"))
    escaping = RuntimeOptions(config="../../outside.toml", create_config=True)
    result = configure_runtime(str(root), escaping, dry_run=True)
    assert result.config == "/outside.toml"  # resolved inside the root, which has no such file


def test_a_missing_config_off_the_default_path_is_refused(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    with pytest.raises(ConfigPathError, match="likely never read"):
        configure_runtime(str(root), RuntimeOptions(config="/etc/containerd/config.tml"))
    assert sorted(p.name for p in (root / "etc" / "containerd").iterdir()) == ["config.toml"]
    assert (root / CONFIG).read_text() == CUSTOM
    typo = RuntimeOptions(config="/etc/containerd/config.tml", create_config=True)
    assert configure_runtime(str(root), typo, dry_run=True).config == typo.config
    (root / "etc" / "containerd" / "other.toml").write_text(CUSTOM)
    existing = RuntimeOptions(config="/etc/containerd/other.toml")
    assert configure_runtime(str(root), existing, dry_run=True).changes
    # containerd's default path may be missing: containerd reads it once it exists.
    assert configure_runtime(str(make_root(tmp_path, None, name="bare")), dry_run=True).changes


@pytest.mark.parametrize(
    ("config", "name"),
    [
        (None, "runc"),  # no config: containerd's default runtime is runc
        (CUSTOM, "runc"),  # default_runtime_name = "runc"
        (
            'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
            'default_runtime_name = "crun"\n',
            "crun",
        ),
    ],
)
def test_the_default_runtime_is_not_taken_over(
    tmp_path: Path, config: str | None, name: str
) -> None:
    root = make_root(tmp_path, config)
    with pytest.raises(ConfigPathError, match="containerd's default runtime"):
        configure_runtime(str(root), RuntimeOptions(runtime_class=name), dry_run=True)
    on_purpose = RuntimeOptions(runtime_class=name, set_as_default=True)
    assert configure_runtime(str(root), on_purpose, dry_run=True).changes


def test_result_renders_as_json(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    result = configure_runtime(str(root), OPERATOR)
    data = json.loads(result.to_json())
    assert data["operation"] == "configure" and data["changed"] is True
    assert data["configVersion"] == 2
    assert [r["name"] for r in data["runtimes"]] == ["nvidia", "nvidia-cdi", "nvidia-legacy"]
    assert {f["path"] for f in data["files"]} == {
        "/etc/containerd/config.toml",
        "/etc/containerd/conf.d/99-nvidia.toml",
    }
    assert data["stateFile"] == "/etc/containerd/config.toml.gpuop-state.json"
    assert any(c["keyText"].endswith("runtimes.nvidia") for c in data["changes"])


# --------------------------------------------------------------------------------------------
# revert


def test_revert_after_a_later_edit_removes_only_gpuop_keys(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    options = RuntimeOptions(mode="in-place", set_as_default=True, enable_cdi=True)
    configure_runtime(str(root), options)
    edited = (
        (root / CONFIG)
        .read_text()
        .replace('"registry.k8s.io/pause:3.9"', '"registry.k8s.io/pause:3.10"')
    )
    (root / CONFIG).write_text(edited)

    result = revert_runtime(str(root), options)

    expected = tomllib.loads(CUSTOM.replace("pause:3.9", "pause:3.10"))
    assert read(root) == expected
    assert "# Sandboxed workloads" in (root / CONFIG).read_text()
    assert any("edited after gpuop wrote it" in w for w in result.warnings)
    assert not (root / "etc/containerd/config.toml.gpuop-state.json").exists()


def test_revert_keeps_a_value_changed_again_by_someone_else(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    options = RuntimeOptions(mode="in-place", set_as_default=True)
    configure_runtime(str(root), options)
    text = (
        (root / CONFIG)
        .read_text()
        .replace('default_runtime_name = "nvidia"', 'default_runtime_name = "crun"')
    )
    (root / CONFIG).write_text(text)
    result = revert_runtime(str(root), options)
    data = read(root)
    assert (
        data["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"] == "crun"
    )
    assert "nvidia" not in runtimes(data)
    assert any("changed again" in w for w in result.warnings)


def test_revert_drop_in_after_config_edit(tmp_path: Path) -> None:
    root = make_root(tmp_path, DEFAULT_16)
    configure_runtime(str(root), OPERATOR)
    (root / CONFIG).write_text((root / CONFIG).read_text() + "# note added later\n")
    revert_runtime(str(root), OPERATOR)
    assert (root / CONFIG).read_text() == DEFAULT_16 + "# note added later\n"
    assert not (root / "etc/containerd/conf.d").exists()


def test_revert_dry_run_shows_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    configure_runtime(str(root), RuntimeOptions(mode="in-place"))
    before = snapshot(root)
    result = revert_runtime(str(root), RuntimeOptions(mode="in-place"), dry_run=True)
    assert snapshot(root) == before
    assert result.diff().startswith("--- /etc/containerd/config.toml")
    assert "-        [plugins." in result.diff()


def test_revert_without_state_reverts_nothing(tmp_path: Path) -> None:
    """Configure found everything in place and added nothing, so revert removes nothing."""
    text = (INPUTS_DIR / "already-configured.toml").read_text()
    root = make_root(tmp_path, text)
    before = snapshot(root)
    assert not configure_runtime(str(root), OPERATOR).changed
    result = revert_runtime(str(root), OPERATOR)
    assert not result.changed
    assert snapshot(root) == before
    assert any("--by-name" in n and "nvidia-cdi" in n for n in result.notes)


def test_revert_by_name_removes_toolkit_handlers(tmp_path: Path) -> None:
    text = (INPUTS_DIR / "already-configured.toml").read_text()
    root = make_root(tmp_path, text)
    result = revert_runtime(str(root), RuntimeOptions(mode="in-place"), by_name=True)
    assert set(runtimes(read(root))) == {"runc"}
    assert any("no gpuop state record" in w for w in result.warnings)


def test_revert_by_name_leaves_a_foreign_nvidia_runtime(tmp_path: Path) -> None:
    text = CUSTOM.replace("runtimes.crun", "runtimes.nvidia")
    root = make_root(tmp_path, text)
    result = revert_runtime(str(root), RuntimeOptions(mode="in-place"), by_name=True)
    assert not result.changed
    assert (root / CONFIG).read_text() == text


def test_revert_with_nothing_to_do(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    before = snapshot(root)
    result = revert_runtime(str(root))
    assert not result.changed
    assert snapshot(root) == before


def test_foreign_drop_in_is_backed_up_and_restored(tmp_path: Path) -> None:
    root = make_root(tmp_path, CUSTOM)
    (root / "etc/containerd/conf.d").mkdir()
    foreign = root / "etc/containerd/conf.d/99-nvidia.toml"
    foreign.write_text("version = 2\n# written by the upstream toolkit\n")
    before = contents(root)
    result = configure_runtime(str(root))
    assert any("not written by gpuop" in w for w in result.warnings)
    revert_runtime(str(root))
    assert contents(root) == before


# --------------------------------------------------------------------------------------------
# handlers


def test_runtime_handlers() -> None:
    assert runtime_handlers() == runtime_handlers("nvidia")
    names = [(h.name, h.binary) for h in runtime_handlers("nvidia", with_cdi_runtimes=True)]
    assert names == [
        ("nvidia", "/usr/local/nvidia/toolkit/nvidia-container-runtime"),
        ("nvidia-cdi", "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi"),
        ("nvidia-legacy", "/usr/local/nvidia/toolkit/nvidia-container-runtime.legacy"),
    ]
    cdi = runtime_handlers("nvidia-cdi", install_dir="/opt/nv/")
    assert [(h.name, h.binary) for h in cdi] == [
        ("nvidia-cdi", "/opt/nv/toolkit/nvidia-container-runtime.cdi")
    ]
    assert [h.name for h in runtime_handlers("nvidia-cdi", with_cdi_runtimes=True)] == [
        "nvidia-cdi",
        "nvidia",
        "nvidia-legacy",
    ]


@pytest.mark.parametrize("name", ["NVIDIA", "nvidia gpu", "-x", "x" * 64, ""])
def test_runtime_class_must_be_a_handler_name(name: str) -> None:
    with pytest.raises(ConfigShapeError, match="runtime class"):
        runtime_handlers(name)


def test_install_dir_must_be_absolute() -> None:
    with pytest.raises(ConfigShapeError, match="absolute"):
        runtime_handlers(install_dir="usr/local/nvidia")
