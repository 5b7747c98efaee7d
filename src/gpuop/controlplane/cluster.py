"""A real, local Kubernetes control plane: etcd, kube-apiserver, controller manager, scheduler
and kwok as processes on 127.0.0.1, with TLS and RBAC on.

Why this module exists: the operator's end-to-end tests and the lab need real API semantics
(admission, RBAC, server-side apply, the real scheduler binding pods by extended resources, the
DaemonSet controller) on machines with no container engine and no internet. kwok plays the
kubelets: it marks posted Nodes Ready and the pods bound to them Running.

A cluster lives in ``<state root>/clusters/<name>/``::

    cluster.json          ports, pids, versions, API URL (written once the cluster is ready)
    kubeconfig            the admin's kubeconfig (group system:masters); never ~/.kube/config
    pki/                  CA, serving and client certificates, service-account keys
    kubeconfigs/          one kubeconfig per component identity
    pids/<component>.pid  one per running component
    logs/<component>.log  output of each component; logs/audit.log is the API audit log
    logs.previous/        the logs of the run before
    etcd-data/            etcd's data (removed by ``down``)

Every component runs in its own process group and has the state directory on its command line,
which is how ``down`` and ``status`` recognise it again from another process.

Why one module of about 600 lines: `LocalCluster` is one lifecycle (``up``, ``down``,
``status``, ``restart_component``) over one state directory and one lock, and its steps
read each other's files and pids; the components' command lines and config files
(`components`) and the status records (`status`) live beside it.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import functools
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from gpuop.controlplane import procs
from gpuop.controlplane.access import server_version, service_account_token
from gpuop.controlplane.access import write_service_account_kubeconfig as _write_sa_kubeconfig
from gpuop.controlplane.binaries import Binaries, ensure_binaries
from gpuop.controlplane.build import format_duration
from gpuop.controlplane.components import (
    APISERVER,
    COMPONENT_NAMES,
    ETCD,
    KCM,
    KWOK,
    NODE_LEASE_SECONDS,
    NODE_MONITOR_GRACE_SECONDS,
    SCHEDULER,
    component_argv,
    component_kubeconfig,
    write_component_files,
)
from gpuop.controlplane.errors import (
    ClusterNotRunningError,
    ComponentStartError,
    ControlPlaneError,
    PortInUseError,
)
from gpuop.controlplane.kubeconfig import (
    TRANSPORT_ERRORS,
    api_request,
    http_request,
    unverified_context,
)
from gpuop.controlplane.paths import cluster_dir, state_root, validate_cluster_name
from gpuop.controlplane.pki import ClusterPki
from gpuop.controlplane.ports import LOOPBACK, free_ports, port_is_free, port_owner
from gpuop.controlplane.status import (
    ClusterInfo,
    ClusterOverview,
    ClusterStatus,
    ComponentStatus,
    overview_of,
)
from gpuop.controlplane.versions import versions

Progress = Callable[[str], None]

DEFAULT_CLUSTER_NAME = "gpuop"
DEFAULT_START_TIMEOUT_S = 180.0

# A probe of the API server that gets no usable answer (or has no usable kubeconfig).
_NO_ANSWER: tuple[type[Exception], ...] = (*TRANSPORT_ERRORS, ControlPlaneError)


def _component_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # etcd reads ETCD_* and kwok KWOK_* variables as flags, and a KUBECONFIG could point the
    # components at another cluster: none of that may leak in from the user's shell.
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ETCD_", "KWOK_")) and key != "KUBECONFIG"
    }
    env.update(extra or {})
    return env


class LocalCluster:
    """One named local cluster. Cheap to create; nothing happens until ``up``/``down``."""

    def __init__(
        self,
        name: str = DEFAULT_CLUSTER_NAME,
        state_root_dir: Path | None = None,
        *,
        node_lease_seconds: int = NODE_LEASE_SECONDS,
        disabled_controllers: tuple[str, ...] = (),
    ):
        """`node_lease_seconds`: how long kwok's node Leases last (renewed every quarter of
        it); it must stay below the controller manager's grace period, or nodes go NotReady.
        `disabled_controllers`: controller manager controllers to leave off."""
        if not 4 <= node_lease_seconds < NODE_MONITOR_GRACE_SECONDS:
            raise ValueError(
                f"node_lease_seconds must be 4 to {NODE_MONITOR_GRACE_SECONDS - 1},"
                f" not {node_lease_seconds}"
            )
        self.node_lease_seconds = node_lease_seconds
        self.disabled_controllers = disabled_controllers
        self.name = validate_cluster_name(name)
        root = (state_root_dir or state_root()).expanduser().resolve()
        self.dir = cluster_dir(name, root)
        self._lock_path = root / "clusters" / f".{name}.lock"
        self.marker = f"{self.dir}/"

    # ----------------------------------------------------------------------------- paths
    @property
    def kubeconfig_path(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def info_path(self) -> Path:
        return self.dir / "cluster.json"

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def audit_log_path(self) -> Path:
        return self.logs_dir / "audit.log"

    @property
    def pki(self) -> ClusterPki:
        return ClusterPki(self.dir / "pki")

    def log_path(self, component: str) -> Path:
        return self.logs_dir / f"{component}.log"

    def _pid_file(self, component: str) -> Path:
        return self.dir / "pids" / f"{component}.pid"

    def _component_kubeconfig(self, component: str) -> Path:
        return component_kubeconfig(self.dir, component)

    # ----------------------------------------------------------------------------- state
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._lock_path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock_path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def info(self) -> ClusterInfo | None:
        """The ``cluster.json`` of the last successful ``up``, if any."""
        try:
            return ClusterInfo.from_dict(json.loads(self.info_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None

    def _read_pid(self, component: str) -> int | None:
        try:
            return int(self._pid_file(component).read_text().strip())
        except (OSError, ValueError):
            return None

    def _component_status(self, component: str, orphans: dict[int, str]) -> ComponentStatus:
        pid_file = self._pid_file(component)
        if not pid_file.exists():
            orphan = next((pid for pid, name in orphans.items() if name == component), None)
            if orphan is not None:
                return ComponentStatus(component, "running", orphan, "running without a pid file")
            return ComponentStatus(component, "stopped", None)
        pid = self._read_pid(component)
        if pid is None:
            return ComponentStatus(
                component, "stale", None, f"stale pid file {pid_file}: it holds no pid"
            )
        if procs.belongs_to(pid, component, self.marker):
            return ComponentStatus(component, "running", pid)
        if procs.is_alive(pid):
            return ComponentStatus(
                component,
                "foreign",
                pid,
                f"stale pid file {pid_file}: pid {pid} is now '{procs.describe(pid)}', not "
                f"this cluster's {component}",
            )
        return ComponentStatus(
            component, "stale", pid, f"stale pid file {pid_file}: pid {pid} is not running"
        )

    def _api_ready(self, timeout: float = 2.0) -> bool:
        if not self.kubeconfig_path.exists():
            return False
        try:
            answer = api_request(self.kubeconfig_path, "GET", "/readyz", timeout=timeout)
        except _NO_ANSWER:
            return False
        return answer.status_code == 200

    def status(self) -> ClusterStatus:
        """Per component: running, stopped, or a stale pid file (dead or foreign pid)."""
        orphans = procs.find_processes(COMPONENT_NAMES, self.marker)
        components = [self._component_status(name, orphans) for name in COMPONENT_NAMES]
        running = [c for c in components if c.state == "running"]
        info = self.info()
        api_ready = bool(running) and self._api_ready()
        if len(running) == len(components):
            state: Literal["running", "stopped", "partial"] = "running"
        elif running:
            state = "partial"
        else:
            state = "stopped"
        return ClusterStatus(
            name=self.name,
            state_dir=str(self.dir),
            state=state,
            api_url=info.api_url if info and running else None,
            kubeconfig=str(self.kubeconfig_path)
            if running and self.kubeconfig_path.exists()
            else None,
            api_ready=api_ready,
            components=components,
        )

    # ----------------------------------------------------------------------------- down
    def _stop_all(self, say: Progress) -> list[str]:
        messages: list[str] = []
        orphans = procs.find_processes(COMPONENT_NAMES, self.marker)
        ours: dict[int, str] = {}
        for name in COMPONENT_NAMES:
            status = self._component_status(name, orphans)
            if status.state == "running" and status.pid is not None:
                ours[status.pid] = name
            elif status.state == "stale":
                messages.append(f"{status.detail}; removed it")
            elif status.state == "foreign":
                messages.append(
                    f"{status.detail}; left that process alone and removed the pid file "
                    f"(if it is a leftover of this cluster, stop it with 'kill {status.pid}')"
                )
            self._pid_file(name).unlink(missing_ok=True)
        # Anything else of ours (e.g. started just before a crash, before its pid file).
        for pid, name in orphans.items():
            ours.setdefault(pid, name)
        # In tiers: the API clients first, then the apiserver, then etcd. An apiserver whose
        # etcd is gone hangs in its graceful shutdown until SIGKILL.
        for tier in ((KWOK, SCHEDULER, KCM), (APISERVER,), (ETCD,)):
            pids = [pid for pid, name in ours.items() if name in tier]
            if not pids:
                continue
            say(f"stopping {', '.join(ours[pid] for pid in pids)}")
            for pid in procs.stop(pids):
                messages.append(f"{ours[pid]} (pid {pid}) ignored SIGTERM and was killed")
        return messages

    def _wipe(self, keep_logs: bool = True) -> None:
        """Remove everything of the cluster but its logs."""
        if not self.dir.exists():
            return
        for entry in self.dir.iterdir():
            if keep_logs and entry.name in ("logs", "logs.previous"):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def down(self, progress: Progress | None = None) -> list[str]:
        """Stop every process of the cluster and remove its state (logs are kept).

        Returns notes for the user (stale pid files cleaned up, processes that needed SIGKILL).
        Harmless when nothing runs.
        """
        say = progress or (lambda _msg: None)
        with self._locked():
            messages = self._stop_all(say)
            self._wipe()
            left = procs.find_processes(COMPONENT_NAMES, self.marker)
            if left:
                raise ControlPlaneError(
                    "could not stop "
                    + ", ".join(f"{name} (pid {pid})" for pid, name in left.items())
                    + "; stop them with 'kill -9 <pid>' and run 'gpuop cluster down' again"
                )
            return messages

    # ----------------------------------------------------------------------------- up
    def up(
        self,
        *,
        port: int | None = None,
        progress: Progress | None = None,
        timeout: float = DEFAULT_START_TIMEOUT_S,
        binaries: Binaries | None = None,
    ) -> ClusterInfo:
        """Start the cluster and wait until it is ready; report it if it already runs.

        Ready means: ``/readyz`` answers ok, the controller manager, scheduler and kwok are
        healthy, and the ``default`` ServiceAccount exists. ``port`` pins the API server's port
        (PortInUseError when it is taken); otherwise every port is a free one.
        """
        say = progress or (lambda _msg: None)
        if port is not None and not 0 < port < 65536:
            raise ControlPlaneError(f"--port {port} is not a TCP port (1-65535)")
        with self._locked():
            status = self.status()
            info = self.info()
            if status.state == "running" and status.api_ready and info is not None:
                wanted = port is None or info.ports.get(APISERVER) == port
                if not wanted:
                    raise ControlPlaneError(
                        f"cluster '{self.name}' already runs with its API on port "
                        f"{info.ports.get(APISERVER)}, not {port}; run 'gpuop cluster down "
                        f"--name {self.name}' first to move it"
                    )
                return ClusterInfo.from_dict(
                    {**info.to_dict(), "already_running": True, "messages": []}
                )
            if port is not None and not port_is_free(port):
                owner = port_owner(port)
                held = f" by {owner}" if owner else ""
                raise PortInUseError(
                    f"port {port} on {LOOPBACK} is already in use{held}; pick another with "
                    "--port, or leave --port out to use a free port"
                )
            bins = binaries or ensure_binaries(progress=say)
            messages: list[str] = []
            if any(c.state != "stopped" for c in status.components):
                what = ", ".join(f"{c.name} {c.state}" for c in status.components)
                say(f"cluster '{self.name}' is not fully running ({what}); starting it afresh")
                messages += self._stop_all(say)
            for message in messages:
                say(message)
            self._wipe()
            return self._start(bins, port, timeout, say, messages)

    def _prepare(self, ports: dict[str, int]) -> None:
        logs = self.logs_dir
        if logs.exists():
            previous = self.dir / "logs.previous"
            if previous.exists():
                shutil.rmtree(previous)
            logs.rename(previous)
        for sub in ("logs", "pids", "kubeconfigs", "etcd-data"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        (self.dir / "etcd-data").chmod(0o700)
        write_component_files(self.dir, self.name, self.kubeconfig_path, ports)

    def _argv(self, bins: Binaries, ports: dict[str, int]) -> dict[str, list[str]]:
        return component_argv(
            self.dir, self.name, bins, ports, self.node_lease_seconds, self.disabled_controllers
        )

    def _pick_ports(self, api_port: int | None) -> dict[str, int]:
        names = [ETCD, "etcd-peer", KCM, SCHEDULER, KWOK]
        if api_port is None:
            names.append(APISERVER)
        for _ in range(10):
            picked = free_ports(len(names))
            if api_port not in picked:
                ports = dict(zip(names, picked, strict=True))
                if api_port is not None:
                    ports[APISERVER] = api_port
                return ports
        raise ControlPlaneError("could not find free ports on 127.0.0.1")

    def _start(
        self,
        bins: Binaries,
        api_port: int | None,
        timeout: float,
        say: Progress,
        messages: list[str],
    ) -> ClusterInfo:
        started_wall = datetime.datetime.now(datetime.UTC)
        started = time.monotonic()
        deadline = started + timeout
        ports = self._pick_ports(api_port)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._prepare(ports)
        argv = self._argv(bins, ports)
        pids: dict[str, int] = {}

        def launch(component: str, extra_env: dict[str, str] | None = None) -> None:
            pids[component] = procs.spawn(
                argv[component], self.log_path(component), _component_env(extra_env), self.dir
            )
            self._pid_file(component).write_text(f"{pids[component]}\n")

        def wait(what: str, watch: list[str], check: Callable[[], bool]) -> None:
            while True:
                for component in watch:
                    if not procs.is_alive(pids[component]):
                        raise self._start_failure(component, pids[component], exited=True)
                if check():
                    return
                if time.monotonic() > deadline:
                    raise self._start_failure(watch[-1], pids[watch[-1]], exited=False, what=what)
                time.sleep(0.2)

        try:
            say(f"starting cluster '{self.name}' in {self.dir}")
            launch(ETCD)
            etcd = f"http://{LOOPBACK}:{ports[ETCD]}/health"
            wait("etcd /health", [ETCD], lambda: _http_ok(etcd))
            say(f"  etcd is healthy ({time.monotonic() - started:.1f}s)")
            launch(APISERVER)
            wait("kube-apiserver /readyz", [ETCD, APISERVER], self._api_ready)
            say(
                f"  kube-apiserver is ready on https://{LOOPBACK}:{ports[APISERVER]} "
                f"({time.monotonic() - started:.1f}s)"
            )
            launch(KCM)
            launch(SCHEDULER)
            launch(KWOK, {"KWOK_WORKDIR": str(self.dir / "kwok")})
            all_components = list(COMPONENT_NAMES)
            for component, url in (
                (KCM, f"https://{LOOPBACK}:{ports[KCM]}/healthz"),
                (SCHEDULER, f"https://{LOOPBACK}:{ports[SCHEDULER]}/healthz"),
                (KWOK, f"http://{LOOPBACK}:{ports[KWOK]}/healthz"),
            ):
                watch = [c for c in all_components if c != component] + [component]
                wait(f"{component} /healthz", watch, functools.partial(_http_ok, url))
            wait(
                "the default ServiceAccount (made by the controller manager)",
                [*[c for c in all_components if c != KCM], KCM],
                self._default_service_account_exists,
            )
        except BaseException:
            for tier in ((KWOK, SCHEDULER, KCM), (APISERVER,), (ETCD,)):
                procs.stop([pids[c] for c in tier if c in pids], grace=5.0)
            for component in pids:
                self._pid_file(component).unlink(missing_ok=True)
            raise
        elapsed = time.monotonic() - started
        info = ClusterInfo(
            name=self.name,
            state_dir=str(self.dir),
            api_url=f"https://{LOOPBACK}:{ports[APISERVER]}",
            kubeconfig=str(self.kubeconfig_path),
            audit_log=str(self.audit_log_path),
            ports=ports,
            pids=pids,
            versions=versions(),
            started_at=started_wall.isoformat(timespec="seconds"),
            start_seconds=round(elapsed, 2),
            messages=messages,
        )
        tmp = self.info_path.with_name("cluster.json.tmp")
        tmp.write_text(json.dumps(info.to_dict(), indent=2) + "\n", encoding="utf-8")
        tmp.replace(self.info_path)
        say(f"cluster '{self.name}' is ready in {format_duration(elapsed)} ({elapsed:.1f}s)")
        return info

    def _start_failure(
        self, component: str, pid: int, *, exited: bool, what: str = ""
    ) -> ComponentStartError:
        log = self.log_path(component)
        tail = procs.log_tail(log)
        shown = "\n".join(f"    {line}" for line in tail) or "    (the log is empty)"
        if exited:
            code = procs.exit_code(pid)
            how = f" with status {code}" if code is not None else ""
            head = f"{component} exited during start{how}"
        else:
            head = f"timed out waiting for {what}"
        return ComponentStartError(
            f"{head}; the cluster was stopped again. Last lines of {log}:\n{shown}\n"
            f"(all logs: {self.logs_dir})"
        )

    def _default_service_account_exists(self) -> bool:
        path = "/api/v1/namespaces/default/serviceaccounts/default"
        try:
            answer = api_request(self.kubeconfig_path, "GET", path, timeout=3.0)
        except _NO_ANSWER:
            return False
        return answer.status_code == 200

    # ----------------------------------------------------------------------------- access
    def require_running(self) -> ClusterInfo:
        info = self.info()
        if info is None or not self.kubeconfig_path.exists():
            raise ClusterNotRunningError(
                f"cluster '{self.name}' is not running (no {self.info_path}); start it with "
                f"'gpuop cluster up --name {self.name}'"
            )
        return info

    def server_version(self) -> dict[str, Any]:
        self.require_running()
        return server_version(self.kubeconfig_path)

    def service_account_token(
        self, namespace: str, name: str, *, expiration_seconds: int = 3600
    ) -> str:
        """A TokenRequest bearer token for ServiceAccount ``namespace/name``."""
        self.require_running()
        return service_account_token(
            self.kubeconfig_path, namespace, name, expiration_seconds=expiration_seconds
        )

    def write_service_account_kubeconfig(
        self, namespace: str, name: str, path: Path, *, expiration_seconds: int = 3600
    ) -> Path:
        """Write a kubeconfig acting as ServiceAccount ``namespace/name`` to ``path``."""
        self.require_running()
        return _write_sa_kubeconfig(
            self.kubeconfig_path, namespace, name, path, expiration_seconds=expiration_seconds
        )

    def restart_component(self, component: str, *, kill: bool = True, timeout: float = 90.0) -> int:
        """Stop one running component and start it again with the same command line.

        For fault injection: ``kill`` sends SIGKILL (a crash), else SIGTERM (a clean stop).
        etcd keeps its data directory, so the cluster's state survives. Waits until the
        component is healthy again and returns its new pid.
        """
        if component not in COMPONENT_NAMES:
            raise ControlPlaneError(
                f"unknown component {component!r}; one of {', '.join(COMPONENT_NAMES)}"
            )
        info = self.require_running()
        with self._locked():
            pid = self._read_pid(component)
            argv = procs.cmdline(pid) if pid is not None else None
            if pid is None or argv is None or not procs.belongs_to(pid, component, self.marker):
                raise ControlPlaneError(f"{component} of cluster '{self.name}' is not running")
            if kill:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                deadline = time.monotonic() + 10
                while procs.is_alive(pid) and time.monotonic() < deadline:
                    time.sleep(0.05)
            else:
                procs.stop([pid])
            # A killed multi-threaded server shows as gone (its leader a zombie) a moment
            # before its last thread has exited and closed the listening sockets.
            own_ports = [info.ports[component]] + (
                [info.ports["etcd-peer"]] if component == ETCD else []
            )
            deadline = time.monotonic() + 15
            while not all(port_is_free(p) for p in own_ports) and time.monotonic() < deadline:
                time.sleep(0.1)
            extra = {"KWOK_WORKDIR": str(self.dir / "kwok")} if component == KWOK else None
            new_pid = procs.spawn(argv, self.log_path(component), _component_env(extra), self.dir)
            self._pid_file(component).write_text(f"{new_pid}\n")
            ports = info.ports
            checks: dict[str, Callable[[], bool]] = {
                ETCD: functools.partial(_http_ok, f"http://{LOOPBACK}:{ports[ETCD]}/health"),
                APISERVER: self._api_ready,
                KCM: functools.partial(_http_ok, f"https://{LOOPBACK}:{ports[KCM]}/healthz"),
                SCHEDULER: functools.partial(
                    _http_ok, f"https://{LOOPBACK}:{ports[SCHEDULER]}/healthz"
                ),
                KWOK: functools.partial(_http_ok, f"http://{LOOPBACK}:{ports[KWOK]}/healthz"),
            }
            deadline = time.monotonic() + timeout
            while not checks[component]():
                if not procs.is_alive(new_pid):
                    raise self._start_failure(component, new_pid, exited=True)
                if time.monotonic() > deadline:
                    raise self._start_failure(
                        component, new_pid, exited=False, what=f"{component} to be healthy"
                    )
                time.sleep(0.2)
            updated = {**info.to_dict(), "pids": {**info.pids, component: new_pid}}
            tmp = self.info_path.with_name("cluster.json.tmp")
            tmp.write_text(json.dumps(updated, indent=2) + "\n", encoding="utf-8")
            tmp.replace(self.info_path)
            return new_pid

    def overview(self, extra_processes: dict[str, int] | None = None) -> ClusterOverview:
        """Every process of the cluster with its pid, liveness, ports and resident memory.

        ``extra_processes`` (name -> pid) are processes started for this cluster by someone
        else (the lab's operator and simulator); one counts as alive only while that pid runs
        a program with the cluster's state directory on its command line.
        """
        info = self.info()
        return overview_of(
            self.name,
            self.dir,
            self.status(),
            info.ports if info is not None else {},
            extra_processes or {},
        )

    def component_rss(self) -> dict[str, int]:
        """Resident memory in bytes of each running component."""
        result: dict[str, int] = {}
        for component in self.status().components:
            if component.state == "running" and component.pid is not None:
                rss = procs.rss_bytes(component.pid)
                if rss is not None:
                    result[component.name] = rss
        return result


def local_clusters(state_root_dir: Path | None = None) -> list[LocalCluster]:
    """Every local cluster under the state root: those with a state directory, and those
    whose processes still run after their directory was removed."""
    root = (state_root_dir or state_root()).expanduser().resolve()
    clusters_dir = root / "clusters"
    names: set[str] = set()
    if clusters_dir.is_dir():
        for entry in clusters_dir.iterdir():
            with contextlib.suppress(ControlPlaneError):
                if entry.is_dir():
                    names.add(validate_cluster_name(entry.name))
    prefix = f"{clusters_dir}/"
    for pid in procs.find_processes(COMPONENT_NAMES, prefix):
        for arg in (procs.cmdline(pid) or [])[1:]:
            _, found, rest = arg.partition(prefix)
            name = rest.split("/", 1)[0]
            if found and name:
                with contextlib.suppress(ControlPlaneError):
                    names.add(validate_cluster_name(name))
    return [LocalCluster(name, state_root_dir=root) for name in sorted(names)]


def _http_ok(url: str) -> bool:
    # The controller manager and scheduler serve a self-signed certificate on loopback;
    # only their liveness is asked here, nothing secret is sent.
    try:
        answer = http_request(url, context=unverified_context(), timeout=2.0)
    except TRANSPORT_ERRORS:
        return False
    return answer.status_code == 200
