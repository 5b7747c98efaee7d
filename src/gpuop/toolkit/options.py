"""What to configure: `RuntimeOptions` (host paths, mode, runtime name) and their checks.

`check_options` refuses a bad combination before any file is read (an unknown mode, a
glob-imported drop-in that would never load, a config version containerd does not take);
`check_not_the_default_runtime` refuses, once the config is read, handlers that would take
over containerd's default runtime unless that is asked for (`set_as_default`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from gpuop.toolkit import containerd
from gpuop.toolkit.errors import (
    ConfigPathError,
    ConfigVersionError,
)
from gpuop.toolkit.results import (
    MODES,
    Mode,
    RuntimeHandler,
)
from gpuop.toolkit.tomledit import (
    lookup,
)

ImportStyle: TypeAlias = Literal["file", "glob"]


DEFAULT_CONFIG = "/etc/containerd/config.toml"


DEFAULT_DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    """What to configure. Paths are host paths: as the node sees them, whatever the root."""

    config: str = DEFAULT_CONFIG
    mode: Mode = "drop-in"
    runtime_class: str = containerd.DEFAULT_RUNTIME_CLASS
    with_cdi_runtimes: bool = False
    set_as_default: bool = False
    enable_cdi: bool = False
    install_dir: str = containerd.DEFAULT_INSTALL_DIR
    drop_in: str = DEFAULT_DROP_IN
    import_style: ImportStyle = "file"
    """``file`` imports exactly the drop-in; ``glob`` imports `<dir>/*.toml`, as upstream does."""
    runtime_type: str = containerd.RUNC_V2
    new_config_version: int = 2
    """The version written when the config is missing or empty (2 works on containerd 1.x and 2.x)."""
    create_config: bool = False
    """Create `config` when it is missing although it is not containerd's default path
    (without this, a missing non-default config is refused as a likely typo)."""

    def handlers(self) -> tuple[RuntimeHandler, ...]:
        return containerd.runtime_handlers(
            self.runtime_class,
            with_cdi_runtimes=self.with_cdi_runtimes,
            install_dir=self.install_dir,
        )


def check_not_the_default_runtime(
    data: Mapping[str, Any],
    version: int,
    handlers: Sequence[RuntimeHandler],
    options: RuntimeOptions,
    file: str,
) -> None:
    """Refuse to take over the runtime every pod without a RuntimeClass runs with.

    A handler named like containerd's default runtime (`runc` unless default_runtime_name
    says otherwise) would send every pod through the NVIDIA runtime; that is only done on
    purpose, with set_as_default.
    """
    if options.set_as_default:
        return
    configured = lookup(data, (*containerd.plugin_path(version), "containerd"))
    default = configured.get("default_runtime_name") if isinstance(configured, Mapping) else None
    default_name = default if isinstance(default, str) and default else "runc"
    binary = lookup(data, (*containerd.runtimes_path(version), default_name, "options"))
    binary = binary.get("BinaryName") if isinstance(binary, Mapping) else None
    if default_name.startswith("nvidia") or "nvidia-container-runtime" in str(binary or ""):
        return  # the default already runs through the NVIDIA runtime: nothing new
    for handler in handlers:
        if handler.name == default_name:
            raise ConfigPathError(
                f"runtime class {handler.name!r} is containerd's default runtime in {file}:"
                " every pod without a RuntimeClass would run through the NVIDIA runtime;"
                " choose another name (the default is"
                f" {containerd.DEFAULT_RUNTIME_CLASS!r}), or pass --set-as-default to do"
                " that on purpose; nothing was changed"
            )


def check_options(options: RuntimeOptions) -> None:
    if options.mode not in MODES:
        raise ConfigPathError(f"unknown mode {options.mode!r}; use drop-in or in-place")
    if (
        options.mode == "drop-in"
        and options.import_style == "glob"
        and not options.drop_in.endswith(".toml")
    ):
        # The import is '<dir>/*.toml': a drop-in named otherwise would never be loaded.
        raise ConfigPathError(
            f"drop-in {options.drop_in} does not end in .toml, so the import"
            f" '{posixpath.dirname(options.drop_in) or '.'}/*.toml' never loads it (a typo?);"
            " nothing was changed"
        )
    if options.new_config_version not in containerd.SUPPORTED_VERSIONS:
        raise ConfigVersionError(
            f"cannot create a version {options.new_config_version} config; "
            f"{containerd.SUPPORTED_TEXT}"
        )
