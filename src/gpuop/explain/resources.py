"""What a pod requests and what a node offers, counted the scheduler's way.

The arithmetic follows three upstream places:

* API defaulting (``pkg/apis/core/v1/defaults.go``): a container limit with
  no request sets the request, per resource, extended resources included;
  pod-level limits default pod-level requests.
* ``k8s.io/component-helpers/resource.PodRequests``: the sum of the app
  containers and of the restartable init ("sidecar") containers, raised to
  the largest running init container (plus the sidecars started before
  it), then pod-level requests for cpu, memory and hugepages replace the
  container totals, then ``spec.overhead`` is added.  For pods already on
  a node, in-place resize counts the larger of the spec and what the
  kubelet allocated or actuated.  Quantities are summed exactly and
  rounded up only when converted.
* ``framework.Resource``: cpu in millicores (``MilliValue``); memory,
  ephemeral storage and scalar resources in units (``Value``); the node's
  ``pods`` allocatable as its pod slots.  "Scalar" resources are extended
  resources (``vendor.example/name``), hugepages, attachable volumes and
  ``*kubernetes.io/*`` resources; other names are ignored.

Problems that the API server would have refused (bad quantities, fractional
or overcommitted extended resources) are reported as warnings, and the
offending entry is skipped or rounded as upstream would round it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from gpuop.manifests import QuantityError, milli_value, parse_quantity, value
from gpuop.manifests.fields import get, mapping, sequence, text

__all__ = [
    "Resource",
    "container_requests",
    "is_extended_resource_name",
    "is_scalar_resource_name",
    "node_allocatable",
    "pod_requests",
    "requested_extended_resources",
]

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"

_QNAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN: Final = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def is_qualified_name(name: str) -> bool:
    """apimachinery ``IsQualifiedName``: ``[prefix/]name``, as label keys are."""
    parts = name.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return False
    short = parts[-1]
    return 0 < len(short) <= 63 and _QNAME.match(short) is not None


def is_label_value(candidate: str) -> bool:
    """apimachinery ``IsValidLabelValue``."""
    return len(candidate) <= 63 and _LABEL_VALUE.match(candidate) is not None


def _is_prefixed_native(name: str) -> bool:
    return "kubernetes.io/" in name


def is_extended_resource_name(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a qualified ``domain/name`` outside kubernetes.io."""
    if "/" not in name or _is_prefixed_native(name) or name.startswith("requests."):
        return False
    return is_qualified_name("requests." + name)


def is_scalar_resource_name(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: resources the scheduler counts by name."""
    return (
        is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or _is_prefixed_native(name)
        or name.startswith("attachable-volumes-")
    )


def _is_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith("hugepages-")


ResourceList = dict[str, Decimal]


def _parse_list(raw: Any, where: str, warnings: list[str]) -> ResourceList:
    parsed: ResourceList = {}
    if not isinstance(raw, Mapping):
        return parsed
    for name, quantity in raw.items():
        key = str(name)
        try:
            parsed[key] = parse_quantity(quantity)
        except QuantityError as exc:
            warnings.append(f"{where}: {key}: {exc.problem} (ignored)")
    return parsed


def _add(total: ResourceList, more: Mapping[str, Decimal]) -> None:
    for name, quantity in more.items():
        total[name] = total.get(name, Decimal(0)) + quantity


def _max_into(total: ResourceList, more: Mapping[str, Decimal]) -> None:
    for name, quantity in more.items():
        if name not in total or quantity > total[name]:
            total[name] = quantity


def container_requests(
    container: Mapping[str, Any], where: str, warnings: list[str]
) -> ResourceList:
    """A container's requests after API defaulting (limits fill missing requests)."""
    requests = _parse_list(
        mapping(container, "resources", "requests"), f"{where} requests", warnings
    )
    limits = _parse_list(mapping(container, "resources", "limits"), f"{where} limits", warnings)
    for name, limit in limits.items():
        requests.setdefault(name, limit)
    for name, request in requests.items():
        if not is_extended_resource_name(name):
            continue
        if request != request.to_integral_value():
            warnings.append(
                f"{where}: {name} must be a whole number, not {request} "
                "(the API server refuses this pod; counted rounded up)"
            )
        if name in limits and limits[name] != request:
            warnings.append(
                f"{where}: {name} request {request} must equal its limit {limits[name]} "
                "(the API server refuses this pod)"
            )
    return requests


def _is_sidecar(container: Mapping[str, Any]) -> bool:
    return text(container, "restartPolicy") == "Always"


def _resize_infeasible(pod: Mapping[str, Any]) -> bool:
    return any(
        isinstance(c, Mapping)
        and c.get("type") == "PodResizePending"
        and c.get("reason") == "Infeasible"
        for c in sequence(pod, "status", "conditions")
    )


def _container_status(pod: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for key in ("containerStatuses", "initContainerStatuses"):
        for status in sequence(pod, "status", key):
            if isinstance(status, Mapping) and status.get("name") == name:
                return status
    return None


#: How to read one container's requests: (pod, container, spec requests) -> list or None.
_Reader = Callable[[Mapping[str, Any], Mapping[str, Any], ResourceList], ResourceList | None]


def _allocated(
    pod: Mapping[str, Any], container: Mapping[str, Any], spec: ResourceList
) -> ResourceList | None:
    """``containerAllocatedRequests``."""
    status = _container_status(pod, text(container, "name"))
    if status is not None and isinstance(status.get("allocatedResources"), Mapping):
        return _parse_list(status["allocatedResources"], "status", [])
    return None if _resize_infeasible(pod) else spec


def _actuated(
    pod: Mapping[str, Any], container: Mapping[str, Any], spec: ResourceList
) -> ResourceList | None:
    """``containerActuatedRequests``."""
    status = _container_status(pod, text(container, "name"))
    if status is not None:
        actual = mapping(status, "resources").get("requests")
        if isinstance(actual, Mapping):
            return _parse_list(actual, "status", [])
        if isinstance(status.get("allocatedResources"), Mapping):
            return _parse_list(status["allocatedResources"], "status", [])
    return None if _resize_infeasible(pod) else spec


def _aggregate(
    pod: Mapping[str, Any], specs: list[ResourceList], inits: list[ResourceList], read: _Reader
) -> ResourceList:
    """``aggregateContainerResourcesByFn``: app containers and sidecars, raised to the init peak."""
    total: ResourceList = {}
    for container, spec in zip(sequence(pod, "spec", "containers"), specs, strict=True):
        _add(total, read(pod, container, spec) or {})
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container, spec in zip(sequence(pod, "spec", "initContainers"), inits, strict=True):
        reqs = read(pod, container, spec) or {}
        if _is_sidecar(container):
            _add(total, reqs)
            _add(sidecars, reqs)
            running = dict(sidecars)
        else:
            running = dict(reqs)
            _add(running, sidecars)
        _max_into(init_peak, running)
    _max_into(total, init_peak)
    return total


def _maximum(*lists: ResourceList | None) -> ResourceList:
    result: ResourceList = {}
    for each in lists:
        _max_into(result, each or {})
    return result


def _aggregate_container_requests(
    pod: Mapping[str, Any], use_status: bool, warnings: list[str]
) -> ResourceList:
    """``AggregateContainerRequests``.

    With ``use_status`` (a pod already on a node, in-place resize on), the
    result is the larger of what the spec asks, what the kubelet allocated
    and what is actuated, each summed over the containers.
    """
    specs = [
        container_requests(c, f"container {text(c, 'name') or i!s}", warnings)
        for i, c in enumerate(sequence(pod, "spec", "containers"))
    ]
    inits = [
        container_requests(c, f"init container {text(c, 'name') or i!s}", warnings)
        for i, c in enumerate(sequence(pod, "spec", "initContainers"))
    ]
    spec_total = _aggregate(pod, specs, inits, lambda _p, _c, spec: spec)
    if not use_status:
        return spec_total
    pod_allocated = get(pod, "status", "allocatedResources")
    pod_actual = get(pod, "status", "resources", "requests")
    if isinstance(pod_allocated, Mapping) and isinstance(pod_actual, Mapping):
        allocated = _parse_list(pod_allocated, "status", [])
        actuated = _parse_list(pod_actual, "status", [])
    else:
        allocated = _aggregate(pod, specs, inits, _allocated)
        actuated = _aggregate(pod, specs, inits, _actuated)
    if _resize_infeasible(pod):
        return _maximum(actuated, allocated)
    return _maximum(spec_total, actuated, allocated)


def _pod_level_requests(
    pod: Mapping[str, Any], aggregate: ResourceList, use_status: bool, warnings: list[str]
) -> ResourceList:
    """Pod-level requests after ``defaultPodRequests``, supported resources only."""
    resources = mapping(pod, "spec", "resources")
    requests = _parse_list(resources.get("requests"), "pod-level requests", warnings)
    limits = _parse_list(resources.get("limits"), "pod-level limits", warnings)
    if limits:
        for name, quantity in aggregate.items():
            # Overcommittable (cpu, memory) pod-level requests default to the containers' total.
            if name not in requests and name in (CPU, MEMORY):
                requests[name] = quantity
        for name, limit in limits.items():
            if name not in requests and _is_pod_level_resource(name):
                requests[name] = limit
    if not any(_is_pod_level_resource(name) for name in requests):
        return {}
    actual = get(pod, "status", "resources", "requests")
    if use_status and isinstance(actual, Mapping):
        # effectivePodLevelResources
        spec = None if _resize_infeasible(pod) else requests
        requests = _maximum(
            spec,
            _parse_list(actual, "status", []),
            _parse_list(get(pod, "status", "allocatedResources"), "status", []),
        )
    return {name: q for name, q in requests.items() if _is_pod_level_resource(name)}


def pod_requests(
    pod: Mapping[str, Any],
    warnings: list[str],
    *,
    use_status: bool = False,
    pod_level_resources: bool = True,
) -> ResourceList:
    """``resource.PodRequests``: the exact total a pod asks for, per resource.

    ``use_status`` reads in-place-resized requests from the pod status, as
    the scheduler does for pods already on a node.
    """
    total = _aggregate_container_requests(pod, use_status, warnings)
    if pod_level_resources:
        total.update(_pod_level_requests(pod, total, use_status, warnings))
    _add(total, _parse_list(mapping(pod, "spec", "overhead"), "overhead", warnings))
    return total


@dataclass
class Resource:
    """``framework.Resource``: integer amounts in the scheduler's units."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pods: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, resources: Mapping[str, Decimal]) -> Resource:
        """``Resource.Add`` of a resource list onto an empty Resource."""
        result = cls()
        for name, quantity in resources.items():
            if name == CPU:
                result.milli_cpu += milli_value(quantity)
            elif name == MEMORY:
                result.memory += value(quantity)
            elif name == PODS:
                result.allowed_pods += value(quantity)
            elif name == EPHEMERAL_STORAGE:
                result.ephemeral_storage += value(quantity)
            elif is_scalar_resource_name(name):
                result.scalar[name] = result.scalar.get(name, 0) + value(quantity)
        return result

    def add(self, other: Resource) -> None:
        """Add another pod's requests (``NodeInfo.update``); pod slots are not summed."""
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + amount

    def subtract(self, other: Resource) -> None:
        """Take a pod's requests away again (preemption's dry run)."""
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) - amount

    def copy(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pods,
            dict(self.scalar),
        )

    def as_quantities(self) -> dict[str, str]:
        """Non-zero amounts as quantity strings (cpu in ``m``), for reports."""
        shown: dict[str, str] = {}
        if self.milli_cpu:
            shown[CPU] = f"{self.milli_cpu}m"
        if self.memory:
            shown[MEMORY] = str(self.memory)
        if self.ephemeral_storage:
            shown[EPHEMERAL_STORAGE] = str(self.ephemeral_storage)
        for name in sorted(self.scalar):
            if self.scalar[name]:
                shown[name] = str(self.scalar[name])
        return shown


def node_allocatable(node: Mapping[str, Any], warnings: list[str]) -> Resource:
    """A node's ``status.allocatable`` (defaulted from capacity when absent)."""
    status = mapping(node, "status")
    raw = status.get("allocatable")
    if not isinstance(raw, Mapping) or not raw:
        raw = status.get("capacity")
    name = text(node, "metadata", "name")
    return Resource.of(_parse_list(raw, f"node {name} allocatable", warnings))


def advertised_resources(node: Mapping[str, Any]) -> set[str]:
    """Resource names a node lists in allocatable or capacity, whatever the amount."""
    names: set[str] = set()
    for key in ("allocatable", "capacity"):
        names.update(str(k) for k in mapping(node, "status", key))
    return names


def requested_extended_resources(requests: Iterable[tuple[str, Decimal]]) -> list[str]:
    """Extended resources among ``requests`` with a non-zero amount, sorted."""
    return sorted({name for name, q in requests if q != 0 and is_extended_resource_name(name)})
