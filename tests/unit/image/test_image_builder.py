"""The image builder's pure parts: Debian relations, the package closure, layers, tar entries."""

from __future__ import annotations

import importlib.util
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_image", REPO / "image" / "build_image.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_image"] = module
    spec.loader.exec_module(module)
    return module


builder = _load()


def deb(name: str, depends: str = "", provides: str = "") -> object:
    return builder.Deb(
        path=Path(f"/{name}.deb"),
        name=name,
        version="1",
        arch="amd64",
        depends=builder.parse_relations(depends),
        provides=tuple(a for g in builder.parse_relations(provides) for a in g),
    )


def test_relations_keep_names_and_alternatives_only() -> None:
    parsed = builder.parse_relations(
        "libc6 (>= 2.35), dpkg (>= 1.15.4) | install-info, python3:any"
    )
    assert parsed == (("libc6",), ("dpkg", "install-info"), ("python3",))


def test_the_closure_follows_depends_and_provides_and_skips_what_is_left_out() -> None:
    available = {
        d.name: d
        for d in [
            deb("python", "libc, readline-common"),
            deb("readline-common", "dpkg | install-info"),
            deb("libc", "awk"),
            deb("mawk", provides="awk"),
            deb("dpkg", "tar"),
            deb("tar"),
        ]
    }
    left_out = frozenset({"dpkg", "install-info"})
    chosen = builder.dependency_closure(available, ["python"], left_out | {"awk"})
    assert [d.name for d in chosen] == ["libc", "python", "readline-common"]
    chosen = builder.dependency_closure(available, ["python"], left_out)
    assert [d.name for d in chosen] == ["libc", "mawk", "python", "readline-common"]


def test_a_dependency_apt_did_not_download_is_an_error() -> None:
    available = {"python": deb("python", "libmissing")}
    with pytest.raises(builder.ImageError, match="libmissing"):
        builder.dependency_closure(available, ["python"], frozenset())


def test_top_level_folders_go_to_the_merged_usr() -> None:
    assert (
        builder.usr_merged("lib/x86_64-linux-gnu/libc.so.6") == "usr/lib/x86_64-linux-gnu/libc.so.6"
    )
    assert builder.usr_merged("bin") == "usr/bin"
    assert builder.usr_merged("etc/passwd") == "etc/passwd"
    assert builder.usr_merged("library/x") == "library/x"


def test_files_are_split_into_debian_dependencies_and_gpuop_layers() -> None:
    site = "usr/lib/python3/dist-packages"
    assert builder.layer_of("usr/lib/python3.11/os.py", site) == 0
    assert builder.layer_of(f"{site}/pydantic/main.py", site) == 1
    assert builder.layer_of(f"{site}/gpuop/cli/__init__.py", site) == 2
    assert builder.layer_of(f"{site}/gpuop-0.1.0.dist-info/RECORD", site) == 2
    assert builder.layer_of(f"{site}/gpuop_extra/x.py", site) == 1
    assert builder.layer_of("usr/bin/gpuop", site) == 2


def test_tar_entries_carry_one_mtime_and_root_ownership(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "file").write_text("x")
    (tmp_path / "a-link").symlink_to("b/file")
    assert list(builder.walk(tmp_path)) == ["a-link", "b", "b/file"]
    info, source = builder.tar_entry(tmp_path, "b/file", 1234)
    assert (info.mtime, info.uid, info.gid, info.uname, info.type) == (
        1234,
        0,
        0,
        "",
        tarfile.REGTYPE,
    )
    assert source == tmp_path / "b" / "file"
    link, none = builder.tar_entry(tmp_path, "a-link", 1234)
    assert (link.type, link.linkname, none) == (tarfile.SYMTYPE, "b/file", None)


def test_the_lock_pins_every_wheel_with_a_hash() -> None:
    locked = builder.read_lock()
    names = {entry.name.lower() for entry in locked}
    assert {"pydantic", "lightkube", "pyyaml", "click"} <= names
    assert all(len(entry.sha256) == 64 for entry in locked)


def test_the_wheel_platforms_cover_the_images_glibc() -> None:
    platforms = builder.Config.load().wheel_platforms()
    assert platforms[0] == "manylinux_2_36_x86_64" and "manylinux2014_x86_64" in platforms
