"""The operator and the node simulator on the real control plane.

The operator runs as its ServiceAccount under the shipped RBAC (not as admin); the
simulator plays the node side of three 2x A10 nodes. Tests run in file order and share
one operator stack for the module.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.resources.apps_v1 import DaemonSet, Deployment
from lightkube.resources.core_v1 import ConfigMap, Event, Pod, Service, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import ClusterRole, Role, RoleBinding
from lightkube.types import PatchType

from gpuop.api.labels import UPGRADE_ENABLED_ANNOTATION, UPGRADE_STATE_LABEL
from gpuop.catalog import operand_table
from gpuop.controlplane.audit import audit_entries, audit_mark, write_requests
from gpuop.kube import ClusterPolicy, kinds, ops, sync_client
from gpuop.kube.errors import Invalid
from gpuop.lab import stack
from gpuop.naming import is_gpu_resource
from gpuop.planner import plan
from gpuop.policy import parse_cluster_policy
from gpuop.sim.hardware import NodeSpec
from gpuop.sim.registry import add_nodes
from kit.waiting import wait_until

pytestmark = pytest.mark.e2e

NODES = {"e2e-container": "container", "e2e-passthrough": "vm-passthrough", "e2e-vgpu": "vm-vgpu"}
EXPECTED = {
    "e2e-container": {"nvidia.com/gpu": 2},
    "e2e-passthrough": {"nvidia.com/GA102GL_A10": 2},
    "e2e-vgpu": {"nvidia.com/NVIDIA_A10-12Q": 4},
}
DRIVER_APP = "nvidia-driver-daemonset"
OPERATOR_USER = "system:serviceaccount:gpu-operator:gpuop-operator"
SERVICE_MONITOR_CRD = Path(__file__).parents[1] / "data" / "prometheus" / "servicemonitors-crd.yaml"


def gpu_allocatable(client: Client, name: str) -> dict[str, int]:
    node = ops.get_node(client, name) or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {k: int(v) for k, v in allocatable.items() if is_gpu_resource(k) and int(v) > 0}


def wait_for_resources(
    client: Client, node: str, expected: dict[str, int], what: str, timeout: float = 90
) -> None:
    """Wait until `node` advertises exactly `expected` of the GPU resources."""

    def check() -> tuple[bool, Any]:
        seen = gpu_allocatable(client, node)
        return seen == expected, seen

    wait_until(check, timeout, what)


def wait_all_container(client: Client, timeout: float) -> None:
    """Wait until every node of the stack advertises its two GPUs as nvidia.com/gpu."""
    wait_until(
        lambda: (
            all(gpu_allocatable(client, n) == {"nvidia.com/gpu": 2} for n in NODES),
            {n: gpu_allocatable(client, n) for n in NODES},
        ),
        timeout,
        "all nodes container",
    )


def run_gpu_pod(client: Client, name: str, node: str, resource: str) -> None:
    """A pod on `node` using one `resource` (a CUDA pod, or a VM's launcher pod), Running."""
    pod = stack.gpu_pod(name, resource, node)
    ops.create_or_replace_sync(client, pod)
    wait_until(
        lambda: (client.get(Pod, name, namespace="default").status.phase == "Running", None),
        30,
        f"pod {name} running",
    )


def condition(kubeconfig: str, kind: str) -> dict[str, Any]:
    """The ClusterPolicy's condition of type `kind` ({} if absent)."""
    policy = stack.get_cluster_policy(kubeconfig, "cluster-policy") or {}
    conditions = policy.get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == kind), {})


def wait_for_condition(kubeconfig: str, kind: str, status: str, timeout: float = 30) -> None:
    wait_until(
        lambda: (condition(kubeconfig, kind).get("status") == status, condition(kubeconfig, kind)),
        timeout,
        f"{kind}={status}",
    )


@pytest.fixture(scope="module")
def gpuop_stack(
    kubeconfig_path: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    kubeconfig = str(kubeconfig_path)
    work = tmp_path_factory.mktemp("gpuop-stack")
    stack.install_crd(kubeconfig)
    # Prometheus' operator is "installed" (its kind is served) before gpuop starts, so the
    # ServiceMonitors are made.
    ops.apply_object_sync(sync_client(kubeconfig), yaml.safe_load(SERVICE_MONITOR_CRD.read_text()))
    operator_kubeconfig = stack.install_operator_access(kubeconfig, work)
    client = sync_client(kubeconfig)
    for name in NODES:
        ops.delete_node_sync(client, name)
    operator = stack.start_operator(operator_kubeconfig, work / "logs")
    simulator_kubeconfig = stack.install_simulator_access(kubeconfig, work)
    simulator = stack.start_simulator(str(simulator_kubeconfig), work / "logs", work / "hosts")
    state = {"kubeconfig": kubeconfig, "work": work, "operator": operator, "simulator": simulator}
    yield state
    state["operator"].stop()
    state["simulator"].stop()
    stack.delete_cluster_policy(kubeconfig, "cluster-policy")
    for name in NODES:
        ops.delete_node_sync(client, name)
    print("operator log tail:\n" + state["operator"].log_tail(40))


def test_three_nodes_get_their_operand_sets_and_resources(gpuop_stack: dict[str, Any]) -> None:
    kubeconfig = gpuop_stack["kubeconfig"]
    client = sync_client(kubeconfig)
    add_nodes(
        client,
        [
            NodeSpec(name, "A10", 2, {"nvidia.com/gpu.workload.config": workload})
            for name, workload in NODES.items()
        ],
        stack.NAMESPACE,
    )
    stack.apply_cluster_policy(kubeconfig, stack.lab_policy(sandbox=True))

    def converged() -> tuple[bool, Any]:
        seen = {n: gpu_allocatable(client, n) for n in NODES}
        policy = stack.get_cluster_policy(kubeconfig, "cluster-policy") or {}
        state = (policy.get("status") or {}).get("state")
        return seen == EXPECTED and state == "ready", (state, seen)

    wait_until(converged, 120, "three nodes to converge")
    policy = parse_cluster_policy(stack.get_cluster_policy(kubeconfig, "cluster-policy"))
    for name in NODES:
        node = ops.get_node(client, name) or {}
        labels = node["metadata"]["labels"]
        # Nodes look as real ones do: nothing gpuop-only on them for the planner to read.
        annotations = node["metadata"].get("annotations") or {}
        assert not [key for key in annotations if key.startswith("gpuop.io/")], annotations
        node_plan = plan(policy, node)
        assert node_plan.inventory.source in ("gfd-labels", "advertised"), name
        assert node_plan.label_changes == {}, f"{name} labels differ from the plan"
        deploy = {
            k for k, v in labels.items() if k.startswith("nvidia.com/gpu.deploy.") and v == "true"
        }
        expected_keys = {
            k
            for k, v in node_plan.desired_labels.items()
            if k.startswith("nvidia.com/gpu.deploy.") and v == "true"
        }
        assert deploy == expected_keys
    pods = [p for p in client.list(Pod, namespace=stack.NAMESPACE)]
    by_node: dict[str, set[str]] = {}
    for pod in pods:
        if pod.spec and pod.spec.nodeName in NODES and pod.metadata:
            by_node.setdefault(pod.spec.nodeName, set()).add(_operand_of(pod) or "")
    assert "device-plugin" in by_node["e2e-container"]
    assert (
        "vfio-manager" in by_node["e2e-passthrough"]
        and "device-plugin" not in by_node["e2e-passthrough"]
    )
    assert {"vgpu-manager", "vgpu-device-manager", "sandbox-device-plugin"} <= by_node["e2e-vgpu"]
    names = {
        ds.metadata.name for ds in client.list(DaemonSet, namespace=stack.NAMESPACE) if ds.metadata
    }
    assert (
        "nvidia-sandbox-device-plugin-daemonset" in names
        and "nvidia-device-plugin-daemonset" in names
    )


def _operand_of(pod: Pod) -> str | None:
    """The operand a pod runs, known by the DaemonSet that owns it (as upstream's pods)."""
    owners = (pod.metadata.ownerReferences if pod.metadata else None) or []
    table = operand_table()
    return next(
        (table.operand_for_daemonset(o.name) for o in owners if o.kind == "DaemonSet"), None
    )


def _names(client: Client, kind: Any, namespaced: bool = True) -> set[str]:
    params = {"namespace": stack.NAMESPACE} if namespaced else {}
    return {
        o.metadata.name
        for o in client.list(kind, labels={"app.kubernetes.io/managed-by": "gpuop"}, **params)
        if o.metadata and o.metadata.name
    }


def _service_monitors(client: Client) -> set[str]:
    return {
        o.metadata.name
        for o in client.list(kinds.resource("ServiceMonitor"), namespace=stack.NAMESPACE)
        if o.metadata and o.metadata.name
    }


def test_every_operand_pod_runs_under_its_own_service_account(
    gpuop_stack: dict[str, Any],
) -> None:
    """Upstream's ServiceAccount per operand, bound to its Role and ClusterRole, and every
    operand pod the DaemonSet controller made runs under it."""
    client = sync_client(gpuop_stack["kubeconfig"])
    accounts = _names(client, ServiceAccount)
    assert {
        "nvidia-driver",
        "nvidia-container-toolkit",
        "nvidia-device-plugin",
        "nvidia-gpu-feature-discovery",
        "nvidia-operator-validator",
        "nvidia-dcgm-exporter",
        "nvidia-sandbox-device-plugin",
        "nvidia-sandbox-validator",
        "nvidia-vfio-manager",
        "nvidia-vgpu-device-manager",
    } <= accounts
    assert {"nvidia-driver", "nvidia-operator-validator"} <= _names(client, Role)
    assert {"nvidia-driver", "nvidia-device-plugin"} <= _names(client, ClusterRole, False)
    assert "nvidia-driver" in _names(client, RoleBinding)
    pods = [p for p in client.list(Pod, namespace=stack.NAMESPACE) if _operand_of(p) is not None]
    assert len(pods) >= 9, [p.metadata.name for p in pods if p.metadata]
    for pod in pods:
        assert pod.spec is not None and pod.metadata is not None
        account = pod.spec.serviceAccountName
        assert account in accounts and account != "default", (pod.metadata.name, account)
    assert {"gpu-operator", "nvidia-dcgm-exporter"} <= _names(client, Service)
    assert "gpu-operator" in _service_monitors(client)
    configmaps = _names(client, ConfigMap)
    assert {
        "nvidia-driver-startup-probe",
        "nvidia-container-toolkit-entrypoint",
        "nvidia-device-plugin-entrypoint",
        "default-vgpu-devices-config",
    } <= configmaps


def test_vgpu_config_change_gives_twelve(gpuop_stack: dict[str, Any]) -> None:
    client = sync_client(gpuop_stack["kubeconfig"])
    ops.patch_node_sync(client, "e2e-vgpu", labels={"nvidia.com/vgpu.config": "A10-4Q"})
    wait_for_resources(client, "e2e-vgpu", {"nvidia.com/NVIDIA_A10-4Q": 12}, "A10-4Q x 12", 60)


def test_vgpu_config_change_waits_for_the_vm_using_the_devices(
    gpuop_stack: dict[str, Any],
) -> None:
    kubeconfig = gpuop_stack["kubeconfig"]
    client = sync_client(kubeconfig)
    run_gpu_pod(client, "virt-launcher-uses-vgpu", "e2e-vgpu", "nvidia.com/NVIDIA_A10-4Q")

    def parked() -> tuple[bool, Any]:
        labels = (ops.get_node(client, "e2e-vgpu") or {})["metadata"]["labels"]
        value = labels.get("nvidia.com/gpu.deploy.vgpu-device-manager")
        return value == "paused-for-vgpu-change", value

    # The VM's start parks the device manager; a config change made after that is held.
    wait_until(parked, 30, "the vGPU device manager to be parked while the VM runs")
    ops.patch_node_sync(client, "e2e-vgpu", labels={"nvidia.com/vgpu.config": "A10-12Q"})
    wait_for_condition(kubeconfig, "VgpuConfigChangeHeld", "True")
    labels = (ops.get_node(client, "e2e-vgpu") or {})["metadata"]["labels"]
    assert labels["nvidia.com/gpu.deploy.vgpu-device-manager"] == "paused-for-vgpu-change"
    held_events = [
        e
        for e in client.list(Event, namespace="default")
        if e.reason == "VgpuConfigChangeHeld" and e.involvedObject.name == "e2e-vgpu"
    ]
    assert held_events and "virt-launcher-uses-vgpu" in (held_events[0].message or "")
    time.sleep(5)
    assert gpu_allocatable(client, "e2e-vgpu") == {"nvidia.com/NVIDIA_A10-4Q": 12}

    client.delete(Pod, "virt-launcher-uses-vgpu", namespace="default", grace_period=0)
    wait_for_resources(
        client,
        "e2e-vgpu",
        {"nvidia.com/NVIDIA_A10-12Q": 4},
        "the new config once the VM is gone",
        90,
    )
    labels = (ops.get_node(client, "e2e-vgpu") or {})["metadata"]["labels"]
    assert labels["nvidia.com/gpu.deploy.vgpu-device-manager"] == "true"
    wait_for_condition(kubeconfig, "VgpuConfigChangeHeld", "False")


def test_operator_is_quiet_when_converged(
    gpuop_stack: dict[str, Any], audit_log_path: Path
) -> None:
    """Over a quiet period the operator sends no write request at all (audit log)."""
    time.sleep(5)
    start = audit_mark(audit_log_path)
    time.sleep(60)
    writes = write_requests(audit_log_path, start, OPERATOR_USER, leases=False)
    assert writes == [], f"the operator wrote during a quiet minute: {writes[:10]}"


def test_relabel_container_node_to_passthrough(gpuop_stack: dict[str, Any]) -> None:
    client = sync_client(gpuop_stack["kubeconfig"])
    ops.patch_node_sync(
        client, "e2e-container", labels={"nvidia.com/gpu.workload.config": "vm-passthrough"}
    )
    wait_for_resources(
        client,
        "e2e-container",
        {"nvidia.com/GA102GL_A10": 2},
        "the relabelled node to advertise the PCI resource only",
        90,
    )
    ops.patch_node_sync(
        client, "e2e-container", labels={"nvidia.com/gpu.workload.config": "container"}
    )
    wait_for_resources(
        client, "e2e-container", {"nvidia.com/gpu": 2}, "the node to return to nvidia.com/gpu", 90
    )


def test_switch_is_held_while_gpu_pods_run(gpuop_stack: dict[str, Any]) -> None:
    kubeconfig = gpuop_stack["kubeconfig"]
    client = sync_client(kubeconfig)
    run_gpu_pod(client, "holds-gpu", "e2e-container", "nvidia.com/gpu")
    ops.patch_node_sync(
        client, "e2e-container", labels={"nvidia.com/gpu.workload.config": "vm-vgpu"}
    )

    wait_for_condition(kubeconfig, "WorkloadSwitchHeld", "True")
    time.sleep(2)
    assert gpu_allocatable(client, "e2e-container") == {"nvidia.com/gpu": 2}
    client.delete(Pod, "holds-gpu", namespace="default", grace_period=0)
    wait_for_resources(
        client,
        "e2e-container",
        {"nvidia.com/NVIDIA_A10-12Q": 4},
        "the switch to proceed once the pod is gone",
        90,
    )
    ops.patch_node_sync(
        client, "e2e-container", labels={"nvidia.com/gpu.workload.config": "container"}
    )
    wait_for_resources(client, "e2e-container", {"nvidia.com/gpu": 2}, "back to container", 90)


def test_disabling_an_operand_removes_its_daemonset(gpuop_stack: dict[str, Any]) -> None:
    client = sync_client(gpuop_stack["kubeconfig"])

    def names() -> set[str]:
        return {
            ds.metadata.name
            for ds in client.list(DaemonSet, namespace=stack.NAMESPACE)
            if ds.metadata and ds.metadata.name
        }

    def exporter_objects() -> dict[str, bool]:
        return {
            "DaemonSet": "nvidia-dcgm-exporter" in names(),
            "ServiceAccount": "nvidia-dcgm-exporter" in _names(client, ServiceAccount),
            "Role": "nvidia-dcgm-exporter" in _names(client, Role),
            "ClusterRole": "nvidia-dcgm-exporter-read-pods" in _names(client, ClusterRole, False),
            "Service": "nvidia-dcgm-exporter" in _names(client, Service),
            "ServiceMonitor": "nvidia-dcgm-exporter" in _service_monitors(client),
        }

    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {"spec": {"dcgmExporter": {"serviceMonitor": {"enabled": True}, "enablePodLabels": True}}},
        patch_type=PatchType.MERGE,
    )
    wait_until(
        lambda: (all(exporter_objects().values()), exporter_objects()),
        60,
        "the dcgm-exporter's ServiceMonitor and pod-reading ClusterRole",
    )
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {"spec": {"dcgmExporter": {"enabled": False}}},
        patch_type=PatchType.MERGE,
    )
    wait_until(
        lambda: (not any(exporter_objects().values()), exporter_objects()),
        60,
        "the dcgm-exporter DaemonSet, identity, Service and ServiceMonitor to go",
    )
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {
            "spec": {
                "dcgmExporter": {"enabled": True, "serviceMonitor": None, "enablePodLabels": None}
            }
        },
        patch_type=PatchType.MERGE,
    )
    # As upstream: the ClusterRole that reads every pod exists only while the exporter puts
    # pod labels or UIDs on its metrics.
    wait_until(
        lambda: (
            exporter_objects()
            == {
                **dict.fromkeys(exporter_objects(), True),
                "ServiceMonitor": False,
                "ClusterRole": False,
            },
            exporter_objects(),
        ),
        60,
        "the dcgm-exporter DaemonSet to come back, without its ServiceMonitor and ClusterRole",
    )


def test_the_driver_mounts_each_key_of_the_configmap_its_policy_names(
    gpuop_stack: dict[str, Any],
) -> None:
    """As upstream's: `driver.kernelModuleConfig` is read from the API, key by key."""
    client = sync_client(gpuop_stack["kubeconfig"])
    name = "kernel-module-params"
    client.create(
        ConfigMap.from_dict(
            {
                "metadata": {"name": name, "namespace": stack.NAMESPACE},
                "data": {"nvidia.conf": "NVreg_EnableGpuFirmware=0"},
            }
        )
    )
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {"spec": {"driver": {"kernelModuleConfig": {"name": name}}}},
        patch_type=PatchType.MERGE,
    )

    def mounted() -> tuple[bool, Any]:
        driver = ops.get_object_sync(
            client, "DaemonSet", "nvidia-driver-daemonset", stack.NAMESPACE
        )
        pod = ((driver or {}).get("spec") or {}).get("template", {}).get("spec", {})
        container = next(
            (c for c in pod.get("containers", []) if c["name"] == "nvidia-driver-ctr"), {}
        )
        mounts = [(m["name"], m["mountPath"]) for m in container.get("volumeMounts", [])]
        volumes = {v["name"]: v.get("configMap") or {} for v in pod.get("volumes", [])}
        source = volumes.get(name, {})
        return (name, "/drivers/nvidia.conf") in mounts and source.get("items") == [
            {"key": "nvidia.conf", "path": "nvidia.conf"}
        ], mounts

    wait_until(mounted, 60, "the driver DaemonSet to mount the kernel module parameters")
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {"spec": {"driver": {"kernelModuleConfig": None}}},
        patch_type=PatchType.MERGE,
    )
    wait_until(lambda: (not mounted()[0], None), 60, "the mount to go with the field")
    client.delete(ConfigMap, name, namespace=stack.NAMESPACE)


def test_sandbox_disabled_makes_all_container_and_warns(gpuop_stack: dict[str, Any]) -> None:
    kubeconfig = gpuop_stack["kubeconfig"]
    client = sync_client(kubeconfig)
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {"spec": {"sandboxWorkloads": {"enabled": False}}},
        patch_type=PatchType.MERGE,
    )
    wait_all_container(client, 90)

    def warned() -> tuple[bool, Any]:
        nodes = {
            e.involvedObject.name
            for e in client.list(Event, namespace="default")
            if e.reason == "WorkloadLabelIgnored" and e.type == "Warning"
        }
        return {"e2e-passthrough", "e2e-vgpu"} <= nodes and "e2e-container" not in nodes, nodes

    wait_until(warned, 30, "Warning events on the two sandbox-labelled nodes")

    def sandbox_objects() -> tuple[bool, Any]:
        left = {
            "vGPU ConfigMap": "default-vgpu-devices-config" in _names(client, ConfigMap),
            "sandbox accounts": sorted(
                a for a in _names(client, ServiceAccount) if "sandbox" in a or "vfio" in a
            ),
        }
        return not left["vGPU ConfigMap"] and not left["sandbox accounts"], left

    # As upstream: the sandbox operands' objects go with sandbox workloads.
    wait_until(sandbox_objects, 30, "the vGPU ConfigMap and sandbox identities to go")
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {"spec": {"sandboxWorkloads": {"enabled": True}}},
        patch_type=PatchType.MERGE,
    )


def _labels(client: Client, name: str) -> dict[str, str]:
    return ((ops.get_node(client, name) or {}).get("metadata") or {}).get("labels") or {}


def _upgrade_deployment(name: str) -> dict[str, Any]:
    pod = stack.gpu_pod(name, "nvidia.com/gpu")
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod["spec"]},
        },
    }


def test_a_driver_change_rolls_out_node_by_node(gpuop_stack: dict[str, Any]) -> None:
    """Upstream's automatic driver upgrade: one node at a time, GPU pods evicted first."""
    kubeconfig = gpuop_stack["kubeconfig"]
    client = sync_client(kubeconfig)
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {
            "spec": {
                "sandboxWorkloads": {"enabled": False},
                "driver": {"upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1}},
            }
        },
        patch_type=PatchType.MERGE,
    )

    # Every node is a container node first (the last test turned sandbox workloads back on).
    wait_all_container(client, 120)

    def settled() -> tuple[bool, Any]:
        drivers = {
            p.spec.nodeName
            for p in client.list(Pod, namespace=stack.NAMESPACE, labels={"app": DRIVER_APP})
            if p.spec and p.status and p.status.phase == "Running"
        }
        seen = {n: _labels(client, n).get(UPGRADE_STATE_LABEL) for n in NODES}
        annotated = {
            n: ((ops.get_node(client, n) or {})["metadata"].get("annotations") or {}).get(
                UPGRADE_ENABLED_ANNOTATION
            )
            for n in NODES
        }
        done = all(v == "upgrade-done" for v in seen.values()) and drivers >= set(NODES)
        return done and all(v == "true" for v in annotated.values()), (seen, annotated, drivers)

    wait_until(settled, 120, "every node upgrade-done with upgrades enabled")
    ops.create_or_replace_sync(client, _upgrade_deployment("cuda-upgrade"))

    def gpu_pods() -> dict[str, str]:
        return {
            p.metadata.name: p.spec.nodeName
            for p in client.list(Pod, namespace="default", labels={"app": "cuda-upgrade"})
            if p.metadata and p.spec and p.spec.nodeName and not p.metadata.deletionTimestamp
        }

    first = wait_until(lambda: (bool(gpu_pods()), gpu_pods()), 60, "the GPU pod to run")
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {
            "spec": {
                "driver": {
                    "repository": "nvcr.io/nvidia",
                    "image": "driver",
                    "version": "595.100.01",
                }
            }
        },
        patch_type=PatchType.MERGE,
    )
    in_progress_peak = 0
    idle = {"", "upgrade-done", "upgrade-required"}

    def upgraded() -> tuple[bool, Any]:
        nonlocal in_progress_peak
        seen = {n: _labels(client, n).get(UPGRADE_STATE_LABEL, "") for n in NODES}
        in_progress_peak = max(in_progress_peak, sum(1 for v in seen.values() if v not in idle))
        images = {
            p.spec.nodeName: p.spec.containers[0].image
            for p in client.list(Pod, namespace=stack.NAMESPACE, labels={"app": DRIVER_APP})
            if p.spec and not (p.metadata and p.metadata.deletionTimestamp)
        }
        cordoned = [
            n for n in NODES if (ops.get_node(client, n) or {}).get("spec", {}).get("unschedulable")
        ]
        done = (
            all(v == "upgrade-done" for v in seen.values())
            and set(images) == set(NODES)
            and all("595.100.01" in image for image in images.values())
            and not cordoned
        )
        return done, (seen, images, cordoned)

    wait_until(upgraded, 240, "the new driver on every node, one node at a time")
    assert in_progress_peak == 1
    # The GPU pod was evicted before its node's driver restarted; its ReplicaSet made another.
    assert not set(first) & set(gpu_pods())
    reasons = {e.reason for e in client.list(Event, namespace="default")}
    assert "GPUDriverUpgrade" in reasons
    client.delete(Deployment, "cuda-upgrade", namespace="default")
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {"spec": {"driver": {"upgradePolicy": {"autoUpgrade": False}}}},
        patch_type=PatchType.MERGE,
    )
    wait_until(
        lambda: (
            not any(UPGRADE_STATE_LABEL in _labels(client, n) for n in NODES),
            {n: _labels(client, n).get(UPGRADE_STATE_LABEL) for n in NODES},
        ),
        60,
        "the upgrade state labels to go when upgrades are turned off",
    )
    client.patch(
        ClusterPolicy,
        "cluster-policy",
        {"spec": {"sandboxWorkloads": {"enabled": True}}},
        patch_type=PatchType.MERGE,
    )


def test_invalid_cluster_policy_is_rejected_by_the_api_server(gpuop_stack: dict[str, Any]) -> None:
    client = sync_client(gpuop_stack["kubeconfig"])
    bad = stack.lab_policy(name="bad-policy")
    bad["spec"]["sandboxWorkloads"]["defaultWorkload"] = "vm-everything"
    with pytest.raises(Invalid) as info:
        ops.create_or_replace_sync(client, bad)
    assert "defaultWorkload" in info.value.detail
    worse = stack.lab_policy(name="bad-policy")
    worse["spec"]["driver"]["enabled"] = "yes"
    with pytest.raises(Invalid) as info:
        ops.create_or_replace_sync(client, worse)
    assert "driver.enabled" in info.value.detail


def test_second_policy_is_ignored_and_says_so(gpuop_stack: dict[str, Any]) -> None:
    kubeconfig = gpuop_stack["kubeconfig"]
    second = stack.lab_policy(name="zz-second-policy")
    stack.apply_cluster_policy(kubeconfig, second)
    wait_until(
        lambda: (
            (
                (stack.get_cluster_policy(kubeconfig, "zz-second-policy") or {}).get("status") or {}
            ).get("state")
            == "ignored",
            None,
        ),
        30,
        "the newer policy to be ignored",
    )
    stack.delete_cluster_policy(kubeconfig, "zz-second-policy")


def test_on_openshift_the_driver_daemonsets_are_kept_as_they_are(
    gpuop_stack: dict[str, Any],
) -> None:
    """OpenShift's nodes (the machine-config daemon's label): the driver's DaemonSets, the
    one gpuop made before and one named for an RHCOS version as the Driver Toolkit names
    it, are neither applied nor deleted, and the ClusterPolicy says so; off OpenShift again
    the RHCOS one is a stale driver DaemonSet and goes."""
    kubeconfig = gpuop_stack["kubeconfig"]
    client = sync_client(kubeconfig)
    dtk = f"{DRIVER_APP}-415.92.202402201450-0"
    # The nodes first: off OpenShift, a driver DaemonSet named for an RHCOS version is a
    # stale one and the operator deletes it as soon as it sees it.
    for name in NODES:
        client.patch(
            kinds.resource("Node"),
            name,
            {"metadata": {"labels": {"node.openshift.io/os_id": "rhcos"}}},
            patch_type=PatchType.MERGE,
        )
    wait_for_condition(kubeconfig, "OperandsKept", "True", 60)
    kept = condition(kubeconfig, "OperandsKept")
    assert kept["reason"] == "OpenShiftDriverToolkit", kept
    live = client.get(DaemonSet, DRIVER_APP, namespace=stack.NAMESPACE)
    assert live.metadata is not None and live.metadata.labels is not None
    labels = {**live.metadata.labels, "app": dtk, "openshift.driver-toolkit": "true"}
    ops.create_object_sync(
        client,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": dtk, "namespace": stack.NAMESPACE, "labels": labels},
            "spec": {
                "selector": {"matchLabels": {"app": dtk}},
                "template": {
                    "metadata": {"labels": {"app": dtk}},
                    "spec": {
                        "nodeSelector": {"e2e": "none"},
                        "containers": [{"name": "c", "image": "registry.invalid/dtk:1"}],
                    },
                },
            },
        },
    )
    # Kept through the operator's passes that follow (it would delete it within one).
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        names = {ds.metadata.name for ds in client.list(DaemonSet, namespace=stack.NAMESPACE)}
        assert {DRIVER_APP, dtk} <= names
        time.sleep(0.5)

    for name in NODES:
        client.patch(
            kinds.resource("Node"),
            name,
            {"metadata": {"labels": {"node.openshift.io/os_id": None}}},
            patch_type=PatchType.MERGE,
        )
    wait_for_condition(kubeconfig, "OperandsKept", "False", 60)

    def dtk_gone() -> tuple[bool, Any]:
        found = {ds.metadata.name for ds in client.list(DaemonSet, namespace=stack.NAMESPACE)}
        return dtk not in found and DRIVER_APP in found, sorted(found)

    wait_until(dtk_gone, 60, f"{dtk} deleted as a stale driver DaemonSet, {DRIVER_APP} kept")


def test_deleting_the_policy_removes_what_the_operator_created(gpuop_stack: dict[str, Any]) -> None:
    kubeconfig = gpuop_stack["kubeconfig"]
    client = sync_client(kubeconfig)
    stack.delete_cluster_policy(kubeconfig, "cluster-policy")

    def gone() -> tuple[bool, Any]:
        names = [
            ds.metadata.name
            for ds in client.list(DaemonSet, namespace=stack.NAMESPACE)
            if ds.metadata
        ]
        labelled = [
            n
            for n in NODES
            if any(
                k.startswith("nvidia.com/gpu.deploy.")
                for k in ((ops.get_node(client, n) or {}).get("metadata") or {}).get("labels", {})
            )
        ]
        owned = sorted(
            _names(client, ServiceAccount)
            | _names(client, Role)
            | _names(client, ClusterRole, False)
            | _names(client, Service)
            | _names(client, ConfigMap)
            | _service_monitors(client)
        )
        return not names and not labelled and not owned, (names, labelled, owned)

    # The objects the operator made are owned by the ClusterPolicy: garbage collection takes them.
    wait_until(gone, 90, "DaemonSets, deploy labels and owned objects to be gone")


def _granted_rules() -> set[tuple[str, str, str]]:
    """The operator's own rights; `gpuop-operator-operands` holds those it only grants (a
    unit test holds them equal to the operands' rights)."""
    granted = set()
    for obj in stack.deploy_manifests("rbac"):
        if obj["kind"] not in ("ClusterRole", "Role"):
            continue
        if obj["metadata"]["name"] == "gpuop-operator-operands":
            continue
        for rule in obj["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        granted.add((group, resource, verb))
    return granted


# The rights only a GPUCluster makes the operator use (the DRA stack's objects, the
# GPUCluster's status, the namespace's admin-access label); test_gpucluster_migration.py, run before this file, uses them.
GPU_CLUSTER_ONLY = {
    ("nvidia.com", "gpuclusters/status", "patch"),
    ("", "namespaces", "patch"),
    *(
        (group, resource, verb)
        for group, resource in (
            ("resource.k8s.io", "deviceclasses"),
            ("resource.k8s.io", "resourceclaimtemplates"),
            ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
            ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
            ("apps", "deployments"),
        )
        for verb in ("create", "patch", "delete")
    ),
}


def test_shipped_rbac_is_exactly_what_the_operator_used(audit_log_path: Path) -> None:
    """Every right in the shipped RBAC was used by the operator in this run; none is a wildcard.

    Where no GPUCluster was made in this run (this file alone), the rights only a GPUCluster
    needs are not asked for."""
    granted = _granted_rules()
    assert not any("*" in part for rule in granted for part in rule), "wildcard in the shipped RBAC"
    used = set()
    denied = []
    gpu_cluster_made = False
    for entry in audit_entries(audit_log_path):
        ref = entry.get("objectRef") or {}
        if entry.get("verb") == "create" and ref.get("resource") == "gpuclusters":
            gpu_cluster_made = True
        if (entry.get("user") or {}).get("username") != OPERATOR_USER:
            continue
        # Watches stay open: they are logged when they start, not when they complete.
        if entry.get("stage") not in ("ResponseComplete", "ResponseStarted"):
            continue
        ref = entry.get("objectRef") or {}
        if not ref.get("resource"):
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        code = (entry.get("responseStatus") or {}).get("code")
        used.add((ref.get("apiGroup", ""), resource, entry["verb"]))
        if entry["verb"] == "patch" and code == 201:
            # Server-side apply that creates the object is authorised as create too.
            used.add((ref.get("apiGroup", ""), resource, "create"))
        if code == 403:
            denied.append((ref.get("apiGroup", ""), resource, entry["verb"]))
    assert not denied, f"the operator was denied: {sorted(set(denied))}"
    unused = granted - used - (set() if gpu_cluster_made else GPU_CLUSTER_ONLY)
    assert not unused, f"the shipped RBAC grants rights the operator never used: {sorted(unused)}"
