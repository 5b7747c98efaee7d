"""The `gpuop operator` commands."""

from __future__ import annotations

import logging
import os

import click

from gpuop.cli.common import UserError


@click.group()
def operator() -> None:
    """Run the operator (in a cluster, or from here with a kubeconfig)."""


@operator.command("run")
@click.option(
    "--kubeconfig",
    envvar="KUBECONFIG",
    help="Kubeconfig to use (default: in-cluster or ~/.kube/config).",
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
    log_format: str,
    verbose: bool,
) -> None:
    """Reconcile the ClusterPolicy and GPU nodes until interrupted.

    \b
    Example, against the local cluster:
      gpuop operator run --kubeconfig "$(gpuop cluster kubeconfig)" --metrics-port 0
    """
    from prometheus_client import start_http_server

    from gpuop.kube import KubeError
    from gpuop.operator.runtime import OperatorConfig, run_operator

    _configure_logging(log_format, verbose)
    if metrics_port:
        try:
            start_http_server(metrics_port, addr=metrics_address)
        except OSError as exc:
            raise UserError(
                f"cannot serve metrics on {metrics_address}:{metrics_port}: {exc.strerror}"
            ) from exc
    image_env = {k: v for k, v in os.environ.items() if k.endswith("_IMAGE")}
    config = OperatorConfig(
        namespace=namespace,
        kubeconfig=kubeconfig,
        context=context,
        resync_seconds=resync,
        operator_env=image_env,
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
