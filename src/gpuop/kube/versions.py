"""Read what the version checks need from a live cluster: Nodes, ClusterPolicies, /version.

A smaller read than `gpuop.kube.collect.collect` (no pods, events or DaemonSets): the
version checks only look at nodes, the ClusterPolicy and the control plane's version.
A missing ClusterPolicy CRD is reported as skipped, not as a failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Node

from gpuop.kube import ClusterPolicy
from gpuop.kube.collect import CollectError, Lister


@dataclass
class VersionInputs:
    """Nodes and ClusterPolicies as plain dicts, the server's gitVersion, and what was skipped."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    server_version: str | None = None
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, Mapping) and not hasattr(obj, "to_dict"):
        return dict(obj)
    data = obj.to_dict()
    assert isinstance(data, dict)
    return data


def _list(client: Lister, kind: str, resource: Any, result: VersionInputs) -> list[dict[str, Any]]:
    try:
        items = [_as_dict(item) for item in client.list(resource)]
    except ApiError as exc:
        code = getattr(exc.status, "code", None)
        reason = {404: "the CRD is not installed", 403: "not allowed to list them"}.get(
            code or 0, f"the API answered {code}"
        )
        result.skipped.append((kind, reason))
        return []
    except httpx2.RequestError as exc:
        raise CollectError(f"cannot reach the cluster: {exc}") from None
    for item in items:
        item.setdefault("kind", kind)
    return items


def server_version(client: Any) -> str | None:
    """The API server's `gitVersion` from `/version`; None when it cannot be read.

    lightkube has no call for non-resource paths, so this goes through the HTTP client it
    holds (authenticated like every other request).
    """
    http = getattr(getattr(client, "_client", None), "_client", None)
    if http is None or not hasattr(http, "get"):
        return None
    try:
        response = http.get("/version")
        if response.status_code != 200:
            return None
        version = response.json().get("gitVersion")
    except Exception:  # a best effort: the node versions are checked either way
        return None
    return version if isinstance(version, str) and version else None


def read_version_inputs(client: Lister) -> VersionInputs:
    result = VersionInputs()
    result.objects.extend(_list(client, "Node", Node, result))
    result.objects.extend(_list(client, "ClusterPolicy", ClusterPolicy, result))
    result.server_version = server_version(client)
    return result


__all__ = ["VersionInputs", "read_version_inputs", "server_version"]
