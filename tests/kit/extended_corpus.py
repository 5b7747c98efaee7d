"""Random but reproducible cases of DRA-backed extended resources (DRAExtendedResource).

:func:`generate_case` draws a small cluster (2 to 4 nodes) and one pod that asks for the
extended resource :data:`RESOURCE`. A DeviceClass (:func:`device_class`) maps that name to
the devices of :data:`DRIVER`, so each node serves it in one of four ways: a device plugin
advertises it in ``allocatable`` (sometimes at 0), a ResourceSlice lists its devices, both
(the device plugin wins), or neither. Devices may already be held by other claims (their
allocation written as a scheduler leaves it), device plugin capacity may already be taken by
running pods, and the pod may ask through an init container, a sidecar and the main
container at once (the scheduler's special claim then reuses devices between them).

Everything passes API validation. Names: ``<prefix>-<seed>-<index>`` for a case,
``<case>-n<j>`` for its nodes; every node carries ``corpus.gpuop.dev/case=<case>`` and the
pod selects it, so cases share a cluster.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Final

from kit.fake_nodes import fake_node

__all__ = [
    "CLASS",
    "DRIVER",
    "RESOURCE",
    "ExtendedCase",
    "device_class",
    "device_slice",
    "generate_case",
    "held_claim",
]

CASE_LABEL: Final = "corpus.gpuop.dev/case"
RESOURCE: Final = "example.com/dra-gpu"
DRIVER: Final = "gpu.extended.example.com"
CLASS: Final = "extended-gpu.example.com"
PAUSE: Final = "registry.k8s.io/pause:3.10"


@dataclass(frozen=True)
class ExtendedCase:
    """One cluster state and one pod to place on it."""

    name: str
    nodes: tuple[dict[str, Any], ...]
    slices: tuple[dict[str, Any], ...]
    #: (claim, its status): devices already held, created then given their allocation.
    held: tuple[tuple[dict[str, Any], dict[str, Any]], ...]
    existing_pods: tuple[dict[str, Any], ...]
    pod: dict[str, Any]
    kinds: dict[str, str] = field(default_factory=dict)


def device_class(
    name: str = CLASS, resource: str | None = RESOURCE, created: str | None = None
) -> dict[str, Any]:
    """A DeviceClass of :data:`DRIVER`'s devices that backs `resource` (the cluster stamps
    `created` on a class it stores)."""
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]}
    if resource:
        spec["extendedResourceName"] = resource
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": meta,
        "spec": spec,
    }


def _node(name: str, case: str, plugin: int | None) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    if plugin is not None:
        allocatable[RESOURCE] = str(plugin)
    return fake_node(name, {CASE_LABEL: case, "kubernetes.io/hostname": name}, allocatable)


def device_slice(node: str, devices: int) -> dict[str, Any]:
    """The node's ResourceSlice: `devices` devices ``gpu-<i>`` in a pool named after it."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
        },
    }


def held_claim(
    name: str, namespace: str, node: str, device: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A claim of one device of :data:`CLASS` and the status that allocates it `device`."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": CLASS}}]}},
    }
    status = {
        "allocation": {
            "devices": {
                "results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": device}]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        }
    }
    return claim, status


def _container(name: str, gpus: int, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": PAUSE,
        "resources": {"requests": {"cpu": "10m"}, "limits": {RESOURCE: str(gpus)}},
        **extra,
    }


def generate_case(
    seed: int, index: int, *, prefix: str = "xr", namespace: str = "default"
) -> ExtendedCase:
    """Case ``index`` of the series ``seed`` (the same arguments, the same case)."""
    rng = random.Random(seed * 1_000_033 + index)
    case = f"{prefix}-{seed}-{index}"
    nodes, slices, held, running = [], [], [], []
    kinds: dict[str, str] = {}
    for j in range(rng.randint(2, 4)):
        name = f"{case}-n{j}"
        kind = rng.choice(("plugin", "dra", "dra", "both", "none", "plugin-0"))
        kinds[name] = kind
        plugin = {"plugin": rng.randint(1, 4), "both": rng.randint(1, 2), "plugin-0": 0}.get(kind)
        nodes.append(_node(name, case, plugin))
        if kind in ("dra", "both", "plugin-0"):
            devices = rng.randint(1, 4)
            slices.append(device_slice(name, devices))
            for d in range(devices):
                if rng.random() < 0.3:
                    held.append(held_claim(f"{name}-held-{d}", namespace, name, f"gpu-{d}"))
        if plugin and rng.random() < 0.5:
            running.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"{name}-user", "namespace": namespace},
                    "spec": {
                        "nodeName": name,
                        "containers": [_container("main", rng.randint(1, plugin))],
                        "tolerations": [{"operator": "Exists"}],
                        "terminationGracePeriodSeconds": 0,
                    },
                }
            )
    spec: dict[str, Any] = {
        "containers": [_container("main", rng.randint(1, 3))],
        "nodeSelector": {CASE_LABEL: case},
        "tolerations": [{"operator": "Exists"}],
        "terminationGracePeriodSeconds": 0,
    }
    if rng.random() < 0.3:
        init = [_container("setup", rng.randint(1, 4))]
        if rng.random() < 0.5:
            init.append(_container("proxy", 1, restartPolicy="Always"))
        spec["initContainers"] = init
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{case}-pod", "namespace": namespace},
        "spec": spec,
    }
    return ExtendedCase(case, tuple(nodes), tuple(slices), tuple(held), tuple(running), pod, kinds)
