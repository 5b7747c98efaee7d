"""Make sure every control-plane binary is on disk: from the cache, a download, or a build.

Why this module exists: it is the one entry point (:func:`ensure_binaries`) that the CLI, the
pytest fixture and the benchmark call before starting a cluster. Each component version lives in
its own cache folder, ``<cache>/bin/<component>-<version>/``, which only ever appears complete:
downloads and builds go to ``<folder>.tmp`` and are renamed at the end, under a file lock, so an
interrupted build or two concurrent callers never leave a half folder that looks cached.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpuop.controlplane import build as _build
from gpuop.controlplane import download as _download
from gpuop.controlplane.errors import DownloadError
from gpuop.controlplane.paths import bin_root, build_log_path, component_dir
from gpuop.controlplane.versions import COMPONENTS, Component

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Binaries:
    """Binary name (``etcd``, ``kube-apiserver``...) -> absolute path."""

    paths: dict[str, Path] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Path:
        return self.paths[name]

    def __contains__(self, name: object) -> bool:
        return name in self.paths


def is_cached(comp: Component, folder: Path | None = None) -> bool:
    """True when every binary of ``comp`` is in its cache folder and executable."""
    folder = folder or component_dir(comp)
    return all(os.access(folder / name, os.X_OK) for name in comp.binaries)


def cached_binaries(components: Sequence[Component] = COMPONENTS) -> Binaries | None:
    """The cached binaries, or None if any component is missing (nothing is fetched)."""
    if not all(is_cached(comp) for comp in components):
        return None
    return Binaries(
        {name: component_dir(comp) / name for comp in components for name in comp.binaries}
    )


@contextlib.contextmanager
def _locked(comp: Component, say: Progress) -> Iterator[None]:
    root = bin_root()
    root.mkdir(parents=True, exist_ok=True)
    lock_path = root / f".{comp.dir_name}.lock"
    with lock_path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another gpuop process that is preparing {comp.label} ({lock_path})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


class _DownloadPolicy:
    """Whether to try downloads, and why not (shared across components in one call)."""

    def __init__(self, allow: bool | None) -> None:
        if allow is None:
            allow = not _download.download_disabled()
        self.allowed = allow
        self.reason = "" if allow else "downloads are disabled (GPUOP_NO_DOWNLOAD)"


def _ensure(comp: Component, policy: _DownloadPolicy, say: Progress) -> Path:
    final = component_dir(comp)
    if is_cached(comp, final):
        return final
    with _locked(comp, say):
        if is_cached(comp, final):  # another process finished it while we waited
            return final
        if final.exists():  # not a complete folder (e.g. a binary deleted by hand)
            shutil.rmtree(final)
        tmp = final.with_name(final.name + ".tmp")
        why = policy.reason
        if policy.allowed:
            say(f"fetching {comp.label} release binaries")
            try:
                _download.download_component(comp, _fresh_dir(tmp), progress=say)
            except DownloadError as exc:
                why = f"the release download was not used: {exc}"
                say(f"  {why}; building from source instead")
                if exc.unreachable:
                    policy.allowed = False
                    policy.reason = why
            else:
                tmp.rename(final)
                return final
        _build.build_component(
            comp, _fresh_dir(tmp), log_path=build_log_path(comp), progress=say, why=why
        )
        tmp.rename(final)
        return final


def ensure_binaries(
    progress: Progress | None = None,
    *,
    components: Sequence[Component] = COMPONENTS,
    allow_download: bool | None = None,
) -> Binaries:
    """Every binary of ``components``, fetched or built first when not cached.

    ``allow_download`` None follows ``GPUOP_NO_DOWNLOAD``. Raises ToolchainError (no usable go,
    no module proxy) or BuildError; both carry a message meant for the user.
    """
    say = progress or (lambda _msg: None)
    policy = _DownloadPolicy(allow_download)
    paths: dict[str, Path] = {}
    for comp in components:
        folder = _ensure(comp, policy, say)
        for name in comp.binaries:
            paths[name] = folder / name
    return Binaries(paths)
