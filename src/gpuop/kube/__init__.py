"""The only package that talks to the Kubernetes API.

Clients come from a kubeconfig (or the in-cluster service account) through lightkube;
writes use server-side apply with gpuop's field manager, or merge patches that touch only
the keys gpuop owns. Everything above this layer works with plain dicts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx2
from lightkube import AsyncClient, Client, KubeConfig
from lightkube.config.client_adapter import Client as http_client_for
from lightkube.config.client_adapter import ConnectionParams
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.types import PatchType

from gpuop.kube.errors import API_ERRORS, describe
from gpuop.manifests.loading import NESTED_TOO_DEEPLY, flow_nesting_exceeds

FIELD_MANAGER = "gpuop"
# No real kubeconfig comes near this, embedded certificates of many clusters included.
MAX_KUBECONFIG_BYTES = 16 * 1024 * 1024

ClusterPolicy = create_global_resource(
    group="nvidia.com", version="v1", kind="ClusterPolicy", plural="clusterpolicies"
)
# NVIDIA's DRA stack (`gpuop.policy.gpucluster`): a cluster-scoped singleton.
GPUCluster = create_global_resource(
    group="nvidia.com", version="v1alpha1", kind="GPUCluster", plural="gpuclusters"
)
KubeVirt = create_namespaced_resource(
    group="kubevirt.io", version="v1", kind="KubeVirt", plural="kubevirts"
)
HyperConverged = create_namespaced_resource(
    group="hco.kubevirt.io", version="v1beta1", kind="HyperConverged", plural="hyperconvergeds"
)
VirtualMachineInstance = create_namespaced_resource(
    group="kubevirt.io",
    version="v1",
    kind="VirtualMachineInstance",
    plural="virtualmachineinstances",
)

# How a failed request is said lives in gpuop.kube.errors; these names stay here for callers.
describe_api_error = describe

__all__ = [
    "API_ERRORS",
    "FIELD_MANAGER",
    "ApiError",
    "ClusterPolicy",
    "GPUCluster",
    "HyperConverged",
    "KubeError",
    "KubeVirt",
    "PatchType",
    "VirtualMachineInstance",
    "async_client",
    "describe_api_error",
    "http_client",
    "load_kubeconfig",
    "now_rfc3339",
    "sync_client",
]


class KubeError(Exception):
    """The cluster cannot be reached or the kubeconfig cannot be used."""


def load_kubeconfig(path: str | None = None, context: str | None = None) -> KubeConfig:
    """A kubeconfig from `path`, `$KUBECONFIG`, ~/.kube/config, or the in-cluster account."""
    where = path or os.environ.get("KUBECONFIG") or "~/.kube/config"
    try:
        if path:
            _refuse_deep_nesting(path)
            return KubeConfig.from_file(path)
        return KubeConfig.from_env()
    except KubeError:
        raise
    except RecursionError:
        raise KubeError(f"cannot load kubeconfig {where}: {NESTED_TOO_DEEPLY}") from None
    except Exception as exc:  # whatever the file holds, it is not a kubeconfig gpuop can use
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise KubeError(f"cannot load kubeconfig {where}: {problem}") from exc


def _refuse_deep_nesting(path: str) -> None:
    """A kubeconfig nested deeper than any real one is refused before a YAML reader
    recurses through it."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(MAX_KUBECONFIG_BYTES + 1)
    except OSError:
        return  # the reader says why
    if len(text) > MAX_KUBECONFIG_BYTES:
        raise KubeError(f"cannot load kubeconfig {path}: larger than {MAX_KUBECONFIG_BYTES} bytes")
    if flow_nesting_exceeds(text):
        raise KubeError(f"cannot load kubeconfig {path}: {NESTED_TOO_DEEPLY}")


def _selected(path: str | None, context: str | None) -> Any:
    config = load_kubeconfig(path, context)
    if context is None:
        return config
    single = config.get(context)
    if single is None:
        raise KubeError(f"kubeconfig {path or '(default)'} has no context {context!r}")
    return single


def _timeout(seconds: float) -> Any:
    # lightkube takes its HTTP library's Timeout object; it ships that library itself.

    return httpx2.Timeout(seconds)


def sync_client(path: str | None = None, context: str | None = None, timeout: float = 60) -> Client:
    return Client(_selected(path, context), field_manager=FIELD_MANAGER, timeout=_timeout(timeout))


def http_client(
    path: str | None = None, context: str | None = None, timeout: float = 10
) -> httpx2.Client:
    """An HTTP client for the API server's non-resource paths (`/version`), logged in as
    lightkube's clients are (lightkube itself only requests resources)."""
    config = _selected(path, context)
    single = config.get() if isinstance(config, KubeConfig) else config
    if single is None:
        raise KubeError(f"kubeconfig {path or '(default)'} has no current context")
    return http_client_for(single, ConnectionParams(timeout=_timeout(timeout)))


def async_client(
    path: str | None = None, context: str | None = None, timeout: float = 60
) -> AsyncClient:
    return AsyncClient(
        _selected(path, context), field_manager=FIELD_MANAGER, timeout=_timeout(timeout)
    )


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event_body(
    involved: Mapping[str, Any],
    reason: str,
    message: str,
    event_type: str = "Normal",
    namespace: str = "default",
    component: str = "gpuop-operator",
) -> dict[str, Any]:
    """A core/v1 Event about an object (Node, ClusterPolicy, ...)."""
    meta = involved.get("metadata", {})
    name = meta.get("name", "unknown")
    stamp = now_rfc3339()
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{name}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": involved.get("apiVersion", "v1"),
            "kind": involved.get("kind", "Node"),
            "name": name,
            "uid": meta.get("uid"),
            "namespace": meta.get("namespace"),
        },
        "reason": reason,
        "message": message[:1024],
        "type": event_type,
        "source": {"component": component},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "reportingComponent": component,
    }
