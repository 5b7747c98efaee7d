"""Two operator replicas on the real control plane: one leads, the other takes over when the
leader is SIGKILLed, and a leader that was frozen past its renew deadline never writes again.

Each replica runs as its own ServiceAccount (the shipped RBAC, bound a second time for the
second account), so the API server's audit log tells their writes apart. The terms are
shortened (lease 4 s, renew deadline 3 s, retry 0.5 s) to keep the test short; the handover
benchmark (`bench/handover_bench.py`) measures the default terms.
"""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Pod

from gpuop.api.labels import WORKLOAD_LABEL, deploy_label
from gpuop.controlplane.access import write_service_account_kubeconfig
from gpuop.controlplane.audit import audit_mark, write_requests
from gpuop.kube import ops, sync_client
from gpuop.lab import stack
from gpuop.sim.hardware import NodeSpec
from gpuop.sim.registry import add_nodes
from kit.waiting import wait_until

pytestmark = pytest.mark.e2e

NS = stack.NAMESPACE
NODES = {"ha-container": "container", "ha-passthrough": "vm-passthrough"}
TERMS = ["--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5"]
LEASE_SECONDS = 4.0
KILLS = 10
SECOND_ACCOUNT = "gpuop-operator-b"


def _user(account: str) -> str:
    return f"system:serviceaccount:{NS}:{account}"


def _second_account(kubeconfig: str, out: Path) -> Path:
    """A second ServiceAccount holding exactly the shipped operator's rights."""
    client = sync_client(kubeconfig)
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SECOND_ACCOUNT, "namespace": NS},
    }
    ops.create_or_replace_sync(client, sa)
    for obj in stack.deploy_manifests("rbac"):
        if obj["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        binding = copy.deepcopy(obj)
        binding["metadata"]["name"] += "-b"
        for subject in binding["subjects"]:
            subject["name"] = SECOND_ACCOUNT
        ops.create_or_replace_sync(client, binding)
    return write_service_account_kubeconfig(
        Path(kubeconfig), NS, SECOND_ACCOUNT, out / "operator-b.kubeconfig", expiration_seconds=3600
    )


class Replica:
    def __init__(self, account: str, kubeconfig: Path, log_dir: Path) -> None:
        self.account = account
        self.process = stack.start_operator(kubeconfig, log_dir, TERMS)

    def leads(self) -> bool:
        return "leading as" in self.process.log_tail(400)


@pytest.fixture
def ha_stack(kubeconfig_path: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    kubeconfig = str(kubeconfig_path)
    stack.install_crd(kubeconfig)
    accounts = {
        stack.OPERATOR_ACCOUNT: stack.install_operator_access(kubeconfig, tmp_path),
        SECOND_ACCOUNT: _second_account(kubeconfig, tmp_path),
    }
    client = sync_client(kubeconfig)
    for name in NODES:
        ops.delete_node_sync(client, name)
    add_nodes(client, [NodeSpec(n, "A10", 2, {WORKLOAD_LABEL: w}) for n, w in NODES.items()], NS)
    simulator = stack.start_simulator(
        str(stack.install_simulator_access(kubeconfig, tmp_path)),
        tmp_path / "sim",
        tmp_path / "hosts",
    )
    stack.apply_cluster_policy(kubeconfig, stack.lab_policy(sandbox=True))
    state: dict[str, Any] = {
        "kubeconfig": kubeconfig,
        "accounts": accounts,
        "work": tmp_path,
        "replicas": [],
    }
    yield state
    for replica in state["replicas"]:
        if replica.process.alive():
            os.kill(replica.process.popen.pid, signal.SIGCONT)
            replica.process.stop()
    simulator.stop()
    with contextlib.suppress(ApiError):
        client.delete(Pod, "ha-vm", namespace="default", grace_period=0)
    stack.delete_cluster_policy(kubeconfig, "cluster-policy")
    for name in NODES:
        ops.delete_node_sync(client, name)


def _start(state: dict[str, Any], account: str) -> Replica:
    run = len(state["replicas"])
    replica = Replica(account, state["accounts"][account], state["work"] / f"replica-{run}")
    state["replicas"].append(replica)
    return replica


def _deployed(kubeconfig: str, node: str, operand: str) -> bool:
    labels = (ops.get_node(sync_client(kubeconfig), node) or {})["metadata"]["labels"]
    return bool(labels.get(deploy_label(operand)) == "true")


def _wait_to_lead(replica: Replica) -> None:
    wait_until(
        lambda: (replica.leads(), replica.process.log_tail(5)),
        3 * LEASE_SECONDS + 10,
        f"{replica.account} to lead",
    )


def _wait_deployed(kubeconfig: str, node: str, operand: str) -> None:
    wait_until(lambda: (_deployed(kubeconfig, node, operand), None), 90, f"{operand} on {node}")


def test_the_standby_takes_over_each_time_the_leader_dies(
    ha_stack: dict[str, Any], audit_log_path: Path
) -> None:
    kubeconfig = ha_stack["kubeconfig"]
    client = sync_client(kubeconfig)
    leader = _start(ha_stack, stack.OPERATOR_ACCOUNT)
    wait_until(
        lambda: (leader.leads(), leader.process.log_tail(5)), 30, "the first replica to lead"
    )
    standby = _start(ha_stack, SECOND_ACCOUNT)
    wait_until(
        lambda: (_deployed(kubeconfig, "ha-container", "device-plugin"), None), 90, "convergence"
    )
    time.sleep(2)
    assert not standby.leads(), "two replicas lead at once"
    handovers = []
    # A VM's pod holds the passthrough node's GPUs: its switch must stay held under every
    # leader that follows.
    vm_pod = stack.gpu_pod("ha-vm", "nvidia.com/GA102GL_A10", node="ha-passthrough")
    ops.create_or_replace_sync(client, vm_pod)
    for round_ in range(KILLS):
        workload = "vm-passthrough" if round_ % 2 == 0 else "container"
        # A mode switch, and the leader dies right after it was asked for.
        ops.patch_node_sync(client, "ha-container", labels={WORKLOAD_LABEL: workload})
        if round_ == KILLS // 2:
            ops.patch_node_sync(client, "ha-passthrough", labels={WORKLOAD_LABEL: "container"})
        leader.process.kill()
        killed = time.monotonic()
        _wait_to_lead(standby)
        handovers.append(time.monotonic() - killed)
        operand = "vfio-manager" if workload == "vm-passthrough" else "device-plugin"
        _wait_deployed(kubeconfig, "ha-container", operand)
        assert _deployed(kubeconfig, "ha-passthrough", "vfio-manager"), "switched under a VM"
        assert not _deployed(kubeconfig, "ha-passthrough", "device-plugin"), "switched under a VM"
        leader, standby = standby, _start(ha_stack, leader.account)
    # The lease runs out LEASE_SECONDS after the last renewal the standby saw, and it tries
    # every retry period (jittered up to 2.2x): it leads within the lease and two tries.
    assert max(handovers) < LEASE_SECONDS + 2 * 2.2 * 0.5 + 2.0, handovers
    client.delete(Pod, "ha-vm", namespace="default", grace_period=0)
    _wait_deployed(kubeconfig, "ha-passthrough", "device-plugin")

    # A leader frozen past its renew deadline (a partition, a stalled node) must never write
    # again once it wakes: the standby leads by then.
    time.sleep(2)
    os.kill(leader.process.popen.pid, signal.SIGSTOP)
    wait_until(lambda: (standby.leads(), None), 3 * LEASE_SECONDS + 10, "the standby to lead")
    ops.patch_node_sync(client, "ha-container", labels={WORKLOAD_LABEL: "vm-passthrough"})
    mark = audit_mark(audit_log_path)
    os.kill(leader.process.popen.pid, signal.SIGCONT)
    wait_until(
        lambda: ("leadership lost" in leader.process.log_tail(50), leader.process.log_tail(5)),
        20,
        "the old leader to give up",
    )
    assert "standing by" in leader.process.log_tail(50)
    _wait_deployed(kubeconfig, "ha-container", "vfio-manager")
    time.sleep(3)
    stale = write_requests(audit_log_path, mark, _user(leader.account))
    assert stale == [], f"a leader past its renew deadline wrote: {stale}"
    assert leader.process.alive() and not standby.process.log_tail(5).count("leadership lost")
    print(f"[leader] handovers after SIGKILL: {[round(h, 1) for h in handovers]} s")
