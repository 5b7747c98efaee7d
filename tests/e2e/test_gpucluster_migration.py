"""A node moved from the ClusterPolicy's stack to the GPUCluster's and back, on the real
control plane, with no GPU workload interrupted elsewhere.

The operator runs as its ServiceAccount under the shipped RBAC, beside the simulator, as in
test_operator_sim.py; a ClusterPolicy and a GPUCluster both exist. Three simulated 2x A10
nodes start on the device-plugin stack and a CUDA pod runs on node B. Node A is labelled
`nvidia.com/gpu.stack=dra`: it gets the GPUCluster's deploy labels, loses the device
plugin's and its `nvidia.com/gpu`, and the simulated DRA kubelet plugin publishes its cards
as ResourceSlices. Labelled back, the slices go and `nvidia.com/gpu` returns. The pod on B
is the same pod throughout (uid, no restart, Running). Last, the GPUCluster is deleted and
the operator takes its DeviceClasses and the rest away (this file runs before
test_operator_sim.py, whose RBAC audit counts these requests).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.admissionregistration_v1 import ValidatingAdmissionPolicy
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import Namespace, Pod
from lightkube.resources.resource_v1 import DeviceClass, ResourceClaimTemplate, ResourceSlice

from gpuop.check import run_checks
from gpuop.kube import ops, sync_client
from gpuop.kube.collect import collect
from gpuop.kube.errors import NotFound
from gpuop.lab import stack
from gpuop.naming import is_gpu_resource
from gpuop.policy.gpucluster import default_gpu_cluster_object
from gpuop.sim.hardware import NodeSpec
from gpuop.sim.registry import add_nodes
from kit.waiting import wait_until

pytestmark = pytest.mark.e2e

NODE_A, NODE_B, NODE_C = "gcm-a", "gcm-b", "gcm-c"
NODES = (NODE_A, NODE_B, NODE_C)
STACK_LABEL = "nvidia.com/gpu.stack"
DEPLOY = "nvidia.com/gpu.deploy."
DRA_DEPLOY = {f"{DEPLOY}{key}" for key in ("dra-driver", "dra-validator", "dcgm-exporter-dra")}
DEVICE_PLUGIN_DEPLOY = f"{DEPLOY}device-plugin"
DRIVER = "gpu.nvidia.com"
POD = "gcm-cuda"
ADMIN_ACCESS = "resource.kubernetes.io/admin-access"


def gpu_allocatable(client: Client, name: str) -> dict[str, int]:
    node = ops.get_node(client, name) or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {k: int(v) for k, v in allocatable.items() if is_gpu_resource(k) and int(v) > 0}


def labels(client: Client, name: str) -> dict[str, str]:
    return dict(((ops.get_node(client, name) or {}).get("metadata") or {}).get("labels") or {})


def deploy_labels(client: Client, name: str) -> dict[str, str]:
    return {k: v for k, v in labels(client, name).items() if k.startswith(DEPLOY)}


def slice_devices(client: Client, node: str) -> list[str]:
    """The devices the DRA driver publishes for `node`, over all its ResourceSlices."""
    devices = []
    for item in client.list(ResourceSlice):
        spec = item.spec
        if spec is None or spec.nodeName != node or spec.driver != DRIVER:
            continue
        devices += [d.name for d in spec.devices or []]
    return sorted(devices)


def pod_state(client: Client) -> tuple[str, str, int, bool]:
    """The pod on B: (uid, phase, restarts, being deleted)."""
    pod = client.get(Pod, POD, namespace="default")
    assert pod.metadata is not None and pod.status is not None
    restarts = sum(c.restartCount for c in pod.status.containerStatuses or [])
    return (
        str(pod.metadata.uid),
        str(pod.status.phase),
        restarts,
        pod.metadata.deletionTimestamp is not None,
    )


def gpu_cluster_status(kubeconfig: str) -> dict[str, Any]:
    return dict((stack.get_gpu_cluster(kubeconfig) or {}).get("status") or {})


@pytest.fixture(scope="module")
def migration_stack(
    kubeconfig_path: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    kubeconfig = str(kubeconfig_path)
    work = tmp_path_factory.mktemp("gpucluster-migration")
    stack.install_crd(kubeconfig)
    operator_kubeconfig = stack.install_operator_access(kubeconfig, work)
    client = sync_client(kubeconfig)
    for name in NODES:
        ops.delete_node_sync(client, name)
    operator = stack.start_operator(operator_kubeconfig, work / "logs")
    simulator_kubeconfig = stack.install_simulator_access(kubeconfig, work)
    simulator = stack.start_simulator(str(simulator_kubeconfig), work / "logs", work / "hosts")
    state = {"kubeconfig": kubeconfig, "client": client, "operator": operator}
    yield state
    print("operator log tail:\n" + operator.log_tail(40))
    operator.stop()
    simulator.stop()
    stack.delete_gpu_cluster(kubeconfig)
    stack.delete_cluster_policy(kubeconfig, "cluster-policy")
    with contextlib.suppress(NotFound):
        ops.delete_pod_sync(client, "default", POD, grace_period=0)
    for name in NODES:
        ops.delete_node_sync(client, name)

    def cleaned() -> tuple[bool, Any]:
        left = [
            ds.metadata.name
            for ds in client.list(DaemonSet, namespace=stack.NAMESPACE)
            if ds.metadata
        ]
        return not left, left

    # The next module starts its own operator on a namespace without these.
    wait_until(cleaned, 60, "the owned DaemonSets to be collected")


def test_both_crs_three_nodes_on_the_device_plugin_stack(migration_stack: dict[str, Any]) -> None:
    kubeconfig, client = migration_stack["kubeconfig"], migration_stack["client"]
    add_nodes(client, [NodeSpec(name, "A10", 2, {}) for name in NODES], stack.NAMESPACE)
    stack.apply_cluster_policy(kubeconfig, stack.lab_policy(sandbox=False))
    stack.apply_gpu_cluster(kubeconfig, default_gpu_cluster_object())
    wait_until(
        lambda: (
            all(gpu_allocatable(client, n) == {"nvidia.com/gpu": 2} for n in NODES),
            {n: gpu_allocatable(client, n) for n in NODES},
        ),
        120,
        "three nodes with nvidia.com/gpu",
    )
    # The GPUCluster's status is upstream's: no node runs the DRA stack yet, its (empty)
    # DaemonSets are rolled out.
    status = wait_until(
        lambda: (
            gpu_cluster_status(kubeconfig).get("state") == "ready",
            gpu_cluster_status(kubeconfig),
        ),
        60,
        "the GPUCluster's status",
    )
    assert status["namespace"] == stack.NAMESPACE
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True" and ready["reason"] == "Reconciled"
    classes = {c.metadata.name for c in client.list(DeviceClass) if c.metadata}
    assert {"gpu.nvidia.com", "mig.nvidia.com"} <= classes
    # The admin-access claim templates of the validator and the exporter are accepted only
    # in a namespace labelled for them, as upstream's controller labels it.
    namespace = client.get(Namespace, stack.NAMESPACE)
    assert (namespace.metadata.labels or {}).get(ADMIN_ACCESS) == "true"
    templates = {
        t.metadata.name
        for t in client.list(ResourceClaimTemplate, namespace=stack.NAMESPACE)
        if t.metadata
    }
    assert {"nvidia-dra-validator-gpu", "nvidia-dcgm-exporter-admin"} <= templates
    for name in NODES:
        assert not DRA_DEPLOY & set(deploy_labels(client, name)), name
        assert deploy_labels(client, name).get(DEVICE_PLUGIN_DEPLOY) == "true", name
        assert slice_devices(client, name) == [], name
    stack_pod = stack.gpu_pod(POD, "nvidia.com/gpu", NODE_B)
    ops.create_or_replace_sync(client, stack_pod)
    wait_until(lambda: (pod_state(client)[1] == "Running", pod_state(client)), 30, "pod on B")
    migration_stack["pod"] = pod_state(client)
    migration_stack["others"] = {n: deploy_labels(client, n) for n in (NODE_B, NODE_C)}


def test_node_a_moves_to_dra(migration_stack: dict[str, Any]) -> None:
    client = migration_stack["client"]
    ops.patch_node_sync(client, NODE_A, labels={STACK_LABEL: "dra"})

    def on_dra() -> tuple[bool, Any]:
        deploy = deploy_labels(client, NODE_A)
        devices = slice_devices(client, NODE_A)
        done = (
            all(deploy.get(key) == "true" for key in DRA_DEPLOY)
            and DEVICE_PLUGIN_DEPLOY not in deploy
            and "nvidia.com/gpu" not in gpu_allocatable(client, NODE_A)
            and len(devices) == 2
        )
        return done, (deploy, gpu_allocatable(client, NODE_A), devices)

    deploy, _, devices = wait_until(on_dra, 90, "node A on the DRA stack")
    assert deploy.get(f"{DEPLOY}driver") == "true", "the driver stays: GPUCluster needs it"
    assert all(d.startswith("gpu-") for d in devices), devices
    for name, before in migration_stack["others"].items():
        assert deploy_labels(client, name) == before, f"{name} was touched"
        assert gpu_allocatable(client, name) == {"nvidia.com/gpu": 2}, name
    assert pod_state(client) == migration_stack["pod"]
    # `gpuop check`, reading the cluster as --live does (the GPUCluster too), holds node A
    # to the DRA stack's contract and B and C to the ClusterPolicy's: none is wrong.
    report = run_checks(collect(client).all_objects())
    stack_rules = {"GPU201", "GPU207", "GPU301", "GPU302", "GPU803", "GPU804"}
    wrong = [(f.code, f.node) for f in report.findings if f.node in NODES and f.code in stack_rules]
    assert wrong == [], wrong
    managers = {node.name: node.managers for node in report.nodes if node.name in NODES}
    assert "nvidia-dra-driver" in managers[NODE_A], managers
    # The DRA driver's controller (a Deployment) runs the plugin's image on whichever node
    # it lands: it names no node's manager.
    assert all("nvidia-dra-driver" not in managers[name] for name in (NODE_B, NODE_C)), managers


def test_node_a_moves_back_to_the_device_plugin(migration_stack: dict[str, Any]) -> None:
    client = migration_stack["client"]
    ops.patch_node_sync(client, NODE_A, labels={STACK_LABEL: "device-plugin"})

    def back() -> tuple[bool, Any]:
        deploy = deploy_labels(client, NODE_A)
        devices = slice_devices(client, NODE_A)
        done = (
            not DRA_DEPLOY & set(deploy)
            and deploy.get(DEVICE_PLUGIN_DEPLOY) == "true"
            and gpu_allocatable(client, NODE_A) == {"nvidia.com/gpu": 2}
            and not devices
        )
        return done, (deploy, gpu_allocatable(client, NODE_A), devices)

    wait_until(back, 90, "node A back on the device-plugin stack")
    for name, before in migration_stack["others"].items():
        assert deploy_labels(client, name) == before, f"{name} was touched"
        assert gpu_allocatable(client, name) == {"nvidia.com/gpu": 2}, name
    uid, phase, restarts, deleting = pod_state(client)
    assert (uid, phase, restarts, deleting) == migration_stack["pod"]
    assert phase == "Running" and restarts == 0 and not deleting


def test_deleting_the_gpu_cluster_takes_its_objects(migration_stack: dict[str, Any]) -> None:
    """The ClusterPolicy stays: the operator deletes what it made for the GPUCluster."""
    kubeconfig, client = migration_stack["kubeconfig"], migration_stack["client"]
    stack.delete_gpu_cluster(kubeconfig)

    def gone() -> tuple[bool, Any]:
        classes = sorted(c.metadata.name for c in client.list(DeviceClass) if c.metadata)
        policies = sorted(
            p.metadata.name
            for p in client.list(ValidatingAdmissionPolicy)
            if p.metadata and "nvidia-dra-driver" in str(p.metadata.name)
        )
        templates = sorted(
            t.metadata.name
            for t in client.list(ResourceClaimTemplate, namespace=stack.NAMESPACE)
            if t.metadata
        )
        done = not classes and not policies and not templates
        return done, (classes, policies, templates)

    wait_until(
        gone, 60, "the GPUCluster's DeviceClasses, admission policy and claim templates to go"
    )
    assert pod_state(client) == migration_stack["pod"]
    for name in NODES:
        assert gpu_allocatable(client, name) == {"nvidia.com/gpu": 2}, name
