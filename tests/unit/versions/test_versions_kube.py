"""`gpuop.kube.versions` against a fake client: nodes, ClusterPolicies and /version."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Node
from versions_support import cluster_policy, gpu_node

from gpuop.kube import ClusterPolicy
from gpuop.kube.collect import CollectError
from gpuop.kube.versions import read_version_inputs, server_version


def _api_error(code: int) -> ApiError:
    request = httpx2.Request("GET", "https://k8s.example/api")
    response = httpx2.Response(
        code, json={"kind": "Status", "code": code, "message": "nope"}, request=request
    )
    return ApiError(request=request, response=response)


class FakeHttp:
    def __init__(self, status: int, body: Any) -> None:
        self.status, self.body = status, body

    def get(self, path: str) -> httpx2.Response:
        assert path == "/version"
        request = httpx2.Request("GET", "https://k8s.example/version")
        return httpx2.Response(self.status, json=self.body, request=request)


class FakeInner:
    def __init__(self, http: FakeHttp | None) -> None:
        self._client = http


class FakeClient:
    def __init__(
        self,
        objects: list[dict[str, Any]],
        *,
        missing: tuple[Any, ...] = (),
        http: FakeHttp | None = None,
        unreachable: bool = False,
    ) -> None:
        self.objects, self.missing, self.unreachable = objects, missing, unreachable
        self._client = FakeInner(http)

    def list(self, res: Any, *, namespace: Any = None) -> list[Any]:
        if self.unreachable:
            raise httpx2.ConnectError("refused")
        if res in self.missing:
            raise _api_error(404)
        kind = {Node: "Node", ClusterPolicy: "ClusterPolicy"}[res]
        # Plain dicts: the reader takes mappings as well as lightkube objects.
        return [o for o in self.objects if o["kind"] == kind]

    def get(self, res: Any, name: str, *, namespace: Any = None) -> Any:
        raise _api_error(404)


def test_nodes_policies_and_the_server_version() -> None:
    client = FakeClient(
        [gpu_node("gpu-1"), cluster_policy("26.7.0")],
        http=FakeHttp(200, {"gitVersion": "v1.34.2"}),
    )
    inputs = read_version_inputs(client)
    assert [o["kind"] for o in inputs.objects] == ["Node", "ClusterPolicy"]
    assert inputs.objects[0]["status"]["nodeInfo"]["kubeletVersion"] == "v1.34.2"
    assert inputs.server_version == "v1.34.2"
    assert inputs.skipped == []


def test_a_missing_crd_is_skipped_and_version_is_best_effort() -> None:
    client = FakeClient([gpu_node("gpu-1")], missing=(ClusterPolicy,), http=FakeHttp(403, {}))
    inputs = read_version_inputs(client)
    assert inputs.skipped == [("ClusterPolicy", "the CRD is not installed")]
    assert inputs.server_version is None
    assert server_version(object()) is None


def test_an_unreachable_cluster_is_an_error() -> None:
    with pytest.raises(CollectError, match="cannot reach"):
        read_version_inputs(FakeClient([], unreachable=True))
