"""The driver upgrade state machine (`gpuop.planner.upgrade`), step by step and as a rollout."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuop.api.labels import (
    INITIAL_UNSCHEDULABLE_ANNOTATION,
    UPGRADE_REQUESTED_ANNOTATION,
    UPGRADE_SKIP_LABEL,
    UPGRADE_STATE_LABEL,
    VALIDATION_START_ANNOTATION,
)
from gpuop.planner.upgrade import (
    DriverPod,
    UpgradeNode,
    UpgradePolicy,
    UpgradeState,
    WorkloadPod,
    plan_upgrades,
)

DS = "nvidia-driver-daemonset"
NEW, OLD = "rev-new", "rev-old"


def driver(node: str, revision: str = OLD, **changes: object) -> DriverPod:
    pod = DriverPod(
        namespace="gpu-operator",
        name=f"{DS}-{node}",
        owner=DS,
        revision=revision,
        running=True,
        containers_ready=True,
        failing=False,
        terminating=False,
    )
    return replace(pod, **changes)  # type: ignore[arg-type]


def node(
    name: str,
    state: str = "",
    revision: str = OLD,
    *,
    unschedulable: bool = False,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **changes: object,
) -> UpgradeNode:
    all_labels = dict(labels or {})
    if state:
        all_labels[UPGRADE_STATE_LABEL] = state
    result = UpgradeNode(
        name=name,
        labels=all_labels,
        annotations=dict(annotations or {}),
        unschedulable=unschedulable,
        ready=True,
        driver_pod=driver(name, revision),
        validator_ready=True,
        node_pods=(),  # read live, as the operator reads the nodes it drains
    )
    return replace(result, **changes)  # type: ignore[arg-type]


POLICY = UpgradePolicy(auto_upgrade=True, max_parallel_upgrades=1, max_unavailable="25%")


def states(nodes: list[UpgradeNode], policy: UpgradePolicy = POLICY) -> dict[str, str | None]:
    result = plan_upgrades(policy, nodes, {DS: NEW}, {}, now=1000.0)
    return {name: step.state for name, step in result.steps.items()}


def test_policy_defaults_are_the_crds() -> None:
    policy = UpgradePolicy.from_spec({"autoUpgrade": True})
    assert policy.max_parallel_upgrades == 1
    assert policy.max_unavailable == "25%"
    assert policy.pod_deletion_timeout == 300
    assert policy.drain_timeout == 300
    assert policy.wait_timeout == 0
    assert policy.drain_selector == "nvidia.com/gpu-driver-upgrade-drain.skip!=true"
    custom = UpgradePolicy.from_spec({"drain": {"podSelector": "app=x"}})
    assert custom.drain_selector == "app=x,nvidia.com/gpu-driver-upgrade-drain.skip!=true"


@pytest.mark.parametrize(
    ("value", "total", "limit"), [("25%", 100, 25), ("25%", 3, 1), ("10%", 11, 2), (4, 100, 4)]
)
def test_max_unavailable_rounds_percentages_up(value: int | str, total: int, limit: int) -> None:
    assert UpgradePolicy(max_unavailable=value).unavailable_limit(total) == limit


def test_unknown_nodes_in_sync_are_done_and_out_of_sync_need_an_upgrade() -> None:
    assert states([node("a", revision=NEW), node("b")]) == {
        "a": "upgrade-done",
        "b": "upgrade-required",
    }


def test_done_node_stays_unless_out_of_sync_or_requested() -> None:
    done = node("a", "upgrade-done", NEW)
    assert states([done]) == {}
    requested = node("b", "upgrade-done", NEW, annotations={UPGRADE_REQUESTED_ANNOTATION: "true"})
    assert states([requested]) == {"b": "upgrade-required"}


def test_a_cordoned_node_is_remembered_and_left_cordoned() -> None:
    result = plan_upgrades(POLICY, [node("a", unschedulable=True)], {DS: NEW}, {}, 0.0)
    assert result.steps["a"].annotations == {INITIAL_UNSCHEDULABLE_ANNOTATION: "true"}
    marked = node(
        "a",
        "validation-required",
        NEW,
        unschedulable=True,
        annotations={INITIAL_UNSCHEDULABLE_ANNOTATION: "true"},
    )
    step = plan_upgrades(POLICY, [marked], {DS: NEW}, {}, 0.0).steps["a"]
    assert step.state == "upgrade-done"
    assert step.cordon is None
    assert step.annotations[INITIAL_UNSCHEDULABLE_ANNOTATION] is None


def test_slots_follow_max_parallel_upgrades_and_skip_label() -> None:
    nodes = [node(f"n{i}", "upgrade-required") for i in range(6)]
    nodes[0] = node("n0", "upgrade-required", labels={UPGRADE_SKIP_LABEL: "true"})
    policy = replace(POLICY, max_parallel_upgrades=2, max_unavailable="100%")
    assert states(nodes, policy) == {"n1": "cordon-required", "n2": "cordon-required"}
    busy = [node("x", "pod-restart-required"), *nodes]
    assert len([s for s in states(busy, policy).values() if s == "cordon-required"]) == 1


def test_zero_max_parallel_means_all_but_max_unavailable_still_caps() -> None:
    nodes = [node(f"n{i}", "upgrade-required") for i in range(8)]
    unlimited = replace(POLICY, max_parallel_upgrades=0, max_unavailable="100%")
    assert len(states(nodes, unlimited)) == 8
    capped = replace(unlimited, max_unavailable="25%")
    assert len(states(nodes, capped)) == 2


def test_unavailable_nodes_take_slots_but_cordoned_nodes_proceed() -> None:
    nodes = [node(f"n{i}", "upgrade-required") for i in range(4)]
    nodes.append(node("down", "upgrade-done", NEW, ready=False))
    nodes.append(node("cordoned", "upgrade-required", unschedulable=True))
    # 6 nodes, 25% -> 2 unavailable allowed; 2 are unavailable already: only the cordoned goes.
    assert states(nodes, replace(POLICY, max_parallel_upgrades=5)) == {
        "cordoned": "cordon-required"
    }


def test_the_full_path_one_step_per_pass() -> None:
    gpu_pod = WorkloadPod("ml", "train-0", controlled=True, empty_dir=False, finished=False)
    base = node("a", "cordon-required")
    step = plan_upgrades(POLICY, [base], {DS: NEW}, {}, 0.0).steps["a"]
    assert (step.state, step.cordon) == ("wait-for-jobs-required", True)
    waiting = node("a", "wait-for-jobs-required", unschedulable=True)
    assert states([waiting]) == {"a": "pod-deletion-required"}
    deleting = node("a", "pod-deletion-required", unschedulable=True, gpu_pods=(gpu_pod,))
    step = plan_upgrades(POLICY, [deleting], {DS: NEW}, {}, 0.0).steps["a"]
    assert step.state is None and step.evict == [("ml", "train-0")]
    gone = replace(deleting, gpu_pods=())
    assert states([gone]) == {"a": "pod-restart-required"}
    restarting = node("a", "pod-restart-required", unschedulable=True)
    step = plan_upgrades(POLICY, [restarting], {DS: NEW}, {}, 0.0).steps["a"]
    assert step.delete_driver_pod == ("gpu-operator", f"{DS}-a") and step.state is None
    new_pod = node("a", "pod-restart-required", NEW, unschedulable=True)
    assert states([new_pod]) == {"a": "validation-required"}
    validating = node("a", "validation-required", NEW, unschedulable=True)
    assert states([validating]) == {"a": "uncordon-required"}
    uncordon = node("a", "uncordon-required", NEW, unschedulable=True)
    step = plan_upgrades(POLICY, [uncordon], {DS: NEW}, {}, 0.0).steps["a"]
    assert (step.state, step.cordon) == ("upgrade-done", False)


def test_a_terminating_driver_pod_is_not_deleted_again() -> None:
    restarting = node("a", "pod-restart-required", unschedulable=True)
    restarting = replace(restarting, driver_pod=driver("a", terminating=True))
    assert plan_upgrades(POLICY, [restarting], {DS: NEW}, {}, 0.0).steps == {}


def test_uncontrolled_gpu_pods_fail_the_upgrade_unless_forced_or_drained() -> None:
    bare = WorkloadPod("ml", "bare", controlled=False, empty_dir=False, finished=False)
    deleting = node("a", "pod-deletion-required", unschedulable=True, gpu_pods=(bare,))
    assert states([deleting]) == {"a": "upgrade-failed"}
    assert states([deleting], replace(POLICY, drain_enable=True)) == {"a": "drain-required"}
    forced = plan_upgrades(replace(POLICY, pod_deletion_force=True), [deleting], {DS: NEW}, {}, 0)
    assert forced.steps["a"].evict == [("ml", "bare")]


def test_pod_deletion_times_out() -> None:
    pod = WorkloadPod("ml", "pinned", controlled=True, empty_dir=False, finished=False)
    deleting = node("a", "pod-deletion-required", unschedulable=True, gpu_pods=(pod,))
    result = plan_upgrades(POLICY, [deleting], {DS: NEW}, {}, 1000.0, {"a": 600.0})
    assert result.steps["a"].state == "upgrade-failed"


def test_wait_for_jobs_waits_for_selected_pods_until_the_timeout() -> None:
    policy = replace(POLICY, wait_pod_selector="app=job", wait_timeout=100)
    job = WorkloadPod("ml", "j", True, False, finished=False, labels={"app": "job"})
    waiting = node("a", "wait-for-jobs-required", unschedulable=True, node_pods=(job,))
    first = plan_upgrades(policy, [waiting], {DS: NEW}, {}, 1000.0).steps["a"]
    assert first.state is None and first.annotations
    key = next(iter(first.annotations))
    started = replace(waiting, annotations={key: "1000"})
    assert plan_upgrades(policy, [started], {DS: NEW}, {}, 1050.0).steps == {}
    assert plan_upgrades(policy, [started], {DS: NEW}, {}, 1100.0).steps["a"].state == (
        "pod-deletion-required"
    )
    finished = replace(waiting, node_pods=(replace(job, finished=True),))
    assert states([finished], policy) == {"a": "pod-deletion-required"}


def test_drain_evicts_selected_pods_but_not_daemonsets_or_skipped() -> None:
    policy = replace(POLICY, drain_enable=True)
    pods = (
        WorkloadPod("web", "w", True, False, False, labels={"app": "web"}),
        WorkloadPod("kube-system", "ds", True, False, False, daemonset=True),
        WorkloadPod(
            "gpu-operator",
            "op",
            True,
            False,
            False,
            labels={"nvidia.com/gpu-driver-upgrade-drain.skip": "true"},
        ),
    )
    draining = node("a", "drain-required", unschedulable=True, node_pods=pods)
    step = plan_upgrades(policy, [draining], {DS: NEW}, {}, 0.0).steps["a"]
    assert step.evict == [("web", "w")]
    assert states([draining]) == {"a": "pod-restart-required"}


def test_restart_only_when_the_driver_config_digest_is_unchanged() -> None:
    same = node("a", "upgrade-required")
    same = replace(same, driver_pod=driver("a", config_digest="42"))
    step = plan_upgrades(POLICY, [same], {DS: NEW}, {DS: "42"}, 0.0).steps["a"]
    assert (step.state, step.cordon) == ("pod-restart-required", True)
    assert plan_upgrades(POLICY, [same], {DS: NEW}, {DS: "43"}, 0.0).steps["a"].state == (
        "cordon-required"
    )
    # On that path the modules stay loaded: the GPU pods stay and the driver pod restarts.
    gpu_pod = WorkloadPod("ml", "train-0", controlled=True, empty_dir=False, finished=False)
    restarting = replace(same, labels={UPGRADE_STATE_LABEL: "pod-restart-required"})
    restarting = replace(restarting, gpu_pods=(gpu_pod,), unschedulable=True)
    step = plan_upgrades(POLICY, [restarting], {DS: NEW}, {DS: "42"}, 0.0).steps["a"]
    assert (step.state, step.delete_driver_pod) == (None, ("gpu-operator", f"{DS}-a"))
    step = plan_upgrades(POLICY, [restarting], {DS: NEW}, {DS: "43"}, 0.0).steps["a"]
    assert (step.state, step.delete_driver_pod) == ("pod-deletion-required", None)


def test_validation_times_out_after_600_seconds() -> None:
    waiting = node("a", "validation-required", NEW, unschedulable=True, validator_ready=False)
    first = plan_upgrades(POLICY, [waiting], {DS: NEW}, {}, 1000.0).steps["a"]
    assert first.annotations == {VALIDATION_START_ANNOTATION: "1000"}
    started = replace(waiting, annotations={VALIDATION_START_ANNOTATION: "1000"})
    assert plan_upgrades(POLICY, [started], {DS: NEW}, {}, 1500.0).steps == {}
    assert plan_upgrades(POLICY, [started], {DS: NEW}, {}, 1601.0).steps["a"].state == (
        "upgrade-failed"
    )


def test_failed_node_recovers_when_its_driver_pod_is_in_sync_and_ready() -> None:
    failed = node("a", "upgrade-failed", NEW, unschedulable=True)
    assert states([failed]) == {"a": "uncordon-required"}
    crashing = replace(failed, driver_pod=driver("a", NEW, containers_ready=False))
    assert states([crashing]) == {}


def test_a_crash_looping_new_driver_pod_fails_the_upgrade() -> None:
    looping = node("a", "pod-restart-required", NEW, unschedulable=True)
    looping = replace(looping, driver_pod=driver("a", NEW, containers_ready=False, failing=True))
    assert states([looping]) == {"a": "upgrade-failed"}


class World:
    """Nodes whose labels, cordon and pods follow the steps, as the API server and the
    DaemonSet controller would; `restart_every` drops the operator's memory now and then."""

    def __init__(self, count: int, gpu_pods: int, rng: random.Random) -> None:
        self.rng = rng
        self.nodes = {
            f"n{i:03d}": node(f"n{i:03d}", "upgrade-done", OLD, validator_ready=True)
            for i in range(count)
        }
        self.pods = {
            name: tuple(
                WorkloadPod("ml", f"{name}-p{j}", True, False, False) for j in range(gpu_pods)
            )
            for name in self.nodes
        }

    def tick(self, policy: UpgradePolicy, now: float) -> int:
        # A new driver pod starts running a tick after it is made.
        for name, state in self.nodes.items():
            if not state.driver_pod.running:
                self.nodes[name] = replace(
                    state, driver_pod=replace(state.driver_pod, running=True)
                )
        current = [replace(n, gpu_pods=self.pods[n.name]) for n in self.nodes.values()]
        result = plan_upgrades(policy, current, {DS: NEW}, {}, now, {})
        for name, step in result.steps.items():
            before = self.nodes[name]
            labels = dict(before.labels)
            for key, value in step.labels.items():
                if value is None:
                    labels.pop(key, None)
                else:
                    labels[key] = value
            annotations = dict(before.annotations)
            for key, value in step.annotations.items():
                if value is None:
                    annotations.pop(key, None)
                else:
                    annotations[key] = value
            pod = before.driver_pod
            if step.delete_driver_pod is not None:
                pod = driver(name, NEW, running=self.rng.random() < 0.5)
            evicted = {n for _, n in step.evict}
            self.pods[name] = tuple(p for p in self.pods[name] if p.name not in evicted)
            self.nodes[name] = replace(
                before,
                labels=labels,
                annotations=annotations,
                unschedulable=before.unschedulable if step.cordon is None else step.cordon,
                driver_pod=pod,
            )
        return result.counts.in_progress

    def upgrading(self) -> int:
        idle = {"", "upgrade-done", "upgrade-required"}
        return sum(1 for n in self.nodes.values() if n.state not in idle)


@settings(max_examples=25, deadline=None)
@given(
    count=st.integers(1, 60),
    parallel=st.integers(0, 12),
    unavailable=st.sampled_from(["25%", "50%", "100%", 3, 7]),
    seed=st.integers(0, 2**16),
)
def test_a_rollout_never_exceeds_its_limits_and_finishes(
    count: int, parallel: int, unavailable: int | str, seed: int
) -> None:
    policy = UpgradePolicy(
        auto_upgrade=True, max_parallel_upgrades=parallel, max_unavailable=unavailable
    )
    limit = policy.unavailable_limit(count)
    world = World(count, gpu_pods=2, rng=random.Random(seed))
    for tick in range(2000):
        world.tick(policy, float(tick))
        upgrading = world.upgrading()
        if parallel:
            assert upgrading <= max(parallel, 0)
        assert sum(1 for n in world.nodes.values() if n.unschedulable) <= max(limit, 1)
        if all(
            n.state == "upgrade-done" and n.driver_pod.revision == NEW and not n.unschedulable
            for n in world.nodes.values()
        ):
            break
    else:
        pytest.fail(f"not converged: {[n.state for n in world.nodes.values()]}")
    assert not any(world.pods.values()), "GPU pods were left on upgraded nodes"


def test_a_hundred_nodes_ten_at_a_time() -> None:
    policy = UpgradePolicy(auto_upgrade=True, max_parallel_upgrades=10, max_unavailable="100%")
    world = World(100, gpu_pods=1, rng=random.Random(7))
    peak = 0
    for tick in range(1000):
        world.tick(policy, float(tick))
        peak = max(peak, world.upgrading())
        if all(
            n.state == "upgrade-done" and n.driver_pod.revision == NEW for n in world.nodes.values()
        ):
            break
    assert peak == 10
    assert all(n.state == UpgradeState.DONE for n in world.nodes.values())
