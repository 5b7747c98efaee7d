"""The `gpuop cluster` commands: a local Kubernetes control plane for tests and the lab.

They are thin: each one calls :mod:`gpuop.controlplane` and turns its errors
(:class:`~gpuop.controlplane.ControlPlaneError`) into a :class:`UserError`, so the user sees one
clear message and exit code 2 instead of a traceback.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Iterator

import click

from gpuop.cli.common import UserError, emit_data
from gpuop.cli.options import output_option
from gpuop.controlplane import (
    COMPONENTS,
    DEFAULT_CLUSTER_NAME,
    TOOLS,
    ClusterInfo,
    ControlPlaneError,
    LocalCluster,
    ProcessUsage,
    ensure_binaries,
    local_clusters,
)
from gpuop.controlplane.paths import state_root


@contextlib.contextmanager
def _user_errors() -> Iterator[None]:
    try:
        yield
    except ControlPlaneError as exc:
        raise UserError(str(exc)) from exc


def _progress(message: str) -> None:
    click.echo(message, err=True)


def _cluster(name: str) -> LocalCluster:
    with _user_errors():
        return LocalCluster(name)


name_option = click.option(
    "--name",
    "-n",
    default=DEFAULT_CLUSTER_NAME,
    show_default=True,
    metavar="NAME",
    help="Which local cluster (each has its own state directory, ports and processes).",
)


@click.group()
def cluster() -> None:
    """Run a real Kubernetes control plane on this machine, on 127.0.0.1 only.

    etcd, kube-apiserver (TLS + RBAC), kube-controller-manager, kube-scheduler and
    kwok run as local processes; kwok plays the kubelets, so the Nodes you POST become
    Ready and the pods the real scheduler binds to them become Running. No container
    engine and no internet are needed.

    First run: the binaries (Kubernetes v1.37.2, etcd v3.6.16, kwok v0.8.0) are
    downloaded if the release servers are reachable, otherwise built with `go build`
    from the Go module proxy (about 20 minutes on 2 cores) and cached in
    ${GPUOP_CACHE_DIR:-~/.cache/gpuop}/bin/. Clusters live in
    ${GPUOP_STATE_DIR:-~/.local/state/gpuop}/clusters/<name>/.

    \b
    Typical session:
      gpuop cluster up                     start (or report) the cluster 'gpuop'
      eval "$(gpuop cluster kubeconfig --export)"
      kubectl get nodes
      gpuop cluster status                 every local cluster: processes, ports, memory
      gpuop cluster down                   stop everything, keep the logs
    """


@cluster.command()
@name_option
@click.option(
    "--port",
    "-p",
    type=click.IntRange(1, 65535),
    default=None,
    help="The API server's port on 127.0.0.1. Default: a free port, picked at start.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(10),
    default=180.0,
    show_default=True,
    help="Seconds to wait for the cluster to become ready (binary builds do not count).",
)
@output_option("text", "json")
def up(name: str, port: int | None, timeout: float, output: str) -> None:
    """Start a local cluster and wait until it is ready.

    Ready means the API server answers /readyz, the controller manager, scheduler and
    kwok are healthy and the 'default' ServiceAccount exists. Running it again while the
    cluster runs is harmless: it only reports the running cluster. Progress goes to
    stderr; the result (API URL, kubeconfig path) to stdout.

    \b
    Examples:
      gpuop cluster up
      gpuop cluster up --name lab --port 6443
      gpuop cluster up -o json | jq -r .kubeconfig
    """
    local = _cluster(name)
    with _user_errors():
        info = local.up(port=port, progress=_progress, timeout=timeout)
    if output == "json":
        emit_data(info.to_dict(), "json")
        return
    _print_info(info)


def _print_info(info: ClusterInfo) -> None:
    if info.already_running:
        click.echo(f"cluster '{info.name}' is already running (since {info.started_at})")
    else:
        click.echo(f"cluster '{info.name}' is running (ready in {info.start_seconds:.1f}s)")
    click.echo(f"  API:        {info.api_url}")
    click.echo(f"  kubeconfig: {info.kubeconfig}")
    click.echo(f"  audit log:  {info.audit_log}")
    click.echo(f"  logs:       {info.state_dir}/logs/")
    click.echo("use it with:")
    click.echo(f"  export KUBECONFIG={shlex.quote(info.kubeconfig)}")


@cluster.command()
@name_option
def down(name: str) -> None:
    """Stop every process of a local cluster and remove its state.

    Each component gets SIGTERM (its whole process group), then SIGKILL after 10 s.
    etcd's data, the certificates and the kubeconfig are removed; the logs stay in the
    state directory (logs/, and logs.previous/ after the next start). Stale pid files
    (their process is gone, or the pid now belongs to another program, which is left
    alone) are cleaned up and reported. Harmless when nothing runs.
    """
    local = _cluster(name)
    with _user_errors():
        before = local.status()
        messages = local.down(progress=_progress)
    for message in messages:
        click.echo(message, err=True)
    running = [c.name for c in before.components if c.state == "running"]
    if running:
        click.echo(f"cluster '{name}' stopped ({len(running)} processes); logs: {local.logs_dir}")
    else:
        click.echo(f"cluster '{name}' was not running")


@cluster.command()
@click.argument("name_argument", metavar="[NAME]", required=False)
@click.option(
    "--name",
    "-n",
    default=None,
    metavar="NAME",
    help="Which local cluster (same as the NAME argument). Default: list every one.",
)
@output_option("text", "json", "yaml")
def status(name_argument: str | None, name: str | None, output: str) -> None:
    """Show the local clusters: their processes (pid, alive), ports and memory.

    Without a NAME, every local cluster under the state directory is listed, with the
    pid, liveness, loopback ports and resident memory (RSS) of each of its processes
    (the control plane, and the lab's operator and simulator when they run); exit
    status 0. With a NAME, one cluster: whether each component runs, and the API URL.
    A component is 'running', 'stopped', or has a stale pid file: 'stale' (its process
    is gone) or 'foreign' (the pid now belongs to another program). 'gpuop cluster down'
    cleans stale pid files up. Exit status: 0 when every component runs, 1 otherwise.

    \b
    Examples:
      gpuop cluster status                 every local cluster
      gpuop cluster status gpuop           one cluster
      gpuop cluster status -o json
    """
    if name_argument and name and name_argument != name:
        raise UserError(f"two cluster names given: {name_argument!r} and --name {name!r}")
    chosen = name_argument or name
    if chosen is None:
        _status_all(output)
        return
    local = _cluster(chosen)
    with _user_errors():
        result = local.status()
        overview = local.overview(_lab_processes(local))
    if output in ("json", "yaml"):
        emit_data(result.to_dict(), output)
    else:
        ready = " (API ready)" if result.api_ready else ""
        click.echo(f"cluster '{result.name}': {result.state}{ready}")
        if result.api_url:
            click.echo(f"  API:        {result.api_url}")
        if result.kubeconfig:
            click.echo(f"  kubeconfig: {result.kubeconfig}")
        usage = {p.name: p for p in overview.processes}
        for comp in result.components:
            pid = f"pid {comp.pid}" if comp.pid is not None and comp.state == "running" else ""
            line = f"  {comp.name:<24} {comp.state:<8} {pid:<10} {_usage(usage[comp.name])}"
            click.echo(line.rstrip())
            if comp.detail:
                click.echo(f"      {comp.detail}")
        for process in overview.processes[len(result.components) :]:
            if process.alive:
                line = f"  {process.name:<24} {'running':<8} {'pid ' + str(process.pid):<10}"
                click.echo(f"{line} {_usage(process)}".rstrip())
        if any(c.state in ("stale", "foreign") for c in result.components):
            click.echo(f"  clean up with: gpuop cluster down --name {chosen}")
    if result.state != "running":
        # click swallows its own Exit in non-standalone mode, which `gpuop` uses.
        sys.exit(1)


def _lab_processes(local: LocalCluster) -> dict[str, int]:
    from gpuop.lab.runner import recorded_processes

    return recorded_processes(local.dir)


def _mib(size: int | None) -> str:
    return f"{size / 2**20:.1f} MiB" if size is not None else "-"


def _usage(process: ProcessUsage) -> str:
    if not process.alive:
        return ""
    ports = ",".join(str(port) for port in process.ports) or "-"
    return f"ports {ports:<12} rss {_mib(process.rss_bytes)}"


def _status_all(output: str) -> None:
    root = state_root()
    with _user_errors():
        overviews = [c.overview(_lab_processes(c)) for c in local_clusters(root)]
    if output in ("json", "yaml"):
        emit_data(
            {
                "state_dir": str(root / "clusters"),
                "clusters": [o.to_dict() for o in overviews],
                "processes_alive": sum(len(o.alive) for o in overviews),
                "rss_bytes": sum(o.rss_bytes for o in overviews),
            },
            output,
        )
        return
    if not overviews:
        click.echo(f"no local clusters in {root / 'clusters'}")
        return
    for overview in overviews:
        ready = " (API ready)" if overview.api_ready else ""
        api = f", API {overview.api_url}" if overview.api_url else ""
        alive = overview.alive
        summary = f"{len(alive)} processes, {_mib(overview.rss_bytes)}" if alive else "nothing runs"
        click.echo(f"cluster '{overview.name}': {overview.state}{ready}{api}; {summary}")
        shown = [p for p in overview.processes if p.alive or p.detail]
        if shown:
            click.echo(f"  {'process':<24} {'pid':>8}  {'alive':<5}  {'ports':<13} {'rss':>10}")
        for process in shown:
            pid = str(process.pid) if process.pid is not None else "-"
            ports = ",".join(str(port) for port in process.ports) or "-"
            line = (
                f"  {process.name:<24} {pid:>8}  {'yes' if process.alive else 'no':<5}  "
                f"{ports:<13} {_mib(process.rss_bytes):>10}"
            )
            click.echo(line.rstrip())
            if process.detail:
                click.echo(f"      {process.detail}")
        if any(p.detail.startswith("stale pid file") for p in overview.processes):
            click.echo(f"  clean up with: gpuop cluster down --name {overview.name}")
    running = [o for o in overviews if o.alive]
    total = sum(len(o.alive) for o in overviews)
    click.echo(
        f"{len(overviews)} local cluster{'s' if len(overviews) != 1 else ''} in "
        f"{root / 'clusters'}: {len(running)} with processes running, {total} processes, "
        f"{_mib(sum(o.rss_bytes for o in overviews))}"
    )


@cluster.command()
@name_option
@click.option(
    "--export",
    "export",
    is_flag=True,
    help="Print a shell line, `export KUBECONFIG=...`, for eval.",
)
def kubeconfig(name: str, export: bool) -> None:
    """Print the path of a running cluster's admin kubeconfig.

    The file belongs to the cluster (group system:masters); ~/.kube/config is never
    touched.

    \b
    Examples:
      kubectl --kubeconfig "$(gpuop cluster kubeconfig)" get nodes
      eval "$(gpuop cluster kubeconfig --export)"
    """
    local = _cluster(name)
    with _user_errors():
        local.require_running()
    path = str(local.kubeconfig_path)
    click.echo(f"export KUBECONFIG={shlex.quote(path)}" if export else path)


@cluster.command()
@click.option(
    "--no-download",
    is_flag=True,
    help="Do not try the official release downloads; build with go right away "
    "(same as GPUOP_NO_DOWNLOAD=1).",
)
def build(no_download: bool) -> None:
    """Make sure the control-plane binaries and helm are in the cache; start nothing.

    Reuses the cache, else downloads the official releases (used only when their
    published sha256 matches), else builds them with `go build` from the wrapper modules
    shipped in the package (needs Go 1.26+ and the Go module proxy). Prints each binary's path.
    CI runs this before the tests so the first e2e test does not pay for the build.

    \b
    Environment:
      GPUOP_CACHE_DIR            where the binaries are cached
      GPUOP_DOWNLOAD_BASE_URL    a mirror laid out as <base>/<host>/<path> of the
                                 release URLs (what `wget -x` writes)
      GPUOP_NO_DOWNLOAD=1        skip the downloads
      GPUOP_SOURCE_DIR           other Go wrapper modules (a gpuop checkout)
      GOPROXY                    the Go module proxy go build fetches from
    """
    names = ", ".join(comp.label for comp in COMPONENTS)
    tools = ", ".join(comp.label for comp in TOOLS)
    _progress(f"control-plane binaries: {names}; tools: {tools}")
    with _user_errors():
        binaries = ensure_binaries(
            progress=_progress,
            components=(*COMPONENTS, *TOOLS),
            allow_download=False if no_download else None,
        )
    for binary, path in binaries.paths.items():
        click.echo(f"{binary:<24} {path}")
