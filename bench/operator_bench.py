"""Operator and simulator at scale, on the local control plane.

For each N (default 100 and 1000) it creates N simulated 2x A10 container nodes, then:

* floor: the time the same API server takes for N bare node label patches from one client
  (same concurrency as the operator uses), once on the idle cluster and once more with the
  operator and the simulator running but no ClusterPolicy yet (so the API server also
  streams every change to them, as it does while the operator labels);
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
from gpuop.controlplane.audit import AuditMark, audit_entries, audit_mark, write_requests
from gpuop.kube import ClusterPolicy, async_client, ops, sync_client
from gpuop.lab import stack
from gpuop.naming import is_gpu_resource
from gpuop.sim.hardware import NodeSpec, node_manifest
from gpuop.sim.registry import register_hardware

OPERATOR_USER = "system:serviceaccount:gpu-operator:gpuop-operator"
SIMULATOR_USER = "system:serviceaccount:gpu-operator:gpuop-simulator"


def audit_writes(path: Path, start: AuditMark, user: str) -> int:
    return len(write_requests(path, start, user, leases=False))


def _stamp(value: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def audit_timeline(path: Path, start: AuditMark, names: set[str]) -> dict[str, float | None]:
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


def last_write_before(
    path: Path, start: AuditMark, user: str, resource: str, subresource: str, seen: float | None
) -> float | None:
    """Seconds from the ClusterPolicy's creation to `user`'s last write of `resource`'s
    `subresource` before the moment a poll saw the result (None if never seen)."""
    if seen is None:
        return None
    created = last = None
    for entry in audit_entries(path, start):
        if entry.get("stage") != "ResponseComplete":
            continue
        ref = entry.get("objectRef") or {}
        stamp = _stamp(entry["stageTimestamp"])
        if ref.get("resource") == "clusterpolicies" and entry.get("verb") == "create":
            created = created or stamp
        elif (
            (entry.get("user") or {}).get("username") == user
            and entry.get("verb") == "patch"
            and ref.get("resource") == resource
            and ref.get("subresource") == subresource
            and stamp <= seen
        ):
            last = stamp
    return None if created is None or last is None else round(last - created, 2)


def floor_from_audit(path: Path, start: AuditMark) -> float | None:
    first = last = None
    for entry in audit_entries(path, start):
        ref = entry.get("objectRef") or {}
        if (
            entry.get("stage") == "ResponseComplete"
            and entry.get("verb") == "patch"
            and ref.get("resource") == "nodes"
            and not ref.get("subresource")
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
    register_hardware(client, [NodeSpec(name, "A10", 2) for name in names], stack.NAMESPACE)

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


def wait_for_operand_pods_gone(kubeconfig: str, timeout: float = 600) -> None:
    """The next size starts on a clean cluster, not beside thousands of pods being deleted."""
    from lightkube.resources.core_v1 import Pod

    client = sync_client(kubeconfig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = sum(1 for _ in client.list(Pod, namespace="gpu-operator"))
        if not left:
            return
        print(f"  waiting for {left} operand pods to go", file=sys.stderr)
        time.sleep(5)


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

    register_hardware(client, [Spec(name, "A10", 2) for name in names], stack.NAMESPACE)

    def make(name: str) -> None:
        manifest = node_manifest(Spec(name, "A10", 2, {"bench.gpuop.io/node": "true"}))
        if ops.get_node(client, name) is None:
            ops.create_node(client, manifest)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(make, names))

    floor_offset = audit_mark(audit)
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
        deadline = time.monotonic() + 300
        while "ready: watching" not in operator.log_path.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise SystemExit("the operator did not become ready:\n" + operator.log_tail())
            time.sleep(0.2)
        # The same floor again with gpuop's two controllers watching every node (no
        # ClusterPolicy yet, so neither writes): the API server now also streams each change
        # to them, as it will while the operator labels.
        watched_offset = audit_mark(audit)
        asyncio.run(floor_patches(kubeconfig, names))
        floor_watched = floor_from_audit(audit, watched_offset)
        print(f"[{count}] floor with gpuop watching: {floor_watched}s", file=sys.stderr)
        time.sleep(5)
        start_offset = audit_mark(audit)
        started = time.monotonic()
        policy = stack.lab_policy(sandbox=False)
        stack.apply_cluster_policy(kubeconfig, policy)
        wanted = set(names)
        advertised_seen = ready_seen = None
        deadline = started + max(300, count * 0.9)
        next_node_poll = started
        # Light polling (one GET every 2 s, one node list every 10 s) so that the measuring
        # does not load the API server it measures; exact times come from the audit log.
        while time.monotonic() < deadline:
            state = (
                (stack.get_cluster_policy(kubeconfig, "cluster-policy") or {}).get("status") or {}
            ).get("state")
            if ready_seen is None and state == "ready":
                ready_seen = time.time()
            if advertised_seen is None and time.monotonic() >= next_node_poll:
                next_node_poll = time.monotonic() + 10
                if snapshot(kubeconfig, wanted)[1] == count:
                    advertised_seen = time.time()
            if advertised_seen is not None and ready_seen is not None:
                break
            time.sleep(2.0)
        operator_writes = audit_writes(audit, start_offset, OPERATOR_USER)
        timeline = audit_timeline(audit, start_offset, set(names))
        simulator_writes = audit_writes(audit, start_offset, SIMULATOR_USER)
        quiet_offset = audit_mark(audit)
        time.sleep(quiet_seconds)
        quiet_writes = audit_writes(audit, quiet_offset, OPERATOR_USER)
    finally:
        operator.stop()
        simulator.stop()
    stack.delete_cluster_policy(kubeconfig, "cluster-policy")
    wait_for_operand_pods_gone(kubeconfig)
    result = {
        "nodes": count,
        "floor_seconds": round(floor, 2),
        "floor_seconds_server": floor_server,
        "labelled_seconds_server": timeline["labelled"],
        "daemonsets_seconds_server": timeline["daemonsets"],
        "ratio_server": None
        if not floor_server or timeline["labelled"] is None
        else round(timeline["labelled"] / floor_server, 2),
        "floor_watched_seconds_server": floor_watched,
        "ratio_watched": None
        if not floor_watched or timeline["labelled"] is None
        else round(timeline["labelled"] / floor_watched, 2),
        "advertising_seconds_server": last_write_before(
            audit, start_offset, SIMULATOR_USER, "nodes", "status", advertised_seen
        ),
        "ready_seconds_server": last_write_before(
            audit, start_offset, OPERATOR_USER, "clusterpolicies", "status", ready_seen
        ),
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
        "\nFrom the API server's audit timestamps, in seconds after the ClusterPolicy was created:"
    )
    print(
        "nodes  floor  watched  labelled  ratio  ratio(w)  daemonsets  ready  advertising"
        "  op writes/node  sim writes/node  quiet writes (s)"
    )
    for r in results:
        print(
            f"{r['nodes']:>5}  {r['floor_seconds_server']!s:>5}"
            f"  {r['floor_watched_seconds_server']!s:>7}  {r['labelled_seconds_server']!s:>8}"
            f"  {r['ratio_server']!s:>5}  {r['ratio_watched']!s:>8}"
            f"  {r['daemonsets_seconds_server']!s:>10}"
            f"  {r['ready_seconds_server']!s:>5}  {r['advertising_seconds_server']!s:>11}"
            f"  {r['operator_writes_per_node']:>14}  {r['simulator_writes_per_node']:>15}"
            f"  {r['operator_writes_while_quiet']:>5} ({r['quiet_seconds']:g})"
        )
    print(
        "\nfloor: N bare node label patches from one client (concurrency 32); watched: the"
        " same with the operator and the simulator running (and watching every node);"
        " labelled: the operator's last first-time node patch; ratio, ratio(w): labelled /"
        " floor, labelled / watched; ready: the status"
        " write that said ready (bounded by the DaemonSet controller and kwok starting every"
        " operand pod); advertising: the simulator's last node status patch before every node"
        " advertised nvidia.com/gpu: 2."
    )
    _ = ClusterPolicy


if __name__ == "__main__":
    main()
