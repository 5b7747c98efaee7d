"""The local control plane behaves like a real cluster where the operator depends on it.

GPU nodes are posted with their status (kwok keeps the capacity and marks them Ready); the real
scheduler binds pods by extended resources; the real DaemonSet controller fills kwok nodes;
RBAC applies to ServiceAccount tokens; ``up``/``down`` leave nothing behind.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.models.apps_v1 import DaemonSetSpec
from lightkube.models.core_v1 import (
    Container,
    NodeStatus,
    PodSpec,
    PodTemplateSpec,
    ResourceRequirements,
    SecurityContext,
)
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.models.rbac_v1 import PolicyRule, RoleRef, Subject
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import Event, Node, Pod, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import Role, RoleBinding

from gpuop.controlplane import (
    KUBERNETES_VERSION,
    LocalCluster,
    server_version,
    write_service_account_kubeconfig,
)
from gpuop.controlplane.procs import find_processes
from gpuop.kube.versions import read_server_version
from kit.waiting import wait_for

pytestmark = pytest.mark.e2e

PAUSE = "registry.k8s.io/pause:3.10"
NODE_LABEL = "gpuop.test/node-group"
GPU_NODE_RESOURCES = {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": "2"}


@pytest.fixture
def make_node(kube_client: Client) -> Iterator[Callable[..., str]]:
    """Post kwok nodes (status in the POST body); delete them after the test."""
    made: list[str] = []

    def make(group: str, resources: dict[str, str] | None = None) -> str:
        name = f"e2e-gpu-{uuid.uuid4().hex[:8]}"
        res = resources or GPU_NODE_RESOURCES
        kube_client.create(
            Node(
                metadata=ObjectMeta(
                    name=name, labels={NODE_LABEL: group, "kubernetes.io/hostname": name}
                ),
                status=NodeStatus(capacity=dict(res), allocatable=dict(res)),
            )
        )
        made.append(name)
        return name

    yield make
    for name in made:
        try:
            kube_client.delete(Node, name)
        except ApiError as exc:
            if exc.status.code != 404:
                raise


def wait_until_schedulable(client: Client, name: str) -> Node:
    """Wait for kwok to mark the node Ready and the node controller to lift its taints."""

    def schedulable() -> Node | None:
        node = client.get(Node, name)
        conditions = (node.status.conditions or []) if node.status else []
        ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
        tainted = bool(node.spec and node.spec.taints)
        return node if ready and not tainted else None

    return wait_for(schedulable, f"node {name} to be Ready without taints")


def pod(name: str, resources: dict[str, int], node_group: str | None = None) -> Pod:
    limits = {key: str(value) for key, value in resources.items()}
    return Pod(
        metadata=ObjectMeta(name=name),
        spec=PodSpec(
            containers=[
                Container(
                    name="main",
                    image=PAUSE,
                    resources=ResourceRequirements(limits=limits, requests=limits),
                )
            ],
            nodeSelector={NODE_LABEL: node_group} if node_group else None,
        ),
    )


def events_for(client: Client, namespace: str, name: str) -> list[Any]:
    return list(client.list(Event, namespace=namespace, fields={"involvedObject.name": name}))


def test_version_is_the_pinned_kubernetes(kubeconfig_path: Path) -> None:
    version = server_version(kubeconfig_path)
    assert version["gitVersion"] == KUBERNETES_VERSION
    assert (version["major"], version["minor"]) == ("1", KUBERNETES_VERSION.split(".")[1])
    # The version checks read /version through gpuop.kube, logged in from the kubeconfig.
    assert read_server_version(str(kubeconfig_path), None) == KUBERNETES_VERSION


def test_gpu_pod_is_bound_by_the_scheduler_and_run_by_kwok(
    kube_client: Client, namespace: str, make_node: Callable[..., str]
) -> None:
    group = f"bind-{uuid.uuid4().hex[:6]}"
    node_name = make_node(group)
    node = wait_until_schedulable(kube_client, node_name)
    assert node.status is not None and node.status.allocatable is not None
    assert node.status.allocatable["nvidia.com/gpu"] == "2"  # kwok kept the posted capacity

    kube_client.create(pod("wants-a-gpu", {"nvidia.com/gpu": 1}, group), namespace=namespace)

    def running() -> Pod | None:
        current = kube_client.get(Pod, "wants-a-gpu", namespace=namespace)
        phase = current.status.phase if current.status else None
        return current if phase == "Running" else None

    bound = wait_for(running, "the GPU pod to be bound and Running")
    assert bound.spec is not None and bound.spec.nodeName == node_name
    scheduled = [
        e for e in events_for(kube_client, namespace, "wants-a-gpu") if e.reason == "Scheduled"
    ]
    assert scheduled and node_name in (scheduled[0].message or "")


def test_pod_asking_for_an_unadvertised_resource_stays_pending(
    kube_client: Client, namespace: str, make_node: Callable[..., str]
) -> None:
    # A Ready, untainted node, so the scheduler's verdict is "Insufficient ..." (a node that
    # kwok has not initialised yet still has the not-ready taint).
    wait_until_schedulable(kube_client, make_node(f"pending-{uuid.uuid4().hex[:6]}"))
    kube_client.create(pod("wants-an-a10", {"nvidia.com/GA102GL_A10": 1}), namespace=namespace)

    def failed_scheduling() -> str | None:
        for event in events_for(kube_client, namespace, "wants-an-a10"):
            if event.reason == "FailedScheduling":
                return str(event.message)
        return None

    message = wait_for(failed_scheduling, "a FailedScheduling event")
    # kube-scheduler's FitError wording, e.g. "0/3 nodes are available: 3 Insufficient
    # nvidia.com/GA102GL_A10. preemption: 0/3 nodes are available: 3 Preemption is not
    # helpful for scheduling."
    assert re.match(
        r"0/\d+ nodes are available: (?:.*, )?\d+ Insufficient nvidia\.com/GA102GL_A10[.,]",
        message,
    ), message
    current = kube_client.get(Pod, "wants-an-a10", namespace=namespace)
    assert current.status is not None and current.status.phase == "Pending"
    assert current.spec is not None and not current.spec.nodeName


def test_daemonset_pods_run_on_kwok_nodes(
    kube_client: Client, namespace: str, make_node: Callable[..., str]
) -> None:
    group = f"ds-{uuid.uuid4().hex[:6]}"
    nodes = {make_node(group), make_node(group)}
    labels = {"app": "e2e-daemon"}
    kube_client.create(
        DaemonSet(
            metadata=ObjectMeta(name="e2e-daemon"),
            spec=DaemonSetSpec(
                selector=LabelSelector(matchLabels=labels),
                template=PodTemplateSpec(
                    metadata=ObjectMeta(labels=labels),
                    spec=PodSpec(
                        nodeSelector={NODE_LABEL: group},
                        containers=[
                            Container(
                                name="main",
                                image=PAUSE,
                                securityContext=SecurityContext(privileged=True),
                            )
                        ],
                    ),
                ),
            ),
        ),
        namespace=namespace,
    )

    def rolled_out() -> DaemonSet | None:
        ds = kube_client.get(DaemonSet, "e2e-daemon", namespace=namespace)
        status = ds.status
        if status and status.desiredNumberScheduled == len(nodes) == status.numberReady:
            return ds
        return None

    wait_for(rolled_out, "the DaemonSet to be ready on both kwok nodes", timeout=90)
    pods = list(kube_client.list(Pod, namespace=namespace, labels={"app": "e2e-daemon"}))
    assert {p.spec.nodeName for p in pods if p.spec} == nodes
    assert {p.status.phase for p in pods if p.status} == {"Running"}


def test_service_account_token_acts_under_rbac(
    kube_client: Client,
    kubeconfig_path: Path,
    namespace: str,
    tmp_path: Path,
    client_for: Callable[[Path], Client],
) -> None:
    kube_client.create(ServiceAccount(metadata=ObjectMeta(name="operator")), namespace=namespace)
    sa_kubeconfig = write_service_account_kubeconfig(
        kubeconfig_path, namespace, "operator", tmp_path / "operator.kubeconfig"
    )
    as_operator = client_for(sa_kubeconfig)
    with pytest.raises(ApiError) as denied:
        list(as_operator.list(Pod, namespace=namespace))
    assert denied.value.status.code == 403

    kube_client.create(
        Role(
            metadata=ObjectMeta(name="read-pods"),
            rules=[PolicyRule(apiGroups=[""], resources=["pods"], verbs=["get", "list"])],
        ),
        namespace=namespace,
    )
    kube_client.create(
        RoleBinding(
            metadata=ObjectMeta(name="operator-reads-pods"),
            roleRef=RoleRef(apiGroup="rbac.authorization.k8s.io", kind="Role", name="read-pods"),
            subjects=[Subject(kind="ServiceAccount", name="operator", namespace=namespace)],
        ),
        namespace=namespace,
    )

    def allowed() -> bool:
        try:
            list(as_operator.list(Pod, namespace=namespace))
        except ApiError:
            return False
        return True

    wait_for(allowed, "the RoleBinding to take effect", timeout=30)
    with pytest.raises(ApiError) as still_denied:
        list(as_operator.list(Pod, namespace="kube-system"))
    assert still_denied.value.status.code == 403


def test_up_twice_is_harmless_and_down_leaves_nothing(tmp_path: Path) -> None:
    cluster = LocalCluster("lifecycle", state_root_dir=tmp_path / "state")
    try:
        first = cluster.up()
        assert not first.already_running
        second = cluster.up()
        assert second.already_running
        assert second.api_url == first.api_url
        assert cluster.status().state == "running"
        assert server_version(Path(first.kubeconfig))["gitVersion"] == KUBERNETES_VERSION
    finally:
        cluster.down()
    assert (
        find_processes(
            ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"),
            cluster.marker,
        )
        == {}
    )
    status = cluster.status()
    assert status.state == "stopped"
    assert {c.state for c in status.components} == {"stopped"}
    assert not cluster.kubeconfig_path.exists()
    assert (cluster.logs_dir / "kube-apiserver.log").exists()
