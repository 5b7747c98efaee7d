"""The default profile's filter plugins, in the scheduler's order.

Each filter takes the pod (pre-digested as :class:`PodFacts`) and one
node's state (:class:`NodeState`) and returns None when the node passes,
or a :class:`~gpuop.explain.model.Status` carrying kube-scheduler's own
reason strings (v1.37) and whether preemption could help:

* NodeName: ``node(s) didn't match the requested node name`` (unresolvable;
  in practice NodeName's PreFilter already set the other nodes aside);
* NodeUnschedulable: ``node(s) were unschedulable`` (unresolvable);
* TaintToleration: ``node(s) had untolerated taint(s)`` (unresolvable);
* NodeAffinity: ``node(s) didn't match Pod's node affinity/selector``
  (unresolvable);
* NodePorts: ``node(s) didn't have free ports for the requested pod ports``;
* NodeResourcesFit: ``Too many pods`` and ``Insufficient <resource>``, every
  one that applies; unresolvable only when a request exceeds the node's
  whole allocatable amount;
* VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone: the pod's
  PersistentVolumeClaims (:mod:`gpuop.explain.volumes`);
* PodTopologySpread: ``node(s) didn't match pod topology spread constraints``,
  ``(missing required label)`` added when the node lacks a topology key
  (:mod:`gpuop.explain.spread`);
* InterPodAffinity: ``node(s) didn't match pod affinity rules`` (unresolvable),
  ``node(s) didn't match pod anti-affinity rules`` and ``node(s) didn't
  satisfy existing pods anti-affinity rules`` (:mod:`gpuop.explain.interpod`);
* NodeDeclaredFeatures: ``node(s) didn't match Pod's required features``
  (unresolvable; :mod:`gpuop.explain.features`). DynamicResources comes before it
  (the engine runs it between the two).

The taint reason no longer names the taint: kubernetes PR #134740 ("remove
taint values from unschedulable messages in pod status", in v1.35 and
backported to v1.34) replaced ``node(s) had untolerated taint {key:
value}``, which :attr:`ExplainOptions.name_untolerated_taint` brings back
for older clusters.  The taint is always given in the node's details.

:func:`run_filters` stops at the first plugin that rejects the node, as
``RunFilterPlugins`` does; :func:`run_filters_with_nominated` adds the
first pass with equal-or-higher-priority nominated pods
(``RunFilterPluginsWithNominatedPods``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from gpuop.explain import volumes
from gpuop.explain.features import PLUGIN as FEATURES_PLUGIN
from gpuop.explain.features import REASON_FEATURES
from gpuop.explain.interpod import AffinityTerm, InterPodState
from gpuop.explain.model import Code, Insufficient, Status
from gpuop.explain.resources import Resource
from gpuop.explain.selectors import NodeAffinity, Taint, Toleration, find_untolerated_taint
from gpuop.explain.spread import SpreadState
from gpuop.explain.volumes import PodVolumes
from gpuop.manifests.fields import get, sequence, text

__all__ = [
    "REASON_AFFINITY",
    "REASON_NODE_NAME",
    "REASON_PORTS",
    "REASON_TAINT",
    "REASON_UNSCHEDULABLE",
    "HostPort",
    "NodeState",
    "PodFacts",
    "PodOnNode",
    "host_ports",
    "run_filters",
    "run_filters_with_nominated",
]

REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"
REASON_NODE_NAME: Final = "node(s) didn't match the requested node name"
REASON_TAINT: Final = "node(s) had untolerated taint(s)"
REASON_AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
REASON_PORTS: Final = "node(s) didn't have free ports for the requested pod ports"
REASON_TOO_MANY_PODS: Final = "Too many pods"

_UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
_BIND_ALL: Final = "0.0.0.0"


@dataclass(frozen=True)
class HostPort:
    """A host port a container binds (``HostPortInfo`` entry, sanitized)."""

    ip: str
    protocol: str
    port: int

    def __str__(self) -> str:
        return f"{self.ip}:{self.port}/{self.protocol}"


def host_ports(pod: Mapping[str, Any]) -> tuple[HostPort, ...]:
    """``schedutil.GetHostPorts``: host ports of containers and sidecars."""
    containers = [
        c for c in sequence(pod, "spec", "initContainers") if text(c, "restartPolicy") == "Always"
    ] + sequence(pod, "spec", "containers")
    found: list[HostPort] = []
    for container in containers:
        for port in sequence(container, "ports"):
            number = get(port, "hostPort")
            if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
                continue
            found.append(
                HostPort(text(port, "hostIP") or _BIND_ALL, text(port, "protocol") or "TCP", number)
            )
    return tuple(found)


def _port_conflict(used: Sequence[HostPort], wanted: HostPort) -> bool:
    """``HostPortInfo.CheckConflict``."""
    same = [u for u in used if (u.protocol, u.port) == (wanted.protocol, wanted.port)]
    if wanted.ip == _BIND_ALL:
        return bool(same)
    return any(u.ip in (_BIND_ALL, wanted.ip) for u in same)


@dataclass(frozen=True)
class PodOnNode:
    """A pod that already holds resources on a node (or is nominated to it)."""

    key: str
    uid: str
    priority: int
    requests: Resource
    ports: tuple[HostPort, ...]
    start_time: str = ""
    namespace: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    #: Being deleted (``metadata.deletionTimestamp``): not counted by PodTopologySpread.
    terminating: bool = False
    #: Its required pod anti-affinity terms (InterPodAffinity holds other pods to them).
    anti_affinity: tuple[AffinityTerm, ...] = ()
    #: Its PersistentVolumeClaims, ``namespace/name`` (NodeVolumeLimits counts their volumes).
    claims: tuple[str, ...] = ()


@dataclass
class NodeState:
    """``framework.NodeInfo``: a node and what its pods already take."""

    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: Resource
    obj: Mapping[str, Any]
    pods: list[PodOnNode] = field(default_factory=list)
    requested: Resource = field(default_factory=Resource)
    #: What the kubelet declares it supports (``status.declaredFeatures``).
    declared_features: frozenset[str] = frozenset()
    # What the pod-independent filters read of the node, but its labels (see `shape_key`);
    # None until asked for, and again whenever its pods change.
    _shape: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)

    def add_pod(self, pod: PodOnNode) -> None:
        self.pods.append(pod)
        self.requested.add(pod.requests)
        self._shape = None

    def remove_pod(self, pod: PodOnNode) -> None:
        self.pods.remove(pod)
        self.requested.subtract(pod.requests)
        self._shape = None

    def clone(self) -> NodeState:
        return replace(self, pods=list(self.pods), requested=self.requested.copy(), _shape=None)

    def shape(self) -> tuple[Any, ...]:
        """What the node-only filters read of the node but its name and labels."""
        if self._shape is None:
            self._shape = (
                self.taints,
                self.unschedulable,
                _resource_key(self.allocatable),
                _resource_key(self.requested),
                len(self.pods),
                tuple(sorted(str(port) for port in self.used_ports)),
                self.declared_features,
            )
        return self._shape

    def shape_key(self, label_keys: Sequence[str]) -> tuple[Any, ...]:
        """Nodes with equal keys get the same verdict from the filters before
        PodTopologySpread, for a pod that reads only `label_keys` of the node's labels
        and does not name the node (a fleet's nodes come in few such shapes)."""
        return (self.shape(), *(self.labels.get(key) for key in label_keys))

    @property
    def used_ports(self) -> list[HostPort]:
        return [port for pod in self.pods for port in pod.ports]


def _resource_key(resource: Resource) -> tuple[Any, ...]:
    return (
        resource.milli_cpu,
        resource.memory,
        resource.ephemeral_storage,
        resource.allowed_pods,
        tuple(sorted(resource.scalar.items())),
    )


@dataclass(frozen=True)
class PodFacts:
    """The pod as the filters need it, parsed once."""

    key: str
    uid: str
    node_name: str
    tolerations: tuple[Toleration, ...]
    affinity: NodeAffinity | None
    requests: Resource
    ports: tuple[HostPort, ...]
    priority: int
    comparison_operators: bool = True
    name_untolerated_taint: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    #: PodTopologySpread's PreFilter state (None: no DoNotSchedule constraint).
    spread: SpreadState | None = None
    #: The node features the pod needs (NodeDeclaredFeatures' PreFilter).
    required_features: frozenset[str] = frozenset()
    #: The pod's claims as the volume PreFilters found them (None: it has none).
    volumes: PodVolumes | None = None
    #: Extended resources a DeviceClass backs: where no node allocatable offers one,
    #: NodeResourcesFit leaves it to DynamicResources.
    dra_backed: frozenset[str] = frozenset()
    #: InterPodAffinity's PreFilter state (None: the plugin is skipped).
    interpod: InterPodState | None = None


def node_unschedulable(pod: PodFacts, node: NodeState) -> Status | None:
    if not node.unschedulable:
        return None
    if any(t.tolerates(_UNSCHEDULABLE_TAINT, pod.comparison_operators) for t in pod.tolerations):
        return None
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (REASON_UNSCHEDULABLE,),
        "NodeUnschedulable",
        (
            "spec.unschedulable is true (cordoned) and the pod does not tolerate "
            "node.kubernetes.io/unschedulable:NoSchedule",
        ),
    )


def node_name(pod: PodFacts, node: NodeState) -> Status | None:
    if not pod.node_name or pod.node_name == node.name:
        return None
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (REASON_NODE_NAME,),
        "NodeName",
        (f"spec.nodeName is {pod.node_name!r}",),
    )


def taint_toleration(pod: PodFacts, node: NodeState) -> Status | None:
    taint = find_untolerated_taint(node.taints, pod.tolerations, pod.comparison_operators)
    if taint is None:
        return None
    reason = (
        f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
        if pod.name_untolerated_taint
        else REASON_TAINT
    )
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (reason,),
        "TaintToleration",
        (f"untolerated taint {{{taint.key}: {taint.value}}} ({taint})",),
    )


def node_affinity(pod: PodFacts, node: NodeState) -> Status | None:
    if pod.affinity is None:
        return None
    mismatch = pod.affinity.mismatch(node.obj)
    if not mismatch:
        return None
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_AFFINITY,), "NodeAffinity", (mismatch,)
    )


def node_ports(pod: PodFacts, node: NodeState) -> Status | None:
    if not pod.ports:
        return None
    used = node.used_ports
    taken = [p for p in pod.ports if _port_conflict(used, p)]
    if not taken:
        return None
    return Status(
        Code.UNSCHEDULABLE,
        (REASON_PORTS,),
        "NodePorts",
        tuple(f"host port {p} is already in use" for p in taken),
    )


def _short(resource: str, requested: int, used: int, capacity: int) -> Insufficient:
    return Insufficient(
        resource, f"Insufficient {resource}", requested, used, capacity, requested > capacity
    )


def node_resources_fit(pod: PodFacts, node: NodeState) -> Status | None:
    """``fitsRequest``: every shortfall of the node, pod slots first."""
    short: list[Insufficient] = []
    allowed = node.allocatable.allowed_pods
    if len(node.pods) + 1 > allowed:
        short.append(Insufficient("pods", REASON_TOO_MANY_PODS, 1, len(node.pods), allowed, False))
    want, have, used = pod.requests, node.allocatable, node.requested
    for resource, requested, capacity, taken in (
        ("cpu", want.milli_cpu, have.milli_cpu, used.milli_cpu),
        ("memory", want.memory, have.memory, used.memory),
        (
            "ephemeral-storage",
            want.ephemeral_storage,
            have.ephemeral_storage,
            used.ephemeral_storage,
        ),
    ):
        if requested > 0 and requested > capacity - taken:
            short.append(_short(resource, requested, taken, capacity))
    # Upstream walks a Go map here, so the order of these reasons varies
    # from run to run; they are sorted for a stable report.
    for resource in sorted(want.scalar):
        requested = want.scalar[resource]
        if requested == 0:
            continue
        capacity = have.scalar.get(resource, 0)
        if capacity == 0 and resource in pod.dra_backed:
            continue  # ``shouldDelegateResourceToDRA``
        taken = used.scalar.get(resource, 0)
        if requested > capacity - taken:
            short.append(_short(resource, requested, taken, capacity))
    if not short:
        return None
    code = (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        if any(s.unresolvable for s in short)
        else Code.UNSCHEDULABLE
    )
    details = tuple(
        f"{s.resource}: requested {_unit(s.resource, s.requested)}, "
        f"already requested by pods on the node {_unit(s.resource, s.used)}, "
        f"allocatable {_unit(s.resource, s.capacity)}"
        for s in short
    )
    return Status(code, tuple(s.reason for s in short), "NodeResourcesFit", details, tuple(short))


def _unit(resource: str, amount: int) -> str:
    return f"{amount}m" if resource == "cpu" else str(amount)


def volume_restrictions(pod: PodFacts, node: NodeState) -> Status | None:
    return volumes.volume_restrictions(pod.volumes)


def node_volume_limits(pod: PodFacts, node: NodeState) -> Status | None:
    if pod.volumes is None:
        return None
    return volumes.node_volume_limits(pod.volumes, node.name, (p.claims for p in node.pods))


def volume_binding(pod: PodFacts, node: NodeState) -> Status | None:
    return volumes.volume_binding(pod.volumes, node.name, node.labels)


def volume_zone(pod: PodFacts, node: NodeState) -> Status | None:
    return volumes.volume_zone(pod.volumes, node.labels)


def pod_topology_spread(pod: PodFacts, node: NodeState) -> Status | None:
    if pod.spread is None:
        return None
    return pod.spread.filter(pod.labels, node)


def inter_pod_affinity(pod: PodFacts, node: NodeState) -> Status | None:
    if pod.interpod is None:
        return None
    return pod.interpod.filter(node)


def node_declared_features(pod: PodFacts, node: NodeState) -> Status | None:
    missing = pod.required_features - node.declared_features
    if not missing:
        return None
    declared = ", ".join(sorted(node.declared_features)) or "none"
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (REASON_FEATURES,),
        FEATURES_PLUGIN,
        (f"the pod needs {', '.join(sorted(missing))}; the node declares {declared}",),
    )


Filter = Callable[[PodFacts, NodeState], Status | None]

#: The default profile's filters, in order (v1.37 ``getDefaultPlugins``:
#: NodeName comes before NodeUnschedulable since v1.36).
FILTERS: Final[tuple[Filter, ...]] = (
    node_name,
    node_unschedulable,
    taint_toleration,
    node_affinity,
    node_ports,
    node_resources_fit,
    volume_restrictions,
    node_volume_limits,
    volume_binding,
    volume_zone,
    pod_topology_spread,
    inter_pod_affinity,
    node_declared_features,
)


#: The filters whose verdict depends on the node alone, not on the rest of the cluster.
NODE_FILTERS: Final = FILTERS[:6]
CLUSTER_FILTERS: Final = FILTERS[6:]


def run_filters(
    pod: PodFacts,
    node: NodeState,
    cache: dict[tuple[Any, ...], Status | None] | None = None,
    label_keys: Sequence[str] = (),
) -> Status | None:
    """``RunFilterPlugins``: the first rejection, or None when all pass.

    With `cache`, the node-only filters' verdict is kept by the node's `shape_key` over
    `label_keys` (the labels the pod reads) and reused for nodes of the same shape.
    """
    key = node.shape_key(label_keys) if cache is not None else None
    if key is not None and cache is not None and key in cache:
        status = cache[key]
    else:
        status = None
        for check in NODE_FILTERS:
            status = check(pod, node)
            if status is not None:
                break
        if key is not None and cache is not None:
            cache[key] = status
    if status is not None:
        return status
    for check in CLUSTER_FILTERS:
        status = check(pod, node)
        if status is not None:
            return status
    return None


def run_filters_with_nominated(
    pod: PodFacts,
    node: NodeState,
    nominated: Sequence[PodOnNode],
    cache: dict[tuple[Any, ...], Status | None] | None = None,
    label_keys: Sequence[str] = (),
) -> Status | None:
    """``RunFilterPluginsWithNominatedPods``.

    Nominated pods of equal or higher priority are first counted as if
    running on the node; only if the pod fits with them is it checked again
    without them.
    """
    others = [p for p in nominated if p.priority >= pod.priority and p.uid != pod.uid]
    if others:
        with_them = node.clone()
        for other in others:
            with_them.add_pod(other)
        status = run_filters(pod, with_them, cache, label_keys)
        if status is not None:
            return status
    return run_filters(pod, node, cache, label_keys)
