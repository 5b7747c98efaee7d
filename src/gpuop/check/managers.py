"""Who manages each node's GPUs, and the evidence: the contract a node is checked against.

NVIDIA's GPU Operator is one manager among several (`catalog/managers.yaml`): a node that
the standalone device plugin, a managed cloud's stack, KubeVirt's own plugins or another
vendor's sharing plugin serves is healthy without a single `nvidia.com/gpu.deploy.*`
label, and the operator's rules must not judge it. A node's manager is read from strong
signals first (a pod of the manager's plugin on the node, a label only the manager sets,
the OS image, a resource only it advertises); without any, from weak ones (a platform's
node label, then what the cluster holds: a ClusterPolicy, the plugin's DaemonSet, GPU
feature discovery labels, the names NVIDIA's KubeVirt plugin gives).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from operator import methodcaller
from typing import Any

from gpuop.api.labels import DEPLOY_LABEL_PREFIX, NFD_NVIDIA_PCI_LABEL
from gpuop.api.names import GENERATED_SUFFIX_PATTERN
from gpuop.api.resources import CONTAINER_RESOURCE
from gpuop.catalog.dra import dra_catalog
from gpuop.catalog.managers import DEVICE_PLUGIN, GPU_OPERATOR, manager_catalog
from gpuop.check.context import CheckContext, NodeInfo, kind_of
from gpuop.check.operands import operand_pods_on, operator_daemonset
from gpuop.check.plugin_signals import (
    known_by_name_only,
    plugin_match,
    pod_name_match,
    pod_plugin_match,
)
from gpuop.check.state import PodView
from gpuop.manifests.fields import mapping, sequence, text
from gpuop.naming import PciDatabase

KUBEVIRT = "kubevirt"
KUBEVIRT_PLUGIN = "nvidia-kubevirt-gpu-device-plugin"
DRA_DRIVER = "nvidia-dra-driver"
GKE = "gke"
# How the evidence of a manager's plugin pod on the node starts.
RUNS_POD = "runs pod "
# A manager's node label with one of these values names no manager.
_OFF = frozenset({"false", "disabled"})
# GPU feature discovery's label: its presence shows GFD ran on the node.
GFD_PRODUCT_LABEL = "nvidia.com/gpu.product"


@dataclass(frozen=True)
class Management:
    """What manages a node's GPUs: the managers (strongest evidence first) and why."""

    managers: tuple[str, ...]
    evidence: tuple[tuple[str, str], ...]
    # Whether the strong signals (not a guess from weak ones) named the managers.
    certain: bool = True

    @property
    def operator(self) -> bool:
        """Whether the GPU Operator's contract applies to the node."""
        return GPU_OPERATOR in self.managers

    @property
    def primary(self) -> str | None:
        return self.managers[0] if self.managers else None

    def plugin_pods(self, manager: str) -> list[str]:
        """The pods of `manager`'s plugin on the node, as `namespace/name (what matched)`."""
        return [
            signal.removeprefix(RUNS_POD)
            for name, signal in self.evidence
            if name == manager and signal.startswith(RUNS_POD)
        ]

    def competing(self) -> tuple[str, ...]:
        """The managers whose plugins each register `nvidia.com/gpu` on the node."""
        catalog = manager_catalog().managers
        return tuple(m for m in self.managers if m in catalog and catalog[m].serves_nvidia_gpu)

    def to_dict(self) -> dict[str, Any]:
        return {
            "managers": list(self.managers),
            "certain": self.certain,
            "evidence": [{"manager": m, "signal": s} for m, s in self.evidence],
        }


UNMANAGED = Management((), (), certain=False)


def _kubevirt_served(ctx: CheckContext) -> set[str]:
    """Resources KubeVirt's own device plugins serve (permitted without an external provider)."""
    served: set[str] = set()
    configs = [
        mapping(cr, "spec", "configuration", "permittedHostDevices") for cr in ctx.state.kubevirts
    ]
    configs += [mapping(cr, "spec", "permittedHostDevices") for cr in ctx.state.hyperconvergeds]
    for config in configs:
        for section in ("pciHostDevices", "mediatedDevices"):
            for entry in sequence(config, section):
                name = text(entry, "resourceName")
                if name and mapping(entry).get("externalResourceProvider") is not True:
                    served.add(name)
    return served


def _cluster_daemonsets(ctx: CheckContext) -> list[tuple[str, str]]:
    """(manager, what) for each DaemonSet in the input whose pods are a manager's plugin."""
    found = []
    for ds in ctx.state.daemonsets:
        name = text(ds, "metadata", "name")
        operand = operator_daemonset(ds) is not None
        matched = plugin_match(ds, "spec", "template", operand=operand)
        if matched is not None:
            where = f"{text(ds, 'metadata', 'namespace')}/{name}"
            found.append((matched[0], f"DaemonSet {where} in the input"))
    return found


def node_management(ctx: CheckContext) -> dict[str, Management]:
    """Each node's managers and the evidence, by node name."""
    catalog = manager_catalog().managers
    pods = ctx.state.active_pods_by_node
    kubevirt_served = _kubevirt_served(ctx)
    dra_driver = dra_catalog().driver
    slices: dict[str, list[str]] = {}
    for resource_slice in ctx.state.resource_slices:
        if text(resource_slice, "spec", "driver") == dra_driver:
            node = text(resource_slice, "spec", "nodeName")
            slices.setdefault(node, []).append(text(resource_slice, "metadata", "name"))
    policies = [text(p, "metadata", "name") or "(unnamed)" for p in ctx.state.cluster_policies]
    daemonsets = _cluster_daemonsets(ctx)
    result: dict[str, Management] = {}
    for info in ctx.nodes:
        strong = _strong_signals(
            ctx, info, pods.get(info.name, ()), kubevirt_served, slices, ctx.operator_spaces
        )
        if strong:
            result[info.name] = _management(strong, certain=True)
            continue
        weak = _weak_signals(
            info, policies, daemonsets, catalog, pods.get(info.name, ()), ctx.pci_db
        )
        result[info.name] = _management(weak, certain=False) if weak else UNMANAGED
    return result


def _management(signals: list[tuple[str, str]], *, certain: bool) -> Management:
    managers: list[str] = []
    for manager, _ in signals:
        if manager not in managers:
            managers.append(manager)
    return Management(tuple(managers), tuple(signals), certain)


def _strong_signals(
    ctx: CheckContext,
    info: NodeInfo,
    pods: Iterable[PodView],
    kubevirt_served: set[str],
    slices: Mapping[str, list[str]],
    operator_spaces: frozenset[str] = frozenset(),
) -> list[tuple[str, str]]:
    labels = info.view.labels
    counts = info.counts
    found: list[tuple[str, str]] = []
    rows, has_prefix = _node_signal_table()
    prefixed = list(filter(has_prefix, labels)) if has_prefix is not None else []
    os_image = info.view.os_image.lower()
    for row in rows:
        keys = [k for k in row.labels if labels.get(k, "false") not in _OFF]
        if prefixed and row.label_prefixes:
            keys += [k for k in prefixed if k.startswith(row.label_prefixes)]
        if keys:
            shown = keys[0] if len(keys) == 1 else f"{keys[0]} and {len(keys) - 1} more labels"
            found.append((row.manager, f"label {shown}"))
        noted = [k for k in row.annotations if k in info.view.annotations]
        if noted:
            found.append((row.manager, f"annotation {noted[0]}"))
        if row.os_words and all(word in os_image for word in row.os_words):
            found.append((row.manager, f"OS image {info.view.os_image!r}"))
        # Other vendors' names are not NVIDIA resource counts: read them from the node.
        advertised = [r for r in row.resources if r in counts or r in info.view.resources]
        if advertised:
            found.append((row.manager, f"advertises {', '.join(advertised)}"))
    operand_pods = {pod.name for pod in operand_pods_on(ctx, info.name)}
    operator_labelled = any(key.startswith(DEPLOY_LABEL_PREFIX) for key in labels)
    for pod in pods:
        if known_by_name_only(pod):
            # On a node the operator labelled, its operand names are its own.
            matched = pod_name_match(pod, None if operator_labelled else operator_spaces)
            if matched is not None:
                found.append((matched[0], f"{RUNS_POD}{_pod_ref(pod)} ({matched[1]})"))
            continue
        operand = pod.name in operand_pods
        matched = pod_plugin_match(pod, operand=operand)
        if matched is not None or operand:
            where = _pod_ref(pod)
            if matched is not None:
                found.append((matched[0], f"{RUNS_POD}{where} ({matched[1]})"))
            else:
                found.append((GPU_OPERATOR, f"runs operand pod {where}"))
    # Registered, even with 0 devices, and under any name the CR gives (not only nvidia.com/).
    served = sorted(r for r in kubevirt_served if r in info.counts or r in info.view.resources)
    if served:
        found.append(
            (
                KUBEVIRT,
                f"KubeVirt's own plugin serves {', '.join(served)} (permittedHostDevices"
                " without externalResourceProvider)",
            )
        )
    if info.name in slices:
        found.append(
            (DRA_DRIVER, f"ResourceSlice {slices[info.name][0]} of {dra_catalog().driver}")
        )
    if info.on_dra_stack:
        found.append((DRA_DRIVER, "the GPU Operator's DRA stack (GPUCluster) runs on the node"))
    found = _on_its_platform(labels, found)
    found.sort(key=lambda item: 0 if item[0] == GPU_OPERATOR else 1)
    return found


def _pod_ref(pod: PodView) -> str:
    """`namespace/name`, or the name where the input shows no namespace."""
    return f"{pod.namespace}/{pod.name}" if pod.namespace else pod.name


@cache
def _platform_plugins() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(manager, the manager whose plugin it runs, its platform's node labels)."""
    return tuple(
        (name, spec.same_plugin_as, spec.weak.node_labels)
        for name, spec in manager_catalog().managers.items()
        if spec.same_plugin_as is not None
    )


def _on_its_platform(
    labels: Mapping[str, str], found: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """`found` with a plugin that two platforms run (Kubernetes' legacy nvidia-gpu addon:
    GKE's and OKE's) named for the platform the node's labels show."""
    for manager, plugin_of, platform in _platform_plugins():
        key = next((key for key in platform if key in labels), None)
        if key is not None:
            found = [
                (manager, f"{why}, on a node labelled {key}") if name == plugin_of else (name, why)
                for name, why in found
            ]
    return found


@dataclass(frozen=True)
class _NodeSignals:
    """One manager's strong node signals, with the OS image words lower-cased."""

    manager: str
    labels: tuple[str, ...]
    label_prefixes: tuple[str, ...]
    annotations: tuple[str, ...]
    os_words: tuple[str, ...]
    resources: tuple[str, ...]


@cache
def _node_signal_table() -> tuple[tuple[_NodeSignals, ...], Callable[[str], bool] | None]:
    """Each manager's node signals (only those that have any), and `startswith` of every
    label prefix: a node's hundred labels are filtered in C once, not once per manager."""
    rows = tuple(
        _NodeSignals(
            name,
            spec.strong.node_labels,
            spec.strong.node_label_prefixes,
            spec.strong.node_annotations,
            tuple(word.lower() for word in spec.strong.os_image),
            spec.strong.resources,
        )
        for name, spec in manager_catalog().managers.items()
    )
    rows = tuple(
        r
        for r in rows
        if r.labels or r.label_prefixes or r.annotations or r.os_words or r.resources
    )
    prefixes = tuple(prefix for row in rows for prefix in row.label_prefixes)
    return rows, (methodcaller("startswith", prefixes) if prefixes else None)


_VIRT_HANDLER = re.compile(f"virt-handler{GENERATED_SUFFIX_PATTERN}")


# What virt-handler's own device plugins register on every KubeVirt node.
_KUBEVIRT_RESOURCES = "devices.kubevirt.io/"


def _is_virt_handler(pod: PodView) -> bool:
    """KubeVirt's node agent: its DaemonSet `virt-handler`, pods labelled
    `kubevirt.io=virt-handler`."""
    if pod.labels:
        return pod.labels.get("kubevirt.io") == "virt-handler"
    return _VIRT_HANDLER.fullmatch(pod.name) is not None


def _weak_signals(
    info: NodeInfo,
    policies: list[str],
    daemonsets: list[tuple[str, str]],
    catalog: Mapping[str, Any],
    pods: Iterable[PodView] = (),
    pci_db: PciDatabase | None = None,
) -> list[tuple[str, str]]:
    labels = info.view.labels
    for name, spec in catalog.items():
        keys = [k for k in spec.weak.node_labels if k in labels]
        if keys:
            return [(name, f"label {keys[0]}={labels[keys[0]]}")]
    gpu_evidence = (
        labels.get(NFD_NVIDIA_PCI_LABEL) == "true"
        or GFD_PRODUCT_LABEL in labels
        or bool(info.positive())
    )
    if not gpu_evidence:
        return []
    if policies:
        return [(GPU_OPERATOR, f"ClusterPolicy {policies[0]} in the input")]
    if daemonsets and CONTAINER_RESOURCE in info.counts:
        return [daemonsets[0]]
    if GFD_PRODUCT_LABEL in labels:
        return [
            (DEVICE_PLUGIN, f"GPU feature discovery's {GFD_PRODUCT_LABEL} label, no GPU Operator")
        ]
    sandbox = sorted(r for r in info.positive() if kind_of(r) in ("passthrough", "vgpu"))
    handler = next((pod for pod in pods if _is_virt_handler(pod)), None)
    registered = sorted(r for r in info.counts if kind_of(r) in ("passthrough", "vgpu"))
    if registered and handler is not None:
        # No NVIDIA KubeVirt plugin pod (that would be a strong signal): KubeVirt's own
        # plugins, which run in virt-handler, serve the devices its CR permits.
        return [
            (
                KUBEVIRT,
                f"advertises {registered[0]} and runs {_pod_ref(handler)}, no"
                " NVIDIA KubeVirt plugin: KubeVirt's own plugin (its CR is not in the input)",
            )
        ]
    kubevirt_own = sorted(r for r in info.view.resources if r.startswith(_KUBEVIRT_RESOURCES))
    passthrough = [r for r in registered if kind_of(r) == "passthrough"]
    if (
        kubevirt_own
        and pci_db is not None
        and passthrough
        and not any(pci_db.names_a_device(r) for r in passthrough)
    ):
        # NVIDIA's plugin names a card by its pci.ids name; a name of no device is the
        # resourceName a KubeVirt CR gave its own plugin (`nvidia.com/T4`).
        return [
            (
                KUBEVIRT,
                f"advertises {passthrough[0]}, a name NVIDIA's KubeVirt plugin gives no device,"
                f" beside KubeVirt's {kubevirt_own[0]}: KubeVirt's own plugin, under the"
                " resourceName its CR permits",
            )
        ]
    if sandbox:
        return [
            (KUBEVIRT_PLUGIN, f"advertises {sandbox[0]}, a name NVIDIA's KubeVirt plugin gives")
        ]
    return []


__all__ = ["GKE", "UNMANAGED", "Management", "node_management"]
