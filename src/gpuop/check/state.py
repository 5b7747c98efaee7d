"""`ClusterState`: the objects of a dump, sorted by kind, read without trusting any field.

Input comes from files people hand in, so any item may be a non-mapping, any field missing
or of the wrong type. Items the checks cannot use are kept as `Ignored` (each becomes a
GPU004 finding) instead of raising. Nodes are read once into `NodeView`, which also holds
the projection of the node the planner reads, so identical nodes share one plan. Pods are
read once into `PodView` (a fleet's tens of thousands of pods are visited by several
checks), on first use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from operator import methodcaller
from typing import Any, NamedTuple, TypeGuard

from gpuop.api.labels import (
    GFD_TIMESTAMP_LABEL,
    INVENTORY_ANNOTATION,
    NFD_PCI_PREFIX,
    NVIDIA_PREFIX,
)
from gpuop.api.resources import RESOURCE_PREFIX
from gpuop.api.wording import value_kind
from gpuop.catalog import operand_table
from gpuop.catalog.managers import gpu_conditions
from gpuop.manifests import QuantityError, parse_quantity
from gpuop.manifests.fields import scalar_text

# Kinds the checks read; anything else is counted and otherwise left alone.
KNOWN_KINDS = (
    "Node",
    "ClusterPolicy",
    "GPUCluster",
    "KubeVirt",
    "HyperConverged",
    "Pod",
    "VirtualMachineInstance",
    "DaemonSet",
    "Event",
    "ConfigMap",
    "Deployment",
    "ResourceSlice",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "DeviceClass",
)
# Labels that differ on every node and that the planner never reads; left out of the
# planning key so that nodes of one shape share a plan.
_VOLATILE_LABELS = frozenset({GFD_TIMESTAMP_LABEL})
_PLANNED_PREFIXES = (NVIDIA_PREFIX, NFD_PCI_PREFIX)


def _extra_selector_keys() -> frozenset[str]:
    keys: set[str] = set()
    for operand in operand_table().operands:
        keys.update(operand.extra_node_selector)
    return frozenset(keys)


_EXTRA_SELECTOR_KEYS = _extra_selector_keys()


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    # `type(...) is dict` first: the ABC check is slow and dicts are what JSON gives.
    return type(value) is dict or isinstance(value, Mapping)


def _all_str(values: Iterable[Any]) -> bool:
    # map/set run in C: much cheaper than a Python-level loop over every label.
    return set(map(type, values)) <= {str}


def string_map(value: Any) -> Mapping[str, str]:
    """A label-like mapping as strings (YAML `true` is `"true"`); {} when not a mapping.

    A dict that already holds only strings (anything from the API) is returned as is;
    callers only read it.
    """
    if not _is_mapping(value):
        return {}
    if type(value) is dict and _all_str(value) and _all_str(value.values()):
        return value
    out: dict[str, str] = {}
    for key, item in value.items():
        out[key if isinstance(key, str) else str(key)] = (
            item if isinstance(item, str) else scalar_text(item)
        )
    return out


_IS_PLANNED = methodcaller("startswith", _PLANNED_PREFIXES)


def planned_keys(labels: Mapping[str, str]) -> list[str]:
    """The keys of the labels `plan()` can read: NVIDIA's, NFD's PCI labels, DaemonSet selectors.

    Filtered with C-level calls (nodes carry a hundred or more NFD labels each).
    """
    keys = set(filter(_IS_PLANNED, labels))
    keys |= labels.keys() & _EXTRA_SELECTOR_KEYS
    keys -= _VOLATILE_LABELS
    return list(keys)


def planned_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels `plan()` can read, as a mapping."""
    return {key: labels[key] for key in planned_keys(labels)}


@dataclass(frozen=True)
class NodeView:
    """The parts of a Node the checks read, as strings."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    # status.allocatable (status.capacity when allocatable is absent), values as given.
    resources: Mapping[str, Any]
    planned_items: frozenset[tuple[str, str]]
    planned_resources: Mapping[str, str]
    inventory: str | None
    plan_key: tuple[
        frozenset[tuple[str, str]],
        str | None,
        frozenset[tuple[str, str]],
        frozenset[tuple[str, str]],
    ]
    # status.capacity's NVIDIA resources: every device a plugin registered.
    planned_capacity: Mapping[str, str] = field(default_factory=dict)
    # status.nodeInfo.osImage: some platforms build the device plugin into the OS.
    os_image: str = ""
    # spec.taints that keep pods off (NoSchedule, NoExecute), as `key=value:effect`.
    taints: tuple[str, ...] = ()
    # status.conditions a platform sets for GPU faults (gpu-conditions.yaml) that are True,
    # as (type, reason, message).
    gpu_conditions: tuple[tuple[str, str, str], ...] = ()
    # False where the input has neither status.capacity nor status.allocatable (a node
    # from `kubectl get nodes --show-labels`, or trimmed): what it advertises is unknown.
    resources_known: bool = True

    @property
    def planned_labels(self) -> dict[str, str]:
        """The labels the planner reads (see `planned_keys`)."""
        return dict(self.planned_items)


@dataclass(frozen=True)
class Ignored:
    """An input item the checks could not use."""

    position: int
    kind: str
    name: str
    reason: str


_FINAL_POD_PHASES = ("Succeeded", "Failed")


def resource_count(raw: Any) -> tuple[int | None, str | None]:
    """(count, None) for a whole-number quantity, (None, problem) otherwise."""
    if isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) < 19:
        return int(raw), None
    if isinstance(raw, bool) or not isinstance(raw, str | int | float | Decimal):
        return None, f"is {value_kind(raw)}, not a quantity"
    try:
        value = parse_quantity(raw)
    except QuantityError:
        shown = raw if not isinstance(raw, str) or len(raw) <= 40 else raw[:40] + "..."
        return None, f"is {shown!r}, not a quantity"
    if value != value.to_integral_value():
        return None, f"{raw!r} is not a whole number"
    return int(value), None


def _container_requests(container: Mapping[str, Any], total: dict[str, int], init: bool) -> None:
    """Add a container's NVIDIA requests to `total`: summed for app containers, the
    larger for init containers (limits count as requests for extended resources)."""
    resources = container.get("resources")
    if not _is_mapping(resources):
        return
    own: dict[str, int] = {}
    for section in ("limits", "requests"):
        values = resources.get(section)
        if not values or not _is_mapping(values):
            continue
        for key, raw in values.items():
            if not isinstance(key, str) or not key.startswith(RESOURCE_PREFIX):
                continue
            count, _ = resource_count(raw)
            if count is not None and count > 0 and count > own.get(key, 0):
                own[key] = count
    for key, count in own.items():
        total[key] = max(total.get(key, 0), count) if init else total.get(key, 0) + count


class PodView(NamedTuple):
    """The parts of a Pod several checks read, as strings; `obj` for the rest (a tuple:
    made for every pod of a fleet, where a frozen dataclass costs twice as much)."""

    name: str
    namespace: str
    node: str
    phase: str
    labels: Mapping[str, str]
    # (kind, name) of each ownerReference.
    owners: tuple[tuple[str, str], ...]
    # The images of the containers, then of the init containers.
    images: tuple[str, ...]
    # The NVIDIA resources it asks for, as the scheduler sums them (per resource, the
    # larger of the summed app containers and the largest init container).
    requests: dict[str, int]
    obj: Mapping[str, Any]

    @property
    def active(self) -> bool:
        """Whether the pod still holds what it asked for (not Succeeded or Failed)."""
        return self.phase not in _FINAL_POD_PHASES


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _pod_view(pod: Mapping[str, Any]) -> PodView:
    metadata = pod.get("metadata")
    meta: Mapping[str, Any] = metadata if _is_mapping(metadata) else {}
    spec_value = pod.get("spec")
    spec: Mapping[str, Any] = spec_value if _is_mapping(spec_value) else {}
    status = pod.get("status")
    phase = status.get("phase") if _is_mapping(status) else None
    owner_list = meta.get("ownerReferences")
    owners = tuple(
        [
            (_text(owner.get("kind")), _text(owner.get("name")))
            for owner in (owner_list if isinstance(owner_list, list) else ())
            if _is_mapping(owner)
        ]
    )
    images: list[str] = []
    requests: dict[str, int] = {}
    for section in ("containers", "initContainers"):
        containers = spec.get(section)
        for container in containers if isinstance(containers, list) else ():
            if not _is_mapping(container):
                continue
            image = container.get("image")
            if isinstance(image, str) and image:
                images.append(image)
            _container_requests(container, requests, section == "initContainers")
    return PodView(
        _text(meta.get("name")),
        _text(meta.get("namespace")),
        _text(spec.get("nodeName")),
        _text(phase),
        string_map(meta.get("labels")),
        owners,
        tuple(images),
        requests,
        pod,
    )


@dataclass(frozen=True)
class ClusterState:
    """A cluster as far as the input tells: objects by kind, plus what was unusable."""

    nodes: tuple[NodeView, ...] = ()
    cluster_policies: tuple[Mapping[str, Any], ...] = ()
    # The GPU Operator's DRA stack (nvidia.com/v1alpha1), a singleton.
    gpu_clusters: tuple[Mapping[str, Any], ...] = ()
    kubevirts: tuple[Mapping[str, Any], ...] = ()
    # OpenShift Virtualization's HyperConverged CR, which owns the KubeVirt CR's settings.
    hyperconvergeds: tuple[Mapping[str, Any], ...] = ()
    pods: tuple[Mapping[str, Any], ...] = ()
    vmis: tuple[Mapping[str, Any], ...] = ()
    daemonsets: tuple[Mapping[str, Any], ...] = ()
    events: tuple[Mapping[str, Any], ...] = ()
    configmaps: tuple[Mapping[str, Any], ...] = ()
    # The operator's Deployment carries its release in the image tag.
    deployments: tuple[Mapping[str, Any], ...] = ()
    # resource.k8s.io: what DRA drivers publish, what workloads claim, and the classes.
    resource_slices: tuple[Mapping[str, Any], ...] = ()
    resource_claims: tuple[Mapping[str, Any], ...] = ()
    resource_claim_templates: tuple[Mapping[str, Any], ...] = ()
    device_classes: tuple[Mapping[str, Any], ...] = ()
    ignored: tuple[Ignored, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)

    @cached_property
    def pod_views(self) -> tuple[PodView, ...]:
        """`pods`, each read once."""
        return tuple(map(_pod_view, self.pods))

    @cached_property
    def active_pods_by_node(self) -> Mapping[str, tuple[PodView, ...]]:
        """The pods bound to each node that are neither Succeeded nor Failed."""
        found: dict[str, list[PodView]] = {}
        for pod in self.pod_views:
            if pod.node and pod.phase not in _FINAL_POD_PHASES:
                found.setdefault(pod.node, []).append(pod)
        return {node: tuple(pods) for node, pods in found.items()}

    @classmethod
    def from_objects(cls, objects: Iterable[Any]) -> ClusterState:
        """Sort objects by kind; never raises for odd items."""
        buckets: dict[str, list[Mapping[str, Any]]] = {kind: [] for kind in KNOWN_KINDS}
        nodes: list[NodeView] = []
        seen_nodes: set[str] = set()
        ignored: list[Ignored] = []
        counts: dict[str, int] = {}
        for position, obj in enumerate(objects):
            if not _is_mapping(obj):
                ignored.append(
                    Ignored(
                        position, "", "", f"item {position} is {value_kind(obj)}, not an object"
                    )
                )
                continue
            kind = obj.get("kind")
            if not isinstance(kind, str) or not kind:
                ignored.append(Ignored(position, "", "", f"item {position} has no kind"))
                continue
            counts[kind] = counts.get(kind, 0) + 1
            if kind not in buckets:
                continue
            metadata = obj.get("metadata")
            name = metadata.get("name") if _is_mapping(metadata) else None
            if not isinstance(name, str) or not name:
                ignored.append(
                    Ignored(position, kind, "", f"item {position} ({kind}) has no metadata.name")
                )
                continue
            if kind == "Node":
                if name in seen_nodes:
                    ignored.append(
                        Ignored(
                            position, kind, name, f"Node {name} appears twice; the first is used"
                        )
                    )
                    continue
                seen_nodes.add(name)
                assert isinstance(metadata, Mapping)
                nodes.append(_node_view(name, metadata, obj.get("status"), obj.get("spec")))
            else:
                buckets[kind].append(obj)
        return cls(
            nodes=tuple(nodes),
            cluster_policies=tuple(buckets["ClusterPolicy"]),
            gpu_clusters=tuple(buckets["GPUCluster"]),
            kubevirts=tuple(buckets["KubeVirt"]),
            hyperconvergeds=tuple(buckets["HyperConverged"]),
            pods=tuple(buckets["Pod"]),
            vmis=tuple(buckets["VirtualMachineInstance"]),
            daemonsets=tuple(buckets["DaemonSet"]),
            events=tuple(buckets["Event"]),
            configmaps=tuple(buckets["ConfigMap"]),
            deployments=tuple(buckets["Deployment"]),
            resource_slices=tuple(buckets["ResourceSlice"]),
            resource_claims=tuple(buckets["ResourceClaim"]),
            resource_claim_templates=tuple(buckets["ResourceClaimTemplate"]),
            device_classes=tuple(buckets["DeviceClass"]),
            ignored=tuple(ignored),
            counts=counts,
        )


def _gpu_conditions(status: Any) -> tuple[tuple[str, str, str], ...]:
    conditions = status.get("conditions") if _is_mapping(status) else None
    if not isinstance(conditions, list):
        return ()
    known = gpu_conditions().conditions
    return tuple(
        (str(c["type"]), str(c.get("reason") or ""), str(c.get("message") or ""))
        for c in conditions
        if _is_mapping(c)
        and isinstance(c.get("type"), str)
        and c["type"] in known
        and c.get("status") == "True"
    )


def _repelling_taints(spec: Any) -> tuple[str, ...]:
    taints = spec.get("taints") if _is_mapping(spec) else None
    if not isinstance(taints, list):
        return ()
    shown = []
    for taint in taints:
        if not _is_mapping(taint) or taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        value = taint.get("value")
        shown.append(f"{taint.get('key')}{f'={value}' if value else ''}:{taint['effect']}")
    return tuple(shown)


def _node_view(name: str, metadata: Mapping[str, Any], status: Any, spec: Any) -> NodeView:
    labels = string_map(metadata.get("labels"))
    annotations = string_map(metadata.get("annotations"))
    resources: Mapping[str, Any] = {}
    planned_capacity: dict[str, str] = {}
    os_image = ""
    resources_known = _is_mapping(status) and (
        _is_mapping(status.get("capacity")) or _is_mapping(status.get("allocatable"))
    )
    if _is_mapping(status):
        node_info = status.get("nodeInfo")
        image = node_info.get("osImage") if _is_mapping(node_info) else None
        os_image = image if isinstance(image, str) else ""
        allocatable = status.get("allocatable")
        capacity = status.get("capacity")
        chosen = allocatable if _is_mapping(allocatable) and allocatable else capacity
        if _is_mapping(capacity):
            planned_capacity = {
                str(key): value if isinstance(value, str) else scalar_text(value)
                for key, value in capacity.items()
                if str(key).startswith(RESOURCE_PREFIX)
            }
        if type(chosen) is dict and _all_str(chosen):
            resources = chosen
        elif _is_mapping(chosen):
            resources = {str(k): v for k, v in chosen.items()}
    keys = planned_keys(labels)
    planned = frozenset(zip(keys, map(labels.__getitem__, keys), strict=True))
    planned_resources = {
        key: value if isinstance(value, str) else scalar_text(value)
        for key, value in resources.items()
        if key.startswith(RESOURCE_PREFIX)
    }
    inventory = annotations.get(INVENTORY_ANNOTATION)
    key = (
        planned,
        inventory,
        frozenset(planned_resources.items()),
        frozenset(planned_capacity.items()),
    )
    return NodeView(
        name=name,
        labels=labels,
        annotations=annotations,
        resources=resources,
        planned_items=planned,
        planned_resources=planned_resources,
        inventory=inventory,
        plan_key=key,
        planned_capacity=planned_capacity,
        os_image=os_image,
        taints=_repelling_taints(spec),
        gpu_conditions=_gpu_conditions(status),
        resources_known=resources_known,
    )


__all__ = [
    "KNOWN_KINDS",
    "ClusterState",
    "Ignored",
    "NodeView",
    "PodView",
    "planned_keys",
    "planned_labels",
    "resource_count",
    "string_map",
]
