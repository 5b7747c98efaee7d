"""Write kubeconfig files for the local cluster, and talk to the API with one.

Why this module exists: every identity of the local cluster (the admin the user gets, the
controller manager, the scheduler, kwok, and ServiceAccounts the tests run the operator as)
needs its own kubeconfig file. They are self-contained (certificates embedded as ``*-data``)
so they can be copied around, and they never touch ``~/.kube/config``.

:func:`api_request` makes one request as such a file's user, for the few raw API calls the
control plane makes itself (readiness, TokenRequest, ``/version``), and :func:`http_request`
asks a loopback health endpoint. Both use the standard library: these are a handful of
loopback requests, not worth a second HTTP library beside the one lightkube ships.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from gpuop.controlplane.errors import ControlPlaneError


@dataclass(frozen=True)
class Credentials:
    """Either a client certificate and key (PEM) or a bearer token."""

    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    token: str | None = None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def kubeconfig_document(
    *, server: str, ca_pem: bytes, credentials: Credentials, cluster: str, user: str
) -> dict[str, Any]:
    user_entry: dict[str, str] = {}
    if credentials.token is not None:
        user_entry["token"] = credentials.token
    if credentials.client_cert_pem is not None and credentials.client_key_pem is not None:
        user_entry["client-certificate-data"] = _b64(credentials.client_cert_pem)
        user_entry["client-key-data"] = _b64(credentials.client_key_pem)
    context = f"{user}@{cluster}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)},
            }
        ],
        "users": [{"name": user, "user": user_entry}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": user}}],
        "current-context": context,
        "preferences": {},
    }


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    ca_pem: bytes,
    credentials: Credentials,
    cluster: str,
    user: str,
) -> Path:
    """Write a kubeconfig (mode 0600, atomically) and return its path."""
    doc = kubeconfig_document(
        server=server, ca_pem=ca_pem, credentials=credentials, cluster=cluster, user=user
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        yaml.safe_dump(doc, handle, sort_keys=False)
    tmp.replace(path)
    return path


@dataclass(frozen=True)
class KubeconfigEntry:
    """The current context of a kubeconfig, resolved."""

    server: str
    ca_pem: bytes | None
    credentials: Credentials
    insecure: bool = False


def _data(entry: dict[str, Any], key: str, base: Path) -> bytes | None:
    if entry.get(f"{key}-data"):
        return base64.b64decode(entry[f"{key}-data"])
    if entry.get(key):
        file = Path(entry[key])
        return (file if file.is_absolute() else base / file).read_bytes()
    return None


def read_kubeconfig(path: Path) -> KubeconfigEntry:
    """Resolve the current context of ``path`` (certificate or token users only)."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        ctx_name = doc["current-context"]
        ctx = next(c["context"] for c in doc["contexts"] if c["name"] == ctx_name)
        cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in doc["users"] if u["name"] == ctx["user"])
        base = path.parent
        creds = Credentials(
            client_cert_pem=_data(user, "client-certificate", base),
            client_key_pem=_data(user, "client-key", base),
            token=user.get("token"),
        )
        return KubeconfigEntry(
            server=cluster["server"],
            ca_pem=_data(cluster, "certificate-authority", base),
            credentials=creds,
            insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        )
    except (OSError, yaml.YAMLError, KeyError, StopIteration, TypeError, ValueError) as exc:
        raise ControlPlaneError(f"cannot read kubeconfig {path}: {exc!r}") from exc


def ssl_context(entry: KubeconfigEntry) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if entry.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif entry.ca_pem is not None:
        ctx = ssl.create_default_context(cadata=entry.ca_pem.decode("ascii"))
    creds = entry.credentials
    if creds.client_cert_pem is not None and creds.client_key_pem is not None:
        # ssl wants files; keep them only as long as loading takes.
        with tempfile.TemporaryDirectory(prefix="gpuop-kc-") as tmp:
            cert = Path(tmp) / "client.crt"
            key = Path(tmp) / "client.key"
            cert.write_bytes(creds.client_cert_pem)
            key.write_bytes(creds.client_key_pem)
            ctx.load_cert_chain(cert, key)
    return ctx


# What a request raises when there is no usable answer: refused, reset, timed out, TLS
# failed, or a reply that is not HTTP.
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (OSError, http.client.HTTPException)


@dataclass(frozen=True)
class Answer:
    """An HTTP answer, read whole (the control plane's own requests are small)."""

    status_code: int
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)


def http_request(
    url: str,
    *,
    method: str = "GET",
    context: ssl.SSLContext | None = None,
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    timeout: float = 10.0,
) -> Answer:
    """One request straight to ``url`` (no proxies: loopback only); raises TRANSPORT_ERRORS."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = http.client.HTTPSConnection(host, parts.port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(host, parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request(method, target, body=body, headers=dict(headers or {}))
        response = connection.getresponse()
        return Answer(response.status, response.read())
    finally:
        connection.close()


def unverified_context() -> ssl.SSLContext:
    """TLS without checking the certificate: for loopback liveness probes that send nothing."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def api_request(
    kubeconfig: Path,
    method: str,
    path: str,
    *,
    json_body: Any = None,
    timeout: float = 10.0,
) -> Answer:
    """``method path`` on the API server of ``kubeconfig``, as its user; raises TRANSPORT_ERRORS
    when there is no answer and ControlPlaneError when the kubeconfig cannot be used."""
    entry = read_kubeconfig(kubeconfig)
    headers = {"Accept": "application/json"}
    if entry.credentials.token:
        headers["Authorization"] = f"Bearer {entry.credentials.token}"
    body = None
    if json_body is not None:
        body = json.dumps(json_body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    return http_request(
        entry.server.rstrip("/") + path,
        method=method,
        context=ssl_context(entry),
        headers=headers,
        body=body,
        timeout=timeout,
    )
