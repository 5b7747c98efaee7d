"""DRA objects of every `resource.k8s.io` version, read as `resource.k8s.io/v1`.

Clusters before Kubernetes 1.34 serve DRA as `v1beta1` (1.32, and 1.33 beside `v1beta2`)
or `v1alpha3` (1.31), and dumps people post come from them. `v1beta2` has `v1`'s schema.
`v1beta1` and `v1alpha3` differ where gpuop reads, as the API server's own conversion
(`k8s.io/kubernetes/pkg/apis/resource/v1beta1/conversion.go`) maps them:

* a ResourceSlice device keeps its fields under `basic` (`attributes`, `capacity`,
  `consumesCounters`, `nodeName`, ...); `v1` has them on the device itself;
* a claim's request names its class, selectors, count and mode directly; `v1` puts them
  under `exactly` (a request with `firstAvailable` is the same in both);
* `v1alpha3` capacities are bare quantities; later versions wrap them as `{value: ...}`.

`as_v1` returns such an object converted (a new dict; the input is not changed) and every
other object as it is, so the checks, `explain` and the DRA model read one schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

GROUP: Final = "resource.k8s.io"
V1: Final = f"{GROUP}/v1"
# Versions whose objects have v1's schema.
_SAME_AS_V1: Final = frozenset({f"{GROUP}/v1beta2"})
# Versions with devices under `basic` and requests without `exactly`.
_BASIC_AND_FLAT: Final = frozenset({f"{GROUP}/v1beta1", f"{GROUP}/v1alpha3"})
_KINDS: Final = frozenset(
    {"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass"}
)
# The fields of a v1beta1 request that v1 moves under `exactly`.
_EXACT_FIELDS: Final = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


def as_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as `resource.k8s.io/v1` has it, when it is a DRA object of an older version."""
    version = obj.get("apiVersion")
    if obj.get("kind") not in _KINDS or not isinstance(version, str):
        return obj
    if version in _SAME_AS_V1:
        return {**obj, "apiVersion": V1}
    if version not in _BASIC_AND_FLAT:
        return obj
    converted: dict[str, Any] = {**obj, "apiVersion": V1}
    spec = obj.get("spec")
    kind = obj["kind"]
    bare_capacity = version.endswith("v1alpha3")
    if kind == "ResourceSlice" and isinstance(spec, Mapping):
        converted["spec"] = _slice_spec(spec, bare_capacity)
    elif kind == "ResourceClaim" and isinstance(spec, Mapping):
        converted["spec"] = _claim_spec(spec)
    elif kind == "ResourceClaimTemplate" and isinstance(spec, Mapping):
        inner = spec.get("spec")
        if isinstance(inner, Mapping):
            converted["spec"] = {**spec, "spec": _claim_spec(inner)}
    return converted


def _slice_spec(spec: Mapping[str, Any], bare_capacity: bool) -> dict[str, Any]:
    devices = spec.get("devices")
    if not isinstance(devices, list):
        return dict(spec)
    return {**spec, "devices": [_device(d, bare_capacity) for d in devices]}


def _device(device: Any, bare_capacity: bool) -> Any:
    if not isinstance(device, Mapping):
        return device
    basic = device.get("basic")
    flat = {k: v for k, v in device.items() if k != "basic"}
    if isinstance(basic, Mapping):
        flat.update(basic)
    capacity = flat.get("capacity")
    if bare_capacity and isinstance(capacity, Mapping):
        flat["capacity"] = {
            name: value if isinstance(value, Mapping) else {"value": value}
            for name, value in capacity.items()
        }
    return flat


def _claim_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    devices = spec.get("devices")
    if not isinstance(devices, Mapping):
        return dict(spec)
    requests = devices.get("requests")
    if not isinstance(requests, list):
        return dict(spec)
    return {**spec, "devices": {**devices, "requests": [_request(r) for r in requests]}}


def _request(request: Any) -> Any:
    if not isinstance(request, Mapping) or "exactly" in request or "firstAvailable" in request:
        return request
    exact = {k: request[k] for k in _EXACT_FIELDS if k in request}
    rest = {k: v for k, v in request.items() if k not in _EXACT_FIELDS}
    return {**rest, "exactly": exact} if exact else dict(request)


__all__ = ["V1", "as_v1"]
