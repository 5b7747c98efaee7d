"""One reconcile pass as a pure function: what it writes, and that a second pass writes nothing."""

from __future__ import annotations

import copy
from typing import Any

from gpuop.api.policies import select_active
from gpuop.lab.stack import lab_policy
from gpuop.operator.reconcile import PodInfo, Snapshot, daemonset_ready, reconcile
from gpuop.sim.hardware import NodeSpec, node_manifest

NOW = "2026-11-29T00:00:00Z"


def _policy(
    name: str = "cluster-policy", created: str = "2026-01-01T00:00:00Z", sandbox: bool = True
) -> dict[str, Any]:
    policy = lab_policy(sandbox=sandbox, name=name)
    policy["metadata"].update(uid=f"uid-{name}", creationTimestamp=created, generation=1)
    return policy


def _nodes() -> dict[str, dict[str, Any]]:
    return {
        name: node_manifest(NodeSpec(name, "A10", 2, {"nvidia.com/gpu.workload.config": workload}))
        for name, workload in (("c", "container"), ("p", "vm-passthrough"), ("v", "vm-vgpu"))
    }


def _apply(snapshot: Snapshot, actions: Any) -> Snapshot:
    """What the cluster looks like after the writes, with every DaemonSet rolled out."""
    nodes = copy.deepcopy(snapshot.nodes)
    for name, changes in actions.node_label_patches.items():
        for key, value in changes.items():
            if value is None:
                nodes[name]["metadata"]["labels"].pop(key, None)
            else:
                nodes[name]["metadata"]["labels"][key] = value
    daemonsets = dict(snapshot.daemonsets)
    existing = dict(snapshot.existing_objects)
    for obj in actions.apply:
        if obj["kind"] == "DaemonSet":
            daemonsets[obj["metadata"]["name"]] = {
                "metadata": obj["metadata"],
                "spec": obj["spec"],
                "status": {
                    "desiredNumberScheduled": 1,
                    "numberAvailable": 1,
                    "updatedNumberScheduled": 1,
                    "numberReady": 1,
                },
            }
        else:
            existing[(obj["kind"], obj["metadata"]["name"])] = obj["metadata"]["annotations"][
                "nvidia.com/last-applied-hash"
            ]
    for key in actions.delete_objects:
        existing.pop(key, None)
    policies = []
    for policy in snapshot.policies:
        policy = copy.deepcopy(policy)
        if policy["metadata"]["name"] in actions.status:
            policy["status"] = actions.status[policy["metadata"]["name"]]
        policies.append(policy)
    return Snapshot(
        policies,
        nodes,
        daemonsets,
        snapshot.pods,
        snapshot.namespace,
        {},
        existing,
        snapshot.service_monitors_served,
    )


def _ready_pods(actions: Any) -> list[PodInfo]:
    pods = []
    for name, node_plan in actions.plans.items():
        for operand in node_plan.running_operands():
            pods.append(
                PodInfo(
                    "gpu-operator", f"{operand.name}-{name}", name, operand.name, True, (), False
                )
            )
    return pods


def test_first_pass_labels_nodes_and_creates_daemonsets_second_pass_writes_nothing() -> None:
    snapshot = Snapshot([_policy()], _nodes(), {}, [], "gpu-operator")
    first = reconcile(snapshot, NOW)
    assert set(first.node_label_patches) == {"c", "p", "v"}
    assert first.node_label_patches["p"]["nvidia.com/gpu.deploy.vfio-manager"] == "true"
    assert "nvidia.com/gpu.deploy.device-plugin" not in first.node_label_patches["p"]
    kinds = {o["kind"] for o in first.apply}
    assert kinds == {
        "RuntimeClass",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Service",
        "DaemonSet",
    }
    after = _apply(snapshot, first)
    after.pods = _ready_pods(first)
    second = reconcile(after, NOW)
    assert not second.node_label_patches and not second.apply and not second.delete_daemonsets
    assert not second.delete_objects
    assert second.status["cluster-policy"]["state"] == "ready"
    final = reconcile(_apply(after, second), NOW)
    assert final.write_count == 0 and not final.events


def test_under_a_crd_without_status_nodes_a_converged_status_is_not_written_again() -> None:
    """NVIDIA's ClusterPolicy CRD has no `status.nodes`: the API server drops it from every
    write, and a pass that compared it would write the same status forever."""
    import dataclasses

    def as_stored(snapshot: Snapshot) -> Snapshot:
        for policy in snapshot.policies:
            policy.get("status", {}).pop("nodes", None)
        return snapshot

    snapshot = Snapshot([_policy()], _nodes(), {}, [], "gpu-operator")
    first = reconcile(snapshot, NOW)
    after = as_stored(_apply(snapshot, first))
    after.pods = _ready_pods(first)
    second = reconcile(after, NOW)
    settled = as_stored(_apply(after, second))
    assert reconcile(settled, NOW).status, "without knowing, every pass writes the status"
    knowing = dataclasses.replace(settled, status_dropped_keys=frozenset({"nodes"}))
    final = reconcile(knowing, NOW)
    assert final.write_count == 0
    assert (
        "nodes"
        not in reconcile(
            dataclasses.replace(after, status_dropped_keys=frozenset({"nodes"})), NOW
        ).status["cluster-policy"]
    )


def test_oldest_policy_wins_and_the_other_is_marked_ignored() -> None:
    old, new = _policy("b-old", "2026-01-01T00:00:00Z"), _policy("a-new", "2026-06-01T00:00:00Z")
    assert select_active([new, old]).active is old
    actions = reconcile(Snapshot([old, new], _nodes(), {}, [], "gpu-operator"), NOW)
    assert actions.status["a-new"]["state"] == "ignored"
    assert actions.active_policy == "b-old"


def test_a_policy_being_deleted_is_neither_active_nor_marked_ignored() -> None:
    old, new = _policy("b-old", "2026-01-01T00:00:00Z"), _policy("a-new", "2026-06-01T00:00:00Z")
    old["metadata"]["deletionTimestamp"] = "2026-11-28T00:00:00Z"
    actions = reconcile(Snapshot([old, new], _nodes(), {}, [], "gpu-operator"), NOW)
    assert actions.active_policy == "a-new"
    assert "b-old" not in actions.status
    assert actions.status["a-new"]["state"] != "ignored"


def test_sandbox_disabled_ignores_labels_loudly() -> None:
    actions = reconcile(Snapshot([_policy(sandbox=False)], _nodes(), {}, [], "gpu-operator"), NOW)
    warned = {e.node for e in actions.events if e.reason == "WorkloadLabelIgnored"}
    assert warned == {"p", "v"}
    condition = next(
        c
        for c in actions.status["cluster-policy"]["conditions"]
        if c["type"] == "WorkloadLabelsIgnored"
    )
    assert condition["status"] == "True" and "p, v" in condition["message"]
    assert all(
        "nvidia.com/gpu.deploy.device-plugin" in ch for ch in actions.node_label_patches.values()
    )


def test_a_switch_is_held_while_gpu_pods_run_and_proceeds_when_forced() -> None:
    snapshot = Snapshot([_policy()], _nodes(), {}, [], "gpu-operator")
    first = reconcile(snapshot, NOW)
    after = _apply(snapshot, first)
    after.nodes["c"]["metadata"]["labels"]["nvidia.com/gpu.workload.config"] = "vm-vgpu"
    after.pods = [PodInfo("default", "train", "c", None, True, ("nvidia.com/gpu",), False)]
    held = reconcile(after, NOW)
    assert "c" not in held.node_label_patches
    assert any(e.reason == "WorkloadSwitchHeld" and e.node == "c" for e in held.events)
    after.nodes["c"]["metadata"]["annotations"]["gpuop.io/force-workload-switch"] = "true"
    forced = reconcile(after, NOW)
    assert forced.node_label_patches["c"]["nvidia.com/gpu.deploy.vgpu-manager"] == "true"


def test_deleting_the_policy_takes_back_deploy_labels() -> None:
    snapshot = Snapshot([_policy()], _nodes(), {}, [], "gpu-operator")
    after = _apply(snapshot, reconcile(snapshot, NOW))
    after.policies = []
    cleanup = reconcile(after, NOW)
    assert all(all(v is None for v in ch.values()) for ch in cleanup.node_label_patches.values())
    assert set(cleanup.node_label_patches) == {"c", "p", "v"}


def test_without_a_policy_values_users_set_stay_for_the_next_one() -> None:
    nodes = _nodes()
    labels = nodes["c"]["metadata"]["labels"]
    labels["nvidia.com/gpu.deploy.driver"] = "pre-installed"
    labels["nvidia.com/gpu.deploy.dcgm-exporter"] = "false"
    labels["nvidia.com/gpu.deploy.device-plugin"] = "true"
    nodes["p"]["metadata"]["labels"]["nvidia.com/gpu.deploy.operands"] = "false"
    cleanup = reconcile(Snapshot([], nodes, {}, [], "gpu-operator"), NOW)
    assert cleanup.node_label_patches == {"c": {"nvidia.com/gpu.deploy.device-plugin": None}}


def test_daemonset_readiness_follows_upstream() -> None:
    assert daemonset_ready({"status": {"desiredNumberScheduled": 0}})
    assert not daemonset_ready({"status": {"desiredNumberScheduled": 2, "numberUnavailable": 1}})
    assert not daemonset_ready(
        {
            "metadata": {"generation": 2},
            "status": {
                "desiredNumberScheduled": 1,
                "observedGeneration": 1,
                "updatedNumberScheduled": 1,
                "numberAvailable": 1,
            },
        }
    )
    assert daemonset_ready(
        {
            "metadata": {"generation": 2},
            "status": {
                "desiredNumberScheduled": 1,
                "observedGeneration": 2,
                "updatedNumberScheduled": 1,
                "numberAvailable": 1,
            },
        }
    )


def _vgpu_node_in_use(vgpu_config: str) -> Snapshot:
    """The vGPU node converged on A10-12Q (4 devices), a VM using one, and now `vgpu_config`."""
    snapshot = Snapshot([_policy()], _nodes(), {}, [], "gpu-operator")
    after = _apply(snapshot, reconcile(snapshot, NOW))
    node = after.nodes["v"]
    node["status"].setdefault("allocatable", {})["nvidia.com/NVIDIA_A10-12Q"] = "4"
    node["metadata"]["labels"]["nvidia.com/vgpu.config"] = vgpu_config
    after.pods = [
        PodInfo("vms", "virt-launcher-vm1", "v", None, True, ("nvidia.com/NVIDIA_A10-12Q",), False)
    ]
    return after


def test_a_vgpu_config_change_waits_while_vms_use_the_devices() -> None:
    held = reconcile(_vgpu_node_in_use("A10-4Q"), NOW)
    label = "nvidia.com/gpu.deploy.vgpu-device-manager"
    assert held.node_label_patches["v"] == {label: "paused-for-vgpu-change"}
    event = next(e for e in held.events if e.reason == "VgpuConfigChangeHeld")
    assert event.node == "v" and "virt-launcher-vm1" in event.message
    assert "nvidia.com/NVIDIA_A10-4Q: 12" in event.message
    status = held.status["cluster-policy"]
    condition = next(c for c in status["conditions"] if c["type"] == "VgpuConfigChangeHeld")
    assert condition["status"] == "True"
    entry = next(n for n in status["nodes"]["notReady"] if n["name"] == "v")
    assert entry["held"] is True and entry["waitingFor"] == ["vgpu-device-manager"]

    paused = _apply(_vgpu_node_in_use("A10-4Q"), held)
    paused.pods = _vgpu_node_in_use("A10-4Q").pods
    assert "v" not in reconcile(paused, NOW).node_label_patches

    paused.pods = []
    resumed = reconcile(paused, NOW)
    assert resumed.node_label_patches["v"] == {label: "true"}


def test_vms_park_the_vgpu_device_manager_without_holding_the_node_back() -> None:
    label = "nvidia.com/gpu.deploy.vgpu-device-manager"
    in_use = _vgpu_node_in_use("A10-12Q")
    parked = reconcile(in_use, NOW)
    assert parked.node_label_patches["v"] == {label: "paused-for-vgpu-change"}
    assert not any(e.reason == "VgpuConfigChangeHeld" for e in parked.events)
    after = _apply(in_use, parked)
    after.pods = in_use.pods + _ready_pods(reconcile(after, NOW))
    settled = reconcile(after, NOW)
    assert "v" not in settled.node_label_patches
    status = settled.status.get("cluster-policy") or after.policies[0]["status"]
    assert not [n for n in status["nodes"]["notReady"] if n["name"] == "v"]
    held = next(c for c in status["conditions"] if c["type"] == "VgpuConfigChangeHeld")
    assert held["status"] == "False"


def test_a_forced_vgpu_config_change_is_not_held() -> None:
    forced = _vgpu_node_in_use("A10-4Q")
    forced.nodes["v"]["metadata"].setdefault("annotations", {})[
        "gpuop.io/force-workload-switch"
    ] = "true"
    assert "v" not in reconcile(forced, NOW).node_label_patches


def test_the_cluster_policy_can_let_every_held_switch_proceed() -> None:
    snapshot = _vgpu_node_in_use("A10-4Q")
    snapshot.nodes["c"]["metadata"]["labels"]["nvidia.com/gpu.workload.config"] = "vm-vgpu"
    snapshot.pods = [
        *snapshot.pods,
        PodInfo("default", "train", "c", None, True, ("nvidia.com/gpu",), False),
    ]
    held = reconcile(snapshot, NOW)
    assert {"c", "v"} <= {e.node for e in held.events if e.reason.endswith("Held")}
    snapshot.policies[0]["metadata"]["annotations"] = {"gpuop.io/force-workload-switch": "true"}
    forced = reconcile(snapshot, NOW)
    assert not [e for e in forced.events if e.reason.endswith("Held")]
    assert forced.node_label_patches["c"]["nvidia.com/gpu.deploy.vgpu-manager"] == "true"
    assert "v" not in forced.node_label_patches


def test_precompiled_drivers_follow_the_nodes_kernels_and_stale_ones_go() -> None:
    kernel = "feature.node.kubernetes.io/kernel-version.full"
    policy = _policy()
    policy["spec"].setdefault("driver", {})["usePrecompiled"] = True
    nodes = _nodes()
    for node in nodes.values():
        node["metadata"]["labels"][kernel] = "6.8.0-60-generic"
    first = reconcile(Snapshot([policy], nodes, {}, [], "gpu-operator"), NOW)
    names = {o["metadata"]["name"] for o in first.apply if o["kind"] == "DaemonSet"}
    driver = {n for n in names if n.startswith("nvidia-driver-daemonset")}
    assert len(driver) == 1 and next(iter(driver)).startswith("nvidia-driver-daemonset-6.8.0-60")
    after = _apply(Snapshot([policy], nodes, {}, [], "gpu-operator"), first)
    for node in after.nodes.values():
        node["metadata"]["labels"][kernel] = "6.8.0-71-generic"
    second = reconcile(after, NOW)
    assert second.delete_daemonsets == sorted(driver)
    applied = {o["metadata"]["name"] for o in second.apply if o["kind"] == "DaemonSet"}
    assert any(n.startswith("nvidia-driver-daemonset-6.8.0-71") for n in applied)


def test_on_openshift_the_driver_toolkit_daemonsets_are_kept_and_said_so() -> None:
    nodes = _nodes()
    for node in nodes.values():
        node["metadata"]["labels"]["node.openshift.io/os_id"] = "rhcos"
    live = {
        name: {
            "metadata": {"name": name, "labels": {"openshift.driver-toolkit": "true"}},
            "spec": {},
            "status": {"desiredNumberScheduled": 1, "numberAvailable": 1, "numberReady": 1},
        }
        for name in (
            "nvidia-driver-daemonset-415.92.202402201450-0",
            "nvidia-vgpu-manager-daemonset-415.92.202402201450-0",
        )
    }
    policy = _policy()
    policy["spec"].setdefault("vgpuManager", {})["enabled"] = True
    actions = reconcile(Snapshot([policy], nodes, live, [], "gpu-operator"), NOW)
    applied = {o["metadata"]["name"] for o in actions.apply if o["kind"] == "DaemonSet"}
    assert not any(name.startswith(("nvidia-driver", "nvidia-vgpu-manager-")) for name in applied)
    assert "nvidia-container-toolkit-daemonset" in applied
    assert not actions.delete_daemonsets
    kept = next(
        c for c in actions.status["cluster-policy"]["conditions"] if c["type"] == "OperandsKept"
    )
    assert kept["status"] == "True" and kept["reason"] == "OpenShiftDriverToolkit"
    assert "driver and vgpu-manager" in kept["message"]

    # Off OpenShift the per-RHCOS driver DaemonSet is a stale one of gpuop's own kind.
    elsewhere = reconcile(Snapshot([policy], _nodes(), live, [], "gpu-operator"), NOW)
    assert elsewhere.delete_daemonsets == ["nvidia-driver-daemonset-415.92.202402201450-0"]
    plain = next(
        c for c in elsewhere.status["cluster-policy"]["conditions"] if c["type"] == "OperandsKept"
    )
    assert plain["status"] == "False" and plain["reason"] == "None"
