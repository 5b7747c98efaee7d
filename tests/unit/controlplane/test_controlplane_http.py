"""The control plane's own HTTP requests (standard library only), against a server on 127.0.0.1.

The API calls (TokenRequest, ``/version``, readiness) go as a kubeconfig's user; release
downloads follow redirects and tell a refusal from an unreachable server.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuop.controlplane import access, cluster, download
from gpuop.controlplane.errors import ClusterNotRunningError, ControlPlaneError, DownloadError
from gpuop.controlplane.kubeconfig import api_request


@dataclass
class FakeServer:
    url: str
    seen: list[dict[str, Any]] = field(default_factory=list)
    # path -> (status, headers, body)
    answers: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer(url="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            fake.seen.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "headers": dict(self.headers),
                    "body": self.rfile.read(length) if length else b"",
                }
            )
            status, headers, body = fake.answers.get(self.path, (404, {}, b"not here"))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()


def _kubeconfig(tmp_path: Path, server: str, token: str = "s3cret") -> Path:
    path = tmp_path / "admin.kubeconfig"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _json(status: int, body: Any) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def test_api_requests_carry_the_bearer_token_and_json(server: FakeServer, tmp_path: Path) -> None:
    path = "/api/v1/namespaces/gpu-operator/serviceaccounts/gpuop/token"
    server.answers[path] = _json(201, {"status": {"token": "minted"}})
    kubeconfig = _kubeconfig(tmp_path, server.url)
    token = access.service_account_token(
        kubeconfig, "gpu-operator", "gpuop", expiration_seconds=60, audiences=["a"]
    )
    assert token == "minted"
    (request,) = server.seen
    assert request["method"] == "POST" and request["path"] == path
    assert request["headers"]["Authorization"] == "Bearer s3cret"
    assert request["headers"]["Content-Type"] == "application/json"
    body = json.loads(request["body"])
    assert body["kind"] == "TokenRequest"
    assert body["spec"] == {"expirationSeconds": 600, "audiences": ["a"]}


def test_token_for_a_missing_service_account_says_so(server: FakeServer, tmp_path: Path) -> None:
    with pytest.raises(ControlPlaneError, match="gpu-operator/nobody does not exist"):
        access.service_account_token(_kubeconfig(tmp_path, server.url), "gpu-operator", "nobody")


def test_server_version_reads_the_document(server: FakeServer, tmp_path: Path) -> None:
    server.answers["/version"] = _json(200, {"gitVersion": "v1.36.0"})
    assert access.server_version(_kubeconfig(tmp_path, server.url))["gitVersion"] == "v1.36.0"
    server.answers["/version"] = _json(500, {})
    with pytest.raises(ControlPlaneError, match="HTTP 500"):
        access.server_version(_kubeconfig(tmp_path, server.url))


def test_a_silent_api_server_means_the_cluster_is_not_running(tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(ClusterNotRunningError, match="does not answer"):
        access.server_version(kubeconfig)


def test_api_request_keeps_a_path_prefix_of_the_server(server: FakeServer, tmp_path: Path) -> None:
    server.answers["/prefix/readyz"] = (200, {}, b"ok")
    answer = api_request(_kubeconfig(tmp_path, server.url + "/prefix/"), "GET", "/readyz")
    assert (answer.status_code, answer.text) == (200, "ok")


def test_health_probes_answer_true_only_for_200(server: FakeServer) -> None:
    server.answers["/healthz"] = (200, {}, b"ok")
    assert cluster._http_ok(f"{server.url}/healthz")
    assert not cluster._http_ok(f"{server.url}/livez")  # 404
    assert not cluster._http_ok(f"http://127.0.0.1:{_closed_port()}/healthz")


def test_downloads_follow_redirects(server: FakeServer, tmp_path: Path) -> None:
    data = b"a release binary"
    server.answers["/release/kwok"] = (302, {"Location": "/objects/kwok"}, b"")
    server.answers["/objects/kwok"] = (200, {}, data)
    target = tmp_path / "kwok"
    client = download._client()
    size = download._fetch_verified(
        client, f"{server.url}/release/kwok", hashlib.sha256(data).hexdigest(), target
    )
    assert size == len(data) and target.read_bytes() == data
    assert [r["path"] for r in server.seen] == ["/release/kwok", "/objects/kwok"]


def test_download_refusals_and_silence_are_told_apart(server: FakeServer) -> None:
    client = download._client()
    with pytest.raises(DownloadError, match="answered HTTP 404") as refused:
        download._get_text(client, f"{server.url}/missing.sha256", 5.0)
    assert not refused.value.unreachable
    with pytest.raises(DownloadError) as silent:
        download._get_text(client, f"http://127.0.0.1:{_closed_port()}/x.sha256", 5.0)
    assert silent.value.unreachable
    server.answers["/x.sha256"] = (200, {}, b"abc  x\n")
    assert download._get_text(client, f"{server.url}/x.sha256", None) == "abc  x\n"
