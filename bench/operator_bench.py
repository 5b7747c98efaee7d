"""Operator and simulator at scale, on the local control plane.

For each N (default 100 and 1000) it creates N simulated 2x A10 container nodes, then:

* floor: the time the same API server takes for N bare node label patches from one client
  (same concurrency as the operator uses);
* operator: from ClusterPolicy creation to every node labelled per the planner and every
  DaemonSet created, and to `status.state=ready` (every operand pod Ready on every node:
  bounded by the DaemonSet controller and kwok, not by the operator); its write requests,
  counted from the API server's audit log;
* simulator: from the operator's labels to every node advertising `nvidia.com/gpu: 2`, and
  the simulator's writes per node;
* quiet: write requests by the operator over a quiet period once converged.

Usage: python bench/operator_bench.py [--nodes 100 1000] [--quiet-seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpuop.controlplane import LocalCluster
from gpuop.controlplane.audit import audit_entries, write_requests
from gpuop.kube import ClusterPolicy, async_client, ops, sync_client
from gpuop.lab import stack
from gpuop.naming import is_gpu_resource
from gpuop.sim.hardware import NodeSpec, node_manifest

OPERATOR_USER = "system:serviceaccount:gpu-operator:gpuop-operator"
SIMULATOR_USER = "system:serviceaccount:gpu-operator:gpuop-simulator"


def audit_writes(path: Path, start: int, user: str) -> int:
    return len(write_requests(path, start, user))


def _stamp(value: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def audit_timeline(path: Path, start: int, names: set[str]) -> dict[str, float | None]:
    """Seconds from the ClusterPolicy's creation to the operator's last node label patch and
    its last DaemonSet write, read from the API server's own audit timestamps."""
    created = last_label = last_daemonset = None
    patched: set[str] = set()
    for entry in audit_entries(path, start):
        if entry.get("stage") != "ResponseComplete":
            continue
        ref = entry.get("objectRef") or {}
        user = (entry.get("user") or {}).get("username")
        stamp = _stamp(entry["stageTimestamp"])
        if ref.get("resource") == "clusterpolicies" and entry.get("verb") == "create":
            created = created or stamp
        elif user == OPERATOR_USER and entry.get("verb") == "patch":
            if (
                ref.get("resource") == "nodes"
                and not ref.get("subresource")
                and ref.get("name") in names
            ):
                if ref["name"] not in patched:
                    patched.add(ref["name"])
                    if len(patched) == len(names):
                        last_label = stamp
            elif ref.get("resource") == "daemonsets":
                last_daemonset = stamp
    if created is None:
        return {"labelled": None, "daemonsets": None}
    return {
        "labelled": None if last_label is None else round(last_label - created, 2),
        "daemonsets": None if last_daemonset is None else round(last_daemonset - created, 2),
    }


def floor_from_audit(path: Path, start: int) -> float | None:
    first = last = None
    for entry in audit_entries(path, start):
        ref = entry.get("objectRef") or {}
        if (
            entry.get("stage") == "ResponseComplete"
            and entry.get("verb") == "patch"
            and ref.get("resource") == "nodes"
        ):
            stamp = _stamp(entry["stageTimestamp"])
            first = first if first is not None else _stamp(entry["requestReceivedTimestamp"])
            last = stamp
    return None if first is None or last is None else round(last - first, 2)


async def floor_patches(kubeconfig: str, names: list[str], concurrency: int = 32) -> float:
    client = async_client(kubeconfig)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(name: str) -> None:
        async with semaphore:
            await ops.patch_node_labels(client, name, {"bench.gpuop.io/floor": str(time.time_ns())})

    started = time.monotonic()
    await asyncio.gather(*(one(n) for n in names))
    elapsed = time.monotonic() - started
    await client.close()
    return elapsed


def create_nodes(kubeconfig: str, names: list[str]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    client = sync_client(kubeconfig)

    def make(name: str) -> None:
        if ops.get_node(client, name) is None:
            ops.create_node(client, node_manifest(NodeSpec(name, "A10", 2)))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(make, names))


def delete_nodes(kubeconfig: str, names: list[str]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    client = sync_client(kubeconfig)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: ops.delete_node(client, n), names))


def snapshot(kubeconfig: str, names: set[str]) -> tuple[int, int]:
    """(nodes with the container deploy labels, nodes advertising nvidia.com/gpu: 2)."""
    client = sync_client(kubeconfig)
    labelled = advertising = 0
    for node in ops.list_nodes(client, {"bench.gpuop.io/node": "true"}):
        if node["metadata"]["name"] not in names:
            continue
        labels = node["metadata"].get("labels") or {}
        if labels.get("nvidia.com/gpu.deploy.device-plugin") == "true":
            labelled += 1
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        gpus = {k: v for k, v in allocatable.items() if is_gpu_resource(k)}
        if gpus == {"nvidia.com/gpu": "2"}:
            advertising += 1
    return labelled, advertising


def run_one(cluster: LocalCluster, count: int, quiet_seconds: float, work: Path) -> dict[str, Any]:
    kubeconfig = str(cluster.kubeconfig_path)
    audit = cluster.audit_log_path
    names = [f"bench-{count}-{i:05d}" for i in range(count)]
    print(f"[{count}] creating {count} simulated nodes", file=sys.stderr)
    client = sync_client(kubeconfig)
    from gpuop.sim.hardware import NodeSpec as Spec

    def make(name: str) -> None:
        manifest = node_manifest(Spec(name, "A10", 2, {"bench.gpuop.io/node": "true"}))
        if ops.get_node(client, name) is None:
            ops.create_node(client, manifest)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(make, names))

    floor_offset = audit.stat().st_size
    floor = asyncio.run(floor_patches(kubeconfig, names))
    floor_server = floor_from_audit(audit, floor_offset)
    print(f"[{count}] floor: {count} node patches in {floor:.2f}s", file=sys.stderr)

    operator_kubeconfig = stack.install_operator_access(kubeconfig, work)
    operator = stack.start_operator(operator_kubeconfig, work / f"logs-{count}")
    simulator_kubeconfig = stack.install_simulator_access(kubeconfig, work)
    simulator = stack.start_simulator(
        str(simulator_kubeconfig), work / f"logs-{count}", work / f"hosts-{count}"
    )
    try:
        deadline = time.monotonic() + 120
        while "ready: watching" not in operator.log_path.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise SystemExit("the operator did not become ready:\n" + operator.log_tail())
            time.sleep(0.2)
        start_offset = audit.stat().st_size
        started = time.monotonic()
        policy = stack.lab_policy(sandbox=False)
        stack.apply_cluster_policy(kubeconfig, policy)
        wanted = set(names)
        labelled_at = advertised_at = ready_at = None
        deadline = started + max(300, count * 0.6)
        while time.monotonic() < deadline:
            labelled, advertising = snapshot(kubeconfig, wanted)
            now = time.monotonic() - started
            if labelled_at is None and labelled == count:
                labelled_at = now
            if advertised_at is None and advertising == count:
                advertised_at = now
            state = (
                (stack.get_cluster_policy(kubeconfig, "cluster-policy") or {}).get("status") or {}
            ).get("state")
            if ready_at is None and state == "ready" and labelled_at is not None:
                ready_at = now
            if labelled_at is not None and advertised_at is not None and ready_at is not None:
                break
            time.sleep(2.0)
        operator_writes = audit_writes(audit, start_offset, OPERATOR_USER)
        timeline = audit_timeline(audit, start_offset, set(names))
        simulator_writes = audit_writes(audit, start_offset, SIMULATOR_USER)
        quiet_offset = audit.stat().st_size
        time.sleep(quiet_seconds)
        quiet_writes = audit_writes(audit, quiet_offset, OPERATOR_USER)
    finally:
        operator.stop()
        simulator.stop()
    stack.delete_cluster_policy(kubeconfig, "cluster-policy")
    result = {
        "nodes": count,
        "floor_seconds": round(floor, 2),
        "floor_seconds_server": floor_server,
        "labelled_seconds_server": timeline["labelled"],
        "daemonsets_seconds_server": timeline["daemonsets"],
        "ratio_server": None
        if not floor_server or timeline["labelled"] is None
        else round(timeline["labelled"] / floor_server, 2),
        "labelled_seconds": None if labelled_at is None else round(labelled_at, 2),
        "ratio_labelled_to_floor": None if labelled_at is None else round(labelled_at / floor, 2),
        "advertising_seconds": None if advertised_at is None else round(advertised_at, 2),
        "ready_seconds": None if ready_at is None else round(ready_at, 2),
        "operator_writes": operator_writes,
        "operator_writes_per_node": round(operator_writes / count, 3),
        "simulator_writes": simulator_writes,
        "simulator_writes_per_node": round(simulator_writes / count, 3),
        "quiet_seconds": quiet_seconds,
        "operator_writes_while_quiet": quiet_writes,
    }
    delete_nodes(kubeconfig, names)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--quiet-seconds", type=float, default=60.0)
    parser.add_argument("--cluster-name", default="bench")
    parser.add_argument(
        "--keep-logs", type=Path, default=None, help="keep operator and simulator logs here"
    )
    args = parser.parse_args()
    cluster = LocalCluster(args.cluster_name)
    cluster.up(progress=lambda line: print(line, file=sys.stderr))
    stack.install_crd(str(cluster.kubeconfig_path))
    results = []
    with tempfile.TemporaryDirectory(prefix="gpuop-bench-") as tmp:
        work = args.keep_logs or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for count in args.nodes:
            results.append(run_one(cluster, count, args.quiet_seconds, work))
            print(json.dumps(results[-1]), flush=True)
    print(
        "\nnodes  floor(s)  labelled(s)  ratio  advertising(s)  ready(s)  op writes/node  sim writes/node  quiet writes"
    )
    for r in results:
        print(
            f"{r['nodes']:>5}  {r['floor_seconds']:>8}  {r['labelled_seconds']!s:>11}  {r['ratio_labelled_to_floor']!s:>5}"
            f"  {r['advertising_seconds']!s:>14}  {r['ready_seconds']!s:>8}  {r['operator_writes_per_node']:>14}"
            f"  {r['simulator_writes_per_node']:>15}"
            f"  {r['operator_writes_while_quiet']:>12}"
        )
    print("\nfrom the API server's audit timestamps (no polling granularity):")
    for r in results:
        print(
            f"{r['nodes']:>5} nodes: floor {r['floor_seconds_server']}s, all nodes labelled"
            f" {r['labelled_seconds_server']}s after the ClusterPolicy was created (ratio"
            f" {r['ratio_server']}), all DaemonSets written at {r['daemonsets_seconds_server']}s"
        )
    _ = ClusterPolicy


if __name__ == "__main__":
    main()
