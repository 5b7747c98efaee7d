"""Read what `gpuop explain` and `gpuop kubevirt` need from a live cluster, as plain dicts.

`read_cluster(client)` lists every Node and every Pod (all namespaces: the scheduler counts
all of them), the KubeVirt CRs, the VirtualMachineInstances and, when asked, the
VirtualMachines and OpenShift's HyperConverged CRs. Kinds whose CRD is not installed, or that the account may not list, are
reported as skipped; Nodes and Pods are required, so failing to list them is a `ReadError`.
Every object gets its `kind` (list responses omit it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.resource_v1 import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)

from gpuop.kube import HyperConverged, KubeVirt, VirtualMachineInstance

__all__ = [
    "REQUIRED_KINDS",
    "ClusterRead",
    "Lister",
    "ReadError",
    "VirtualMachine",
    "read_cluster",
]

ALL_NAMESPACES = "*"

VirtualMachine = create_namespaced_resource(
    group="kubevirt.io", version="v1", kind="VirtualMachine", plural="virtualmachines"
)

#: Kinds the explainer cannot do without: failing to list them fails the read.
REQUIRED_KINDS = frozenset({"Node", "Pod"})

# kind -> (resource, namespaced)
_RESOURCES: Mapping[str, tuple[Any, bool]] = {
    "Node": (Node, False),
    "Pod": (Pod, True),
    "KubeVirt": (KubeVirt, True),
    "HyperConverged": (HyperConverged, True),
    "VirtualMachineInstance": (VirtualMachineInstance, True),
    "VirtualMachine": (VirtualMachine, True),
    "ResourceSlice": (ResourceSlice, False),
    "DeviceClass": (DeviceClass, False),
    "ResourceClaim": (ResourceClaim, True),
    "ResourceClaimTemplate": (ResourceClaimTemplate, True),
}

DEFAULT_KINDS: tuple[str, ...] = ("Node", "Pod", "KubeVirt", "VirtualMachineInstance")


class ReadError(Exception):
    """The cluster cannot be read (unreachable, refused, or a required kind not listable)."""


class Lister(Protocol):
    """The part of `lightkube.Client` these reads use."""

    def list(self, res: Any, *, namespace: Any = None) -> Iterable[Any]: ...


@dataclass
class ClusterRead:
    """The objects read, in kind order, and the kinds skipped (with the reason)."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if obj.get("kind") == kind]


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping) and not hasattr(obj, "to_dict"):
        return dict(obj)
    data = obj.to_dict()
    assert isinstance(data, dict)
    return data


def _refusal(exc: httpx2.HTTPStatusError) -> str:
    """Why a list failed.  An unknown API group answers a plain-text 404 (not an ApiError)."""
    if isinstance(exc, ApiError):
        code = getattr(exc.status, "code", None)
        message = getattr(exc.status, "message", None) or str(exc)
    else:
        code = exc.response.status_code
        message = exc.response.text.strip()[:200] or str(exc)
    if code == 404:
        return "the CRD is not installed"
    if code == 403:
        return "not allowed to list them"
    return f"the API answered {code}: {message}"


def read_cluster(client: Lister, kinds: Sequence[str] = DEFAULT_KINDS) -> ClusterRead:
    """List `kinds` (cluster-wide, all namespaces) from the cluster `client` talks to."""
    result = ClusterRead()
    for kind in kinds:
        resource, namespaced = _RESOURCES[kind]
        try:
            items = (
                client.list(resource, namespace=ALL_NAMESPACES)
                if namespaced
                else client.list(resource)
            )
            listed = [_as_dict(item) for item in items]
        except httpx2.HTTPStatusError as exc:  # ApiError included
            reason = _refusal(exc)
            if kind in REQUIRED_KINDS:
                raise ReadError(f"cannot list {kind}s: {reason}") from None
            result.skipped.append((kind, reason))
            continue
        except httpx2.RequestError as exc:
            raise ReadError(f"cannot reach the cluster: {exc}") from None
        for obj in listed:
            obj.setdefault("kind", kind)
        result.objects.extend(listed)
    return result
