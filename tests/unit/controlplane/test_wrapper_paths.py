"""Where the Go wrapper modules are found: inside the package, or where GPUOP_SOURCE_DIR says."""

from __future__ import annotations

from pathlib import Path

import pytest

import gpuop
from gpuop.controlplane import COMPONENTS, HELM, paths
from gpuop.controlplane.errors import ControlPlaneError


def test_every_component_has_its_module_inside_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GPUOP_SOURCE_DIR", raising=False)
    package = Path(gpuop.__file__).resolve().parent
    for comp in (*COMPONENTS, HELM):
        module = paths.wrapper_dir(comp)
        assert module == package / "controlplane" / "modules" / comp.name
        assert (module / "go.mod").is_file() and (module / "go.sum").is_file()


def test_source_dir_may_be_a_checkout_or_a_folder_of_modules(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    checkout_modules = tmp_path / "checkout" / "src" / "gpuop" / "controlplane" / "modules"
    (checkout_modules / "kubernetes").mkdir(parents=True)
    (checkout_modules / "kubernetes" / "go.mod").write_text("module x\n")
    monkeypatch.setenv("GPUOP_SOURCE_DIR", str(tmp_path / "checkout"))
    assert paths.wrapper_root() == checkout_modules
    monkeypatch.setenv("GPUOP_SOURCE_DIR", str(checkout_modules))
    assert paths.wrapper_root() == checkout_modules


def test_a_source_dir_without_modules_says_what_it_looked_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GPUOP_SOURCE_DIR", str(tmp_path))
    with pytest.raises(ControlPlaneError, match=r"kubernetes/go\.mod"):
        paths.wrapper_root()


def test_a_package_without_its_data_says_how_to_fix_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GPUOP_SOURCE_DIR", raising=False)
    monkeypatch.setattr(paths, "packaged_wrapper_root", lambda: tmp_path / "modules")
    with pytest.raises(ControlPlaneError, match="GPUOP_SOURCE_DIR") as raised:
        paths.wrapper_root()
    assert "package data" in str(raised.value)
