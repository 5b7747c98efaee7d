"""Read what `gpuop check` needs from a live cluster, as plain dicts.

`collect(client)` lists Nodes, ClusterPolicies, the GPU Operator's GPUCluster, KubeVirt and
OpenShift's HyperConverged CRs (when their CRDs exist), the pods and VMIs that ask for NVIDIA resources or claims, the
operand DaemonSets and their pods, the plugins of every other manager of GPUs
(`catalog/managers.yaml`: the standalone device plugin and GPU feature discovery, NVIDIA's
KubeVirt plugin, the DRA driver, GKE's plugin, HAMi) with their DaemonSets and the
ConfigMaps those mount (the device plugin's sharing config), the vGPU config ConfigMap the
ClusterPolicy names, DRA's
ResourceSlices, ResourceClaims, ResourceClaimTemplates and DeviceClasses (resource.k8s.io/v1,
when the cluster serves it), and recent Events about those objects.
Kinds whose CRD is not installed, or that the account may not list, are reported as
skipped instead of failing the whole collection. `gpuop collect` writes the result as a
bundle directory (one JSON file per kind, see `BUNDLE_FILES`) that `gpuop check DIR` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from lightkube.resources.core_v1 import ConfigMap

from gpuop.api.labels import APP_LABEL, APP_NAME_LABEL
from gpuop.api.resources import RESOURCE_PREFIX
from gpuop.catalog import operand_table
from gpuop.check.plugin_signals import plugin_manager
from gpuop.kube.errors import API_ERRORS, status_code, unanswered
from gpuop.kube.reading import Lister, ReadError, as_dict, read_kinds, unreachable

# kind -> (bundle file name, apiVersion of its list)
BUNDLE_FILES: Mapping[str, tuple[str, str]] = {
    "Node": ("nodes.json", "v1"),
    "ClusterPolicy": ("clusterpolicies.json", "nvidia.com/v1"),
    "GPUCluster": ("gpuclusters.json", "nvidia.com/v1alpha1"),
    "KubeVirt": ("kubevirts.json", "kubevirt.io/v1"),
    "HyperConverged": ("hyperconvergeds.json", "hco.kubevirt.io/v1beta1"),
    "VirtualMachineInstance": ("virtualmachineinstances.json", "kubevirt.io/v1"),
    "Pod": ("pods.json", "v1"),
    "DaemonSet": ("daemonsets.json", "apps/v1"),
    "Deployment": ("deployments.json", "apps/v1"),
    "ConfigMap": ("configmaps.json", "v1"),
    "Event": ("events.json", "v1"),
    "ResourceSlice": ("resourceslices.json", "resource.k8s.io/v1"),
    "ResourceClaim": ("resourceclaims.json", "resource.k8s.io/v1"),
    "ResourceClaimTemplate": ("resourceclaimtemplates.json", "resource.k8s.io/v1"),
    "DeviceClass": ("deviceclasses.json", "resource.k8s.io/v1"),
}


#: The cluster cannot be read at all (unreachable, TLS, timeouts): the one reader's error.
CollectError = ReadError


@dataclass
class Collected:
    """Objects by kind, and the kinds that could not be read (with the reason)."""

    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # kind -> how many the server listed, kept or not.
    listed: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    collected_at: str = ""

    def all_objects(self) -> list[dict[str, Any]]:
        return [obj for kind in BUNDLE_FILES for obj in self.objects.get(kind, [])]


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    current: Any = obj
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def _requests_nvidia(pod: Mapping[str, Any]) -> bool:
    spec = _get(pod, "spec") or {}
    for section in ("containers", "initContainers"):
        for container in spec.get(section) or []:
            resources = _get(container, "resources") or {}
            for kind in ("limits", "requests"):
                if any(str(k).startswith(RESOURCE_PREFIX) for k in (resources.get(kind) or {})):
                    return True
    return False


def _claims_devices(pod: Mapping[str, Any]) -> bool:
    return bool(_get(pod, "spec", "resourceClaims"))


def _operand_daemonset(pod: Mapping[str, Any], names: frozenset[str]) -> bool:
    for owner in _get(pod, "metadata", "ownerReferences") or []:
        if (
            isinstance(owner, Mapping)
            and owner.get("kind") == "DaemonSet"
            and owner.get("name") in names
        ):
            return True
    return False


def _is_gpu_operator(deployment: Mapping[str, Any]) -> bool:
    labels = _get(deployment, "metadata", "labels") or {}
    if "gpu-operator" in (labels.get(APP_NAME_LABEL), labels.get(APP_LABEL)):
        return True
    containers = _get(deployment, "spec", "template", "spec", "containers") or []
    return any("/gpu-operator:" in str(c.get("image") or "") for c in containers)


def _uses_devices(vmi: Mapping[str, Any]) -> bool:
    devices = _get(vmi, "spec", "domain", "devices") or {}
    return bool(devices.get("gpus") or devices.get("hostDevices"))


def _stamp(event: Mapping[str, Any]) -> str:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    created = _get(event, "metadata", "creationTimestamp")
    return created if isinstance(created, str) else ""


def collect(
    client: Lister,
    *,
    progress: Callable[[str], None] | None = None,
    events_since: timedelta = timedelta(hours=2),
    max_events: int = 2000,
    now: datetime | None = None,
) -> Collected:
    """Everything `gpuop check` reads, from the cluster `client` talks to."""
    say = progress or (lambda _: None)
    moment = now or datetime.now(UTC)
    result = Collected(collected_at=moment.strftime("%Y-%m-%dT%H:%M:%SZ"))
    daemonset_names = frozenset(op.daemonset for op in operand_table().operands)

    def listed(
        kind: str, keep: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        read = read_kinds(client, [kind], progress=say, keep=None if keep is None else {kind: keep})
        result.skipped.extend(read.skipped)
        result.listed[kind] = read.listed.get(kind, 0)
        return read.objects

    nodes = listed("Node")
    result.objects["Node"] = nodes
    say(f"  {len(nodes)} nodes")
    policies = listed("ClusterPolicy")
    result.objects["ClusterPolicy"] = policies
    result.objects["GPUCluster"] = listed("GPUCluster")
    result.objects["KubeVirt"] = listed("KubeVirt")
    result.objects["HyperConverged"] = listed("HyperConverged")
    result.objects["VirtualMachineInstance"] = listed("VirtualMachineInstance", _uses_devices)
    # Pods, DaemonSets, Deployments and Events are filtered as they are listed: a fleet's
    # worth of them is never held at once.
    kept_pods = listed(
        "Pod",
        lambda p: (
            _requests_nvidia(p)
            or _claims_devices(p)
            or _operand_daemonset(p, daemonset_names)
            or plugin_manager(p) is not None
        ),
    )
    result.objects["Pod"] = kept_pods
    say(
        f"  {len(kept_pods)} of {result.listed.get('Pod', 0)} pods use NVIDIA resources or"
        " claims, or are operands or GPU plugins"
    )
    # DRA: a cluster that does not serve resource.k8s.io/v1 is skipped like a missing CRD.
    for kind in ("ResourceSlice", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass"):
        result.objects[kind] = listed(kind)
    # The operator's operands, and the plugins of every other manager of GPUs.
    result.objects["DaemonSet"] = listed(
        "DaemonSet",
        lambda ds: (
            _get(ds, "metadata", "name") in daemonset_names
            or plugin_manager(ds, "spec", "template") is not None
        ),
    )
    # The operator's own Deployment: its image tag names the release that labels the nodes.
    result.objects["Deployment"] = listed("Deployment", _is_gpu_operator)
    result.objects["ConfigMap"] = _vgpu_config_maps(client, policies, result, say)
    result.objects["ConfigMap"] += _plugin_config_maps(client, result, say)

    wanted = {
        (obj.get("kind"), _get(obj, "metadata", "namespace") or "", _get(obj, "metadata", "name"))
        for kind in ("Pod", "VirtualMachineInstance", "DaemonSet", "KubeVirt", "HyperConverged")
        for obj in result.objects.get(kind, [])
    }
    node_names = {_get(node, "metadata", "name") for node in nodes}
    since = (moment - events_since).strftime("%Y-%m-%dT%H:%M:%SZ")

    def relevant(event: dict[str, Any]) -> bool:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        key = (involved.get("kind"), involved.get("namespace") or "", involved.get("name"))
        return _stamp(event) >= since and (
            key in wanted
            or key[0] == "ClusterPolicy"
            or (key[0] == "Node" and key[2] in node_names and event.get("type") == "Warning")
            or RESOURCE_PREFIX in str(event.get("message") or "")
        )

    kept_events = listed("Event", relevant)
    kept_events.sort(key=_stamp, reverse=True)
    result.objects["Event"] = kept_events[:max_events]
    say(f"  {len(result.objects['Event'])} recent events kept")
    return result


def _plugin_config_maps(
    client: Lister, result: Collected, say: Callable[[str], None]
) -> list[dict[str, Any]]:
    """The ConfigMaps the GPU plugins' DaemonSets mount (the device plugin's sharing config)."""
    wanted = sorted(
        {
            (str(_get(ds, "metadata", "namespace") or ""), str(volume["configMap"]["name"]))
            for ds in result.objects.get("DaemonSet", [])
            if plugin_manager(ds, "spec", "template") is not None
            for volume in _get(ds, "spec", "template", "spec", "volumes") or []
            if isinstance(volume, Mapping)
            and isinstance(volume.get("configMap"), Mapping)
            and volume["configMap"].get("name")
        }
    )
    return _read_config_maps(client, wanted, result, say)


def _vgpu_config_maps(
    client: Lister,
    policies: list[dict[str, Any]],
    result: Collected,
    say: Callable[[str], None],
) -> list[dict[str, Any]]:
    wanted = []
    for policy in policies:
        name = _get(policy, "spec", "vgpuDeviceManager", "config", "name")
        namespace = _get(policy, "status", "namespace")
        if isinstance(name, str) and name and isinstance(namespace, str) and namespace:
            wanted.append((namespace, name))
    return _read_config_maps(client, wanted, result, say)


def _read_config_maps(
    client: Lister,
    wanted: list[tuple[str, str]],
    result: Collected,
    say: Callable[[str], None],
) -> list[dict[str, Any]]:
    """The ConfigMaps (namespace, name) that exist; each missing or refused one skipped
    with the reason."""
    found = []
    for namespace, name in wanted:
        say(f"reading ConfigMap {namespace}/{name}")
        try:
            found.append(as_dict(client.get(ConfigMap, name, namespace=namespace)))
        except API_ERRORS as exc:
            if unanswered(exc):
                raise unreachable(exc) from None
            code = status_code(exc)
            why = "not found" if code == 404 else f"the API answered {code}"
            result.skipped.append(("ConfigMap", f"{namespace}/{name}: {why}"))
    for obj in found:
        obj.setdefault("kind", "ConfigMap")
    return found


__all__ = [
    "BUNDLE_FILES",
    "CollectError",
    "Collected",
    "Lister",
    "collect",
]
