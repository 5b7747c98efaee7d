"""`/healthz` and `/readyz` of the operator: alive, and leader or standby once started."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from gpuop.operator import health


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode().strip()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode().strip()


def test_readyz_says_leader_or_standby(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health.HEALTH, "role", "starting")
    server = health.serve_health("127.0.0.1", 0)
    port = server.server_port
    try:
        assert _get(port, "/healthz") == (200, "ok")
        assert _get(port, "/readyz") == (503, "starting")
        health.HEALTH.role = "standby"
        assert _get(port, "/readyz") == (200, "standby")
        health.HEALTH.role = "leader"
        assert _get(port, "/readyz") == (200, "leader")
        assert _get(port, "/nope")[0] == 404
    finally:
        server.shutdown()
