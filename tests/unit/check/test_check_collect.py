"""`gpuop.kube.collect` against a fake client: what is kept, what is skipped."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import corpus_gen
import httpx2
import pytest
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Node
from lightkube.resources.resource_v1 import (
    DeviceClass,
    ResourceSlice,
)

from gpuop.check import run_checks
from gpuop.kube import GPUCluster, HyperConverged, KubeVirt, VirtualMachineInstance
from gpuop.kube.collect import CollectError, collect
from gpuop.kube.kinds import kind_of

NOW = datetime(2026, 8, 1, 10, 30, tzinfo=UTC)


def _api_error(code: int) -> ApiError:
    request = httpx2.Request("GET", "https://k8s.example/api")
    response = httpx2.Response(
        code, json={"kind": "Status", "code": code, "message": "nope"}, request=request
    )
    return ApiError(request=request, response=response)


class FakeClient:
    def __init__(self, objects: list[dict[str, Any]], missing: tuple[Any, ...] = ()) -> None:
        self.objects = objects
        self.missing = missing
        self.calls: list[tuple[Any, Any]] = []

    def _kind(self, res: Any) -> str:
        return kind_of(res)

    def list(self, res: Any, *, namespace: Any = None, chunk_size: int | None = None) -> list[Any]:
        self.calls.append((kind_of(res), namespace))
        kind = self._kind(res)
        if kind in {kind_of(m) for m in self.missing}:
            raise _api_error(404)
        found = [o for o in self.objects if o["kind"] == kind]
        if kind == "Node":
            return [Node.from_dict(o) for o in found]
        return found

    def get(self, res: Any, name: str, *, namespace: Any = None) -> Any:
        for obj in self.objects:
            if obj["kind"] == self._kind(res) and obj["metadata"]["name"] == name:
                return obj
        raise _api_error(404)


def _cluster_objects() -> list[dict[str, Any]]:
    objects = corpus_gen.stranded_capacity()
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "default"},
            "spec": {"nodeName": "lab-1", "containers": [{"name": "web", "image": "nginx"}]},
        }
    )
    objects.append(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "kube-proxy", "namespace": "kube-system"},
        }
    )
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "old", "namespace": "ml"},
            "involvedObject": {"kind": "Pod", "namespace": "ml", "name": "cuda-batch-0"},
            "message": "long ago",
            "lastTimestamp": "2026-07-01T00:00:00Z",
        }
    )
    return objects


def test_collect_keeps_what_check_reads() -> None:
    progress: list[str] = []
    client = FakeClient(_cluster_objects())
    collected = collect(client, progress=progress.append, now=NOW)
    objects = collected.objects
    assert len(objects["Node"]) == 3
    assert all(node["kind"] == "Node" for node in objects["Node"])
    pod_names = {p["metadata"]["name"] for p in objects["Pod"]}
    assert "web-0" not in pod_names
    assert {"cuda-batch-0", "cuda-batch-1", "cuda-train-0"} <= pod_names
    assert any(name.startswith("nvidia-driver-daemonset-") for name in pod_names)
    assert "kube-proxy" not in {d["metadata"]["name"] for d in objects["DaemonSet"]}
    assert [e["metadata"]["name"] for e in objects["Event"]] and "old" not in {
        e["metadata"]["name"] for e in objects["Event"]
    }
    assert collected.skipped == [
        ("ConfigMap", "gpu-operator/default-vgpu-devices-config: not found")
    ]
    assert any("listing Nodes" in line for line in progress)
    assert ("Pod", "*") in client.calls
    report = run_checks(collected.all_objects())
    assert report.codes() == {("GPU602", "Node/lab-3")}


def test_missing_crds_are_skipped_not_fatal() -> None:
    client = FakeClient(_cluster_objects(), missing=(KubeVirt, VirtualMachineInstance))
    collected = collect(client, now=NOW)
    assert ("KubeVirt", "the CRD is not installed") in collected.skipped
    assert collected.objects["KubeVirt"] == []


def test_hyperconverged_is_collected_and_skipped_when_not_served() -> None:
    hco = {
        "apiVersion": "hco.kubevirt.io/v1beta1",
        "kind": "HyperConverged",
        "metadata": {"name": "kubevirt-hyperconverged", "namespace": "openshift-cnv"},
        "spec": {"permittedHostDevices": {"pciHostDevices": []}},
    }
    collected = collect(FakeClient([*_cluster_objects(), hco]), now=NOW)
    assert collected.objects["HyperConverged"] == [hco]
    assert hco in collected.all_objects()
    missing = collect(FakeClient(_cluster_objects(), missing=(HyperConverged,)), now=NOW)
    assert ("HyperConverged", "the CRD is not installed") in missing.skipped
    assert missing.objects["HyperConverged"] == []


def test_the_gpucluster_is_collected_and_skipped_when_not_served() -> None:
    gpu_cluster = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "GPUCluster",
        "metadata": {"name": "gpu-cluster"},
        "spec": {"draDriver": {}},
    }
    collected = collect(FakeClient([*_cluster_objects(), gpu_cluster]), now=NOW)
    assert collected.objects["GPUCluster"] == [gpu_cluster]
    assert gpu_cluster in collected.all_objects()
    missing = collect(FakeClient(_cluster_objects(), missing=(GPUCluster,)), now=NOW)
    assert ("GPUCluster", "the CRD is not installed") in missing.skipped


def test_dra_objects_are_collected_and_skipped_when_not_served() -> None:
    from claim_builders import claim, nvidia_classes, nvidia_slices

    dra = [*nvidia_slices("lab-1", 1), *nvidia_classes(), claim("train")]
    claiming_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train-0", "namespace": "ml"},
        "spec": {
            "containers": [{"name": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "train"}],
        },
    }
    collected = collect(FakeClient([*_cluster_objects(), *dra, claiming_pod]), now=NOW)
    assert [s["metadata"]["name"] for s in collected.objects["ResourceSlice"]] == [
        "lab-1-gpu.nvidia.com-x7k2q"
    ]
    assert len(collected.objects["DeviceClass"]) == 3
    assert [c["metadata"]["name"] for c in collected.objects["ResourceClaim"]] == ["train"]
    assert "train-0" in {p["metadata"]["name"] for p in collected.objects["Pod"]}
    codes = {f.code for f in run_checks(collected.all_objects()).findings}
    assert "GPU810" in codes
    old = collect(FakeClient(_cluster_objects(), missing=(ResourceSlice, DeviceClass)), now=NOW)
    assert ("ResourceSlice", "the CRD is not installed") in old.skipped
    assert old.objects["ResourceSlice"] == []


def test_unreachable_cluster_raises_collect_error() -> None:
    class Down(FakeClient):
        def list(
            self, res: Any, *, namespace: Any = None, chunk_size: int | None = None
        ) -> list[Any]:
            raise httpx2.ConnectError("Connection refused")

    with pytest.raises(CollectError, match="cannot reach the cluster"):
        collect(Down([]), now=NOW)


def test_vgpu_config_map_is_read_from_the_operator_namespace() -> None:
    objects = _cluster_objects()
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "default-vgpu-devices-config", "namespace": "gpu-operator"},
            "data": {"config.yaml": "version: v1\n"},
        }
    )
    collected = collect(FakeClient(objects), now=NOW)
    assert [c["metadata"]["name"] for c in collected.objects["ConfigMap"]] == [
        "default-vgpu-devices-config"
    ]


def _deployment(name: str, image: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "gpu-operator"},
        "spec": {"template": {"spec": {"containers": [{"name": name, "image": image}]}}},
    }


def test_the_operator_deployment_is_kept_and_names_the_release() -> None:
    objects = [
        *_cluster_objects(),
        _deployment("gpu-operator", "nvcr.io/nvidia/gpu-operator:v25.10.1"),
        _deployment("web", "nginx:1.27"),
    ]
    collected = collect(FakeClient(objects), now=NOW)
    assert [d["metadata"]["name"] for d in collected.objects["Deployment"]] == ["gpu-operator"]
    report = run_checks(collected.all_objects())
    assert report.release is not None and report.release.version == "25.10.1"


def test_other_managers_plugins_and_their_configs_are_collected() -> None:
    """The standalone device plugin's pods, DaemonSet and the sharing config it mounts go
    into the bundle, so `gpuop check` names the node's manager from the bundle alone."""
    import managers_corpus

    node, plugin, feature_discovery, _ = managers_corpus.time_slicing()
    template = {
        "metadata": {"labels": plugin["metadata"]["labels"]},
        "spec": {
            **plugin["spec"],
            "volumes": [{"name": "config", "configMap": {"name": "nvdp-configs"}}],
        },
    }
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvdp-nvidia-device-plugin", "namespace": "nvidia-device-plugin"},
        "spec": {"template": template},
    }
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "nvdp-configs", "namespace": "nvidia-device-plugin"},
        "data": {"a100-ts": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"},
    }
    client = FakeClient([node, plugin, feature_discovery, daemonset, config])
    collected = collect(client, now=NOW)
    assert {p["metadata"]["name"] for p in collected.objects["Pod"]} == {
        plugin["metadata"]["name"],
        feature_discovery["metadata"]["name"],
    }
    assert [d["metadata"]["name"] for d in collected.objects["DaemonSet"]] == [
        "nvdp-nvidia-device-plugin"
    ]
    assert [c["metadata"]["name"] for c in collected.objects["ConfigMap"]] == ["nvdp-configs"]
    report = run_checks(collected.all_objects())
    assert report.to_dict()["summary"]["managers"] == {"nvidia-device-plugin": 1}


def test_collect_reads_in_pages_and_leaves_managed_fields_out() -> None:
    objects = _cluster_objects()
    fields = [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}]
    for obj in objects:
        obj["metadata"]["managedFields"] = fields
    pages: list[int | None] = []

    class PagedClient(FakeClient):
        def list(
            self, res: Any, *, namespace: Any = None, chunk_size: int | None = None
        ) -> list[Any]:
            pages.append(chunk_size)
            return super().list(res, namespace=namespace)

    collected = collect(PagedClient(objects), now=NOW)
    kept = collected.all_objects()
    assert kept and all("managedFields" not in obj["metadata"] for obj in kept)
    # The client's own objects are untouched.
    assert all(obj["metadata"]["managedFields"] == fields for obj in objects)
    assert pages and set(pages) == {500}
    pods = [o for o in objects if o["kind"] == "Pod"]
    assert collected.listed["Pod"] == len(pods) > len(collected.objects["Pod"])
