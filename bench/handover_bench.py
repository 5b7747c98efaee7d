"""Leader handover: from the leader's SIGKILL to the first write of the replica that takes over.

On the local control plane, two operator replicas run under the shipped RBAC with the
default leader election terms (lease 15 s, renew deadline 10 s, retry 2 s) beside the node
simulator and a few simulated GPU nodes. Each round flips one node's workload config, kills
the leader at once, and measures, from the API server's audit log, the time from the kill to
the first write (not a Lease renewal) of the operator's account: the new leader's first
act. A new standby is started each round. Prints each round and the median.

Usage: python bench/handover_bench.py [--rounds 10] [--lease-duration 15 --renew-deadline 10
                                       --retry-period 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from gpuop.api.labels import WORKLOAD_LABEL
from gpuop.controlplane import LocalCluster
from gpuop.controlplane.audit import audit_entries, audit_mark
from gpuop.kube import ops, sync_client
from gpuop.lab import stack
from gpuop.sim.hardware import NodeSpec
from gpuop.sim.registry import add_nodes

NODES = {"handover-a": "container", "handover-b": "vm-passthrough"}
OPERATOR_USER = f"system:serviceaccount:{stack.NAMESPACE}:{stack.OPERATOR_ACCOUNT}"


def _stamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _first_write_after(audit: Path, mark: Any, since: float, timeout: float) -> float | None:
    """Seconds from `since` (epoch) to the operator's first non-Lease write after it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in audit_entries(audit, mark):
            if (
                entry.get("stage") == "ResponseComplete"
                and entry.get("verb") in ("create", "update", "patch", "delete")
                and (entry.get("user") or {}).get("username") == OPERATOR_USER
                and (entry.get("objectRef") or {}).get("resource") != "leases"
            ):
                at = _stamp(str(entry.get("requestReceivedTimestamp")))
                if at >= since:
                    return at - since
        time.sleep(0.2)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--lease-duration", type=float, default=15.0)
    parser.add_argument("--renew-deadline", type=float, default=10.0)
    parser.add_argument("--retry-period", type=float, default=2.0)
    parser.add_argument("--cluster-name", default="bench")
    args = parser.parse_args()
    terms = [
        "--lease-duration", str(args.lease_duration),
        "--renew-deadline", str(args.renew_deadline),
        "--retry-period", str(args.retry_period),
    ]  # fmt: skip
    cluster = LocalCluster(args.cluster_name)
    info = cluster.up(progress=lambda line: print(line, file=sys.stderr))
    kubeconfig, audit = str(info.kubeconfig), Path(info.audit_log)
    stack.install_crd(kubeconfig)
    client = sync_client(kubeconfig)
    handovers: list[float] = []
    with tempfile.TemporaryDirectory(prefix="gpuop-handover-") as tmp:
        work = Path(tmp)
        access = stack.install_operator_access(kubeconfig, work)
        for name in NODES:
            ops.delete_node_sync(client, name)
        specs = [NodeSpec(n, "A10", 2, {WORKLOAD_LABEL: w}) for n, w in NODES.items()]
        add_nodes(client, specs, stack.NAMESPACE)
        simulator = stack.start_simulator(
            str(stack.install_simulator_access(kubeconfig, work)), work / "sim", work / "hosts"
        )
        stack.apply_cluster_policy(kubeconfig, stack.lab_policy(sandbox=True))
        replicas = [stack.start_operator(access, work / f"r{i}", terms) for i in range(2)]
        try:
            time.sleep(args.lease_duration + 5)
            for round_ in range(args.rounds):
                leader = next(r for r in replicas if "leading as" in r.log_tail(400))
                workload = "vm-passthrough" if round_ % 2 == 0 else "container"
                mark = audit_mark(audit)
                ops.patch_node_sync(client, "handover-a", labels={WORKLOAD_LABEL: workload})
                killed = time.time()
                leader.kill()
                took = _first_write_after(audit, mark, killed, 4 * args.lease_duration)
                print(json.dumps({"round": round_ + 1, "handover_seconds": took}), flush=True)
                if took is not None:
                    handovers.append(took)
                replicas.remove(leader)
                replicas.append(stack.start_operator(access, work / f"r{round_ + 2}", terms))
                time.sleep(3)
        finally:
            for replica in replicas:
                replica.stop()
            simulator.stop()
            stack.delete_cluster_policy(kubeconfig, "cluster-policy")
            for name in NODES:
                ops.delete_node_sync(client, name)
    if handovers:
        print(
            f"\nhandover after SIGKILL, {len(handovers)} of {args.rounds} rounds"
            f" (lease {args.lease_duration:g}s, renew deadline {args.renew_deadline:g}s,"
            f" retry {args.retry_period:g}s): median {statistics.median(handovers):.1f}s,"
            f" min {min(handovers):.1f}s, max {max(handovers):.1f}s"
        )


if __name__ == "__main__":
    main()
