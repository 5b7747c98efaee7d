"""Which plugin a pod is, by the labels and images its manager gives it (`managers.yaml`).

Manager detection and operand recognition both ask it: a pod owned by a DaemonSet named
like one of the operator's operands is still the standalone plugin's when its labels say
so (the plugin's static manifest and AKS's guide name their DaemonSet
`nvidia-device-plugin-daemonset`, as the operator does).

A pod known by name alone (a row of `kubectl describe node`'s pods table) is matched by
its namespace and the name of its DaemonSet, which the pod's name carries.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from typing import Any, Final

from gpuop.api.names import GENERATED_SUFFIX_PATTERN
from gpuop.catalog import operand_table
from gpuop.catalog.managers import DEVICE_PLUGIN, GPU_OPERATOR, Signals, manager_catalog
from gpuop.check.state import PodView
from gpuop.manifests.fields import mapping


@cache
def _other_managers() -> tuple[tuple[str, Signals], ...]:
    """Every manager but the GPU Operator, with its strong signals, in the file's order."""
    return tuple(
        (name, spec.strong)
        for name, spec in manager_catalog().managers.items()
        if name != GPU_OPERATOR
    )


@cache
def _manager_of_image(name: str) -> tuple[int, str] | None:
    """(position in the file, manager) of the first manager whose plugin image is `name`."""
    return next(
        ((i, m) for i, (m, signals) in enumerate(_other_managers()) if name in signals.images),
        None,
    )


@lru_cache(maxsize=4096)  # a fleet's pods share a few images
def _image_name(image: str) -> str:
    """The last path part of an image reference, without tag or digest."""
    reference = image.split("@", 1)[0]
    name, _, tag = reference.rpartition(":")
    if not name or "/" in tag:
        name = reference
    return name.rsplit("/", 1)[-1]


def _images(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The images of a pod spec, init containers too."""
    images = []
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        for container in containers if isinstance(containers, list) else ():
            image = container.get("image") if isinstance(container, Mapping) else None
            if isinstance(image, str) and image:
                images.append(image)
    return tuple(images)


@cache
def _pod_label_signals() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(manager, label key, values) of every manager but the GPU Operator, in file order."""
    return tuple(
        (name, key, values)
        for name, signals in _other_managers()
        for key, values in signals.pod_labels.items()
    )


@cache
def _pod_label_keys() -> frozenset[str]:
    return frozenset(key for _, key, _ in _pod_label_signals())


def label_match(labels: Mapping[str, Any]) -> tuple[str, str] | None:
    """(manager, `key=value`) for the first manager one of whose pod labels is set."""
    if not labels.keys() & _pod_label_keys():  # the common case, decided in C
        return None
    for name, key, values in _pod_label_signals():
        value = labels.get(key)
        if isinstance(value, str) and value in values:
            return name, f"{key}={value}"
    return None


@lru_cache(maxsize=4096)  # a fleet's pods run a few sets of images
def _image_match(images: tuple[str, ...]) -> tuple[str, str] | None:
    """(manager, image) for the manager first in the file that one of the images runs."""
    found = [(hit, image) for image in images if (hit := _manager_of_image(_image_name(image)))]
    if not found:
        return None
    (_, manager), image = min(found, key=lambda item: item[0][0])
    return manager, image


def plugin_match(
    owner: Mapping[str, Any], *path: str, operand: bool = False
) -> tuple[str, str] | None:
    """(manager, what matched) when a pod, or a DaemonSet's pod template at `path`, is the
    plugin of a manager other than the GPU Operator: by its labels, else by its images
    (not for one of the operator's `operand`s, whose images are the same plugins')."""
    matched = label_match(mapping(owner, *path, "metadata", "labels"))
    if matched is not None or operand:
        return matched
    return _image_match(_images(mapping(owner, *path, "spec")))


def pod_plugin_match(pod: PodView, *, operand: bool = False) -> tuple[str, str] | None:
    """`plugin_match` for a pod already read into a `PodView`. A pod that a Deployment or a
    Job owns is no node's plugin, whatever its image: a DRA driver's controller runs the
    kubelet plugin's image on whichever node it is scheduled. A static pod (its owner the
    Node: ACK's plugin before Kubernetes 1.32) is its node's."""
    if pod.owners and all(kind not in ("DaemonSet", "Node") for kind, _ in pod.owners):
        return None
    matched = label_match(pod.labels)
    if matched is not None or operand:
        return matched
    return _image_match(pod.images)


# What a DaemonSet (or ReplicaSet) adds to its pods' names.
_GENERATED_SUFFIX: Final = re.compile(GENERATED_SUFFIX_PATTERN)


@cache
def _pod_name_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(manager, compiled `<namespace>/<owner>` pattern), every manager's in file order."""
    return tuple(
        (name, re.compile(pattern))
        for name, signals in _other_managers()
        for pattern in signals.pod_names
    )


def known_by_name_only(pod: PodView) -> bool:
    """Whether the input shows nothing of a pod but its name (`kubectl describe node`)."""
    return not pod.images and not pod.labels and not pod.owners


# The operand DaemonSet names that NVIDIA's own static manifests use too: the device
# plugin's (deployments/static/nvidia-device-plugin.yml, which AKS's guide applies in
# `gpu-resources`) and GPU feature discovery's.
SHARED_OPERAND_DAEMONSETS: Final = frozenset(
    {"nvidia-device-plugin-daemonset", "gpu-feature-discovery"}
)


def pod_owner_name(pod: PodView) -> str | None:
    """The DaemonSet name in a generated pod name (`nvidia-driver-daemonset-x7k2p`)."""
    suffix = _GENERATED_SUFFIX.search(pod.name)
    if suffix is None or suffix.end() != len(pod.name):
        return None
    return pod.name[: suffix.start()]


def operator_namespaces(pods: Iterable[PodView]) -> frozenset[str]:
    """Namespaces where an operand pod that only the GPU Operator runs is (known by name)."""
    table = operand_table()
    found: set[str] = set()
    for pod in pods:
        if pod.namespace in found:
            continue
        owner = pod_owner_name(pod)
        if (
            owner is not None
            and owner not in SHARED_OPERAND_DAEMONSETS
            and table.operand_for_daemonset(owner) is not None
        ):
            found.add(pod.namespace)
    return frozenset(found)


def pod_name_match(
    pod: PodView, operator_spaces: frozenset[str] | None = None
) -> tuple[str, str] | None:
    """(manager, what matched) for a pod known by name alone whose name is the pod name of
    a manager's plugin DaemonSet, or of one of the GPU Operator's operands. With
    `operator_spaces` (where the operator's own operands run), a DaemonSet name NVIDIA's
    static manifests share with the operator names the standalone plugin elsewhere."""
    owner = pod_owner_name(pod)
    if owner is None:
        return None
    # A pods table without -A shows no namespace: then only the patterns for any namespace.
    key = f"{pod.namespace or '-'}/{owner}"
    for manager, pattern in _pod_name_patterns():
        if pattern.fullmatch(key):
            return manager, f"DaemonSet {owner}, by the pod's name"
    if operand_table().operand_for_daemonset(owner) is not None:
        if (
            operator_spaces is not None
            and owner in SHARED_OPERAND_DAEMONSETS
            and pod.namespace not in operator_spaces
        ):
            return DEVICE_PLUGIN, (
                f"DaemonSet {owner}, by the pod's name: NVIDIA's static manifest, no other"
                f" operand of the GPU Operator runs in {pod.namespace}"
            )
        return GPU_OPERATOR, f"operand DaemonSet {owner}, by the pod's name"
    return None


def plugin_manager(owner: Mapping[str, Any], *path: str) -> str | None:
    """The manager whose plugin a pod (or a DaemonSet's template at `path`) is, or None."""
    found = plugin_match(owner, *path)
    return found[0] if found else None


__all__ = [
    "SHARED_OPERAND_DAEMONSETS",
    "known_by_name_only",
    "label_match",
    "operator_namespaces",
    "plugin_manager",
    "plugin_match",
    "pod_name_match",
    "pod_owner_name",
    "pod_plugin_match",
]
