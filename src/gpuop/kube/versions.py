"""Read what the version checks need from a live cluster: Nodes, ClusterPolicies, the
operator's Deployment, /version.

A smaller read than `gpuop.kube.collect.collect` (no pods, events or DaemonSets): the
version checks look at nodes, the ClusterPolicy, the Deployment that runs NVIDIA's
operator (its image tag and Helm labels name its release) and the control plane's version.
A missing ClusterPolicy CRD, or Deployments the account may not list, are reported as
skipped, not as a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpuop.api.labels import APP_COMPONENT_LABEL
from gpuop.kube import KubeconfigSource, http_client
from gpuop.kube.reading import Lister, read_kinds


@dataclass
class VersionInputs:
    """Nodes and ClusterPolicies as plain dicts, the server's gitVersion, and what was skipped."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    server_version: str | None = None
    skipped: list[tuple[str, str]] = field(default_factory=list)


def server_version(http: Any) -> str | None:
    """The API server's `gitVersion` from `/version` over `http` (an HTTP client with the
    server as its base URL); None when it cannot be read."""
    try:
        response = http.get("/version")
        if response.status_code != 200:
            return None
        version = response.json().get("gitVersion")
    except Exception:  # a best effort: the node versions are checked either way
        return None
    return version if isinstance(version, str) and version else None


def read_server_version(path: KubeconfigSource, context: str | None) -> str | None:
    """`server_version` of the cluster a kubeconfig (and context) names; None when unread."""
    try:
        with http_client(path, context) as http:
            return server_version(http)
    except Exception:  # a kubeconfig lightkube reads but cannot log in with, say
        return None


def read_version_inputs(
    client: Lister, version: Callable[[], str | None] = lambda: None
) -> VersionInputs:
    """Nodes, ClusterPolicies and the operator's Deployment (each skipped when refused)
    and the server's version."""
    read = read_kinds(
        client,
        ("Node", "ClusterPolicy", "Deployment"),
        keep={"Deployment": _runs_the_operator},
    )
    return VersionInputs(read.objects, version(), read.skipped)


def _runs_the_operator(deployment: dict[str, Any]) -> bool:
    """Whether a Deployment runs NVIDIA's operator (by its image or its Helm labels)."""
    labels = (deployment.get("metadata") or {}).get("labels") or {}
    if labels.get(APP_COMPONENT_LABEL) == "gpu-operator":
        return True
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    return any(
        "gpu-operator" in str(container.get("image", ""))
        for container in spec.get("containers") or []
    )


__all__ = ["VersionInputs", "read_server_version", "read_version_inputs", "server_version"]
