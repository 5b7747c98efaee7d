"""The operator process with a GPUCluster beside the ClusterPolicy, on the in-memory API.

The real runtime (informers, loop, writes) against `FakeKube`, the DaemonSet controller
and kubelets played by `kit.cluster`: a node labelled for the DRA stack gets the
GPUCluster's deploy labels, the DRA stack's objects are applied (DeviceClasses, the
admission policy, the claim templates, the DaemonSets), the GPUCluster's status is written,
and nothing is left for another pass. A GPUCluster kind that is not served yet (no CRD)
reads as none, and the loop runs all the same.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from gpuop.api.labels import deploy_label
from gpuop.kube import controller, informer
from gpuop.kube.running import supervise
from gpuop.lab.stack import lab_policy
from gpuop.operator import runtime
from gpuop.policy.gpucluster import default_gpu_cluster_object
from gpuop.sim.hardware import NodeSpec, node_manifest
from kit.aio import eventually, running
from kit.cluster import play_daemonsets
from kit.fake_kube import FakeKube

NS = "gpu-operator"
TIMEOUT = 60.0
STACK_LABEL = "nvidia.com/gpu.stack"


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controller, "API_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(controller, "ERROR_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(informer, "RETRY_DELAYS_SECONDS", (0.01,))
    monkeypatch.setattr(informer, "ABSENT_RETRY_SECONDS", 0.05)
    monkeypatch.setattr(runtime, "STATUS_INTERVAL_SECONDS", 0.05)


def cluster(gpu_cluster: bool = True) -> FakeKube:
    gc = copy.deepcopy(default_gpu_cluster_object())
    gc["metadata"]["uid"] = "gc-uid"
    return FakeKube(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            lab_policy(sandbox=False),
            *([gc] if gpu_cluster else []),
            node_manifest(NodeSpec("dra", "A10", 2, {STACK_LABEL: "dra"})),
            node_manifest(NodeSpec("plugin", "A10", 2, {})),
        ]
    )


def operator(fake: FakeKube) -> Any:
    config = runtime.OperatorConfig(namespace=NS, debounce_seconds=0.01, resync_seconds=3600)
    state = runtime.OperatorState(config)
    state.client = fake
    informers = state.watch(fake)
    return supervise(runtime.reconcile_loop(state), *(i.run() for i in informers))


def labels(fake: FakeKube, name: str) -> dict[str, str]:
    return dict((fake.get_object("Node", name) or {})["metadata"]["labels"])


def test_a_dra_node_the_dra_objects_and_the_gpu_cluster_status() -> None:
    fake = cluster()

    def done() -> bool:
        gc = fake.get_object("GPUCluster", "gpu-cluster") or {}
        return (
            labels(fake, "dra").get(deploy_label("dra-driver")) == "true"
            and (gc.get("status") or {}).get("state") == "ready"
        )

    async def main() -> None:
        async with running(operator(fake), play_daemonsets(fake, NS)):
            await eventually(done, TIMEOUT, "the DRA node and the GPUCluster ready")

    asyncio.run(main())
    dra, plugin = labels(fake, "dra"), labels(fake, "plugin")
    assert deploy_label("device-plugin") not in dra
    assert plugin.get(deploy_label("device-plugin")) == "true"
    assert deploy_label("dra-driver") not in plugin
    assert {"gpu.nvidia.com", "mig.nvidia.com"} <= {
        key.rsplit("/", 1)[-1] for key in fake.objects_of("DeviceClass")
    }
    assert fake.objects_of("ValidatingAdmissionPolicy")
    assert fake.objects_of("ResourceClaimTemplate", NS)
    namespace = fake.get_object("Namespace", NS) or {}
    assert namespace["metadata"]["labels"]["resource.kubernetes.io/admin-access"] == "true"
    assert "nvidia-dra-driver-kubelet-plugin" in fake.objects_of("DaemonSet", NS)
    gc = fake.get_object("GPUCluster", "gpu-cluster") or {}
    assert gc["status"]["namespace"] == NS
    assert [c["reason"] for c in gc["status"]["conditions"] if c["type"] == "Ready"] == [
        "Reconciled"
    ]


def test_no_gpu_cluster_kind_served_reads_as_none() -> None:
    fake = cluster(gpu_cluster=False)
    fake.fail("list", "GPUCluster", 404, times=3)

    def done() -> bool:
        policy = fake.get_object("ClusterPolicy", "cluster-policy") or {}
        # Three 404s, then the kind is served and listed.
        listed = fake.calls.get(("list", "GPUCluster"), 0) >= 4
        return listed and (policy.get("status") or {}).get("state") == "ready"

    async def main() -> None:
        async with running(operator(fake), play_daemonsets(fake, NS)):
            await eventually(done, TIMEOUT, "the ClusterPolicy ready and GPUClusters listed")

    asyncio.run(main())
    # Without a GPUCluster the `dra` label is ignored: both nodes run the device plugin.
    assert labels(fake, "dra").get(deploy_label("device-plugin")) == "true"
    assert not fake.objects_of("DeviceClass")
