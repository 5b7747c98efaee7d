"""Act on a running cluster as its admin: read ``/version``, mint ServiceAccount tokens.

Why this module exists: end-to-end tests and the lab run the operator under its own RBAC, not
as the admin, so they need a bearer token for the operator's ServiceAccount (TokenRequest API)
and a kubeconfig carrying it. These helpers take the admin kubeconfig path rather than a cluster
object, so they work the same on a cluster started here and on one handed to the tests through
``GPUOP_TEST_KUBECONFIG``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from gpuop.controlplane.errors import ClusterNotRunningError, ControlPlaneError
from gpuop.controlplane.kubeconfig import (
    TRANSPORT_ERRORS,
    Answer,
    Credentials,
    api_request,
    read_kubeconfig,
    write_kubeconfig,
)


def _request(kubeconfig: Path, method: str, path: str, json_body: Any = None) -> Answer:
    entry = read_kubeconfig(kubeconfig)
    try:
        return api_request(kubeconfig, method, path, json_body=json_body)
    except TRANSPORT_ERRORS as exc:
        raise ClusterNotRunningError(
            f"the API server {entry.server} of {kubeconfig} does not answer ({exc}); is the "
            "cluster running? Try 'gpuop cluster status'"
        ) from exc


def server_version(kubeconfig: Path) -> dict[str, Any]:
    """The API server's ``/version`` document (``gitVersion`` etc.)."""
    response = _request(kubeconfig, "GET", "/version")
    if response.status_code != 200:
        raise ControlPlaneError(f"GET /version answered HTTP {response.status_code}")
    return cast(dict[str, Any], response.json())


def service_account_token(
    kubeconfig: Path,
    namespace: str,
    name: str,
    *,
    expiration_seconds: int = 3600,
    audiences: Sequence[str] | None = None,
) -> str:
    """A bearer token for ServiceAccount ``namespace/name``, minted with the TokenRequest API.

    ``kubeconfig`` must be allowed to create ``serviceaccounts/token`` (the admin's is).
    The token is valid for ``expiration_seconds`` (at least 600) for the API server's own
    audience unless ``audiences`` says otherwise.
    """
    spec: dict[str, Any] = {"expirationSeconds": max(600, int(expiration_seconds))}
    if audiences:
        spec["audiences"] = list(audiences)
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    response = _request(
        kubeconfig,
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        json_body=body,
    )
    if response.status_code == 404:
        raise ControlPlaneError(
            f"ServiceAccount {namespace}/{name} does not exist; create it before asking for "
            "its token"
        )
    if response.status_code not in (200, 201):
        raise ControlPlaneError(
            f"TokenRequest for {namespace}/{name} answered HTTP {response.status_code}: "
            f"{response.text[:300]}"
        )
    return cast(str, response.json()["status"]["token"])


def write_service_account_kubeconfig(
    kubeconfig: Path,
    namespace: str,
    name: str,
    path: Path,
    *,
    expiration_seconds: int = 3600,
) -> Path:
    """Write to ``path`` a kubeconfig that acts as ServiceAccount ``namespace/name``.

    It points at the same API server and CA as ``kubeconfig`` (the admin's) and carries a
    fresh token from :func:`service_account_token`.
    """
    entry = read_kubeconfig(kubeconfig)
    if entry.ca_pem is None:
        raise ControlPlaneError(f"{kubeconfig} has no certificate authority to copy")
    token = service_account_token(
        kubeconfig, namespace, name, expiration_seconds=expiration_seconds
    )
    return write_kubeconfig(
        path,
        server=entry.server,
        ca_pem=entry.ca_pem,
        credentials=Credentials(token=token),
        cluster="gpuop",
        user=f"system:serviceaccount:{namespace}:{name}",
    )
