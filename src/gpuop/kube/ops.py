"""The API calls gpuop makes, one small function each, on plain dicts.

The operator, the simulator and the lab call these instead of a client library, so every
request gpuop can send is listed here (the shipped RBAC is derived from this file) and the
rest of the code never handles client objects beyond passing them along. Each call is
written once, as a coroutine over a `KubeClient` (`gpuop.kube.client`); the `*_sync` names
at the end are the same coroutines run with a synchronous client (`gpuop.kube.blocking`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from lightkube import operators
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import (
    ConfigMap,
    Event,
    Namespace,
    Node,
    Pod,
)
from lightkube.resources.resource_v1 import (
    ResourceClaim,
    ResourceSlice,
)
from lightkube.types import PatchType

from gpuop.api.labels import MANAGED_BY_LABEL
from gpuop.kube import ClusterPolicy, GPUCluster, kinds
from gpuop.kube.blocking import blocking
from gpuop.kube.client import KubeClient, SyncKubeClient
from gpuop.kube.errors import API_ERRORS, KubeApiError, translated
from gpuop.kube.reading import LIST_PAGE_SIZE
from gpuop.render.gpucluster import GPU_CLUSTER_KINDS
from gpuop.render.support import SUPPORT_KINDS

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

NOT_FOUND = 404
CONFLICT = 409
TOO_MANY_REQUESTS = 429
UNPROCESSABLE = 422

# The kinds the operator creates beside DaemonSets, found again by their managed-by label.
MANAGED_KINDS: tuple[str, ...] = ("RuntimeClass", *SUPPORT_KINDS, *GPU_CLUSTER_KINDS)
SERVICE_MONITOR_CRD = "servicemonitors.monitoring.coreos.com"


@contextmanager
def _translated_errors() -> Iterator[None]:
    """The client's exceptions raised as gpuop's (`gpuop.kube.errors.translated`)."""
    try:
        yield
    except KubeApiError:
        raise
    except API_ERRORS as exc:
        raise translated(exc) from exc


def api_call(func: F) -> F:
    """`func`'s client errors raised as gpuop's, whether it returns, awaits or yields:
    callers never see the client library's exceptions."""
    if inspect.isasyncgenfunction(func):

        @functools.wraps(func)
        async def stream(*args: Any, **kwargs: Any) -> Any:
            with _translated_errors():
                async for item in func(*args, **kwargs):
                    yield item

        return cast(F, stream)
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def awaited(*args: Any, **kwargs: Any) -> Any:
            with _translated_errors():
                return await func(*args, **kwargs)

        return cast(F, awaited)

    @functools.wraps(func)
    def called(*args: Any, **kwargs: Any) -> Any:
        with _translated_errors():
            return func(*args, **kwargs)

    return cast(F, called)


def _selector(labels: Mapping[str, str | None] | None) -> dict[str, Any] | None:
    if not labels:
        return None
    return {k: operators.exists() if v is None else v for k, v in labels.items()}


def _selection(
    kind: str, labels: Mapping[str, str | None] | None, namespace: str | None
) -> dict[str, Any]:
    """lightkube's arguments for the objects of `kind`, label-selected, in `namespace` (or,
    for namespaced kinds, all namespaces when None)."""
    params: dict[str, Any] = {"labels": _selector(labels)}
    if kinds.namespaced(kind):
        params["namespace"] = namespace or "*"
    return params


@api_call
async def list_objects(
    client: KubeClient,
    kind: str,
    keep: Callable[[dict[str, Any]], T | None],
    labels: Mapping[str, str | None] | None = None,
    namespace: str | None = None,
) -> tuple[str, list[T]]:
    """`keep(object)` for every object of `kind` (label-selected) where it is not None, and
    the resourceVersion of that list. The list comes in pages and each object is
    reduced as it arrives, so a fleet's worth of full objects is never held at once."""
    listing = client.list(
        kinds.lean(kind), chunk_size=LIST_PAGE_SIZE, **_selection(kind, labels, namespace)
    )
    kept: list[T] = []
    async for obj in listing:
        value = keep(_as_dict(obj))
        if value is not None:
            kept.append(value)
    return listing.resourceVersion, kept


@api_call
async def watch_objects(
    client: KubeClient,
    kind: str,
    labels: Mapping[str, str | None] | None,
    namespace: str | None,
    resource_version: str,
    server_timeout: int,
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Changes to `kind` after `resource_version`, as (event type, object); raises on errors."""
    async for event, obj in client.watch(
        kinds.lean(kind),
        resource_version=resource_version,
        server_timeout=server_timeout,
        **_selection(kind, labels, namespace),
    ):
        yield event, _as_dict(obj)


def _as_dict(obj: Any) -> dict[str, Any]:
    if isinstance(obj, dict):
        return obj
    result = obj.to_dict()
    assert isinstance(result, dict)
    return result


@contextmanager
def _gone_is_fine() -> Iterator[None]:
    """A 404 means there is nothing to act on: for a delete, the work is done already."""
    try:
        yield
    except ApiError as exc:
        if exc.status.code != NOT_FOUND:
            raise


async def _unless_gone(call: Awaitable[Any]) -> dict[str, Any] | None:
    """The object a call answers with; None when its object is gone (404)."""
    try:
        return _as_dict(await call)
    except ApiError as exc:
        if exc.status.code == NOT_FOUND:
            return None
        raise


def _metadata_patch(
    labels: Mapping[str, str | None] | None, annotations: Mapping[str, str | None] | None
) -> dict[str, Any]:
    """The `metadata` of a merge patch that sets (or, with None, removes) these keys."""
    meta: dict[str, Any] = {}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def _resources_patch(resources: Mapping[str, str | None]) -> dict[str, Any]:
    """A node status patch that sets (or removes) extended resources in capacity and allocatable."""
    return {"status": {"capacity": dict(resources), "allocatable": dict(resources)}}


async def _patch_status(
    client: KubeClient, resource: Any, name: str, status: Mapping[str, Any], **params: Any
) -> dict[str, Any] | None:
    """Merge `status` into an object's status subresource; None when the object is gone."""
    return await _unless_gone(
        client.patch(
            resource.Status, name, {"status": dict(status)}, patch_type=PatchType.MERGE, **params
        )
    )


@api_call
async def patch_node_labels(
    client: KubeClient, name: str, changes: Mapping[str, str | None]
) -> dict[str, Any] | None:
    """Merge-patch only the given label keys (None deletes). None when the node is gone."""
    return await patch_node(client, name, labels=changes)


@api_call
async def patch_node(
    client: KubeClient,
    name: str,
    labels: Mapping[str, str | None] | None = None,
    annotations: Mapping[str, str | None] | None = None,
    unschedulable: bool | None = None,
) -> dict[str, Any] | None:
    """One merge patch of the given label and annotation keys (None deletes) and, when not
    None, `spec.unschedulable` (cordon / uncordon). None when the node is gone."""
    body: dict[str, Any] = {"metadata": _metadata_patch(labels, annotations)}
    if unschedulable is not None:
        body["spec"] = {"unschedulable": True if unschedulable else None}
    return await _unless_gone(
        client.patch(kinds.lean("Node"), name, body, patch_type=PatchType.MERGE)
    )


@api_call
async def evict_pod(client: KubeClient, namespace: str, name: str) -> bool:
    """Ask for a pod's eviction (the API server honours PodDisruptionBudgets). False when a
    budget refuses it for now (429); gone already counts as evicted."""
    eviction = Pod.Eviction(metadata=ObjectMeta(name=name, namespace=namespace))
    try:
        await client.create(eviction, name=name, namespace=namespace)
    except ApiError as exc:
        if exc.status.code == NOT_FOUND:
            return True
        if exc.status.code == TOO_MANY_REQUESTS:
            return False
        raise
    return True


@api_call
async def delete_pod(
    client: KubeClient, namespace: str, name: str, grace_period: int | None = None
) -> None:
    """Delete one pod (its DaemonSet makes the new one); gone already is fine."""
    with _gone_is_fine():
        await client.delete(Pod, name, namespace=namespace, grace_period=grace_period)


@api_call
async def pods_on_node(client: KubeClient, node: str) -> list[dict[str, Any]]:
    """Every pod bound to `node`, in all namespaces."""
    return [
        _as_dict(pod)
        async for pod in client.list(
            Pod, namespace="*", fields={"spec.nodeName": node}, chunk_size=500
        )
    ]


@api_call
async def patch_node_resources(
    client: KubeClient, name: str, resources: Mapping[str, str | None]
) -> dict[str, Any] | None:
    """Set (or with None remove) extended resources in a node's capacity and allocatable."""
    return await _unless_gone(
        client.patch(
            kinds.lean("Node").Status,
            name,
            _resources_patch(resources),
            patch_type=PatchType.MERGE,
        )
    )


@api_call
async def apply_object(client: KubeClient, obj: Mapping[str, Any]) -> dict[str, Any]:
    """Server-side apply with gpuop's field manager; the object as the server now has it."""
    return _as_dict(await client.apply(from_dict(dict(obj)), force=True))


# Field managers of other operators whose fields gpuop takes over when it applies the same
# object: NVIDIA's GPU Operator writes with create/update as `gpu-operator`.
PREVIOUS_OPERATOR_MANAGERS = frozenset({"gpu-operator"})


def _merged_fields(into: dict[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    """The union of two `fieldsV1` sets (tries of `f:`/`k:`/`v:` keys)."""
    merged = dict(into)
    for key, value in more.items():
        before = merged.get(key)
        if isinstance(before, dict) and isinstance(value, Mapping):
            merged[key] = _merged_fields(before, value)
        else:
            merged[key] = value if before is None else before
    return merged


def ownership_transfer(obj: Mapping[str, Any], manager: str) -> list[dict[str, Any]] | None:
    """The JSON patch that makes `manager` (gpuop's server-side apply) own every field the
    previous operator's field managers own on `obj` (as client-go's csaupgrade does), or
    None when none of theirs is left.

    Without it a field only the departed operator ever set, or one both set, stays when
    gpuop stops rendering it (a ClusterPolicy env var removed later): server-side apply
    removes only what no other manager owns. The patch is conditional on the object's
    resourceVersion, so a concurrent write makes it fail instead of clobbering.
    """
    meta = obj.get("metadata") or {}
    entries = list(meta.get("managedFields") or [])
    theirs = [
        e
        for e in entries
        if e.get("manager") in PREVIOUS_OPERATOR_MANAGERS and not e.get("subresource")
    ]
    mine = next(
        (
            e
            for e in entries
            if e.get("manager") == manager
            and e.get("operation") == "Apply"
            and not e.get("subresource")
        ),
        None,
    )
    if not theirs or mine is None:
        return None
    fields = dict(mine.get("fieldsV1") or {})
    for entry in theirs:
        fields = _merged_fields(fields, entry.get("fieldsV1") or {})
    kept = [
        {**e, "fieldsV1": fields} if e is mine else e
        for e in entries
        if not any(e is t for t in theirs)
    ]
    return [
        {"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion")},
        {"op": "replace", "path": "/metadata/managedFields", "value": kept},
    ]


@api_call
async def patch_managed_fields(
    client: KubeClient, obj: Mapping[str, Any], patch: list[dict[str, Any]]
) -> dict[str, Any]:
    """Apply `ownership_transfer`'s JSON patch to the object it was made from."""
    kind = str(obj["kind"])
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") if kinds.namespaced(kind) else None
    return _as_dict(
        await client.patch(
            kinds.resource(kind),
            str(meta.get("name")),
            patch,
            patch_type=PatchType.JSON,
            namespace=namespace,
        )
    )


@api_call
async def delete_resource_slice(client: KubeClient, name: str) -> None:
    """Delete a ResourceSlice (gone already is fine)."""
    with _gone_is_fine():
        await client.delete(ResourceSlice, name)


@api_call
async def patch_claim_status(
    client: KubeClient, name: str, namespace: str, status: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Merge `status` into a ResourceClaim's status; None when the claim is gone."""
    return await _patch_status(client, ResourceClaim, name, status, namespace=namespace)


@api_call
async def delete_daemonset(client: KubeClient, name: str, namespace: str) -> None:
    with _gone_is_fine():
        await client.delete(DaemonSet, name, namespace=namespace)


@api_call
async def patch_policy_status(
    client: KubeClient, name: str, status: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Merge-patch a ClusterPolicy's status subresource; None when it is gone."""
    return await _patch_status(client, ClusterPolicy, name, status)


@api_call
async def patch_gpu_cluster_status(
    client: KubeClient, name: str, status: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Merge-patch a GPUCluster's status subresource; None when it is gone."""
    return await _patch_status(client, GPUCluster, name, status)


@api_call
async def get_lease(client: KubeClient, name: str, namespace: str) -> dict[str, Any] | None:
    """A coordination.k8s.io Lease (leader election's lock); None when there is none."""
    return await _unless_gone(client.get(Lease, name, namespace=namespace))


@api_call
async def create_lease(client: KubeClient, lease: Mapping[str, Any]) -> dict[str, Any]:
    """Create a Lease; a 409 (someone else created it first) is raised."""
    return _as_dict(await client.create(from_dict(dict(lease))))


@api_call
async def replace_lease(client: KubeClient, lease: Mapping[str, Any]) -> dict[str, Any]:
    """Update a Lease as read (its resourceVersion set): a 409 says someone wrote it since."""
    return _as_dict(await client.replace(from_dict(dict(lease))))


@api_call
async def create_event(client: KubeClient, event: Mapping[str, Any]) -> None:
    await client.create(from_dict(dict(event)))


@api_call
async def managed_objects(
    client: KubeClient, kind: str, namespace: str, managed_by: str, hash_annotation: str
) -> dict[str, str]:
    """The objects of `kind` gpuop manages (by label; namespaced kinds in `namespace`), by
    name, with the hash annotation each was applied with ("" if none). A kind the server
    does not serve (404: resource.k8s.io/v1 off, say) has none."""
    params: dict[str, Any] = {"labels": {MANAGED_BY_LABEL: managed_by}}
    if kinds.namespaced(kind):
        params["namespace"] = namespace
    found: dict[str, str] = {}
    with _gone_is_fine():
        async for item in client.list(kinds.resource(kind), **params):
            meta = _as_dict(item).get("metadata") or {}
            if meta.get("name"):
                found[meta["name"]] = (meta.get("annotations") or {}).get(hash_annotation, "")
    return found


@api_call
async def delete_managed_object(client: KubeClient, kind: str, name: str, namespace: str) -> None:
    """Delete one object of a managed kind; gone already is fine."""
    params: dict[str, Any] = {"namespace": namespace} if kinds.namespaced(kind) else {}
    with _gone_is_fine():
        await client.delete(kinds.resource(kind), name, **params)


@api_call
async def service_monitors_served(client: KubeClient) -> bool:
    """Whether Prometheus operator's ServiceMonitor CRD is installed."""
    return await _unless_gone(client.get(CustomResourceDefinition, SERVICE_MONITOR_CRD)) is not None


@api_call
async def configmap_data(client: KubeClient, name: str, namespace: str) -> dict[str, str] | None:
    configmap = await _unless_gone(client.get(ConfigMap, name, namespace=namespace))
    return None if configmap is None else dict(configmap.get("data") or {})


@api_call
async def namespace_exists(client: KubeClient, name: str) -> bool:
    return await _unless_gone(client.get(Namespace, name)) is not None


@api_call
async def label_namespace(client: KubeClient, name: str, key: str, value: str) -> bool:
    """Set one label on a namespace unless it has it already; True when it was patched."""
    namespace = _as_dict(await client.get(Namespace, name))
    if ((namespace.get("metadata") or {}).get("labels") or {}).get(key) == value:
        return False
    body = {"metadata": {"labels": {key: value}}}
    await client.patch(Namespace, name, body, patch_type=PatchType.MERGE)
    return True


@api_call
async def create_object(client: KubeClient, obj: Mapping[str, Any]) -> dict[str, Any]:
    """Create one object; `Conflict` when it exists."""
    return _as_dict(await client.create(from_dict(dict(obj))))


@api_call
async def delete_node(client: KubeClient, name: str) -> bool:
    """Delete a Node; False when there was none."""
    try:
        await client.delete(Node, name)
    except ApiError as exc:
        if exc.status.code == NOT_FOUND:
            return False
        raise
    return True


@api_call
async def list_nodes(
    client: KubeClient, labels: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    return [_as_dict(n) async for n in client.list(Node, labels=dict(labels) if labels else None)]


@api_call
async def update_node(
    client: KubeClient,
    name: str,
    labels: Mapping[str, str | None] | None = None,
    annotations: Mapping[str, str | None] | None = None,
    resources: Mapping[str, str | None] | None = None,
) -> None:
    """Merge-patch label and annotation keys (None deletes), then extended resources in
    capacity and allocatable; `NotFound` when the node is gone (a user named it)."""
    meta = _metadata_patch(labels, annotations)
    if meta:
        await client.patch(Node, name, {"metadata": meta}, patch_type=PatchType.MERGE)
    if resources:
        await client.patch(
            Node.Status, name, _resources_patch(resources), patch_type=PatchType.MERGE
        )


@api_call
async def create_or_apply(client: KubeClient, obj: Mapping[str, Any]) -> None:
    """Create an object, or apply it when it exists (for manifests users would `kubectl apply`)."""
    try:
        await client.create(from_dict(dict(obj)))
    except ApiError as exc:
        if exc.status.code != CONFLICT:
            raise
        await apply_object(client, obj)


@api_call
async def merge_configmap_data(
    client: KubeClient, name: str, namespace: str, data: Mapping[str, str | None]
) -> None:
    """Set (or, with None, remove) keys of a ConfigMap's data, creating it when absent."""
    try:
        await client.patch(
            ConfigMap, name, {"data": dict(data)}, namespace=namespace, patch_type=PatchType.MERGE
        )
    except ApiError as exc:
        if exc.status.code != NOT_FOUND:
            raise
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": {k: v for k, v in data.items() if v is not None},
        }
        try:
            await client.create(from_dict(body))
        except ApiError as again:
            if again.status.code != CONFLICT:
                raise
            await merge_configmap_data(client, name, namespace, data)


@api_call
async def ensure_namespace(client: KubeClient, name: str) -> None:
    """Create the namespace unless it exists."""
    try:
        await client.create(Namespace(metadata=ObjectMeta(name=name)))
    except ApiError as exc:
        if exc.status.code != CONFLICT:
            raise


# --- what the lab reads and deletes as the admin (the operator's RBAC holds none of it)


@api_call
async def get_pod(client: KubeClient, name: str, namespace: str) -> dict[str, Any]:
    """A Pod as a dict; `NotFound` when it does not exist."""
    return _as_dict(await client.get(Pod, name, namespace=namespace))


@api_call
async def list_pods(client: KubeClient, namespace: str) -> list[dict[str, Any]]:
    return [_as_dict(pod) async for pod in client.list(Pod, namespace=namespace)]


@api_call
async def get_object(
    client: KubeClient, kind: str, name: str, namespace: str | None = None
) -> dict[str, Any] | None:
    """One object of `kind` as a dict; None where there is none."""
    params: dict[str, Any] = {"namespace": namespace} if kinds.namespaced(kind) else {}
    return await _unless_gone(client.get(kinds.resource(kind), name, **params))


@api_call
async def delete_object(
    client: KubeClient, kind: str, name: str, namespace: str | None = None
) -> None:
    """Delete one object of `kind`; gone already is fine."""
    params: dict[str, Any] = {"namespace": namespace} if kinds.namespaced(kind) else {}
    with _gone_is_fine():
        await client.delete(kinds.resource(kind), name, **params)


@api_call
async def merge_patch(
    client: KubeClient,
    kind: str,
    name: str,
    patch: Mapping[str, Any],
    namespace: str | None = None,
) -> dict[str, Any]:
    """A JSON merge patch to one object of `kind`; the object as it is now."""
    params: dict[str, Any] = {"namespace": namespace} if kinds.namespaced(kind) else {}
    params["patch_type"] = PatchType.MERGE
    return _as_dict(await client.patch(kinds.resource(kind), name, dict(patch), **params))


@api_call
async def list_events(client: KubeClient, namespace: str) -> list[dict[str, Any]]:
    """The core/v1 Events of a namespace, as dicts."""
    return [_as_dict(event) async for event in client.list(Event, namespace=namespace)]


@api_call
async def crd_established(client: KubeClient, name: str) -> bool:
    """Whether the CustomResourceDefinition `name` has condition Established=True."""
    crd = _as_dict(await client.get(CustomResourceDefinition, name))
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


# --- DRA objects, for the lab and `gpuop sim drift` (the admin's reads and writes)


@api_call
async def list_dra(
    client: KubeClient, kind: str, namespace: str | None = None
) -> list[dict[str, Any]]:
    """Every `kind` object (ResourceClaims: in `namespace`, or in all when None)."""
    res = kinds.resource(kind)
    if kinds.namespaced(kind):
        return [_as_dict(o) async for o in client.list(res, namespace=namespace or "*")]
    return [_as_dict(o) async for o in client.list(res)]


@api_call
async def permit_host_devices(
    client: KubeClient, permitted: Mapping[str, Sequence[Mapping[str, Any]]]
) -> str:
    """Add `permitted` (section -> entries) to the KubeVirt CR's `permittedHostDevices`,
    keeping its other entries (a merge patch replaces a list whole), or make the CR
    `kubevirt/kubevirt` where there is none; the CR as `namespace/name`. An entry whose
    resourceName the section already permits is left as it is."""
    resource = kinds.resource("KubeVirt")
    found = [_as_dict(cr) async for cr in client.list(resource, namespace="*")]
    if not found:
        await ensure_namespace(client, "kubevirt")
        devices = {section: list(entries) for section, entries in permitted.items()}
        made = {
            "apiVersion": "kubevirt.io/v1",
            "kind": "KubeVirt",
            "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
            "spec": {"configuration": {"permittedHostDevices": devices}},
        }
        await client.create(from_dict(made))
        return "kubevirt/kubevirt"
    cr: dict[str, Any] = found[0]
    metadata = cr.get("metadata") or {}
    name, namespace = str(metadata.get("name")), str(metadata.get("namespace"))
    configuration: Any = (cr.get("spec") or {}).get("configuration") or {}
    current: Any = configuration.get("permittedHostDevices") or {}
    changed: dict[str, list[Any]] = {}
    for section, entries in permitted.items():
        existing = list(current.get(section) or [])
        names = {entry.get("resourceName") for entry in existing if isinstance(entry, Mapping)}
        added = [entry for entry in entries if entry.get("resourceName") not in names]
        if added:
            changed[section] = existing + added
    if changed:
        patch = {"spec": {"configuration": {"permittedHostDevices": changed}}}
        await client.patch(resource, name, patch, namespace=namespace, patch_type=PatchType.MERGE)
    return f"{namespace}/{name}"


# --- the same calls from synchronous code, with a synchronous `Client` (`blocking`)

create_object_sync = blocking(create_object)
delete_node_sync = blocking(delete_node)
list_nodes_sync = blocking(list_nodes)
patch_node_sync = blocking(update_node)
apply_object_sync = blocking(apply_object)
create_or_replace_sync = blocking(create_or_apply)
configmap_data_sync = blocking(configmap_data)
merge_configmap_data_sync = blocking(merge_configmap_data)
ensure_namespace_sync = blocking(ensure_namespace)
get_pod_sync = blocking(get_pod)
list_pods_sync = blocking(list_pods)
delete_pod_sync = blocking(delete_pod)
get_object_sync = blocking(get_object)
delete_object_sync = blocking(delete_object)
merge_patch_sync = blocking(merge_patch)
list_events_sync = blocking(list_events)
crd_established_sync = blocking(crd_established)
list_dra_sync = blocking(list_dra)
permit_host_devices_sync = blocking(permit_host_devices)


def get_node(client: SyncKubeClient, name: str) -> dict[str, Any] | None:
    return get_object_sync(client, "Node", name)
