"""The wheel the operator image is built from stands alone: gpuop works from a fresh venv.

`python -m build` makes the sdist and then the wheel from that sdist; the wheel goes into a
fresh venv (its pinned dependencies from the package index or pip's cache) and every command
runs from a folder outside the checkout with no PYTHONPATH or GPUOP_SOURCE_DIR, so nothing of
the checkout can leak in: the CLI answers, the planner plans, and the Go wrapper modules the
control plane is built from are found inside the installed package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMPONENT_MODULES = ("kubernetes", "etcd", "kwok", "helm")


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUOP_SOURCE_DIR")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{cmd} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        import build  # noqa: F401
    except ImportError:
        pytest.fail("the `build` package is missing: install gpuop[dev]", pytrace=False)
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], cwd=out)
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding only the built wheel and its dependencies; returns its bin/."""
    root = tmp_path_factory.mktemp("fresh-venv")
    venv.EnvBuilder(with_pip=True).create(root / "venv")
    bin_dir = root / "venv" / "bin"
    (wheel,) = dist.glob("gpuop-*.whl")
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], cwd=root)
    return bin_dir


def test_the_sdist_and_the_wheel_carry_the_go_wrapper_modules(dist: Path) -> None:
    (sdist,) = dist.glob("gpuop-*.tar.gz")
    (wheel,) = dist.glob("gpuop-*.whl")
    with tarfile.open(sdist) as archive:
        sdist_names = set(archive.getnames())
    wheel_names = set(zipfile.ZipFile(wheel).namelist())
    for module in COMPONENT_MODULES:
        for name in ("go.mod", "go.sum"):
            assert f"gpuop/controlplane/modules/{module}/{name}" in wheel_names
            prefix = sdist.name.removesuffix(".tar.gz")
            assert f"{prefix}/src/gpuop/controlplane/modules/{module}/{name}" in sdist_names
    assert "gpuop/catalog/deploy/rbac.yaml" in wheel_names


def test_gpuop_runs_from_the_fresh_venv(installed: Path, tmp_path: Path) -> None:
    version = _run([str(installed / "gpuop"), "--version"], cwd=tmp_path)
    assert "0.1.0" in version
    planned = _run([str(installed / "gpuop"), "plan", "--gpu", "A10", "--count", "2"], cwd=tmp_path)
    assert "2 x A10" in planned and "Workload config: container" in planned
    policy = tmp_path / "policy.yaml"
    policy.write_text(_run([str(installed / "gpuop"), "policy", "defaults"], cwd=tmp_path))
    rendered = _run(
        [str(installed / "gpuop"), "render", "--policy", str(policy), "-o", "json"], cwd=tmp_path
    )
    assert '"nvidia-driver-startup-probe"' in rendered and '"nvidia-driver"' in rendered


def test_the_installed_package_finds_its_own_go_modules(installed: Path, tmp_path: Path) -> None:
    probe = (
        "import json, gpuop\n"
        "from gpuop.controlplane import COMPONENTS, HELM\n"
        "from gpuop.controlplane.paths import wrapper_dir\n"
        "print(json.dumps({'package': gpuop.__file__,"
        " 'modules': {c.name: str(wrapper_dir(c)) for c in (*COMPONENTS, HELM)}}))\n"
    )
    found = json.loads(_run([str(installed / "python"), "-c", probe], cwd=tmp_path))
    site = Path(found["package"]).parent
    assert site.is_relative_to(installed.parent), found
    for name, module_dir in found["modules"].items():
        assert Path(module_dir).parent == site / "controlplane" / "modules", found
        assert (Path(module_dir) / "go.mod").is_file(), name
        assert (Path(module_dir) / "go.sum").is_file(), name
    assert set(COMPONENT_MODULES) <= set(found["modules"])
