"""How gpuop's controllers run kopf: its login, its settings, and the event loop.

The operator and the node simulator both use kopf only to list, watch and index objects
(relisting after expired resource versions and API server restarts), never to write
bookkeeping onto objects. This module is the one place that says so.
"""

from __future__ import annotations

import asyncio
from typing import Any

import kopf

from gpuop.kube import connection_settings


def kopf_connection(kubeconfig: str | None, context: str | None) -> kopf.ConnectionInfo:
    """kopf's login from a kubeconfig (client certificate, token, or in-cluster account)."""
    settings = connection_settings(kubeconfig, context)
    return kopf.ConnectionInfo(
        server=settings.server,
        ca_path=settings.ca_path,
        insecure=settings.insecure or None,
        token=settings.token,
        certificate_path=settings.certificate_path,
        private_key_path=settings.private_key_path,
    )


class NoDiffBase(kopf.DiffBaseStorage):
    """Keep no last-handled state: gpuop has no change handlers that would diff against it.

    kopf otherwise deep-copies every object on every watch event to build that state, which
    at a thousand nodes and their operand pods is most of a controller's CPU.
    """

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def watch_only(settings: kopf.OperatorSettings) -> None:
    """No Events posted for kopf's own logs, no cluster-wide resource scanning, no diff state."""
    settings.persistence.diffbase_storage = NoDiffBase()
    settings.posting.enabled = False
    settings.scanning.disabled = True
    settings.watching.server_timeout = 270
    settings.watching.client_timeout = 300
    settings.networking.request_timeout = 60


def run_watchers(
    registry: kopf.OperatorRegistry,
    memo: kopf.Memo,
    stop_flag: Any = None,
    ready_flag: Any = None,
) -> None:
    """Run kopf cluster-wide and standalone (no peering objects) until stopped."""
    settings = kopf.OperatorSettings()
    watch_only(settings)
    asyncio.run(
        kopf.operator(
            registry=registry,
            settings=settings,
            memo=memo,
            clusterwide=True,
            standalone=True,
            stop_flag=stop_flag,
            ready_flag=ready_flag,
        )
    )
