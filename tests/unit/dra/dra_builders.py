"""API dicts for DRA objects (resource.k8s.io/v1), as a cluster returns them."""

from __future__ import annotations

from typing import Any

DRIVER = "gpu.nvidia.com"

CLASS_EXPR = {
    "gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "mig.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
    "vfio.gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
}


def device_class(name: str, *exprs: str) -> dict[str, Any]:
    exprs = exprs or (CLASS_EXPR[name],)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]},
    }


def upstream_classes() -> list[dict[str, Any]]:
    return [device_class(name) for name in CLASS_EXPR]


def device(
    name: str,
    kind: str = "gpu",
    *,
    product: str = "NVIDIA A100-SXM4-40GB",
    memory: str = "40Gi",
    counter_set: str | None = None,
    consumes: int = 1,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {"type": {"string": kind}, "productName": {"string": product}}
    attrs.update(extra or {})
    dev: dict[str, Any] = {
        "name": name,
        "attributes": attrs,
        "capacity": {"memory": {"value": memory}},
    }
    if counter_set:
        dev["consumesCounters"] = [
            {"counterSet": counter_set, "counters": {"card": {"value": str(consumes)}}}
        ]
    return dev


def device_slice(
    node: str,
    devices: list[dict[str, Any]],
    *,
    count: int = 1,
    generation: int = 1,
    suffix: str = "devices",
    pool: str | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}-{suffix}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": count},
            "devices": devices,
        },
    }


def counter_slice(
    node: str, sets: dict[str, int], *, count: int = 2, generation: int = 1, pool: str | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}-counters"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": count},
            "sharedCounters": [
                {"name": name, "counters": {"card": {"value": str(value)}}}
                for name, value in sets.items()
            ],
        },
    }


def request(
    name: str,
    device_class_name: str = "gpu.nvidia.com",
    *exprs: str,
    count: int | None = None,
    mode: str | None = None,
    admin: bool = False,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class_name}
    if exprs:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    if count is not None:
        exactly["count"] = count
    if mode:
        exactly["allocationMode"] = mode
    if admin:
        exactly["adminAccess"] = True
    return {"name": name, "exactly": exactly}


def claim(
    name: str,
    *requests: dict[str, Any],
    namespace: str = "default",
    allocated: list[tuple[str, str, str]] | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": list(requests)}},
    }
    if allocated is not None:
        obj["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": req, "driver": DRIVER, "pool": pool, "device": dev}
                        for req, pool, dev in allocated
                    ]
                }
            }
        }
    return obj


def template(name: str, *requests: dict[str, Any], namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": list(requests)}}},
    }
