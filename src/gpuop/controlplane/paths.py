"""Where the control plane keeps its binaries, its clusters and its Go sources.

Why this module exists: three places matter and each has an override, so tests and CI can move
them without touching the user's home:

* the binary cache, ``<cache>/bin/<component>-<version>/`` where ``<cache>`` is
  ``${GPUOP_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/gpuop}`` (built once per machine, ~400 MB,
  shared by every cluster);
* the cluster state, ``<state>/clusters/<name>/`` where ``<state>`` is
  ``${GPUOP_STATE_DIR:-${XDG_STATE_HOME:-~/.local/state}/gpuop}`` (PKI, kubeconfig, pid files,
  logs, etcd data);
* the Go wrapper modules, ``gpuop/controlplane/modules/<component>/`` (go.mod and go.sum),
  shipped inside the package so an installed gpuop builds its binaries without a source
  checkout; ``GPUOP_SOURCE_DIR`` points at other ones (a checkout, or a folder of modules).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from gpuop.controlplane.errors import ControlPlaneError
from gpuop.controlplane.versions import Component

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


def _env_dir(var: str) -> Path | None:
    value = os.environ.get(var, "").strip()
    return Path(value).expanduser() if value else None


def cache_dir() -> Path:
    """The gpuop cache root (the binaries live in its ``bin/``)."""
    explicit = _env_dir("GPUOP_CACHE_DIR")
    if explicit is not None:
        return explicit
    xdg = _env_dir("XDG_CACHE_HOME") or Path.home() / ".cache"
    return xdg / "gpuop"


def bin_root() -> Path:
    return cache_dir() / "bin"


def component_dir(comp: Component) -> Path:
    """The cache folder of one component version, e.g. ``.../bin/kubernetes-v1.37.2``."""
    return bin_root() / comp.dir_name


def build_log_path(comp: Component) -> Path:
    return cache_dir() / "logs" / f"build-{comp.dir_name}.log"


def state_root() -> Path:
    """The gpuop state root; every cluster has a folder under its ``clusters/``."""
    explicit = _env_dir("GPUOP_STATE_DIR")
    if explicit is not None:
        return explicit
    xdg = _env_dir("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return xdg / "gpuop"


def validate_cluster_name(name: str) -> str:
    if not _NAME.match(name):
        raise ControlPlaneError(
            f"invalid cluster name {name!r}: use 1-40 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit (for example 'gpuop' or 'lab-2')"
        )
    return name


def cluster_dir(name: str, root: Path | None = None) -> Path:
    return (root or state_root()) / "clusters" / validate_cluster_name(name)


def _looks_like_wrappers(path: Path) -> bool:
    return (path / "kubernetes" / "go.mod").is_file()


MODULES = "modules"


def packaged_wrapper_root() -> Path:
    """The wrapper modules shipped with this package (``gpuop/controlplane/modules``)."""
    return Path(__file__).resolve().parent / MODULES


def wrapper_root() -> Path:
    """The folder holding one Go wrapper module per component (``<component>/go.mod``)."""
    explicit = _env_dir("GPUOP_SOURCE_DIR")
    if explicit is not None:
        candidates = (explicit / "src" / "gpuop" / "controlplane" / MODULES, explicit)
        for candidate in candidates:
            if _looks_like_wrappers(candidate):
                return candidate
        raise ControlPlaneError(
            f"GPUOP_SOURCE_DIR={explicit} holds no Go wrapper modules (looked for "
            f"{candidates[0]}/kubernetes/go.mod and {explicit}/kubernetes/go.mod); point it at "
            "the root of a gpuop source checkout or at a folder with one <component>/go.mod each"
        )
    packaged = packaged_wrapper_root()
    if _looks_like_wrappers(packaged):
        return packaged
    raise ControlPlaneError(
        "cannot find the Go wrapper modules needed to build the control-plane binaries: "
        f"{packaged}/kubernetes/go.mod is missing, so this gpuop was installed without its "
        "package data. Reinstall it from the wheel or sdist (pip install gpuop-<version>.whl), "
        "set GPUOP_SOURCE_DIR to the root of a gpuop source checkout, or put prebuilt binaries "
        f"in {bin_root()}/<component>-<version>/"
    )


def wrapper_dir(comp: Component) -> Path:
    return wrapper_root() / comp.name
