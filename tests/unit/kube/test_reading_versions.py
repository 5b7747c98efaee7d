"""A cluster before Kubernetes 1.34 serves DRA as v1beta2 or v1beta1: the reader falls back
to the newest version served and hands the objects on as v1."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuop.kube.errors import Forbidden, NotFound
from gpuop.kube.kinds import older_versions, resource
from gpuop.kube.reading import read_kinds

V1BETA1_SLICE = {
    "apiVersion": "resource.k8s.io/v1beta1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node-a-gpu.nvidia.com-x"},
    "spec": {
        "driver": "gpu.nvidia.com",
        "nodeName": "node-a",
        "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {"name": "gpu-0", "basic": {"attributes": {"type": {"string": "gpu"}}}},
        ],
    },
}


class _OnlyServes:
    """A client that serves one API version of the DRA kinds (and refuses the others)."""

    def __init__(self, version: str, objects: list[dict[str, Any]], refusal: type = NotFound):
        self.version, self.objects, self.refusal = version, objects, refusal
        self.asked: list[str] = []

    def list(
        self, res: Any, *, namespace: Any = None, chunk_size: int | None = None
    ) -> Iterable[Any]:
        version = res._api_info.resource.version
        self.asked.append(version)
        if version != self.version:
            raise self.refusal(404 if self.refusal is NotFound else 403, "not served")
        return iter(self.objects)

    def get(self, res: Any, name: str, *, namespace: Any = None) -> Any:
        raise NotImplementedError


def test_a_v1beta1_only_cluster_is_read_and_converted() -> None:
    client = _OnlyServes("v1beta1", [V1BETA1_SLICE])
    read = read_kinds(client, ["ResourceSlice"])
    assert client.asked == ["v1", "v1beta2", "v1beta1"]
    (slice_,) = read.of_kind("ResourceSlice")
    assert slice_["apiVersion"] == "resource.k8s.io/v1"
    assert slice_["spec"]["devices"] == [
        {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}
    ]
    assert not read.skipped and read.listed == {"ResourceSlice": 1}


def test_a_cluster_without_dra_skips_the_kind_once() -> None:
    client = _OnlyServes("v9", [])
    read = read_kinds(client, ["DeviceClass"])
    assert read.skipped == [("DeviceClass", "the CRD is not installed")]


def test_a_refusal_other_than_not_served_is_not_retried_in_older_versions() -> None:
    client = _OnlyServes("v1beta1", [V1BETA1_SLICE], refusal=Forbidden)
    read = read_kinds(client, ["ResourceSlice"])
    assert client.asked == ["v1"]
    assert read.skipped == [("ResourceSlice", "not allowed to list them")]


def test_only_the_dra_kinds_have_older_versions() -> None:
    assert [r._api_info.resource.version for r in older_versions("ResourceClaim")] == [
        "v1beta2",
        "v1beta1",
    ]
    assert older_versions("Node") == ()
    assert resource("ResourceClaim")._api_info.resource.version == "v1"
