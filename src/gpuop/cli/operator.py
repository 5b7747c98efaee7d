"""The `gpuop operator` commands."""

from __future__ import annotations

import logging
import os

import click

from gpuop.api.labels import LEADER_ELECTION_ID
from gpuop.cli.common import UserError


@click.group()
def operator() -> None:
    """Run the operator (in a cluster, or from here with a kubeconfig)."""


@operator.command("run")
@click.option(
    "--kubeconfig",
    metavar="FILE",
    help="Kubeconfig to use (default, as kubectl: the files of $KUBECONFIG merged, else"
    " ~/.kube/config, else the pod's service account).",
)
@click.option("--context", default=None, help="Kubeconfig context.")
@click.option(
    "--namespace",
    envvar="OPERATOR_NAMESPACE",
    default="gpu-operator",
    show_default=True,
    help="Namespace the operand DaemonSets live in (must exist).",
)
@click.option(
    "--metrics-port",
    type=int,
    default=8080,
    show_default=True,
    help="Prometheus port; 0 turns it off.",
)
@click.option("--metrics-address", default="0.0.0.0", show_default=True)
@click.option(
    "--resync",
    type=float,
    default=300.0,
    show_default=True,
    help="Seconds between full passes without a change.",
)
@click.option(
    "--health-probe-port",
    type=int,
    default=8081,
    show_default=True,
    help="Port of /healthz and /readyz (which says leader or standby); 0 turns it off.",
)
@click.option("--health-probe-address", default="0.0.0.0", show_default=True)
@click.option(
    "--leader-elect/--no-leader-elect",
    default=True,
    show_default=True,
    help="Lead through the Lease before writing anything (run two replicas for HA).",
)
@click.option(
    "--leader-election-id",
    default=LEADER_ELECTION_ID,
    show_default=True,
    help="The Lease's name: NVIDIA's operator's, so the two never lead at once.",
)
@click.option(
    "--leader-election-namespace",
    default=None,
    help="The Lease's namespace (default: the operator namespace).",
)
@click.option(
    "--lease-duration",
    type=float,
    default=15.0,
    show_default=True,
    help="Seconds a standby waits on an unrenewed Lease before it takes over.",
)
@click.option(
    "--renew-deadline",
    type=float,
    default=10.0,
    show_default=True,
    help="Seconds the leader keeps trying to renew before it stops writing and stands by.",
)
@click.option(
    "--retry-period", type=float, default=2.0, show_default=True, help="Seconds between tries."
)
@click.option(
    "--full-collection",
    type=click.FloatRange(min=1.0),
    default=300.0,
    show_default=True,
    help="Seconds between full collections of the heap: between them what the operator"
    " caches is kept out of Python's cycle collector (each is logged with its time).",
)
@click.option(
    "--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
def run(
    kubeconfig: str | None,
    context: str | None,
    namespace: str,
    metrics_port: int,
    metrics_address: str,
    resync: float,
    health_probe_port: int,
    health_probe_address: str,
    leader_elect: bool,
    leader_election_id: str,
    leader_election_namespace: str | None,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    full_collection: float,
    log_format: str,
    verbose: bool,
) -> None:
    """Reconcile the ClusterPolicy and GPU nodes until interrupted.

    With leader election (the default) the operator writes only while it holds the Lease
    53822513.nvidia.com in its namespace, the one NVIDIA's GPU Operator takes: two replicas
    never act at once, and neither do gpuop and NVIDIA's operator. A leader that cannot
    renew within --renew-deadline stops writing and stands by; a standby takes over once the
    Lease has gone unrenewed for --lease-duration. A clean stop hands the Lease back.

    \b
    Examples:
      gpuop operator run --kubeconfig "$(gpuop cluster kubeconfig)" --metrics-port 0
      gpuop operator run --lease-duration 30 --renew-deadline 20 --retry-period 4
      curl -s localhost:8081/readyz        leader, or standby
    """
    from prometheus_client import start_http_server

    from gpuop.kube import KubeError
    from gpuop.kube.leader import LeaseSettings
    from gpuop.operator.health import serve_health
    from gpuop.operator.runtime import OperatorConfig, run_operator

    lease = None
    if leader_elect:
        lease = LeaseSettings(
            namespace=leader_election_namespace or namespace,
            name=leader_election_id,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
        )
        if problems := lease.problems():
            raise UserError(f"leader election: {problems[0]}")
    _configure_logging(log_format, verbose)
    for what, address, port in (
        ("metrics", metrics_address, metrics_port),
        ("health probes", health_probe_address, health_probe_port),
    ):
        if not port:
            continue
        try:
            if what == "metrics":
                start_http_server(port, addr=address)
            else:
                serve_health(address, port)
        except OSError as exc:
            raise UserError(f"cannot serve {what} on {address}:{port}: {exc.strerror}") from exc
    image_env = {k: v for k, v in os.environ.items() if k.endswith("_IMAGE")}
    config = OperatorConfig(
        namespace=namespace,
        kubeconfig=kubeconfig,
        context=context,
        resync_seconds=resync,
        operator_env=image_env,
        lease=lease,
        full_collection_seconds=full_collection,
    )
    try:
        run_operator(config)
    except KubeError as exc:
        raise UserError(str(exc)) from exc


def _configure_logging(log_format: str, verbose: bool) -> None:
    level = logging.DEBUG if verbose else logging.INFO
    if log_format == "json":
        import json
        import time

        class JsonFormatter(logging.Formatter):
            def format(self, record: logging.LogRecord) -> str:
                payload = {
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created)),
                    "level": record.levelname.lower(),
                    "logger": record.name,
                    "message": record.getMessage(),
                }
                if record.exc_info:
                    payload["error"] = self.formatException(record.exc_info)
                return json.dumps(payload)

        handler = logging.StreamHandler()
        handler.setFormatter(JsonFormatter())
        logging.basicConfig(level=level, handlers=[handler], force=True)
    else:
        logging.basicConfig(
            level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
        )
    for noisy in ("httpx", "httpx2", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
