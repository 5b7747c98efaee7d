"""What the NVIDIA container toolkit changes in a containerd configuration, as pure planning.

Why this module exists: the toolkit's one lasting effect on a host is a handful of keys in
containerd's TOML configuration (upstream: `nvidia-ctk-installer`, engine code in
`pkg/config/engine/containerd`). Getting them right depends on facts about containerd that are
easy to miss, so they live here, in one place, with no file I/O. Each was checked against a
real containerd (Debian's 1.6.20 and 2.4.2 built from source) with `containerd config dump`:

* **Config versions.** Version 2 (containerd 1.x) keeps the CRI runtime settings under
  `plugins."io.containerd.grpc.v1.cri"`; version 3 (containerd 2.0 to 2.3) and version 4
  (containerd 2.4 and later, which also reads and migrates 2 and 3) under
  `plugins."io.containerd.cri.v1.runtime"`. A file without `version` is version 1 (plugin
  `cri`, containerd before 1.3) and is refused, as is any other version.
* **Runtime handlers.** `nvidia` (and with CDI runtimes also `nvidia-cdi`, `nvidia-legacy`) get
  `runtime_type = "io.containerd.runc.v2"` and `options.BinaryName` pointing at
  `<installDir>/toolkit/nvidia-container-runtime[.cdi|.legacy]`. Like upstream, the rest of the
  handler is copied from the runtime the node already uses (the default runtime, else `runc`,
  else `crun`), so options such as `SystemdCgroup = true` carry over. Unlike upstream, a source
  runtime with a different `runtime_type` (say, Kata as the default) is not copied.
* **The built-in `runc`.** containerd 1.x replaces its built-in runtimes map as soon as a config
  declares *any* runtime: a config that only adds `nvidia` loses `runc`, and with it the default
  runtime. When a version 2 file declares no runtimes, the built-in `runc` entry is written out
  explicitly, exactly as `containerd config default` prints it. containerd 2.x merges declared
  runtimes into the built-in map, so nothing is needed there.
* **Plugin sections on import.** containerd 1.x merges an imported file by replacing each
  plugin section wholesale, so a version 2 drop-in has to repeat the CRI runtime section of the
  files before it (upstream does the same, from `containerd config dump`). containerd 2.x
  merges imported files key by key, so a version 3 or 4 drop-in holds only what is added.
  `merge_plugin_sections` computes the section containerd ends up with, either way.
* **CDI.** `enable_cdi` is a CRI runtime setting from containerd 1.7 (1.6 ignores it) to 2.3;
  containerd 2.4 always enables CDI and ignores the key, so it is not written to version 4.

The edits are returned as `tomledit` edit objects plus `Change` records for the audit trail.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from gpuop.toolkit.errors import ConfigShapeError, ConfigVersionError
from gpuop.toolkit.results import Change, RuntimeHandler
from gpuop.toolkit.tomledit import Edit, KeyPath, SetValue, dotted, lookup

SUPPORTED_VERSIONS: Final = (2, 3, 4)
"""Config versions this tool edits: 2 (containerd 1.x), 3 (2.0 to 2.3), 4 (2.4 and later)."""
SUPPORTED_TEXT: Final = (
    "supported versions: 2 (containerd 1.x), 3 (containerd 2.0 to 2.3) and 4 (containerd 2.4 "
    "and later)"
)

CRI_RUNTIME_PLUGIN: Final[Mapping[int, str]] = {
    2: "io.containerd.grpc.v1.cri",
    3: "io.containerd.cri.v1.runtime",
    4: "io.containerd.cri.v1.runtime",
}
"""The plugin that holds `containerd.runtimes` and `enable_cdi`, per config version."""

RUNC_V2: Final = "io.containerd.runc.v2"
DEFAULT_INSTALL_DIR: Final = "/usr/local/nvidia"
DEFAULT_RUNTIME_CLASS: Final = "nvidia"

_MODE_RUNTIMES: Final = (
    ("nvidia-cdi", "nvidia-container-runtime.cdi"),
    ("nvidia-legacy", "nvidia-container-runtime.legacy"),
)
_RUNTIME_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

# containerd 1.x's built-in runc entry as `containerd config default` prints it. Declaring any
# runtime in a version 2 config replaces containerd 1.x's built-in map, so this is what keeps
# `runc` (and therefore the default runtime) alive when the file declared none. Checked byte
# for byte against `containerd config dump` of containerd 1.6.
BUILTIN_RUNC: Final[Mapping[str, Any]] = {
    "runtime_type": RUNC_V2,
    "options": {
        "BinaryName": "",
        "CriuImagePath": "",
        "CriuPath": "",
        "CriuWorkPath": "",
        "IoGid": 0,
        "IoUid": 0,
        "NoNewKeyring": False,
        "NoPivotRoot": False,
        "Root": "",
        "ShimCgroup": "",
        "SystemdCgroup": False,
    },
}

# What upstream writes for a new handler when no existing runtime can be copied.
_FALLBACK_HANDLER: Final[Mapping[int, Mapping[str, Any]]] = {
    2: {
        "runtime_type": RUNC_V2,
        "runtime_root": "",
        "runtime_engine": "",
        "privileged_without_host_devices": False,
    },
    3: {"runtime_type": RUNC_V2, "privileged_without_host_devices": False},
    4: {"runtime_type": RUNC_V2, "privileged_without_host_devices": False},
}


def runtime_handlers(
    runtime_class: str = DEFAULT_RUNTIME_CLASS,
    *,
    with_cdi_runtimes: bool = False,
    install_dir: str = DEFAULT_INSTALL_DIR,
) -> tuple[RuntimeHandler, ...]:
    """The handlers to register, the first one being the one `--set-as-default` selects.

    Mirrors upstream `operator.GetRuntimes`: the main handler is named after the runtime class
    and runs `nvidia-container-runtime`; `nvidia-cdi` and `nvidia-legacy` run the `.cdi` and
    `.legacy` variants. A runtime class that *is* one of those two names selects that variant.
    """
    if not _RUNTIME_NAME.fullmatch(runtime_class) or len(runtime_class) > 63:
        raise ConfigShapeError(
            f"runtime class {runtime_class!r} is not a valid handler name "
            "(lowercase letters, digits and '-', at most 63 characters, as Kubernetes requires)"
        )
    if not install_dir.startswith("/") or any(c in install_dir for c in "\n\r\0"):
        raise ConfigShapeError(f"install dir {install_dir!r} must be an absolute path")
    toolkit_dir = install_dir.rstrip("/") + "/toolkit/"
    modes = dict(_MODE_RUNTIMES)
    main_binary = modes.get(runtime_class, "nvidia-container-runtime")
    handlers = [RuntimeHandler(runtime_class, toolkit_dir + main_binary)]
    if with_cdi_runtimes:
        if runtime_class in modes:
            handlers.append(RuntimeHandler("nvidia", toolkit_dir + "nvidia-container-runtime"))
        for name, binary in _MODE_RUNTIMES:
            if name != runtime_class:
                handlers.append(RuntimeHandler(name, toolkit_dir + binary))
    return tuple(handlers)


def config_version(data: Mapping[str, Any], path: str) -> int | None:
    """The config version of `data`, or None for an empty document (no keys at all).

    Raises `ConfigVersionError` for version 1 (no `version` key) and unknown versions.
    """
    if not data:
        return None
    supported = SUPPORTED_TEXT
    if "version" not in data:
        raise ConfigVersionError(
            f"{path} has no 'version' key, which makes it a version 1 containerd config "
            f"(containerd older than 1.3); {supported}. Add 'version = 2' after checking the "
            "plugin names, or regenerate it with 'containerd config default'; nothing was changed"
        )
    version = data["version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise ConfigVersionError(
            f"{path}: 'version' must be an integer, not {version!r}; {supported}; "
            "nothing was changed"
        )
    if version not in SUPPORTED_VERSIONS:
        raise ConfigVersionError(
            f"{path} is containerd config version {version}; {supported}; nothing was changed"
        )
    return version


def plugin_path(version: int) -> KeyPath:
    """Key path of the CRI runtime plugin section for `version`."""
    return ("plugins", CRI_RUNTIME_PLUGIN[version])


def runtimes_path(version: int) -> KeyPath:
    return (*plugin_path(version), "containerd", "runtimes")


def check_shape(data: Mapping[str, Any], version: int, path: str) -> None:
    """Raise `ConfigShapeError` when a key this tool must touch has the wrong type."""
    for keys in (
        ("plugins",),
        plugin_path(version),
        (*plugin_path(version), "containerd"),
        runtimes_path(version),
    ):
        value = lookup(data, keys)
        if value is not None and not isinstance(value, Mapping):
            raise ConfigShapeError(
                f"{path}: {dotted(keys)} must be a table, not {type(value).__name__}; "
                "nothing was changed"
            )
    runtimes = lookup(data, runtimes_path(version)) or {}
    for name, runtime in runtimes.items():
        if not isinstance(runtime, Mapping):
            raise ConfigShapeError(
                f"{path}: {dotted((*runtimes_path(version), name))} must be a table; "
                "nothing was changed"
            )
    imports = data.get("imports")
    if imports is not None and (
        not isinstance(imports, list) or not all(isinstance(i, str) for i in imports)
    ):
        raise ConfigShapeError(
            f"{path}: 'imports' must be an array of strings; nothing was changed"
        )


@dataclass(frozen=True, slots=True)
class RuntimePlan:
    """Edits for one file plus their audit records."""

    edits: tuple[Edit, ...]
    changes: tuple[Change, ...]


def plan_runtimes(
    data: Mapping[str, Any],
    *,
    file: str,
    version: int,
    handlers: Sequence[RuntimeHandler],
    set_as_default: bool = False,
    enable_cdi: bool = False,
    runtime_type: str = RUNC_V2,
) -> RuntimePlan:
    """Edits that register `handlers` in `data` (a whole config file, or a drop-in).

    Idempotent by construction: each edit is planned only when the current value differs, so
    planning against an already configured file returns no edits.
    """
    plan = _Planner(data, file)
    base = runtimes_path(version)
    runtimes: dict[str, Any] = dict(lookup(data, base) or {})

    if version == 2 and lookup(data, base) is None:
        runc = copy.deepcopy(dict(BUILTIN_RUNC))
        plan.add(
            (*base, "runc"),
            runc,
            note="containerd's built-in runc, written out: declaring any runtime replaces "
            "the built-in runtimes map",
        )
        runtimes["runc"] = runc

    defaults = lookup(data, (*plugin_path(version), "containerd")) or {}
    source = _source_runtime(runtimes, defaults.get("default_runtime_name"), runtime_type)
    for handler in handlers:
        path = (*base, handler.name)
        existing = runtimes.get(handler.name)
        if existing is None:
            table = _handler_table(source, version, handler.binary, runtime_type)
            plan.add(path, table, note=f"runtime handler {handler.name} -> {handler.binary}")
            continue
        plan.set((*path, "runtime_type"), runtime_type)
        options = existing.get("options")
        if options is not None and not isinstance(options, Mapping):
            raise ConfigShapeError(f"{file}: {dotted((*path, 'options'))} must be a table")
        plan.set((*path, "options", "BinaryName"), handler.binary)

    if set_as_default and handlers:
        plan.set((*plugin_path(version), "containerd", "default_runtime_name"), handlers[0].name)
    if enable_cdi and version < 4:
        plan.set((*plugin_path(version), "enable_cdi"), True)
    return RuntimePlan(tuple(plan.edits), tuple(plan.changes))


@dataclass(slots=True)
class _Planner:
    """The edits planned so far for one file (`data` as it is now), with their records."""

    data: Mapping[str, Any]
    file: str
    edits: list[Edit] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    def set(self, path: KeyPath, value: Any) -> None:
        """Plan `path` = `value` unless it holds that already (the same value and type)."""
        current = lookup(self.data, path)
        if current == value and type(current) is type(value):
            return
        if current is None:
            self.add(path, value)
            return
        self.edits.append(SetValue(path, value))
        self.changes.append(
            Change(file=self.file, kind="changed", key=path, value=value, previous=current)
        )

    def add(self, path: KeyPath, value: Any, *, note: str = "") -> None:
        """Plan `path`, which the file lacks, as added, with the tables that creates."""
        parents = tuple(
            path[:n] for n in range(len(path) - 1, 0, -1) if lookup(self.data, path[:n]) is None
        )
        self.edits.append(SetValue(path, value))
        self.changes.append(
            Change(
                file=self.file,
                kind="added",
                key=path,
                value=value,
                created_parents=parents,
                note=note,
            )
        )


def _source_runtime(
    runtimes: Mapping[str, Any], default_name: Any, runtime_type: str
) -> Mapping[str, Any] | None:
    candidates: list[str] = []
    if isinstance(default_name, str) and default_name and not default_name.startswith("nvidia"):
        candidates.append(default_name)
    candidates += ["runc", "crun"]
    for name in candidates:
        runtime = runtimes.get(name)
        if not isinstance(runtime, Mapping):
            continue
        if runtime.get("runtime_type", runtime_type) != runtime_type:
            continue
        return runtime
    return None


def _handler_table(
    source: Mapping[str, Any] | None, version: int, binary: str, runtime_type: str
) -> dict[str, Any]:
    template = source if source is not None else _FALLBACK_HANDLER[version]
    table: dict[str, Any] = {}
    if "runtime_type" not in template:
        table["runtime_type"] = runtime_type
    for key, value in template.items():
        if key == "runtime_type":
            table[key] = runtime_type
        elif key == "options":
            continue
        else:
            table[key] = copy.deepcopy(value)
    options = template.get("options")
    merged: dict[str, Any] = {}
    if isinstance(options, Mapping):
        merged = {k: copy.deepcopy(v) for k, v in options.items()}
    if "BinaryName" in merged:
        merged["BinaryName"] = binary
    else:
        merged = {"BinaryName": binary, **merged}
    table["options"] = merged
    return table


def merge_plugin_sections(
    sections: Sequence[Mapping[str, Any]], version: int
) -> dict[str, Any] | None:
    """The CRI runtime section containerd ends up with after loading `sections` in order.

    containerd 1.x (config version 2) replaces a plugin section wholesale with the last file
    that defines it; containerd 2.x merges imported files key by key.
    """
    result: dict[str, Any] | None = None
    for section in sections:
        if version == 2 or result is None:
            result = copy.deepcopy(dict(section))
        else:
            result = _deep_merge(result, section)
    return result


def _deep_merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
