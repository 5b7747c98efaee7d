"""Every data file the code reads ships in the wheel: the package-data globs cover them."""

from __future__ import annotations

import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "gpuop"
PYPROJECT = PACKAGE.parents[1] / "pyproject.toml"


def test_package_data_globs_cover_every_catalog_file() -> None:
    globs = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-data"]["gpuop"]
    shipped = {path for pattern in globs for path in PACKAGE.glob(pattern)}
    catalog = {
        path
        for path in (PACKAGE / "catalog").rglob("*")
        if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts
    }
    assert catalog - shipped == set()
