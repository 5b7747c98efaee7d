"""The only package that talks to the Kubernetes API.

Clients come from a kubeconfig (or the in-cluster service account) through lightkube;
writes use server-side apply with gpuop's field manager, or merge patches that touch only
the keys gpuop owns. Everything above this layer works with plain dicts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import yaml
from lightkube import AsyncClient, Client, KubeConfig
from lightkube.config.client_adapter import Client as http_client_for
from lightkube.config.client_adapter import ConnectionParams
from lightkube.generic_resource import create_global_resource, create_namespaced_resource

from gpuop.kube.client import KubeClient, SyncKubeClient
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
    "DEFAULT_KUBECONFIG",
    "FIELD_MANAGER",
    "ClusterPolicy",
    "GPUCluster",
    "HyperConverged",
    "KubeClient",
    "KubeError",
    "KubeVirt",
    "KubeconfigSource",
    "SyncKubeClient",
    "VirtualMachineInstance",
    "async_client",
    "describe_api_error",
    "http_client",
    "kubeconfig_files",
    "load_kubeconfig",
    "merge_kubeconfigs",
    "now_rfc3339",
    "sync_client",
]


class KubeError(Exception):
    """The cluster cannot be reached or the kubeconfig cannot be used."""


# Where a kubeconfig comes from: `--kubeconfig` (one file), the files a caller already chose
# by kubectl's rule, or None: kubectl's rule from the environment.
KubeconfigSource = str | Sequence[str] | None

DEFAULT_KUBECONFIG = "~/.kube/config"
# The fields of a kubeconfig that name files, resolved against the folder of the file that
# holds them when several files are merged (kubectl does the same).
_FILE_FIELDS = {
    "clusters": ("cluster", ("certificate-authority",)),
    "users": ("user", ("client-certificate", "client-key", "tokenFile")),
}


def kubeconfig_files(
    path: str | None = None, environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """kubectl's kubeconfig files: `path` (`--kubeconfig`) alone; else the files of
    `$KUBECONFIG` (a list, colon-separated on Linux) that exist, merged; else
    ~/.kube/config when it exists. None at all: the pod's service account is used."""
    env = os.environ if environ is None else environ
    if path:
        return (path,)
    listed = [item for item in env.get("KUBECONFIG", "").split(os.pathsep) if item]
    existing = tuple(
        str(Path(item).expanduser()) for item in listed if Path(item).expanduser().is_file()
    )
    if listed and not existing:
        raise KubeError(f"$KUBECONFIG ({env['KUBECONFIG']}): no such file")
    if existing:
        return existing
    default = Path(DEFAULT_KUBECONFIG).expanduser()
    return (str(default),) if default.is_file() else ()


def merge_kubeconfigs(documents: Sequence[tuple[Mapping[str, Any], str]]) -> dict[str, Any]:
    """Kubeconfig documents (each with the folder of its file) merged as kubectl merges
    `$KUBECONFIG`: the first file to name a cluster, user or context wins, and so does the
    first current-context; relative file paths point where their own file said."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config"}
    for document, folder in documents:
        if not merged.get("current-context") and document.get("current-context"):
            merged["current-context"] = document["current-context"]
        for section in ("clusters", "users", "contexts"):
            entries = merged.setdefault(section, [])
            named = {entry.get("name") for entry in entries}
            for entry in document.get(section) or []:
                if not isinstance(entry, Mapping) or entry.get("name") in named:
                    continue
                entries.append(_with_paths_from(section, entry, folder))
                named.add(entry.get("name"))
    return merged


def _with_paths_from(section: str, entry: Mapping[str, Any], folder: str) -> dict[str, Any]:
    copied = dict(entry)
    key, fields = _FILE_FIELDS.get(section, ("", ()))
    body = copied.get(key)
    if isinstance(body, Mapping):
        body = dict(body)
        for field_name in fields:
            value = body.get(field_name)
            if isinstance(value, str) and value and not os.path.isabs(value):
                body[field_name] = os.path.join(folder, value)
        copied[key] = body
    return copied


def load_kubeconfig(path: KubeconfigSource = None, context: str | None = None) -> KubeConfig:
    """The kubeconfig kubectl would use (`kubeconfig_files`), or the in-cluster account."""
    if isinstance(path, str):
        files = (path,) if path else kubeconfig_files()
    else:
        files = tuple(path or ()) or kubeconfig_files()
    where = os.pathsep.join(files) or DEFAULT_KUBECONFIG
    try:
        if not files:
            return KubeConfig.from_service_account()
        for name in files:
            _refuse_deep_nesting(name)
        if len(files) == 1:
            return KubeConfig.from_file(files[0])
        return KubeConfig.from_dict(merge_kubeconfigs(_documents(files)), fname=files[0])
    except KubeError:
        raise
    except RecursionError:
        raise KubeError(f"cannot load kubeconfig {where}: {NESTED_TOO_DEEPLY}") from None
    except Exception as exc:  # whatever the file holds, it is not a kubeconfig gpuop can use
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not files:
            problem = f"none found ($KUBECONFIG, {DEFAULT_KUBECONFIG}) and not in a cluster"
        raise KubeError(f"cannot load kubeconfig {where}: {problem}") from exc


def _documents(files: Sequence[str]) -> list[tuple[Mapping[str, Any], str]]:
    documents: list[tuple[Mapping[str, Any], str]] = []
    for name in files:
        with open(name, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
        if not isinstance(document, Mapping):
            raise KubeError(f"cannot load kubeconfig {name}: not a mapping")
        documents.append((document, os.path.dirname(os.path.abspath(name))))
    return documents


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


def _selected(path: KubeconfigSource, context: str | None) -> Any:
    config = load_kubeconfig(path, context)
    if context is None:
        return config
    single = config.get(context)
    if single is None:
        raise KubeError(f"kubeconfig {_shown(path)} has no context {context!r}")
    return single


def _timeout(seconds: float) -> Any:
    # lightkube takes its HTTP library's Timeout object; it ships that library itself.

    return httpx2.Timeout(seconds)


def _shown(path: KubeconfigSource) -> str:
    if isinstance(path, str):
        return path
    return os.pathsep.join(path or ()) or "(default)"


def sync_client(
    path: KubeconfigSource = None, context: str | None = None, timeout: float = 60
) -> SyncKubeClient:
    return Client(_selected(path, context), field_manager=FIELD_MANAGER, timeout=_timeout(timeout))


def http_client(
    path: KubeconfigSource = None, context: str | None = None, timeout: float = 10
) -> httpx2.Client:
    """An HTTP client for the API server's non-resource paths (`/version`), logged in as
    lightkube's clients are (lightkube itself only requests resources)."""
    config = _selected(path, context)
    single = config.get() if isinstance(config, KubeConfig) else config
    if single is None:
        raise KubeError(f"kubeconfig {_shown(path)} has no current context")
    return http_client_for(single, ConnectionParams(timeout=_timeout(timeout)))


def async_client(
    path: KubeconfigSource = None, context: str | None = None, timeout: float = 60
) -> KubeClient:
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
