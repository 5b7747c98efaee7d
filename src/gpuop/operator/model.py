"""What one reconcile pass reads and writes: the snapshot of the cluster, and the actions.

Why this module exists: the runtime builds a `Snapshot` from its informers and performs the
`Actions`; the reconcile pass (`gpuop.operator.reconcile`) and the driver upgrade step
(`gpuop.operator.upgrades`) both read the one and fill the other, so they live here, below
both. `pod_info` reduces a Pod to the parts any of them needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpuop.api.labels import (
    APP_LABEL,
    DRIVER_CONFIG_DIGEST_ENV,
    MIRROR_POD_ANNOTATION,
    REVISION_LABEL,
)
from gpuop.api.notices import EventReason, NoticeCode
from gpuop.api.resources import GPU_POD_RESOURCE_PREFIXES
from gpuop.catalog import operand_table
from gpuop.naming import is_gpu_resource
from gpuop.planner import NodePlan
from gpuop.planner.upgrade import (
    MAX_RESTARTS,
    UpgradeCounts,
    WorkloadPod,
)

DRIVER_APP = "nvidia-driver-daemonset"
VALIDATOR_APP = "nvidia-operator-validator"
# Pods the upgrade state machine reads by upstream's `app` labels, whoever made them.
UPGRADE_APPS = frozenset({DRIVER_APP, VALIDATOR_APP})

# What a pass may reuse from the one before: plans and rendered objects, keyed by the
# versions of what they were made from.
PlanCache = dict[tuple[Any, ...], Any]


@dataclass(frozen=True, slots=True)
class PodInfo:
    """The parts of a pod the operator needs."""

    namespace: str
    name: str
    node: str
    operand: str | None
    ready: bool
    gpu_resources: tuple[str, ...]
    terminal: bool
    # For driver upgrades: the `app` label, the owning DaemonSet (None: no owner at all;
    # "": another kind of controller), the pod's revision and health, eviction blockers.
    app: str | None = None
    owner: str | None = None
    revision: str | None = None
    running: bool = False
    containers_ready: bool = False
    failing: bool = False
    terminating: bool = False
    controlled: bool = True
    empty_dir: bool = False
    config_digest: str | None = None
    # The pod names ResourceClaims (spec.resourceClaims): while it is on a node, the DRA
    # kubelet plugin there must stay to unprepare them (terminating pods too).
    claims: bool = False
    phase: str | None = None


@dataclass
class Snapshot:
    policies: list[dict[str, Any]]
    nodes: dict[str, dict[str, Any]]
    daemonsets: dict[str, dict[str, Any]]
    pods: list[PodInfo]
    namespace: str
    operator_env: dict[str, str] = field(default_factory=dict)
    # Objects gpuop manages beside DaemonSets: (kind, name) -> the hash they were applied with.
    existing_objects: dict[tuple[str, str], str] = field(default_factory=dict)
    # Whether Prometheus operator's ServiceMonitor kind is served.
    service_monitors_served: bool = False
    # Driver upgrades: DaemonSet -> hash of its newest ControllerRevision, and the
    # DRIVER_CONFIG_DIGEST of its template; the pods on nodes waiting for jobs or a drain;
    # when this process began evicting each node's GPU pods; the clock, in epoch seconds.
    revisions: dict[str, str] = field(default_factory=dict)
    template_digests: dict[str, str] = field(default_factory=dict)
    node_pods: dict[str, tuple[WorkloadPod, ...]] = field(default_factory=dict)
    evicting_since: dict[str, float] = field(default_factory=dict)
    now_seconds: float = 0.0
    # GPUCluster objects (nvidia.com/v1alpha1), when the kind is served.
    gpu_clusters: list[dict[str, Any]] = field(default_factory=list)
    # Top-level ClusterPolicy status keys the API server dropped from a status write: the
    # installed CRD's schema has no such field (NVIDIA's CRD has no `status.nodes`).
    status_dropped_keys: frozenset[str] = frozenset()
    # Objects the API server refuses to take, "Kind name" -> its answer (retried with backoff).
    refused: dict[str, str] = field(default_factory=dict)
    # The keys of the ConfigMaps a ClusterPolicy hands the driver file by file
    # (`render.named_configmaps`), by name; one not in the namespace is absent.
    configmap_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeEvent:
    node: str
    # A notice that becomes an Event keeps its code as the reason.
    reason: EventReason | NoticeCode
    message: str
    type: str = "Warning"


@dataclass
class Actions:
    """Writes for one pass. Empty when the cluster already matches."""

    node_label_patches: dict[str, dict[str, str | None]] = field(default_factory=dict)
    apply: list[dict[str, Any]] = field(default_factory=list)
    delete_daemonsets: list[str] = field(default_factory=list)
    delete_objects: list[tuple[str, str]] = field(default_factory=list)
    status: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[NodeEvent] = field(default_factory=list)
    plans: dict[str, NodePlan] = field(default_factory=dict)
    ready: bool = False
    active_policy: str | None = None
    # Driver upgrades: node annotations, cordon (True) / uncordon (False), GPU pods to
    # evict and driver pods to delete, as (namespace, name).
    node_annotation_patches: dict[str, dict[str, str | None]] = field(default_factory=dict)
    cordon: dict[str, bool] = field(default_factory=dict)
    evictions: list[tuple[str, str]] = field(default_factory=list)
    delete_pods: list[tuple[str, str]] = field(default_factory=list)
    upgrades_enabled: bool = False
    upgrade_counts: UpgradeCounts | None = None
    # GPUCluster name -> the status to write.
    gpu_cluster_status: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Nodes whose label patch switches their workload while no pod in the snapshot uses
    # their GPUs. Informers lag, each at its own pace: the runtime reads these nodes' pods
    # from the API before it writes, and holds a switch a pod it had not yet seen would lose.
    switching: set[str] = field(default_factory=set)

    @property
    def write_count(self) -> int:
        return (
            len(self.node_label_patches)
            + len(set(self.node_annotation_patches) | set(self.cordon))
            + len(self.evictions)
            + len(self.delete_pods)
            + len(self.apply)
            + len(self.delete_daemonsets)
            + len(self.delete_objects)
            + len(self.status)
            + len(self.gpu_cluster_status)
        )


def pod_info(pod: Mapping[str, Any], namespace: str) -> PodInfo | None:
    """Reduce a Pod object; None for pods the operator does not care about."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    labels = meta.get("labels") or {}
    owners = meta.get("ownerReferences") or []
    controller = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    operand = None
    if (
        meta.get("namespace") == namespace
        and controller is not None
        and controller.get("kind") == "DaemonSet"
    ):
        # Known by the DaemonSet that runs it, as NVIDIA's operator's pods are too.
        operand = operand_table().operand_for_daemonset(str(controller.get("name") or ""))
    resources: set[str] = set()
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = container.get("resources") or {}
        for part in ("limits", "requests"):
            for name in res.get(part) or {}:
                if is_gpu_resource(str(name)):
                    resources.add(str(name))
    app = labels.get(APP_LABEL) if meta.get("namespace") == namespace else None
    claims = bool(spec.get("resourceClaims"))
    if operand is None and not resources and app not in UPGRADE_APPS and not claims:
        return None
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    phase = status.get("phase")
    owner = None
    if controller is not None:
        owner = str(controller.get("name") or "") if controller.get("kind") == "DaemonSet" else ""
    statuses = [
        *(status.get("initContainerStatuses") or []),
        *(status.get("containerStatuses") or []),
    ]
    containers = status.get("containerStatuses") or []
    digest = next(
        (
            str(env.get("value") or "")
            for container in spec.get("containers") or []
            for env in container.get("env") or []
            if env.get("name") == DRIVER_CONFIG_DIGEST_ENV
        ),
        None,
    )
    return PodInfo(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        node=str(spec.get("nodeName") or ""),
        operand=operand,
        ready=ready,
        gpu_resources=tuple(sorted(resources)),
        terminal=phase in ("Succeeded", "Failed") or meta.get("deletionTimestamp") is not None,
        app=app,
        owner=owner,
        revision=labels.get(REVISION_LABEL),
        running=phase == "Running",
        containers_ready=bool(containers) and all(c.get("ready") for c in containers),
        failing=any(
            not c.get("ready") and int(c.get("restartCount") or 0) > MAX_RESTARTS for c in statuses
        ),
        terminating=meta.get("deletionTimestamp") is not None,
        controlled=controller is not None,
        empty_dir=any("emptyDir" in v for v in spec.get("volumes") or []),
        config_digest=digest,
        claims=claims,
        phase=str(phase) if phase else None,
    )


def uses_gpus(pod: PodInfo) -> bool:
    """A pod (not an operand) that holds or asks for a node's GPUs while it lives."""
    return not pod.terminal and pod.operand is None and bool(pod.gpu_resources)


def workload_pod(pod: Mapping[str, Any]) -> WorkloadPod:
    """A pod on an upgrading node, for `waitForCompletion` and drain."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    owners = meta.get("ownerReferences") or []
    annotations = meta.get("annotations") or {}
    phase = (pod.get("status") or {}).get("phase")
    return WorkloadPod(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        controlled=any(o.get("controller") for o in owners),
        empty_dir=any("emptyDir" in v for v in spec.get("volumes") or []),
        finished=phase in ("Succeeded", "Failed"),
        labels=dict(meta.get("labels") or {}),
        terminating=meta.get("deletionTimestamp") is not None,
        daemonset=any(o.get("kind") == "DaemonSet" and o.get("controller") for o in owners),
        mirror=MIRROR_POD_ANNOTATION in annotations,
        gpu=any(
            str(name).startswith(GPU_POD_RESOURCE_PREFIXES)
            for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
            for part in ("limits", "requests")
            for name in ((container.get("resources") or {}).get(part) or {})
        ),
    )


def daemonset_ready(ds: Mapping[str, Any]) -> bool:
    """Upstream `isDaemonSetReady`."""
    status = ds.get("status") or {}
    desired = int(status.get("desiredNumberScheduled") or 0)
    if desired == 0:
        return True
    if int(status.get("numberUnavailable") or 0) != 0:
        return False
    meta = ds.get("metadata") or {}
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
        return False
    strategy = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type")
    if strategy == "OnDelete":
        return int(status.get("numberReady") or 0) == desired
    return (
        int(status.get("updatedNumberScheduled") or 0) == desired
        and int(status.get("numberAvailable") or 0) == desired
    )
