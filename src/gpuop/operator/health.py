"""The operator's health endpoints: `/healthz` (alive) and `/readyz` (leader or standby).

Why this module exists: with two replicas, a person or a probe must be able to ask a pod
whether it leads. `/readyz` answers 200 with `leader` or `standby` once the pod's
informers have their first lists (a standby is ready: it takes over within a lease
duration), and 503 `starting` before; `/healthz` answers 200 while the process serves.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Health:
    """What the endpoints report; the operator sets `role` as it starts, leads or stands by."""

    def __init__(self) -> None:
        self.role = "starting"


HEALTH = Health()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._answer(200, "ok")
        elif path == "/readyz":
            role = HEALTH.role
            self._answer(503 if role == "starting" else 200, role)
        else:
            self._answer(404, "not found")

    def _answer(self, code: int, text: str) -> None:
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return  # probes every few seconds would drown the operator's own log


def serve_health(address: str, port: int) -> ThreadingHTTPServer:
    """Serve the endpoints on a daemon thread; the server (its `server_port` when port 0)."""
    server = ThreadingHTTPServer((address, port), _Handler)
    threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
    return server
