"""Install and run gpuop on a cluster the way a user would, for the lab and the e2e tests.

The CRD, the operator namespace and the shipped least-privilege RBAC are applied from the
package's own manifests; the operator then runs as its ServiceAccount (a token minted for
it), never as cluster admin, and the simulator plays the node side. Both run as separate
processes, as they would in a cluster, with their logs in files.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from gpuop.api.labels import HOSTNAME_LABEL
from gpuop.controlplane.access import write_service_account_kubeconfig
from gpuop.kube import ops, sync_client
from gpuop.policy.crd import crd_manifest
from gpuop.policy.gpucluster import SINGLETON_NAME, gpu_cluster_crd_manifest

NAMESPACE = "gpu-operator"
# The image of the lab's CUDA workload pods.
CUDA_IMAGE = "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04"
OPERATOR_ACCOUNT = "gpuop-operator"
SIMULATOR_ACCOUNT = "gpuop-simulator"


class StackError(RuntimeError):
    """The operator stack could not be installed or started; the message says why."""


@cache
def deploy_manifests(name: str) -> list[dict[str, Any]]:
    """The objects of one shipped manifest file (`namespace`, `rbac`, `deployment`)."""
    text = resources.files("gpuop.catalog").joinpath(f"deploy/{name}.yaml").read_text("utf-8")
    return [doc for doc in yaml.safe_load_all(text) if doc]


def install_crd(kubeconfig: str, timeout: float = 60) -> None:
    """The ClusterPolicy and GPUCluster CRDs, as the Helm chart installs them."""
    client = sync_client(kubeconfig)
    manifests = [crd_manifest(), gpu_cluster_crd_manifest()]
    for manifest in manifests:
        ops.apply_object_sync(client, manifest)
    deadline = time.monotonic() + timeout
    waiting = [m["metadata"]["name"] for m in manifests]
    while time.monotonic() < deadline:
        waiting = [name for name in waiting if not ops.crd_established_sync(client, name)]
        if not waiting:
            return
        time.sleep(0.2)
    raise StackError(f"the CRD {waiting[0]} did not become Established")


def install_operator_access(kubeconfig: str, out_dir: Path) -> Path:
    """Namespace + RBAC; returns a kubeconfig acting as the operator's ServiceAccount."""
    return _install_access(kubeconfig, out_dir, "rbac", OPERATOR_ACCOUNT, "operator.kubeconfig")


def install_simulator_access(kubeconfig: str, out_dir: Path) -> Path:
    """The simulator's RBAC; returns a kubeconfig acting as its ServiceAccount."""
    return _install_access(
        kubeconfig, out_dir, "simulator-rbac", SIMULATOR_ACCOUNT, "simulator.kubeconfig"
    )


def _install_access(kubeconfig: str, out_dir: Path, manifest: str, account: str, file: str) -> Path:
    client = sync_client(kubeconfig)
    for obj in deploy_manifests("namespace") + deploy_manifests(manifest):
        ops.create_or_replace_sync(client, obj)
    deadline = time.monotonic() + 30
    while True:
        try:
            return write_service_account_kubeconfig(
                Path(kubeconfig),
                NAMESPACE,
                account,
                out_dir / file,
                expiration_seconds=24 * 3600,
            )
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 10) -> None:
        if not self.alive():
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(5)

    def kill(self) -> None:
        if self.alive():
            self.popen.kill()
            self.popen.wait(5)


def _spawn(name: str, args: list[str], log_dir: Path, env: dict[str, str] | None = None) -> Process:
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    handle = log_path.open("ab")
    full_env = {**os.environ, **(env or {})}
    full_env.pop("KUBECONFIG", None)
    popen = subprocess.Popen(
        [sys.executable, "-m", "gpuop", *args],
        stdout=handle,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=full_env,
        start_new_session=True,
    )
    handle.close()
    time.sleep(0.3)
    if popen.poll() is not None:
        raise StackError(f"{name} exited at start:\n{log_path.read_text(errors='replace')[-2000:]}")
    return Process(name, popen, log_path)


def start_operator(
    operator_kubeconfig: Path, log_dir: Path, extra_args: list[str] | None = None
) -> Process:
    return _spawn(
        "operator",
        [
            "operator",
            "run",
            "--kubeconfig",
            str(operator_kubeconfig),
            "--namespace",
            NAMESPACE,
            "--metrics-port",
            "0",
            "--health-probe-port",
            "0",
            *(extra_args or []),
        ],
        log_dir,
    )


def start_simulator(kubeconfig: str, log_dir: Path, hosts_dir: Path) -> Process:
    return _spawn(
        "simulator",
        [
            "sim",
            "run",
            "--kubeconfig",
            kubeconfig,
            "--namespace",
            NAMESPACE,
            "--hosts-dir",
            str(hosts_dir),
        ],
        log_dir,
    )


def apply_cluster_policy(kubeconfig: str, policy: dict[str, Any]) -> None:
    client = sync_client(kubeconfig)
    if ops.get_object_sync(client, "ClusterPolicy", policy["metadata"]["name"]) is None:
        ops.create_or_replace_sync(client, policy)
    else:
        ops.apply_object_sync(client, policy)


def delete_cluster_policy(kubeconfig: str, name: str) -> None:
    ops.delete_object_sync(sync_client(kubeconfig), "ClusterPolicy", name)


def get_cluster_policy(kubeconfig: str, name: str) -> dict[str, Any] | None:
    return ops.get_object_sync(sync_client(kubeconfig), "ClusterPolicy", name)


def apply_gpu_cluster(kubeconfig: str, gpu_cluster: dict[str, Any]) -> None:
    """Create the GPUCluster, or apply it over the one there."""
    ops.create_or_replace_sync(sync_client(kubeconfig), gpu_cluster)


def delete_gpu_cluster(kubeconfig: str) -> None:
    ops.delete_object_sync(sync_client(kubeconfig), "GPUCluster", SINGLETON_NAME)


def get_gpu_cluster(kubeconfig: str) -> dict[str, Any] | None:
    return ops.get_object_sync(sync_client(kubeconfig), "GPUCluster", SINGLETON_NAME)


def lab_pod(metadata: dict[str, Any], spec: dict[str, Any], node: str | None) -> dict[str, Any]:
    """A Pod of `metadata` and `spec`, pinned to `node` (by its hostname label) when given."""
    if node:
        spec["nodeSelector"] = {HOSTNAME_LABEL: node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def gpu_pod(
    name: str, resource: str, node: str | None = None, namespace: str = "default"
) -> dict[str, Any]:
    """A pod asking for one `resource` (a CUDA job, or what a VM's launcher asks for),
    pinned to `node` when given."""
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": CUDA_IMAGE,
                "command": ["sleep", "infinity"],
                "resources": {"limits": {resource: "1"}},
            }
        ],
        "terminationGracePeriodSeconds": 0,
    }
    return lab_pod({"name": name, "namespace": namespace}, spec, node)


def lab_policy(sandbox: bool = True, name: str = "cluster-policy") -> dict[str, Any]:
    """The lab's ClusterPolicy: the chart defaults, sandbox workloads on, a vGPU manager image."""
    from gpuop.policy import default_policy_object

    policy: dict[str, Any] = yaml.safe_load(yaml.safe_dump(default_policy_object()))
    policy["metadata"] = {"name": name}
    policy["spec"]["sandboxWorkloads"]["enabled"] = sandbox
    policy["spec"]["vgpuManager"] = {
        "enabled": True,
        "repository": "registry.example.internal/nvidia",
        "image": "vgpu-manager",
        "version": "595.91.07",
    }
    return policy
