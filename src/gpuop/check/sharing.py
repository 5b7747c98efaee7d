"""The NVIDIA device plugin's sharing config against what a node advertises (GPU212).

The plugin (the GPU Operator's or the standalone chart's) reads a config file per node: the
key that `nvidia.com/device-plugin.config` names in the plugin's ConfigMap, else the
default one. Time-slicing and MPS give each GPU `replicas` devices, under `nvidia.com/gpu`
or, with `renameByDefault: true`, `nvidia.com/gpu.shared`. The MIG strategy (`flags.migStrategy`,
`none` by default) decides how MIG devices are named: `mixed` advertises them as
`nvidia.com/mig-<profile>`, `single` and `none` never do; GPU feature discovery, reading the
same config, labels the node `nvidia.com/mig.strategy`. Under the GPU Operator the plugin's
`MIG_STRATEGY` variable, set from the ClusterPolicy's `mig.strategy`, overrides the file (the
plugin lets a set flag win over its config file). A node whose advertised names or counts,
or whose MIG strategy label, do not follow its config runs another config than the one it
was given: the plugin did not restart after the label or the ConfigMap changed, or the
config failed to load.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from gpuop.api.labels import GPU_REPLICAS_LABEL
from gpuop.api.resources import CONTAINER_RESOURCE, MIG_RESOURCE_PREFIX, RESOURCE_PREFIX
from gpuop.api.wording import listed
from gpuop.check.advertised import GFD_CONFIG_HINT, SHARED_SUFFIX, gfd_replicas
from gpuop.check.context import CheckContext, NodeInfo
from gpuop.manifests import ManifestError, load_yaml_documents
from gpuop.manifests.fields import get, mapping, sequence, text

CONFIG_LABEL = "nvidia.com/device-plugin.config"
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
MIG_STRATEGY_LABEL = "nvidia.com/mig.strategy"
# The plugin's `--mig-strategy` when neither its flags nor its config file set one.
DEFAULT_MIG_STRATEGY = "none"


@dataclass(frozen=True)
class SharingConfig:
    """One config of the device plugin, as far as names and counts go."""

    source: str
    strategy: str  # "none", "time-slicing" or "mps"
    replicas: int
    rename: bool
    # `flags.migStrategy`, None where the file does not set it.
    mig_strategy: str | None = None

    def expected(self, gpus: int) -> tuple[str, int]:
        """(the resource name, its count) on a node with `gpus` whole GPUs."""
        shared = self.strategy != "none" and self.replicas > 1
        name = CONTAINER_RESOURCE + (SHARED_SUFFIX if shared and self.rename else "")
        return name, gpus * (self.replicas if shared else 1)


# The top-level keys of the plugin's config file (`api/config/v1.Config`).
_CONFIG_KEYS = frozenset({"version", "flags", "resources", "sharing", "imex"})


def _resource_name(name: str) -> str:
    """A config's resource name as the plugin reads it: `gpu` is `nvidia.com/gpu`."""
    return name if name.startswith(RESOURCE_PREFIX) else RESOURCE_PREFIX + name


def _parse(value: str, source: str) -> SharingConfig | None:
    """The plugin's reading of one config file; None for what is not one. As the plugin
    reads it: a missing `version` is v1, a resource `name` without a prefix is under
    `nvidia.com/`, and a resource's own `rename` is ignored (the plugin turns per-resource
    renaming off and warns): only `renameByDefault` renames."""
    try:
        documents = load_yaml_documents(value, source)
    except ManifestError:
        return None
    document = documents[0] if documents else None
    if not isinstance(document, Mapping) or not document.keys() & _CONFIG_KEYS:
        return None
    if text(document, "version") not in ("", "v1"):
        return None
    mig_strategy = text(document, "flags", "migStrategy") or None
    for strategy, key in (("time-slicing", "timeSlicing"), ("mps", "mps")):
        section = mapping(document, "sharing", key)
        for resource in sequence(section, "resources"):
            if _resource_name(text(resource, "name")) == CONTAINER_RESOURCE:
                replicas = get(resource, "replicas")
                if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas > 0:
                    rename = section.get("renameByDefault") is True
                    return SharingConfig(source, strategy, replicas, rename, mig_strategy)
    return SharingConfig(source, "none", 1, False, mig_strategy)


def sharing_configs(ctx: CheckContext) -> dict[str, SharingConfig]:
    """Every device plugin config in the input's ConfigMaps, by key."""
    found: dict[str, SharingConfig] = {}
    for configmap in ctx.state.configmaps:
        name = text(configmap, "metadata", "name")
        for key, value in sorted(mapping(configmap, "data").items()):
            if isinstance(value, str) and any(k in value for k in _CONFIG_KEYS):
                parsed = _parse(value, f"ConfigMap {name} key {key}")
                if parsed is not None:
                    found.setdefault(str(key), parsed)
    return found


def _policy_plugin_config(ctx: CheckContext, field: str) -> str | None:
    """The ClusterPolicy's `devicePlugin.config.<field>` (`name` or `default`), if set."""
    for policy in ctx.state.cluster_policies:
        value = get(policy, "spec", "devicePlugin", "config", field)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass(frozen=True)
class PluginSettings:
    """What the standalone plugin's DaemonSet sets beside its config files (the Helm
    chart's `migStrategy`, `config.default`, `config.fallbackStrategies`, `config.name`)."""

    daemonset: str
    # The plugin container's `--mig-strategy` or MIG_STRATEGY: a set flag wins over the
    # config file's.
    mig_strategy: str | None
    # DEFAULT_CONFIG and FALLBACK_STRATEGIES of its config-manager: the config of a node
    # without the label.
    default_config: str | None
    fallbacks: tuple[str, ...]
    # The ConfigMap mounted as the available configs.
    configmap: str | None
    # How the MIG strategy was set, as the DaemonSet spells it (`--mig-strategy=mixed`).
    mig_strategy_source: str = ""
    # Whether the plugin may read settings the input does not show: a config file (the
    # ConfigMap, `--config-file`, CONFIG_FILE) or environment from `envFrom`.
    reads_more: bool = True

    def mig_strategy_in_effect(self) -> tuple[str, str] | None:
        """(strategy, why) when the DaemonSet alone decides the MIG strategy: its flag, or
        the plugin's default `none` when it sets none and reads nothing else."""
        if self.mig_strategy is not None:
            return self.mig_strategy, f"{self.mig_strategy_source} of DaemonSet {self.daemonset}"
        if self.reads_more:
            return None
        return (
            DEFAULT_MIG_STRATEGY,
            f"DaemonSet {self.daemonset} (no --mig-strategy, MIG_STRATEGY or config file:"
            f" the plugin's default {DEFAULT_MIG_STRATEGY})",
        )

    def config_key(self, keys: Collection[str]) -> str | None:
        """The config a node without `nvidia.com/device-plugin.config` gets, as the
        config-manager picks it: the default, else `default` (named), else the only key."""
        if self.default_config:
            return self.default_config
        if "named" in self.fallbacks and "default" in keys:
            return "default"
        if "single" in self.fallbacks and len(keys) == 1:
            return next(iter(keys))
        return None


def _names_a_missing_config(
    ctx: CheckContext, info: NodeInfo, key: str, plugin: PluginSettings | None
) -> bool:
    """GPU212 (and True) when the node's config label names a key the plugin's ConfigMap,
    in the input, does not have: the config-manager refuses to start the plugin."""
    name = plugin.configmap if plugin is not None else _policy_plugin_config(ctx, "name")
    keys = _configmap_keys(ctx, name)
    if not keys or key in keys:
        return False
    ctx.add(
        "GPU212",
        "Node",
        info.name,
        f"{CONFIG_LABEL}={key} names a config ConfigMap {name} does not have"
        f" ({listed(sorted(keys), 4)}): the plugin's config-manager refuses to start",
        f"label the node with one of the ConfigMap's keys (`kubectl label node {info.name}"
        f" {CONFIG_LABEL}=<key> --overwrite`), or add key {key} to ConfigMap {name}",
    )
    return True


def _configmap_keys(ctx: CheckContext, name: str | None) -> set[str]:
    """The keys of the ConfigMap `name` in the input (none when it is not there)."""
    return {
        str(key)
        for configmap in ctx.state.configmaps
        if name and text(configmap, "metadata", "name") == name
        for key in mapping(configmap, "data")
    }


_PLUGIN_CONTAINER = "nvidia-device-plugin-ctr"
_PLUGIN_COMMAND = "nvidia-device-plugin"
_CONFIG_MANAGER = "config-manager"
_CONFIGS_VOLUME = "available-configs"


def _env(container: Mapping[str, Any]) -> dict[str, str]:
    return {
        text(item, "name"): text(item, "value")
        for item in sequence(container, "env")
        if isinstance(item, Mapping) and isinstance(item.get("value"), str)
    }


def _commands(container: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(c for c in sequence(container, "command") if isinstance(c, str))


def _flag(container: Mapping[str, Any], name: str) -> str | None:
    """The value of the plugin's command-line flag `name` (`--name=v`, `--name v`, `-name v`)."""
    words = [w for field in ("command", "args") for w in sequence(container, field)]
    value = None
    for position, word in enumerate(words):
        if not isinstance(word, str) or word.lstrip("-") == word:
            continue
        flag, equals, given = word.lstrip("-").partition("=")
        if flag != name:
            continue
        if equals:
            value = given
        elif position + 1 < len(words) and isinstance(words[position + 1], str):
            value = words[position + 1]
    return value


def plugin_settings(daemonset: Mapping[str, Any]) -> PluginSettings | None:
    """The settings of a standalone device plugin DaemonSet; None for another DaemonSet."""
    spec = mapping(daemonset, "spec", "template", "spec")
    containers = [
        c
        for field in ("initContainers", "containers")
        for c in sequence(spec, field)
        if isinstance(c, Mapping)
    ]
    plugin = next(
        (
            c
            for c in containers
            if text(c, "name") == _PLUGIN_CONTAINER or _PLUGIN_COMMAND in _commands(c)
        ),
        None,
    )
    if plugin is None:
        return None
    manager = next((_env(c) for c in containers if _CONFIG_MANAGER in _commands(c)), {})
    fallbacks = manager.get("FALLBACK_STRATEGIES")
    configmap = next(
        (
            text(volume, "configMap", "name")
            for volume in sequence(spec, "volumes")
            if text(volume, "name") == _CONFIGS_VOLUME
        ),
        None,
    )
    namespace = text(daemonset, "metadata", "namespace")
    env = _env(plugin)
    # The plugin's flags win over their environment variables (urfave/cli's order).
    if (flag := _flag(plugin, "mig-strategy")) is not None:
        mig_strategy, mig_source = flag or None, f"--mig-strategy={flag}"
    else:
        mig_strategy = env.get("MIG_STRATEGY") or None
        mig_source = f"MIG_STRATEGY={mig_strategy}"
    reads_more = bool(
        configmap
        or env.get("CONFIG_FILE")
        or _flag(plugin, "config-file")
        or sequence(plugin, "envFrom")
    )
    return PluginSettings(
        daemonset=f"{namespace}/{text(daemonset, 'metadata', 'name')}",
        mig_strategy=mig_strategy,
        mig_strategy_source=mig_source,
        reads_more=reads_more,
        default_config=manager.get("DEFAULT_CONFIG") or None,
        fallbacks=(
            tuple(f.strip() for f in fallbacks.split(",") if f.strip())
            if fallbacks is not None
            else ()
        ),
        configmap=configmap or None,
    )


def check_sharing(
    ctx: CheckContext,
    info: NodeInfo,
    configs: Mapping[str, SharingConfig],
    *,
    operator_mig_strategy: str | None = None,
    plugin: PluginSettings | None = None,
) -> None:
    """GPU212 when the node's `nvidia.com/gpu` names or replicas, or its MIG strategy, do not
    follow its config; `operator_mig_strategy`: the ClusterPolicy's, on the operator's nodes;
    `plugin`: the standalone plugin DaemonSet's settings, on its nodes."""
    labels = info.view.labels
    key = labels.get(CONFIG_LABEL)
    if key and _names_a_missing_config(ctx, info, key, plugin):
        return
    key, config = node_sharing_config(ctx, info, configs, plugin)
    mig_override = None
    if operator_mig_strategy is not None:
        mig_override = (
            operator_mig_strategy,
            f"the ClusterPolicy's mig.strategy {operator_mig_strategy}",
        )
    elif plugin is not None:
        mig_override = plugin.mig_strategy_in_effect()
    if _check_mig_strategy(ctx, info, key, config, mig_override):
        return
    raw_count = labels.get(GPU_COUNT_LABEL, "")
    if config is None or not raw_count.isdigit() or gfd_replicas(labels) == 0:
        return  # no config in the input, GPUs not counted, or MIG: nothing to compare
    name, count = config.expected(int(raw_count))
    advertised = {
        resource: number
        for resource, number in info.positive().items()
        if resource in (CONTAINER_RESOURCE, CONTAINER_RESOURCE + SHARED_SUFFIX)
    }
    shared = config.strategy != "none" and config.replicas > 1
    reported = gfd_replicas(labels)
    # A count off under the right config is a missing card (GPU205/GPU206, from GFD's
    # replicas); here: the wrong name, or GFD reporting another config's replicas.
    if set(advertised) == {name} and reported in (None, config.replicas if shared else 1):
        return
    if shared and advertised == {name: count}:
        _gfd_without_config(ctx, info, key or "", config, name, count, reported)
        return
    shown = ", ".join(f"{r}: {n}" for r, n in sorted(advertised.items())) or "no whole GPUs"
    sharing = (
        f"{config.strategy} with {config.replicas} replicas"
        + (", renameByDefault" if config.rename else "")
        if config.strategy != "none"
        else "no sharing"
    )
    ctx.add(
        "GPU212",
        "Node",
        info.name,
        f"device plugin config {key} ({config.source}: {sharing}) gives {name}: {count} on its"
        f" {raw_count} GPUs, but the node advertises {shown}",
        _RESTART_HINT.format(node=info.name),
    )


def node_sharing_config(
    ctx: CheckContext,
    info: NodeInfo,
    configs: Mapping[str, SharingConfig],
    plugin: PluginSettings | None = None,
) -> tuple[str | None, SharingConfig | None]:
    """(key, config) of the device plugin config the node runs under: its
    `nvidia.com/device-plugin.config` label, else the plugin DaemonSet's default (`plugin`,
    the standalone plugin's settings), else the ClusterPolicy's `devicePlugin.config.default`;
    the config None where the input does not hold it."""
    key = info.view.labels.get(CONFIG_LABEL)
    if key is None:
        key = (
            plugin.config_key(_configmap_keys(ctx, plugin.configmap) or configs)
            if plugin is not None
            else _policy_plugin_config(ctx, "default")
        )
    return key, configs.get(key or "")


def note_config_replicas(
    ctx: CheckContext,
    info: NodeInfo,
    configs: Mapping[str, SharingConfig],
    plugin: PluginSettings | None = None,
) -> None:
    """Tell the advertised-count check (GPU205) the replicas a sharing config in the input
    gives each GPU of the node, where GPU feature discovery may not know them (GPU216)."""
    _, config = node_sharing_config(ctx, info, configs, plugin)
    if config is not None and config.strategy != "none" and config.replicas > 1:
        ctx.config_replicas[info.name] = config.replicas


def _gfd_without_config(
    ctx: CheckContext,
    info: NodeInfo,
    key: str,
    config: SharingConfig,
    name: str,
    count: int,
    reported: int | None,
) -> None:
    """GPU216: the plugin follows its sharing config, GFD labels other replicas (the count
    check took the config's replicas, `note_config_replicas`, so it found nothing)."""
    if any(f.code == "GPU216" and f.node == info.name for f in ctx.findings):
        return
    ctx.add(
        "GPU216",
        "Node",
        info.name,
        f"advertises {name}: {count}, as device plugin config {key} ({config.source}:"
        f" {config.strategy} with {config.replicas} replicas) gives, but GPU feature discovery"
        f" labels {GPU_REPLICAS_LABEL}={reported}: it runs without the plugin's sharing config",
        GFD_CONFIG_HINT.format(node=info.name),
    )


_RESTART_HINT = (
    "restart the device plugin pod on {node} so it reloads the config, and check its"
    " log for a config it could not load"
)


def _check_mig_strategy(
    ctx: CheckContext,
    info: NodeInfo,
    key: str | None,
    config: SharingConfig | None,
    mig_override: tuple[str, str] | None,
) -> bool:
    """GPU212 (and True) when the node's MIG names or GFD's strategy label contradict the
    MIG strategy in effect: a flag's where one is set (the ClusterPolicy's `mig.strategy` on
    the operator's nodes, the DaemonSet's MIG_STRATEGY), else the config's."""
    if mig_override is not None:
        wanted, source = mig_override
    elif config is not None:
        wanted = config.mig_strategy or DEFAULT_MIG_STRATEGY
        set_by = "flags.migStrategy" if config.mig_strategy else "no flags.migStrategy, the default"
        source = f"device plugin config {key} ({config.source}: {set_by} {wanted})"
    else:
        return False
    labelled = info.view.labels.get(MIG_STRATEGY_LABEL)
    mig_names = sorted(r for r in info.positive() if r.startswith(MIG_RESOURCE_PREFIX))
    if labelled is not None and labelled != wanted:
        seen = f"GPU feature discovery labels it {MIG_STRATEGY_LABEL}={labelled}"
    elif mig_names and wanted != "mixed":
        seen = f"it advertises {listed(mig_names, 1)}, names only the mixed strategy gives"
    else:
        return False
    ctx.add(
        "GPU212",
        "Node",
        info.name,
        f"{source} is in effect on the node, but {seen}",
        _RESTART_HINT.format(node=info.name),
    )
    return True


__all__ = [
    "PluginSettings",
    "SharingConfig",
    "check_sharing",
    "node_sharing_config",
    "note_config_replicas",
    "plugin_settings",
    "sharing_configs",
]
