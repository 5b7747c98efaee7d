"""Which plugin a pod is, by the labels and images its manager gives it (`managers.yaml`).

Manager detection and operand recognition both ask it: a pod owned by a DaemonSet named
like one of the operator's operands is still the standalone plugin's when its labels say
so (the plugin's static manifest and AKS's guide name their DaemonSet
`nvidia-device-plugin-daemonset`, as the operator does).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any

from gpuop.catalog.managers import GPU_OPERATOR, Signals, manager_catalog
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
    """`plugin_match` for a pod already read into a `PodView`."""
    matched = label_match(pod.labels)
    if matched is not None or operand:
        return matched
    return _image_match(pod.images)


def plugin_manager(owner: Mapping[str, Any], *path: str) -> str | None:
    """The manager whose plugin a pod (or a DaemonSet's template at `path`) is, or None."""
    found = plugin_match(owner, *path)
    return found[0] if found else None


__all__ = ["label_match", "plugin_manager", "plugin_match", "pod_plugin_match"]
