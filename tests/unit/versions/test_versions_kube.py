"""`gpuop.kube.versions` against a fake client: nodes, ClusterPolicies and /version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest
from lightkube.core.exceptions import ApiError

from gpuop.kube import ClusterPolicy, http_client
from gpuop.kube.collect import CollectError
from gpuop.kube.kinds import kind_of
from gpuop.kube.versions import read_server_version, read_version_inputs, server_version
from kit.versions_support import cluster_policy, gpu_node


def _api_error(code: int) -> ApiError:
    request = httpx2.Request("GET", "https://k8s.example/api")
    response = httpx2.Response(
        code, json={"kind": "Status", "code": code, "message": "nope"}, request=request
    )
    return ApiError(request=request, response=response)


def _http(status: int, body: Any) -> httpx2.Client:
    """An HTTP client whose server answers `/version` with `status` and `body`."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/version"
        return httpx2.Response(status, json=body)

    return httpx2.Client(base_url="https://k8s.example", transport=httpx2.MockTransport(answer))


class FakeClient:
    def __init__(
        self,
        objects: list[dict[str, Any]],
        *,
        missing: tuple[Any, ...] = (),
        unreachable: bool = False,
    ) -> None:
        self.objects, self.missing, self.unreachable = objects, missing, unreachable

    def list(self, res: Any, *, namespace: Any = None, chunk_size: int | None = None) -> list[Any]:
        if self.unreachable:
            raise httpx2.ConnectError("refused")
        if res in self.missing:
            raise _api_error(404)
        kind = kind_of(res)
        # Plain dicts: the reader takes mappings as well as lightkube objects.
        return [o for o in self.objects if o["kind"] == kind]

    def get(self, res: Any, name: str, *, namespace: Any = None) -> Any:
        raise _api_error(404)


def _deployment(name: str, image: str) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "gpu-operator"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}},
    }


def test_nodes_policies_the_operator_and_the_server_version() -> None:
    operator = _deployment("gpu-operator", "nvcr.io/nvidia/gpu-operator:v25.10.0")
    other = _deployment("web", "nginx:1.27")
    client = FakeClient([gpu_node("gpu-1"), cluster_policy("26.7.0"), operator, other])
    http = _http(200, {"gitVersion": "v1.34.2"})
    inputs = read_version_inputs(client, lambda: server_version(http))
    assert [o["kind"] for o in inputs.objects] == ["Node", "ClusterPolicy", "Deployment"]
    assert inputs.objects[2]["metadata"]["name"] == "gpu-operator"
    assert inputs.objects[0]["status"]["nodeInfo"]["kubeletVersion"] == "v1.34.2"
    assert inputs.server_version == "v1.34.2"
    assert inputs.skipped == []


def test_a_missing_crd_is_skipped_and_version_is_best_effort() -> None:
    client = FakeClient([gpu_node("gpu-1")], missing=(ClusterPolicy,))
    inputs = read_version_inputs(client, lambda: server_version(_http(403, {})))
    assert inputs.skipped == [("ClusterPolicy", "the CRD is not installed")]
    assert inputs.server_version is None
    assert server_version(_http(200, {"major": "1"})) is None
    assert server_version(object()) is None


def test_the_server_version_of_a_kubeconfig_is_best_effort(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "current-context: lab\n"
        "contexts: [{name: lab, context: {cluster: lab, user: admin}}]\n"
        "clusters: [{name: lab, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: admin, user: {token: t}}]\n"
    )
    assert read_server_version(str(kubeconfig), None) is None
    assert read_server_version(str(tmp_path / "missing"), None) is None
    with http_client(str(kubeconfig), None) as http:
        assert str(http.base_url).rstrip("/") == "https://127.0.0.1:1"


def test_an_unreachable_cluster_is_an_error() -> None:
    with pytest.raises(CollectError, match="cannot reach"):
        read_version_inputs(FakeClient([], unreachable=True))
