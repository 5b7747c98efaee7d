"""The format-preserving TOML layer (gpuop.toolkit.tomledit) and import resolution."""

from __future__ import annotations

import tomllib

import pytest

from gpuop.toolkit.imports import covers, matches, resolve_entry
from gpuop.toolkit.tomledit import (
    AppendItem,
    DeleteKey,
    EditError,
    LayoutError,
    RemoveItem,
    SetValue,
    apply_to_data,
    dump,
    edit_text,
    parse,
)

RUNTIMES = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes")
NVIDIA = {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/nv"}}


def test_apply_to_data_does_not_touch_its_input() -> None:
    data = {"a": {"b": [1]}}
    out = apply_to_data(
        data,
        [SetValue(("a", "c", "d"), 1), AppendItem(("a", "b"), 2), DeleteKey(("x",))],
    )
    assert out == {"a": {"b": [1, 2], "c": {"d": 1}}}
    assert data == {"a": {"b": [1]}}
    emptied = apply_to_data(out, [RemoveItem(("a", "b"), 1), RemoveItem(("a", "b"), 2)])
    assert apply_to_data(emptied, [DeleteKey(("a", "b"), only_if_empty=True)]) == {
        "a": {"c": {"d": 1}}
    }


def test_new_table_copies_indentation_and_quotes() -> None:
    text = (
        "version = 3\n"
        "[plugins]\n"
        "  [plugins.'io.containerd.cri.v1.runtime']\n"
        "    [plugins.'io.containerd.cri.v1.runtime'.containerd]\n"
        "      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
        "        runtime_type = 'io.containerd.runc.v2'\n"
    )
    base = ("plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes")
    out = edit_text(text, [SetValue((*base, "nvidia"), NVIDIA)])
    assert out == text + (
        "\n"
        "        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n"
        "          runtime_type = 'io.containerd.runc.v2'\n"
        "\n"
        "          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]\n"
        "            BinaryName = '/nv'\n"
    )


def test_comment_of_the_next_table_stays_with_it() -> None:
    text = (
        "[plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes.runc]\n"
        "runtime_type = 'io.containerd.runc.v2'\n"
        "# SystemdCgroup = true\n"
        "\n"
        "# Registry mirrors\n"
        "[plugins.'io.containerd.grpc.v1.cri'.registry]\n"
        "config_path = '/etc/containerd/certs.d'\n"
    )
    out = edit_text(text, [SetValue((*RUNTIMES, "nvidia"), NVIDIA)])
    lines = out.splitlines()
    assert lines.index("# SystemdCgroup = true") < lines.index(
        "[plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes.nvidia]"
    )
    assert lines[lines.index("# Registry mirrors") + 1].startswith(
        "[plugins.'io.containerd.grpc.v1.cri'.registry]"
    )
    # and deleting the table again gives back the original bytes
    assert edit_text(out, [DeleteKey((*RUNTIMES, "nvidia"))]) == text


def test_value_replacement_keeps_the_comment() -> None:
    text = 'version = 2\n[a]\nname = "runc"  # the default\nother = 1\n'
    out = edit_text(text, [SetValue(("a", "name"), "nvidia")])
    assert out == 'version = 2\n[a]\nname = "nvidia"  # the default\nother = 1\n'


def test_new_key_goes_after_the_last_key_before_subtables() -> None:
    text = "[a]\n  x = 1\n\n  [a.b]\n  y = 2\n"
    out = edit_text(text, [SetValue(("a", "z"), True)])
    assert out == "[a]\n  x = 1\n  z = true\n\n  [a.b]\n  y = 2\n"


def test_missing_final_newline() -> None:
    text = '[a.runtimes.runc]\nruntime_type = "x"'
    out = edit_text(text, [SetValue(("a", "runtimes", "nvidia"), {"runtime_type": "y"})])
    assert tomllib.loads(out) == {
        "a": {"runtimes": {"runc": {"runtime_type": "x"}, "nvidia": {"runtime_type": "y"}}}
    }
    assert out.startswith(text + "\n")


def test_imports_array_append_and_remove() -> None:
    text = "imports = []\nversion = 2\n"
    out = edit_text(text, [AppendItem(("imports",), "/etc/x.toml")])
    assert out == 'imports = ["/etc/x.toml"]\nversion = 2\n'
    back = edit_text(out, [RemoveItem(("imports",), "/etc/x.toml")])
    assert tomllib.loads(back) == {"imports": [], "version": 2}


def test_shape_errors() -> None:
    with pytest.raises(EditError, match="is not a table"):
        edit_text('plugins = "x"\n', [SetValue(("plugins", "a", "b"), 1)])
    with pytest.raises(EditError, match="not an array"):
        edit_text("imports = 1\n", [AppendItem(("imports",), "x")])


def test_parse_repairs_tomlkit_header_indentation() -> None:
    # tomlkit 0.15 alone renders the second header with four spaces.
    text = "  [a.b.x]\n  k = 1\n\n  [a.b.y]\n  k = 2\n"
    assert parse(text).as_string() == text


def test_parse_refuses_what_tomlkit_cannot_reproduce() -> None:
    text = (
        'version = 2\nimports = []\n        [plugins."io.containerd.grpc.v1.cri".containerd'
        '.runtimes.runc]\n          runtime_type = "io.containerd.runc.v2"\n[plugins]\n'
        '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
    )
    tomllib.loads(text)  # valid TOML
    with pytest.raises(LayoutError):
        parse(text)


def test_dump_is_containerd_style() -> None:
    text = dump({"version": 2, "plugins": {"io.containerd.grpc.v1.cri": {"enable_cdi": True}}})
    assert text == 'version = 2\n\n  [plugins."io.containerd.grpc.v1.cri"]\n    enable_cdi = true\n'
    assert "'x'" in dump({"a": "x"}, literal_strings=True)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("/etc/containerd/conf.d/*.toml", "/etc/containerd/conf.d/99-nvidia.toml", True),
        ("/etc/containerd/*.toml", "/etc/containerd/conf.d/99-nvidia.toml", False),
        ("/etc/containerd/conf.d/9?-*.toml", "/etc/containerd/conf.d/99-nvidia.toml", True),
    ],
)
def test_matches_like_go_filepath_match(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern, path) is expected


def test_covers_resolves_relative_entries() -> None:
    config = "/etc/containerd/config.toml"
    assert resolve_entry("conf.d/x.toml", config) == "/etc/containerd/conf.d/x.toml"
    assert covers(["conf.d/*.toml"], config, "/etc/containerd/conf.d/99-nvidia.toml")
    assert not covers(["/opt/*.toml"], config, "/etc/containerd/conf.d/99-nvidia.toml")
