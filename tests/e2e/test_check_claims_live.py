"""`gpuop check`'s DRA rules against what the real kube-scheduler v1.37.2 allocates.

One simulated one-card node publishes its card as NVIDIA's driver does with
PassthroughSupport (`gpu-0` and `gpu-vfio-0`, no counters); a container claim and a VFIO
claim are submitted at the same moment, each with its pod. The scheduler allocates both
(two devices, as far as it can tell), and the check, reading the cluster back through
`gpuop.kube.collect`, finds the card allocated twice (GPU801) and the publication that
allowed it (GPU810). The same on a node published with gpuop's shared counter set: the
second claim stays unallocated, its pod Pending, and the check finds nothing.

And a VM through claims: `gpuop kubevirt vmi-example --dra`'s ResourceClaimTemplate and the
launcher pod gpuop renders for its VMI are accepted by the API server, the claim controller
makes the claim, and the scheduler gives it the card's VFIO device.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Namespace, Node, Pod
from lightkube.resources.resource_v1 import DeviceClass, ResourceClaim, ResourceSlice

from gpuop.catalog.dra import dra_catalog
from gpuop.check import run_checks
from gpuop.dra.publish import publish
from gpuop.kube.collect import collect
from gpuop.kubevirt.claims import claim_vmi_example
from gpuop.kubevirt.launcher import render_launcher_pod
from gpuop.sim.hardware import NodeSpec, cards_for
from kit.waiting import wait_for

pytestmark = pytest.mark.e2e

PAUSE = "registry.k8s.io/pause:3.10"


def _node(name: str) -> dict[str, Any]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    resources = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
        },
    }


def _settled(client: Client, name: str) -> bool:
    node = client.get(Node, name)
    taints = [t.key for t in (node.spec.taints or [])] if node.spec else []
    return not [key for key in taints if key.startswith("node.kubernetes.io/")]


def _claim(name: str, device_class: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}
        },
    }


def _pod(name: str, claim: str, node: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [
                {"name": "main", "image": PAUSE, "resources": {"claims": [{"name": "gpu"}]}}
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        },
    }


@pytest.fixture
def dra_setup(kube_client: Client) -> Iterator[tuple[Client, str]]:
    """A namespace of its own and NVIDIA's DeviceClasses; afterwards, what the test made goes."""
    client = kube_client
    namespace = f"dra-check-{uuid.uuid4().hex[:6]}"
    client.create(
        from_dict({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    )
    created_classes = []
    for spec in dra_catalog().classes(compute_domains=False):
        try:
            client.create(from_dict(spec.manifest(dra_catalog().api_version)))
            created_classes.append(spec.name)
        except ApiError as exc:
            if exc.status.code != 409:
                raise
    yield client, namespace
    # A claim made from a template goes with its pod, so any of these may be gone already.
    for pod in client.list(Pod, namespace=namespace):
        assert pod.metadata is not None and pod.metadata.name is not None
        _delete_if_present(
            lambda n=pod.metadata.name: client.delete(Pod, n, namespace=namespace, grace_period=0)
        )
    for claim in client.list(ResourceClaim, namespace=namespace):
        assert claim.metadata is not None and claim.metadata.name is not None
        _delete_if_present(
            lambda n=claim.metadata.name: client.delete(ResourceClaim, n, namespace=namespace)
        )
    for name in created_classes:
        _delete_if_present(lambda n=name: client.delete(DeviceClass, n))
    _delete_if_present(lambda: client.delete(Namespace, namespace))


def _delete_if_present(delete: Callable[[], object]) -> None:
    try:
        delete()
    except ApiError as exc:
        if exc.status.code != 404:
            raise


def _one_card_node(client: Client, name: str, *, shared_counters: bool) -> None:
    client.create(from_dict(_node(name)))
    wait_for(lambda: _settled(client, name), f"node {name} to be Ready without startup taints")
    cards = cards_for(NodeSpec(name, "A10", 1))
    for body in publish(name, cards, shared_counters=shared_counters, driver_version="580.95.05"):
        client.create(from_dict(body))


def _remove_node(client: Client, name: str) -> None:
    for piece in client.list(ResourceSlice):
        if piece.spec and piece.spec.nodeName == name and piece.metadata and piece.metadata.name:
            _delete_if_present(lambda n=piece.metadata.name: client.delete(ResourceSlice, n))
    _delete_if_present(lambda: client.delete(Node, name))


def _allocated(client: Client, name: str, namespace: str) -> bool:
    claim = client.get(ResourceClaim, name, namespace=namespace)
    return bool(claim.status and claim.status.allocation)


def _submit_both(client: Client, node: str, tag: str, namespace: str) -> None:
    objects = [
        _claim(f"{tag}-container", "gpu.nvidia.com", namespace),
        _claim(f"{tag}-vm", "vfio.gpu.nvidia.com", namespace),
        _pod(f"{tag}-cuda", f"{tag}-container", node, namespace),
        _pod(f"{tag}-launcher", f"{tag}-vm", node, namespace),
    ]
    for obj in objects:
        client.create(from_dict(obj))


def _ours(report: Any, node: str, namespace: str) -> list[tuple[str, str]]:
    return sorted(
        (f.code, f.subject)
        for f in report.findings
        if f.code.startswith("GPU8") and (f.node == node or f.namespace == namespace)
    )


def test_two_faced_card_is_allocated_twice_and_the_check_finds_it(
    dra_setup: tuple[Client, str],
) -> None:
    (client, namespace), node = dra_setup, "dra-check-two-faced"
    _one_card_node(client, node, shared_counters=False)
    try:
        _submit_both(client, node, "race", namespace)
        for claim in ("race-container", "race-vm"):
            wait_for(
                lambda c=claim: _allocated(client, c, namespace), f"claim {claim} to be allocated"
            )
        report = run_checks(collect(client).all_objects())
        found = _ours(report, node, namespace)
        assert ("GPU801", f"ResourceClaim/{namespace}/race-container") in found
        assert ("GPU801", f"ResourceClaim/{namespace}/race-vm") in found
        assert [code for code, _ in found].count("GPU810") == 1
    finally:
        _remove_node(client, node)


def test_shared_counters_keep_the_second_claim_pending_and_the_check_quiet(
    dra_setup: tuple[Client, str],
) -> None:
    (client, namespace), node = dra_setup, "dra-check-race-free"
    _one_card_node(client, node, shared_counters=True)
    claims = ("calm-container", "calm-vm")
    try:
        _submit_both(client, node, "calm", namespace)
        allocated = wait_for(
            lambda: [c for c in claims if _allocated(client, c, namespace)],
            "one of the claims to be allocated",
        )
        time.sleep(5)  # the scheduler retries the other pod; it must stay unallocated
        now = [c for c in claims if _allocated(client, c, namespace)]
        assert now == allocated and len(now) == 1
        report = run_checks(collect(client).all_objects())
        assert _ours(report, node, namespace) == []
    finally:
        _remove_node(client, node)


def test_a_vmi_with_a_claimed_gpu_renders_a_launcher_the_scheduler_places(
    dra_setup: tuple[Client, str],
) -> None:
    """`vmi-example --dra`'s template and VMI: the launcher gets the card's VFIO device."""
    (client, namespace), node = dra_setup, "dra-check-vm"
    _one_card_node(client, node, shared_counters=True)
    client.patch(Node, node, {"metadata": {"labels": {"kubevirt.io/schedulable": "true"}}})
    try:
        template, vmi = claim_vmi_example("desk", namespace=namespace)
        launcher = render_launcher_pod(vmi)
        launcher["spec"]["containers"][0]["image"] = PAUSE
        client.create(from_dict(template))
        client.create(from_dict(launcher))
        name = launcher["metadata"]["name"]

        def generated() -> str | None:
            pod = client.get(Pod, name, namespace=namespace)
            statuses = (pod.status.resourceClaimStatuses or []) if pod.status else []
            return next((s.resourceClaimName for s in statuses if s.resourceClaimName), None)

        claim_name = wait_for(generated, "the claim made from the template")
        wait_for(lambda: _allocated(client, claim_name, namespace), f"claim {claim_name}")
        claim = client.get(ResourceClaim, claim_name, namespace=namespace)
        assert claim.status is not None and claim.status.allocation is not None
        results = claim.status.allocation.devices.results if claim.status.allocation.devices else []
        assert [(r.request, r.device) for r in results or []] == [("gpu1", "gpu-vfio-0")]

        def bound() -> str | None:
            pod = client.get(Pod, name, namespace=namespace)
            return pod.spec.nodeName if pod.spec else None

        assert wait_for(bound, "the launcher pod to be bound") == node
    finally:
        _remove_node(client, node)
