"""Extended resource names, their kinds, and which workload config advertises which kind.

Why this module exists: "a vm-vgpu node advertises vGPU types through the sandbox device
plugin" was written as hand-made tables in the checker and as hand-picked deploy-label sets
in the operator. Both are facts of the operand table (`catalog/operands.yaml`): which
deploy-label keys each workload config sets, and which operand advertises what. Here they
are derived from it, so adding an operand or moving a key changes every reader at once.

The derived mappings are computed on first use (the table loads lazily) and then behave
as read-only constants.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Final, Literal, TypeVar

from gpuop.api.labels import DEPLOY_LABEL_PREFIX
from gpuop.catalog import (
    WORKLOAD_CONFIGS,
    Advertises,
    SandboxMode,
    WorkloadConfig,
    operand_table,
)

RESOURCE_PREFIX: Final = "nvidia.com/"
# The container device plugin's whole-GPU resource, and the Kata plugin's default name.
CONTAINER_RESOURCE: Final = "nvidia.com/gpu"
KATA_RESOURCE: Final = "nvidia.com/pgpu"
# The container plugin's MIG devices under the mixed strategy: `nvidia.com/mig-1g.10gb`.
MIG_RESOURCE_PREFIX: Final = "nvidia.com/mig-"
# Upstream's GPU pod filter (`gpuPodSpecFilter`): whole GPUs and MIG devices.
GPU_POD_RESOURCE_PREFIXES: Final = (CONTAINER_RESOURCE, MIG_RESOURCE_PREFIX)

# Which device plugin (and so which workload config) advertises a resource name.
ResourceKind = Literal["container", "passthrough", "vgpu", "kata", "other"]
SANDBOX_MODES: Final[tuple[SandboxMode, ...]] = ("kubevirt", "kata")

_K = TypeVar("_K")
_V = TypeVar("_V")


class _Derived(Mapping[_K, _V]):
    """A read-only mapping built from the operand table the first time it is read."""

    def __init__(self, build: Callable[[], Mapping[_K, _V]]) -> None:
        self._build = build
        self._data: dict[_K, _V] | None = None

    def _mapping(self) -> dict[_K, _V]:
        if self._data is None:
            self._data = dict(self._build())
        return self._data

    def __getitem__(self, key: _K) -> _V:
        return self._mapping()[key]

    def __iter__(self) -> Iterator[_K]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def __repr__(self) -> str:
        return repr(self._mapping())


@dataclass(frozen=True)
class DevicePlugin:
    """An operand that advertises resources, under one workload config and sandbox mode."""

    kind: ResourceKind
    workload: WorkloadConfig
    mode: SandboxMode
    operand: str
    daemonset: str


def _kind(advertises: Advertises, workload: WorkloadConfig) -> ResourceKind:
    """The kind of the names a plugin advertises: the sandbox device plugin names PCI
    devices on passthrough nodes and vGPU types on vGPU nodes."""
    if advertises == "gpu":
        return "container"
    if advertises == "pgpu":
        return "kata"
    return "vgpu" if workload == "vm-vgpu" else "passthrough"


@cache
def device_plugins() -> tuple[DevicePlugin, ...]:
    """Every (workload config, sandbox mode) and the advertising operand its deploy labels
    turn on, in the table's order."""
    table = operand_table()
    found: list[DevicePlugin] = []
    for workload in WORKLOAD_CONFIGS:
        for mode in SANDBOX_MODES:
            keys = table.deploy_labels.keys_for(workload, mode)
            for operand in table.operands:
                if operand.advertises is None or operand.deploy_label not in keys:
                    continue
                plugin = DevicePlugin(
                    _kind(operand.advertises, workload),
                    workload,
                    mode,
                    operand.name,
                    operand.daemonset,
                )
                found.append(plugin)
    return tuple(found)


def _kind_config() -> dict[str, WorkloadConfig]:
    out: dict[str, WorkloadConfig] = {}
    for plugin in device_plugins():
        out.setdefault(plugin.kind, plugin.workload)
    return out


def _config_kind() -> dict[str, ResourceKind]:
    # KubeVirt's kinds: Kata's plugin depends on its GPU alias (see the checker's `own_kind`).
    return {p.workload: p.kind for p in device_plugins() if p.mode == "kubevirt"}


def _plugin_daemonsets() -> dict[str, str]:
    out: dict[str, str] = {}
    for plugin in device_plugins():
        out.setdefault(plugin.kind, plugin.daemonset)
    return out


# The workload config whose device plugin advertises a resource kind, and back.
KIND_CONFIG: Final[Mapping[str, WorkloadConfig]] = _Derived(_kind_config)
CONFIG_KIND: Final[Mapping[str, ResourceKind]] = _Derived(_config_kind)
# The kinds a device plugin advertises (every kind but "other").
PLUGIN_KINDS: Final = KIND_CONFIG.keys()
# The DaemonSet of the plugin that advertises each kind.
PLUGIN_DAEMONSETS: Final[Mapping[str, str]] = _Derived(_plugin_daemonsets)


def plugin_daemonset(kind: str) -> str:
    """The operand DaemonSet whose plugin advertises resources of `kind`."""
    return PLUGIN_DAEMONSETS.get(kind, "the device plugin")


@cache
def _own_keys() -> tuple[tuple[WorkloadConfig, frozenset[str]], ...]:
    """Each workload config's deploy-label keys that no other config sets, with a container
    key first, then a vGPU one: a node part-way through a switch reads as what it had."""
    deploy = operand_table().deploy_labels
    keys = {
        workload: frozenset(k for mode in SANDBOX_MODES for k in deploy.keys_for(workload, mode))
        for workload in WORKLOAD_CONFIGS
    }
    order: tuple[WorkloadConfig, ...] = ("container", "vm-vgpu", "vm-passthrough")
    return tuple(
        (workload, keys[workload] - frozenset().union(*(keys[w] for w in keys if w != workload)))
        for workload in order
    )


def current_workload(labels: Mapping[str, str]) -> WorkloadConfig | None:
    """The workload config a node's present deploy labels belong to, if any."""
    present = {
        k.removeprefix(DEPLOY_LABEL_PREFIX) for k in labels if k.startswith(DEPLOY_LABEL_PREFIX)
    }
    for workload, own in _own_keys():
        if present & own:
            return workload
    return None


_NOT_NAME = re.compile(r"[^A-Z0-9]")


def normalised(name: str) -> str:
    """A resource name without case or punctuation: `TU104GL_Tesla_T4` ~ `TU104GL_TESLA_T4`."""
    return _NOT_NAME.sub("", name.upper())


__all__ = [
    "CONFIG_KIND",
    "CONTAINER_RESOURCE",
    "GPU_POD_RESOURCE_PREFIXES",
    "KATA_RESOURCE",
    "KIND_CONFIG",
    "MIG_RESOURCE_PREFIX",
    "PLUGIN_DAEMONSETS",
    "PLUGIN_KINDS",
    "RESOURCE_PREFIX",
    "SANDBOX_MODES",
    "DevicePlugin",
    "ResourceKind",
    "current_workload",
    "device_plugins",
    "normalised",
    "plugin_daemonset",
]
