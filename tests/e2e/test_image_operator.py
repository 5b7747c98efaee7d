"""The operator image, built by `make image`'s builder, imported into a real containerd and run.

The image is built twice from the same inputs (one digest), imported with `ctr images import`
into containerd 2.x (built from src/gpuop/controlplane/modules/containerd by
scripts/build-containerd.sh) and run with runc, read-only, as the image's user. The operator
runs as the chart does, in-cluster: the ServiceAccount token, CA and namespace mounted at
/var/run/secrets/kubernetes.io/serviceaccount, under the shipped RBAC; the node simulator runs
from the same image. Together they converge the three-mode cluster. Everything that runs is the
image's Python and files (the checkout only drives the test).

Binaries: containerd, ctr and containerd-shim-runc-v2 from $GPUOP_CONTAINERD2's folder or
<cache>/bin/containerd-v2.*/, runc on PATH (Debian's). Missing ones skip, unless
GPUOP_REQUIRE_CONTAINERD=1 makes that a failure (CI sets it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpuop.controlplane.access import service_account_token
from gpuop.controlplane.kubeconfig import read_kubeconfig
from gpuop.controlplane.paths import bin_root
from gpuop.kube import ops, sync_client
from gpuop.lab import stack
from gpuop.naming import is_gpu_resource
from gpuop.sim.hardware import NodeSpec
from gpuop.sim.registry import add_nodes

pytestmark = [pytest.mark.e2e, pytest.mark.containerd]

REPO = Path(__file__).resolve().parents[2]
NAMESPACE_CTR = "gpuop-test"
NODES = {"img-container": "container", "img-passthrough": "vm-passthrough", "img-vgpu": "vm-vgpu"}
EXPECTED = {
    "img-container": {"nvidia.com/gpu": 2},
    "img-passthrough": {"nvidia.com/GA102GL_A10": 2},
    "img-vgpu": {"nvidia.com/NVIDIA_A10-12Q": 4},
}
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IMAGE_UID = 65532


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_image", REPO / "image" / "build_image.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_image"] = module
    spec.loader.exec_module(module)
    return module


def _missing(reason: str) -> None:
    if os.environ.get("GPUOP_REQUIRE_CONTAINERD", "").strip() not in ("", "0"):
        pytest.fail(f"{reason} (GPUOP_REQUIRE_CONTAINERD=1)", pytrace=False)
    pytest.skip(reason)


def _containerd_dir() -> Path:
    explicit = os.environ.get("GPUOP_CONTAINERD2", "").strip()
    candidates = [Path(explicit).parent] if explicit else sorted(bin_root().glob("containerd-v2.*"))
    for folder in reversed(candidates):
        if all((folder / b).is_file() for b in ("containerd", "ctr", "containerd-shim-runc-v2")):
            return folder
    _missing("no containerd 2.x with ctr and containerd-shim-runc-v2 (scripts/build-containerd.sh)")
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def built_images(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """The image built twice into two folders (the second from the same wheel)."""
    if os.geteuid() != 0 and shutil.which("unshare") is None:
        _missing("building the image needs root or unshare")
    if shutil.which("mmdebstrap") is None:
        _missing("mmdebstrap is not installed (make system-packages)")
    builder = _builder()
    first = builder.build(tmp_path_factory.mktemp("image-1"))
    wheel_dir = tmp_path_factory.mktemp("wheel")
    wheel = builder.build_wheel(wheel_dir)
    second = builder.build(tmp_path_factory.mktemp("image-2"), wheel)
    return first, second


@pytest.fixture(scope="module")
def ctr(
    built_images: tuple[Any, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """``ctr(*args)`` against a private containerd that has imported the image."""
    folder = _containerd_dir()
    if shutil.which("runc") is None:
        _missing("runc is not installed (make system-packages)")
    if os.geteuid() != 0:
        _missing("running containers with runc needs root")
    # A short folder: containerd's socket path must stay under 108 bytes.
    work = Path(tempfile.mkdtemp(prefix="gpuop-ctrd-"))
    socket = work / "containerd.sock"
    (work / "config.toml").write_text(
        f'version = 3\nroot = "{work}/root"\nstate = "{work}/state"\n'
        f'[grpc]\n  address = "{socket}"\n'
    )
    env = {**os.environ, "PATH": f"{folder}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    log = (work / "containerd.log").open("wb")
    daemon = subprocess.Popen(
        [str(folder / "containerd"), "--config", str(work / "config.toml")],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )

    prefix = [str(folder / "ctr"), "-a", str(socket), "-n", NAMESPACE_CTR]

    def run_ctr(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [*prefix, *args]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done

    deadline = time.monotonic() + 30
    while run_ctr("version", check=False).returncode != 0:
        assert daemon.poll() is None, (work / "containerd.log").read_text()[-3000:]
        assert time.monotonic() < deadline, "containerd did not start"
        time.sleep(0.2)
    run_ctr("images", "import", str(built_images[0].archive))
    run_ctr.prefix = prefix  # type: ignore[attr-defined]
    run_ctr.env = env  # type: ignore[attr-defined]
    yield run_ctr
    daemon.terminate()
    try:
        daemon.wait(20)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait(5)
    log.close()
    subprocess.run(["umount", "-R", str(work / "root")], capture_output=True, check=False)
    shutil.rmtree(work, ignore_errors=True)


def test_the_same_inputs_give_the_same_image(built_images: tuple[Any, Any]) -> None:
    first, second = built_images
    assert first.manifest_digest == second.manifest_digest
    assert first.archive.read_bytes() == second.archive.read_bytes()
    assert first.sbom.read_bytes() == second.sbom.read_bytes()
    print(
        f"image {first.ref} {first.manifest_digest}: {first.compressed_size / 2**20:.1f} MiB "
        f"compressed, {first.uncompressed_size / 2**20:.1f} MiB unpacked"
    )
    assert first.compressed_size < 150 * 2**20


def test_the_image_is_labelled_runs_as_its_user_and_has_an_sbom(
    built_images: tuple[Any, Any],
) -> None:
    built = built_images[0]
    index = json.loads((built.oci_dir / "index.json").read_text())
    manifest_digest = index["manifests"][0]["digest"]
    blobs = built.oci_dir / "blobs" / "sha256"
    manifest = json.loads((blobs / manifest_digest.split(":")[1]).read_bytes())
    config = json.loads((blobs / manifest["config"]["digest"].split(":")[1]).read_bytes())
    labels = config["config"]["Labels"]
    assert labels["org.opencontainers.image.version"] == "0.1.0"
    assert (
        labels["org.opencontainers.image.revision"].split("-")[0]
        == subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    assert config["config"]["User"] == f"{IMAGE_UID}:{IMAGE_UID}"
    assert config["config"]["Entrypoint"] == ["/usr/bin/gpuop"]
    sbom = json.loads(built.sbom.read_text())
    names = {p["name"] for p in sbom["packages"]}
    assert {"libc6", "python3.11-minimal", "pydantic", "lightkube", "gpuop"} <= names
    assert "dpkg" not in names


def test_the_image_has_no_shell_and_runs_read_only(ctr: Callable[..., Any]) -> None:
    image = "docker.io/library/gpuop:0.1.0"
    version = ctr("run", "--rm", "--read-only", image, "version", "/usr/bin/gpuop", "--version")
    assert "0.1.0" in version.stdout
    probe = (
        "import os, shutil; print(os.getuid(), os.getgid(), shutil.which('sh'), "
        "os.path.exists('/bin/sh'))"
    )
    who = ctr("run", "--rm", "--read-only", image, "probe", "/usr/bin/python3.11", "-c", probe)
    assert who.stdout.split() == [str(IMAGE_UID), str(IMAGE_UID), "None", "False"]


def _gpu_allocatable(client: Any, name: str) -> dict[str, int]:
    node = ops.get_node(client, name) or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {k: int(v) for k, v in allocatable.items() if is_gpu_resource(k) and int(v) > 0}


def test_the_operator_in_the_image_converges_the_three_mode_cluster(
    ctr: Callable[..., Any], kubeconfig_path: Path, tmp_path: Path
) -> None:
    kubeconfig = str(kubeconfig_path)
    client = sync_client(kubeconfig)
    stack.install_crd(kubeconfig)
    stack.install_operator_access(kubeconfig, tmp_path)
    simulator_kubeconfig = stack.install_simulator_access(kubeconfig, tmp_path)
    for name in NODES:
        ops.delete_node_sync(client, name)
    # The operator's ServiceAccount, mounted as the kubelet mounts it.
    entry = read_kubeconfig(kubeconfig_path)
    host, port = entry.server.removeprefix("https://").rsplit(":", 1)
    secrets = tmp_path / "serviceaccount"
    secrets.mkdir()
    token = service_account_token(
        kubeconfig_path, stack.NAMESPACE, stack.OPERATOR_ACCOUNT, expiration_seconds=3600
    )
    (secrets / "token").write_text(token)
    (secrets / "ca.crt").write_bytes(entry.ca_pem or b"")
    (secrets / "namespace").write_text(stack.NAMESPACE)
    simulator_dir = tmp_path / "simulator"
    simulator_dir.mkdir()
    shutil.copy(simulator_kubeconfig, simulator_dir / "kubeconfig")
    for path in [tmp_path, secrets, simulator_dir, *secrets.iterdir(), *simulator_dir.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)

    image = "docker.io/library/gpuop:0.1.0"
    common = [
        "--read-only",
        "--net-host",
        "--mount",
        "type=tmpfs,src=tmpfs,dst=/tmp,options=nosuid:nodev:mode=1777",
    ]
    logs = tmp_path / "logs"
    logs.mkdir()
    operator = _run_detached(
        ctr,
        "operator",
        [
            *common,
            "--mount",
            f"type=bind,src={secrets},dst={SA_DIR},options=rbind:ro",
            "--env",
            f"KUBERNETES_SERVICE_HOST={host}",
            "--env",
            f"KUBERNETES_SERVICE_PORT={port}",
            "--env",
            f"OPERATOR_NAMESPACE={stack.NAMESPACE}",
            image,
            "operator",
            "/usr/bin/gpuop",
            "operator",
            "run",
            "--log-format",
            "json",
            "--metrics-port",
            "0",
        ],
        logs,
    )
    simulator = _run_detached(
        ctr,
        "simulator",
        [
            *common,
            "--mount",
            f"type=bind,src={simulator_dir},dst=/etc/gpuop-simulator,options=rbind:ro",
            image,
            "simulator",
            "/usr/bin/gpuop",
            "sim",
            "run",
            "--kubeconfig",
            "/etc/gpuop-simulator/kubeconfig",
            "--namespace",
            stack.NAMESPACE,
            "--hosts-dir",
            "/tmp/hosts",
        ],
        logs,
    )
    try:
        _assert_runs_from_the_image(ctr, "operator")
        add_nodes(
            client,
            [
                NodeSpec(name, "A10", 2, {"nvidia.com/gpu.workload.config": workload})
                for name, workload in NODES.items()
            ],
            stack.NAMESPACE,
        )
        stack.apply_cluster_policy(kubeconfig, stack.lab_policy(sandbox=True))
        deadline = time.monotonic() + 150
        seen: Any = None
        while time.monotonic() < deadline:
            assert operator.poll() is None, (logs / "operator.log").read_text()[-3000:]
            assert simulator.poll() is None, (logs / "simulator.log").read_text()[-3000:]
            policy = stack.get_cluster_policy(kubeconfig, "cluster-policy") or {}
            state = (policy.get("status") or {}).get("state")
            seen = (state, {n: _gpu_allocatable(client, n) for n in NODES})
            if seen == ("ready", EXPECTED):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(
                f"not converged: {seen}\n{(logs / 'operator.log').read_text()[-3000:]}"
            )
    finally:
        for name in ("operator", "simulator"):
            ctr("task", "kill", "-s", "SIGTERM", name, check=False)
        for process in (operator, simulator):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
        for name in ("operator", "simulator"):
            ctr("task", "delete", "-f", name, check=False)
            ctr("containers", "delete", name, check=False)
        stack.delete_cluster_policy(kubeconfig, "cluster-policy")
        for name in NODES:
            ops.delete_node_sync(client, name)
        print(
            "operator log tail:\n"
            + "\n".join((logs / "operator.log").read_text(errors="replace").splitlines()[-20:])
        )


def _run_detached(
    ctr: Callable[..., Any], name: str, args: list[str], logs: Path
) -> subprocess.Popen[bytes]:
    """``ctr run`` in the foreground of a child process, its output in ``logs/<name>.log``."""
    handle = (logs / f"{name}.log").open("wb")
    process = subprocess.Popen(
        [*ctr.prefix, "run", *args],  # type: ignore[attr-defined]
        stdout=handle,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=ctr.env,  # type: ignore[attr-defined]
    )
    handle.close()
    return process


def _assert_runs_from_the_image(ctr: Callable[..., Any], name: str) -> None:
    """The task's process is the image's Python, as the image's user, in the image's files."""
    deadline = time.monotonic() + 30
    pids: list[str] = []
    while time.monotonic() < deadline and not pids:
        listing = ctr("task", "ps", name, check=False)
        pids = [line.split()[0] for line in listing.stdout.splitlines()[1:] if line.strip()]
        time.sleep(0.2)
    assert pids, f"task {name} did not start"
    pid = pids[0]
    status = Path(f"/proc/{pid}/status").read_text()
    uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
    assert uid_line.split()[1] == str(IMAGE_UID), uid_line
    root = Path(f"/proc/{pid}/root")
    exe, python = os.stat(f"/proc/{pid}/exe"), os.stat(root / "usr/bin/python3.11")
    assert (exe.st_dev, exe.st_ino) == (python.st_dev, python.st_ino)
    assert (root / "usr/lib/python3/dist-packages/gpuop/__init__.py").is_file()
    assert not (root / "bin/sh").exists()
