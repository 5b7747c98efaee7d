"""Automatic driver upgrades: the upgrade state machine of NVIDIA's operator, as a pure step.

When a ClusterPolicy's driver changes, the driver DaemonSet (updateStrategy `OnDelete`) gets
a new ControllerRevision, but no driver pod is replaced by Kubernetes: replacing one unloads
the kernel module under every GPU workload on the node. Upstream's upgrade controller (the
k8s-operator-libs state machine) rolls the change out node by node instead, and keeps its
whole state on the Nodes, in the label `nvidia.com/gpu-driver-upgrade-state` and a few
annotations. So does this module: given each managed node's facts it returns one step per
node (the next state, and the cordon, evictions and driver pod restart that go with it),
so a pass can be repeated, interrupted or run by a restarted operator without losing
its place. The rules, and their upstream sources (k8s-operator-libs `pkg/upgrade`):

* `""` and `upgrade-done`: `upgrade-required` when the driver pod is out of sync with its
  DaemonSet's newest revision, or the node asks for it (annotation
  `nvidia.com/gpu-driver-upgrade-requested=true`, or a driver waiting for a safe load); an
  unknown node in sync is `upgrade-done`. A node already cordoned then is marked, so it
  stays cordoned afterwards (`ProcessDoneOrUnknownNodes`).
* `upgrade-required`: waits for a slot; `maxParallelUpgrades` minus those in progress,
  capped by `maxUnavailable` and by the nodes already unavailable (`GetUpgradesAvailable`).
  Nodes labelled `nvidia.com/gpu-driver-upgrade.skip=true` wait forever; nodes already
  cordoned proceed without a slot. Next is `cordon-required`, or `pod-restart-required`
  (cordoned at once) when only fields that do not change the installed driver changed
  (the running pod and the template carry one `DRIVER_CONFIG_DIGEST`).
* `cordon-required` -> cordon -> `wait-for-jobs-required` -> (the pods matched by
  `waitForCompletion.podSelector` finished, or its timeout passed) `pod-deletion-required`
  -> (GPU pods on the node evicted) `pod-restart-required`, or `drain-required` when
  eviction fails and drain is enabled, else `upgrade-failed`; `drain-required` -> (drained,
  or drain disabled) `pod-restart-required`.
* `pod-restart-required`: the out-of-sync driver pod is deleted (the DaemonSet makes the
  new one); once the new pod runs with every container ready -> `validation-required`; a
  container restarted more than 10 times -> `upgrade-failed`. Unlike upstream, pod deletion
  and the restart decide on a live read of the node's pods as well as the pod informer,
  and a GPU pod found on the node at the restart (one the scheduler bound just after the
  cordon, or one a new leader's informer had not seen) sends the node back to
  `pod-deletion-required`: the driver never restarts under a running GPU pod, except on
  the restart-only path, where the modules stay loaded.
* `validation-required`: the node's `app=nvidia-operator-validator` pod runs and is ready ->
  `uncordon-required` (or `upgrade-done` for a node that was cordoned before); after 600 s
  -> `upgrade-failed`.
* `uncordon-required` -> uncordon -> `upgrade-done`. `upgrade-failed` -> `uncordon-required`
  once the driver pod is in sync and ready.

Each pass moves a node at most one state, as upstream's does (its state lists are built
once per pass); a pass is cheap and the operator runs the next one as soon as a write lands.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gpuop.api.labels import (
    DRAIN_SKIP_LABEL,
    INITIAL_UNSCHEDULABLE_ANNOTATION,
    SAFE_LOAD_ANNOTATION,
    UPGRADE_REQUESTED_ANNOTATION,
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
    VALIDATION_START_ANNOTATION,
    WAIT_FOR_COMPLETION_ANNOTATION,
)
from gpuop.api.notices import EventReason

EVENT_REASON = EventReason.GPU_DRIVER_UPGRADE
VALIDATION_TIMEOUT_SECONDS = 600
MAX_RESTARTS = 10


class UpgradeState(StrEnum):
    UNKNOWN = ""
    UPGRADE_REQUIRED = "upgrade-required"
    CORDON_REQUIRED = "cordon-required"
    WAIT_FOR_JOBS_REQUIRED = "wait-for-jobs-required"
    POD_DELETION_REQUIRED = "pod-deletion-required"
    DRAIN_REQUIRED = "drain-required"
    POD_RESTART_REQUIRED = "pod-restart-required"
    VALIDATION_REQUIRED = "validation-required"
    UNCORDON_REQUIRED = "uncordon-required"
    DONE = "upgrade-done"
    FAILED = "upgrade-failed"


# Not in progress: the rest hold a slot (`GetUpgradesInProgress`).
IDLE_STATES = frozenset({UpgradeState.UNKNOWN, UpgradeState.DONE, UpgradeState.UPGRADE_REQUIRED})
KNOWN_STATES = frozenset(s.value for s in UpgradeState)


@dataclass(frozen=True)
class UpgradePolicy:
    """`driver.upgradePolicy` with the CRD's defaults applied."""

    auto_upgrade: bool = False
    max_parallel_upgrades: int = 1
    max_unavailable: int | str = "25%"
    pod_deletion_force: bool = False
    pod_deletion_timeout: int = 300
    pod_deletion_delete_empty_dir: bool = False
    wait_pod_selector: str = ""
    wait_timeout: int = 0
    drain_enable: bool = False
    drain_force: bool = False
    drain_pod_selector: str = ""
    drain_timeout: int = 300
    drain_delete_empty_dir: bool = False

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> UpgradePolicy:
        """From the ClusterPolicy's `driver.upgradePolicy` (already schema-checked)."""
        if not spec:
            return cls()
        deletion = spec.get("podDeletion") or {}
        wait = spec.get("waitForCompletion") or {}
        drain = spec.get("drain") or {}

        def pick(block: Mapping[str, Any], key: str, default: Any) -> Any:
            value = block.get(key)
            return default if value is None else value

        return cls(
            auto_upgrade=bool(pick(spec, "autoUpgrade", False)),
            max_parallel_upgrades=int(pick(spec, "maxParallelUpgrades", 1)),
            max_unavailable=pick(spec, "maxUnavailable", "25%"),
            pod_deletion_force=bool(pick(deletion, "force", False)),
            pod_deletion_timeout=int(pick(deletion, "timeoutSeconds", 300)),
            pod_deletion_delete_empty_dir=bool(pick(deletion, "deleteEmptyDir", False)),
            wait_pod_selector=str(pick(wait, "podSelector", "")),
            wait_timeout=int(pick(wait, "timeoutSeconds", 0)),
            drain_enable=bool(pick(drain, "enable", False)),
            drain_force=bool(pick(drain, "force", False)),
            drain_pod_selector=str(pick(drain, "podSelector", "")),
            drain_timeout=int(pick(drain, "timeoutSeconds", 300)),
            drain_delete_empty_dir=bool(pick(drain, "deleteEmptyDir", False)),
        )

    def unavailable_limit(self, total: int) -> int:
        """`maxUnavailable` against `total` managed nodes, a percentage rounded up."""
        value = self.max_unavailable
        if isinstance(value, int):
            return value
        text = value.strip()
        if text.endswith("%"):
            return math.ceil(int(text[:-1] or 0) * total / 100)
        return int(text or 0)

    @property
    def drain_selector(self) -> str:
        """The drain pod selector with upstream's skip term always appended."""
        skip = f"{DRAIN_SKIP_LABEL}!=true"
        return f"{self.drain_pod_selector},{skip}" if self.drain_pod_selector else skip


@dataclass(frozen=True)
class WorkloadPod:
    """A pod on an upgrading node that may have to go, as the eviction rules see it."""

    namespace: str
    name: str
    controlled: bool
    empty_dir: bool
    finished: bool
    labels: Mapping[str, str] = field(default_factory=dict)
    terminating: bool = False
    daemonset: bool = False
    mirror: bool = False
    # Asks for `nvidia.com/gpu` or a MIG device (what pod deletion evicts).
    gpu: bool = False


@dataclass(frozen=True)
class DriverPod:
    namespace: str
    name: str
    owner: str | None
    revision: str | None
    running: bool
    containers_ready: bool
    failing: bool
    terminating: bool
    config_digest: str | None = None


@dataclass(frozen=True)
class UpgradeNode:
    """What the state machine reads about one node running a driver pod."""

    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    unschedulable: bool
    ready: bool
    driver_pod: DriverPod
    gpu_pods: tuple[WorkloadPod, ...] = ()
    validator_ready: bool = False
    # Every pod on the node, read live (None: not read this pass). Waiting for jobs, drain,
    # pod deletion and the driver restart decide on it.
    node_pods: tuple[WorkloadPod, ...] | None = None

    @property
    def state(self) -> str:
        return self.labels.get(UPGRADE_STATE_LABEL, "")


@dataclass
class NodeStep:
    """The writes that move one node on."""

    node: str
    state: str | None = None
    labels: dict[str, str | None] = field(default_factory=dict)
    annotations: dict[str, str | None] = field(default_factory=dict)
    cordon: bool | None = None
    evict: list[tuple[str, str]] = field(default_factory=list)
    delete_driver_pod: tuple[str, str] | None = None
    message: str = ""

    @property
    def empty(self) -> bool:
        return not (self.labels or self.annotations or self.cordon is not None or self.evict) and (
            self.delete_driver_pod is None
        )


@dataclass
class UpgradeCounts:
    """The figures upstream exports as `gpu_operator_nodes_upgrades_*`."""

    in_progress: int = 0
    done: int = 0
    failed: int = 0
    available: int = 0
    pending: int = 0
    total: int = 0


@dataclass
class UpgradePlan:
    steps: dict[str, NodeStep] = field(default_factory=dict)
    counts: UpgradeCounts = field(default_factory=UpgradeCounts)
    # Why the pass did nothing, when it could not decide (e.g. unscheduled driver pods).
    blocked: str = ""

    def step(self, node: str) -> NodeStep:
        return self.steps.setdefault(node, NodeStep(node))


def _in_sync(pod: DriverPod, revisions: Mapping[str, str]) -> bool:
    return (
        pod.owner is not None
        and pod.revision is not None
        and (revisions.get(pod.owner) == pod.revision)
    )


def _synced_and_ready(pod: DriverPod, revisions: Mapping[str, str]) -> bool:
    return _in_sync(pod, revisions) and pod.running and pod.containers_ready


def _move(plan: UpgradePlan, node: UpgradeNode, state: str, message: str = "") -> NodeStep:
    step = plan.step(node.name)
    step.state = state
    step.labels[UPGRADE_STATE_LABEL] = state
    step.message = message or f"driver upgrade: {node.state or 'unknown'} -> {state}"
    return step


def _selects(selector: str, labels: Mapping[str, str]) -> bool:
    """A label selector in kubectl's equality/set-less form (`a=b,c!=d,e`, `!f`)."""
    for term in (t.strip() for t in selector.split(",")):
        if not term:
            continue
        if "!=" in term:
            key, value = (p.strip() for p in term.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "==" in term or "=" in term:
            key, value = (p.strip() for p in term.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


def _evictable(
    pods: Iterable[WorkloadPod], force: bool, delete_empty_dir: bool
) -> tuple[list[tuple[str, str]], str]:
    """The pods to evict, or why they cannot be (kubectl drain's refusals)."""
    chosen = []
    for pod in pods:
        if pod.finished or pod.mirror or pod.daemonset or pod.terminating:
            continue
        if not pod.controlled and not force:
            return [], f"pod {pod.namespace}/{pod.name} is not managed by a controller"
        if pod.empty_dir and not delete_empty_dir:
            return [], f"pod {pod.namespace}/{pod.name} uses emptyDir storage"
        chosen.append((pod.namespace, pod.name))
    return chosen, ""


def plan_upgrades(
    policy: UpgradePolicy,
    nodes: Iterable[UpgradeNode],
    revisions: Mapping[str, str],
    template_digests: Mapping[str, str],
    now: float,
    evicting_since: Mapping[str, float] | None = None,
) -> UpgradePlan:
    """One pass of the upgrade state machine over every node that runs a driver pod.

    `revisions`: driver DaemonSet name -> the hash of its newest ControllerRevision;
    `template_digests`: DaemonSet name -> `DRIVER_CONFIG_DIGEST` of its template (if any);
    `now`: seconds since the epoch; `evicting_since`: node -> when this operator started
    evicting its GPU pods (the pod deletion timeout runs from there).
    """
    plan = UpgradePlan()
    managed = sorted(nodes, key=lambda n: n.name)
    by_state: dict[str, list[UpgradeNode]] = {}
    for node in managed:
        state = node.state if node.state in KNOWN_STATES else UpgradeState.UNKNOWN
        by_state.setdefault(state, []).append(node)
    total = len(managed)
    in_progress = sum(1 for n in managed if n.state in KNOWN_STATES and n.state not in IDLE_STATES)
    max_unavailable = policy.unavailable_limit(total)
    unavailable = sum(1 for n in managed if n.unschedulable or not n.ready) + len(
        by_state.get(UpgradeState.CORDON_REQUIRED, [])
    )
    required = by_state.get(UpgradeState.UPGRADE_REQUIRED, [])
    if policy.max_parallel_upgrades == 0:
        available = len(required)
    else:
        available = policy.max_parallel_upgrades - in_progress
    available = min(available, max_unavailable)
    if unavailable >= max_unavailable:
        available = 0
    elif max_unavailable < total and unavailable + available > max_unavailable:
        available = max_unavailable - unavailable
    plan.counts = UpgradeCounts(
        in_progress=in_progress,
        done=len(by_state.get(UpgradeState.DONE, [])),
        failed=len(by_state.get(UpgradeState.FAILED, [])),
        available=max(available, 0),
        pending=len(required),
        total=total,
    )

    for state in (UpgradeState.UNKNOWN, UpgradeState.DONE):
        for node in by_state.get(state, []):
            pod = node.driver_pod
            orphaned = pod.owner is None
            requested = node.annotations.get(UPGRADE_REQUESTED_ANNOTATION) == "true"
            safe_load = node.annotations.get(SAFE_LOAD_ANNOTATION) == "true"
            if (not _in_sync(pod, revisions) and not orphaned) or requested or safe_load:
                step = _move(plan, node, UpgradeState.UPGRADE_REQUIRED)
                if node.unschedulable:
                    step.annotations[INITIAL_UNSCHEDULABLE_ANNOTATION] = "true"
            elif state == UpgradeState.UNKNOWN:
                _move(plan, node, UpgradeState.DONE)

    for node in required:
        step = plan.step(node.name)
        if node.annotations.get(UPGRADE_REQUESTED_ANNOTATION) == "true":
            step.annotations[UPGRADE_REQUESTED_ANNOTATION] = None
        if node.labels.get(UPGRADE_SKIP_LABEL) == "true":
            continue
        if available <= 0 and not node.unschedulable:
            continue
        requested = node.annotations.get(UPGRADE_REQUESTED_ANNOTATION) == "true"
        if not requested and _restart_only(node, template_digests):
            step = _move(
                plan,
                node,
                UpgradeState.POD_RESTART_REQUIRED,
                "driver upgrade: only the pod changed, restarting the driver pod in place",
            )
            step.cordon = True
        else:
            _move(plan, node, UpgradeState.CORDON_REQUIRED)
        available -= 1

    for node in by_state.get(UpgradeState.CORDON_REQUIRED, []):
        step = _move(plan, node, UpgradeState.WAIT_FOR_JOBS_REQUIRED)
        step.cordon = True

    for node in by_state.get(UpgradeState.WAIT_FOR_JOBS_REQUIRED, []):
        if not policy.wait_pod_selector:
            _move(plan, node, UpgradeState.POD_DELETION_REQUIRED)
            continue
        started = _seconds(node.annotations.get(WAIT_FOR_COMPLETION_ANNOTATION))
        running = [
            p
            for p in node.node_pods or ()
            if not p.finished and _selects(policy.wait_pod_selector, p.labels)
        ]
        timed_out = (
            policy.wait_timeout > 0 and started is not None and now - started >= policy.wait_timeout
        )
        if node.node_pods is not None and (not running or timed_out):
            step = _move(plan, node, UpgradeState.POD_DELETION_REQUIRED)
            step.annotations[WAIT_FOR_COMPLETION_ANNOTATION] = None
        elif started is None and policy.wait_timeout > 0:
            plan.step(node.name).annotations[WAIT_FOR_COMPLETION_ANNOTATION] = str(int(now))

    for node in by_state.get(UpgradeState.POD_DELETION_REQUIRED, []):
        if node.node_pods is None:
            continue  # the node's pods were not read live this pass
        remaining = _live_gpu_pods(node)
        if not remaining:
            _move(plan, node, UpgradeState.POD_RESTART_REQUIRED)
            continue
        evict, refusal = _evictable(
            remaining, policy.pod_deletion_force, policy.pod_deletion_delete_empty_dir
        )
        since = (evicting_since or {}).get(node.name)
        timed_out = (
            since is not None
            and policy.pod_deletion_timeout > 0
            and now - since >= policy.pod_deletion_timeout
        )
        if refusal or timed_out:
            why = refusal or f"GPU pods still running after {policy.pod_deletion_timeout}s"
            target = UpgradeState.DRAIN_REQUIRED if policy.drain_enable else UpgradeState.FAILED
            _move(plan, node, target, f"driver upgrade: cannot evict GPU pods: {why}")
            continue
        plan.step(node.name).evict.extend(evict)

    for node in by_state.get(UpgradeState.DRAIN_REQUIRED, []):
        if not policy.drain_enable:
            _move(plan, node, UpgradeState.POD_RESTART_REQUIRED)
            continue
        if node.node_pods is None:
            continue
        selected = [
            p
            for p in node.node_pods
            if not p.finished and _selects(policy.drain_selector, p.labels)
        ]
        to_evict, refusal = _evictable(selected, policy.drain_force, policy.drain_delete_empty_dir)
        if refusal:
            _move(plan, node, UpgradeState.FAILED, f"driver upgrade: cannot drain: {refusal}")
        elif not to_evict and not any(p.terminating for p in selected):
            _move(plan, node, UpgradeState.POD_RESTART_REQUIRED)
        else:
            plan.step(node.name).evict.extend(to_evict)

    for node in by_state.get(UpgradeState.POD_RESTART_REQUIRED, []):
        pod = node.driver_pod
        if not _in_sync(pod, revisions):
            if node.node_pods is None or pod.terminating:
                continue
            if not _restart_only(node, template_digests):
                live = _live_gpu_pods(node)
                evictable, _ = _evictable(
                    live, policy.pod_deletion_force, policy.pod_deletion_delete_empty_dir
                )
                if evictable:
                    # Bound after the node was cordoned (a scheduling decision made before
                    # it), or seen late: the driver never restarts under it.
                    _move(
                        plan,
                        node,
                        UpgradeState.POD_DELETION_REQUIRED,
                        f"driver upgrade: GPU pod {evictable[0][0]}/{evictable[0][1]}"
                        " is on the node again, evicting it before the driver restarts",
                    )
                    continue
                if any(p.terminating for p in live):
                    continue
            plan.step(node.name).delete_driver_pod = (pod.namespace, pod.name)
            continue
        step = plan.step(node.name)
        if node.annotations.get(SAFE_LOAD_ANNOTATION):
            step.annotations[SAFE_LOAD_ANNOTATION] = None
        if _synced_and_ready(pod, revisions):
            _move(plan, node, UpgradeState.VALIDATION_REQUIRED)
        elif pod.failing:
            _move(
                plan,
                node,
                UpgradeState.FAILED,
                f"driver upgrade: driver pod {pod.name} keeps restarting",
            )

    for node in by_state.get(UpgradeState.VALIDATION_REQUIRED, []):
        step = plan.step(node.name)
        if node.annotations.get(SAFE_LOAD_ANNOTATION):
            step.annotations[SAFE_LOAD_ANNOTATION] = None
        if node.validator_ready:
            _finish(plan, node)
            step.annotations[VALIDATION_START_ANNOTATION] = None
            continue
        started = _seconds(node.annotations.get(VALIDATION_START_ANNOTATION))
        if started is None:
            step.annotations[VALIDATION_START_ANNOTATION] = str(int(now))
        elif now - started > VALIDATION_TIMEOUT_SECONDS:
            _move(plan, node, UpgradeState.FAILED, "driver upgrade: validation timed out")
            step.annotations[VALIDATION_START_ANNOTATION] = None

    for node in by_state.get(UpgradeState.UNCORDON_REQUIRED, []):
        step = _move(plan, node, UpgradeState.DONE)
        step.cordon = False

    for node in by_state.get(UpgradeState.FAILED, []):
        if _synced_and_ready(node.driver_pod, revisions):
            _finish(plan, node)

    plan.steps = {name: step for name, step in plan.steps.items() if not step.empty}
    return plan


def _restart_only(node: UpgradeNode, template_digests: Mapping[str, str]) -> bool:
    """The running driver pod and its DaemonSet's template install the same driver (one
    `DRIVER_CONFIG_DIGEST`): replacing the pod leaves the loaded modules, and GPU pods, be."""
    pod = node.driver_pod
    template_digest = template_digests.get(pod.owner or "")
    return (
        node.annotations.get(SAFE_LOAD_ANNOTATION) != "true"
        and pod.owner is not None
        and pod.config_digest is not None
        and template_digest is not None
        and pod.config_digest == template_digest
    )


def _live_gpu_pods(node: UpgradeNode) -> list[WorkloadPod]:
    """The GPU pods still on the node: the pod informer's and the live read's together
    (the live read wins for a pod both know), finished ones left out. Either may lag the
    other; a pod either still sees keeps the driver from restarting."""
    pods = {(p.namespace, p.name): p for p in node.gpu_pods}
    pods.update({(p.namespace, p.name): p for p in node.node_pods or () if p.gpu})
    return [p for p in pods.values() if not p.finished]


def _finish(plan: UpgradePlan, node: UpgradeNode) -> None:
    """`uncordon-required`, or `upgrade-done` for a node that was cordoned before."""
    if INITIAL_UNSCHEDULABLE_ANNOTATION in node.annotations:
        step = _move(plan, node, UpgradeState.DONE)
        step.annotations[INITIAL_UNSCHEDULABLE_ANNOTATION] = None
    else:
        _move(plan, node, UpgradeState.UNCORDON_REQUIRED)
