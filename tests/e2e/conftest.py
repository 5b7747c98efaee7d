"""Fixtures for the end-to-end tests: one real local control plane per pytest session.

Why this file exists: every e2e test needs a real API server, scheduler, controller manager
and kwok; starting them takes ~10 s, building them the first time ~20 min, so the binaries are
made once before the first test runs (outside any per-test timeout) and one cluster serves
the whole session.

Use::

    pytestmark = pytest.mark.e2e

    def test_something(kube_client, namespace):   # lightkube Client, a fresh namespace
        ...

Fixtures: ``helm`` (session; ``helm(*args)`` runs the cached helm against the session cluster),
``kubectl`` (session; the same for kubectl), ``client_for`` (session; ``client_for(kubeconfig)`` gives a Client acting as
that kubeconfig's user, e.g. a ServiceAccount's), ``e2e_cluster`` (session; kubeconfig, audit log, the LocalCluster or None),
``kubeconfig_path`` and ``audit_log_path`` (session, ``Path``), ``kube_client`` (session,
``lightkube.Client`` acting as admin), ``namespace`` (per test: created, its ``default``
ServiceAccount waited for, deleted afterwards).

Environment:

* ``GPUOP_TEST_KUBECONFIG=<path>``: use that running cluster, never tear it down
  (``GPUOP_TEST_AUDIT_LOG`` names its audit log if it is not ``<dir>/logs/audit.log``);
* ``GPUOP_TEST_STATE_DIR=<dir>``: where session clusters live (default
  ``<repo>/.gpuop/test-state``). Each session gets its own ``<dir>/<session>/clusters/pytest``
  and holds a lock on it, so concurrent sessions never touch each other's cluster; a later
  session stops and removes the clusters of sessions that ended (or were killed), so the
  logs of the last session stay until the next one starts;
* ``GPUOP_TEST_KEEP_CLUSTER=1``: leave the session cluster running at the end (to poke at
  it with kubectl; the next session stops it).

The e2e tests never skip for missing binaries: they are built (``go build``) when absent, helm
too when a test uses it; a build that fails fails the run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from lightkube import Client
from lightkube.config.kubeconfig import KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, ServiceAccount

from gpuop.controlplane import COMPONENTS, HELM, ControlPlaneError, LocalCluster, ensure_binaries

SESSION_CLUSTER = "pytest"
E2E_LABEL = "gpuop.test/e2e"


@dataclass(frozen=True)
class E2ECluster:
    kubeconfig: Path
    audit_log: Path | None
    cluster: LocalCluster | None  # None: an external cluster from GPUOP_TEST_KUBECONFIG


def _live_printer(config: pytest.Config) -> Callable[[str], None]:
    """Print progress to the terminal even while pytest captures output."""
    capture = config.pluginmanager.getplugin("capturemanager")

    def say(message: str) -> None:
        ctx = (
            capture.global_and_fixture_disabled()
            if capture is not None
            else contextlib.nullcontext()
        )
        with ctx:
            print(f"[gpuop e2e] {message}", flush=True)

    return say


def _wants_e2e(session: pytest.Session) -> bool:
    return any(item.get_closest_marker("e2e") for item in session.items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Make the binaries before the first test, so a cold build is not a test's timeout."""
    if session.config.option.collectonly or not _wants_e2e(session):
        return
    say = _live_printer(session.config)
    wants_helm = any("helm" in getattr(item, "fixturenames", ()) for item in session.items)
    components = (*COMPONENTS, HELM) if wants_helm else COMPONENTS
    try:
        ensure_binaries(progress=say, components=components)
    except ControlPlaneError as exc:
        raise pytest.UsageError(f"cannot prepare the control-plane binaries: {exc}") from exc


def _state_root(config: pytest.Config) -> Path:
    explicit = os.environ.get("GPUOP_TEST_STATE_DIR", "").strip()
    return Path(explicit) if explicit else config.rootpath / ".gpuop" / "test-state"


def _held_by_a_live_session(session_dir: Path) -> bool:
    lock = session_dir / "session.lock"
    if not lock.exists():
        return False
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def _clean_ended_sessions(root: Path, say: Callable[[str], None]) -> None:
    """Stop and remove the session clusters whose pytest is gone (finished or killed)."""
    if not root.is_dir():
        return
    for session_dir in sorted(root.iterdir()):
        if not session_dir.is_dir() or _held_by_a_live_session(session_dir):
            continue
        for message in LocalCluster(SESSION_CLUSTER, state_root_dir=session_dir).down():
            say(message)
        shutil.rmtree(session_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def e2e_cluster(request: pytest.FixtureRequest) -> Iterator[E2ECluster]:
    external = os.environ.get("GPUOP_TEST_KUBECONFIG", "").strip()
    if external:
        kubeconfig = Path(external)
        audit = os.environ.get("GPUOP_TEST_AUDIT_LOG", "").strip()
        audit_log = Path(audit) if audit else kubeconfig.parent / "logs" / "audit.log"
        yield E2ECluster(kubeconfig, audit_log if audit_log.exists() else None, None)
        return
    say = _live_printer(request.config)
    root = _state_root(request.config)
    session_dir = root / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    session_dir.mkdir(parents=True)
    with (session_dir / "session.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _clean_ended_sessions(root, say)
        except ControlPlaneError as exc:
            say(f"could not clean up an earlier session: {exc}")
        cluster = LocalCluster(SESSION_CLUSTER, state_root_dir=session_dir)
        try:
            info = cluster.up(progress=say)
        except ControlPlaneError as exc:
            pytest.fail(f"could not start the e2e control plane: {exc}", pytrace=False)
        say(f"cluster '{SESSION_CLUSTER}' ready: KUBECONFIG={info.kubeconfig}")
        try:
            yield E2ECluster(Path(info.kubeconfig), Path(info.audit_log), cluster)
        finally:
            if os.environ.get("GPUOP_TEST_KEEP_CLUSTER", "").strip() in ("", "0"):
                for message in cluster.down(progress=say):
                    say(message)
                say(f"logs of this session: {cluster.logs_dir}")
            else:
                say(
                    f"leaving cluster '{SESSION_CLUSTER}' running (GPUOP_TEST_KEEP_CLUSTER): "
                    f"KUBECONFIG={info.kubeconfig}"
                )


@pytest.fixture(scope="session")
def kubeconfig_path(e2e_cluster: E2ECluster) -> Path:
    """The admin kubeconfig of the session cluster."""
    return e2e_cluster.kubeconfig


@pytest.fixture(scope="session")
def audit_log_path(e2e_cluster: E2ECluster) -> Path:
    """The API server's audit log (JSON lines, Metadata level) of the session cluster."""
    if e2e_cluster.audit_log is None:
        pytest.fail(
            "the cluster from GPUOP_TEST_KUBECONFIG has no known audit log; set "
            "GPUOP_TEST_AUDIT_LOG",
            pytrace=False,
        )
    return e2e_cluster.audit_log


def make_client(kubeconfig: Path, field_manager: str = "gpuop-e2e") -> Client:
    """A lightkube Client for ``kubeconfig`` (loopback: no proxies from the environment)."""
    return Client(KubeConfig.from_file(kubeconfig), field_manager=field_manager, trust_env=False)


@pytest.fixture(scope="session")
def client_for() -> Callable[..., Client]:
    """``client_for(kubeconfig_path)``: a lightkube Client acting as that kubeconfig's user."""
    return make_client


@pytest.fixture(scope="session")
def kube_client(kubeconfig_path: Path) -> Client:
    """A lightkube sync Client acting as the cluster admin."""
    return make_client(kubeconfig_path)


CommandRunner = Callable[..., CompletedProcess[str]]


def _runner(binary: Path, kubeconfig: Path, env: dict[str, str]) -> CommandRunner:
    def run(*args: str, input: str | None = None, check: bool = True) -> CompletedProcess[str]:
        cmd = [str(binary), "--kubeconfig", str(kubeconfig), *args]
        result = subprocess.run(
            cmd, input=input, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        if check and result.returncode != 0:
            pytest.fail(
                f"{' '.join(cmd)} exited with {result.returncode}:\n{result.stderr}{result.stdout}",
                pytrace=False,
            )
        return result

    return run


def _tool_env(home: Path) -> dict[str, str]:
    """The environment helm and kubectl run with: their state under ``home``, no proxies."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(
        {
            "HOME": str(home),
            "HELM_CACHE_HOME": str(home / "helm-cache"),
            "HELM_CONFIG_HOME": str(home / "helm-config"),
            "HELM_DATA_HOME": str(home / "helm-data"),
        }
    )
    return env


@pytest.fixture(scope="session")
def helm(kubeconfig_path: Path, tmp_path_factory: pytest.TempPathFactory) -> CommandRunner:
    """``helm(*args)``: the cached helm (built if absent) against the session cluster."""
    try:
        binary = ensure_binaries(components=[HELM])["helm"]
    except ControlPlaneError as exc:
        pytest.fail(f"helm is needed and could not be built: {exc}", pytrace=False)
    return _runner(binary, kubeconfig_path, _tool_env(tmp_path_factory.mktemp("helm-home")))


@pytest.fixture(scope="session")
def kubectl(kubeconfig_path: Path, tmp_path_factory: pytest.TempPathFactory) -> CommandRunner:
    """``kubectl(*args)``: the control plane's kubectl against the session cluster."""
    binary = ensure_binaries(components=COMPONENTS)["kubectl"]
    return _runner(binary, kubeconfig_path, _tool_env(tmp_path_factory.mktemp("kubectl-home")))


def _namespace_name(test_name: str) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"e2e-{base}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def namespace(kube_client: Client, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test (its ``default`` ServiceAccount exists), then deleted."""
    name = _namespace_name(request.node.name)
    kube_client.create(Namespace(metadata=ObjectMeta(name=name, labels={E2E_LABEL: "true"})))
    deadline = time.monotonic() + 60
    while True:
        try:
            kube_client.get(ServiceAccount, "default", namespace=name)
            break
        except ApiError as exc:
            if exc.status.code != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    try:
        yield name
    finally:
        with contextlib.suppress(ApiError):
            kube_client.delete(Namespace, name)
