"""Read what the version checks need from a live cluster: Nodes, ClusterPolicies, /version.

A smaller read than `gpuop.kube.collect.collect` (no pods, events or DaemonSets): the
version checks only look at nodes, the ClusterPolicy and the control plane's version.
A missing ClusterPolicy CRD is reported as skipped, not as a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpuop.kube.reading import Lister, read_kinds


@dataclass
class VersionInputs:
    """Nodes and ClusterPolicies as plain dicts, the server's gitVersion, and what was skipped."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    server_version: str | None = None
    skipped: list[tuple[str, str]] = field(default_factory=list)


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
    """Nodes and ClusterPolicies (either skipped when refused) and the server's version."""
    read = read_kinds(client, ("Node", "ClusterPolicy"))
    return VersionInputs(read.objects, server_version(client), read.skipped)


__all__ = ["VersionInputs", "read_version_inputs", "server_version"]
