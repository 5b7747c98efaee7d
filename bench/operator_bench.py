"""Operator and simulator at fleet size, on the local control plane.

Each size N (default 1000, 5000 and 10000) runs on a fresh control plane with N simulated
2x A10 container nodes (kwok), and measures:

* floor: the time the same API server takes for N bare node label patches from one client
  (the operator's concurrency), on the idle cluster and again with the operator and the
  simulator running and watching but no ClusterPolicy yet;
* operator: from ClusterPolicy creation (sandbox workloads on, every node a container node)
  to every node labelled and every DaemonSet written; its write requests, ClusterPolicy
  status writes among them; its resident memory (idle with N nodes, peak over the run);
* ready and advertising: every operand pod Ready (bounded by the DaemonSet controller, the
  scheduler and kwok starting six pods a node) and every node advertising
  `nvidia.com/gpu: 2` (the simulator's writes per node);
* one-node change: a node's `nvidia.com/gpu.workload.config` flipped to `vm-passthrough`,
  and the time from that patch to the operator's label patch on that node, both read from
  the API server's audit log; the operator's other writes meanwhile;
* quiet: the operator's write requests over a quiet period once converged;
* full heap collections: how many the operator made (every `--full-collection` seconds,
  20 here against its default 300, so that several fall within a run) and the longest, as
  its log times them;
* what the machine spent: CPU seconds of each component (API server, etcd, controller
  manager, scheduler, kwok, the operator, the simulator) while the fleet converged.

Every time is taken from the API server's audit timestamps. kwok renews each node's Lease
every quarter of `--node-lease-seconds` (240 s here, not the kubelet's 40 s: at 10,000 nodes
that would be a thousand Lease writes a second, more than this machine's API server serves
beside the benchmark).

Usage: python bench/operator_bench.py [--nodes 1000 5000 10000] [--quiet-seconds 60 60 600]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpuop.api.labels import WORKLOAD_LABEL
from gpuop.controlplane import LocalCluster
from gpuop.controlplane.audit import WRITE_VERBS, AuditMark, audit_entries, audit_mark
from gpuop.kube import async_client, ops, sync_client
from gpuop.lab import stack
from gpuop.naming import is_gpu_resource
from gpuop.sim.hardware import NodeSpec, node_manifest
from gpuop.sim.registry import register_hardware

OPERATOR_USER = "system:serviceaccount:gpu-operator:gpuop-operator"
SIMULATOR_USER = "system:serviceaccount:gpu-operator:gpuop-simulator"
BENCH_LABEL = "bench.gpuop.io/node"
WRITE_CONCURRENCY = 32
FLIPS = 5
# What the operator logs at each full collection of its heap (`gpuop.kube.heap`).
FULL_COLLECTION_LOG = re.compile(r"heap: full collection, \d+ unreachable objects, in ([0-9.]+) s")


@dataclass(frozen=True)
class Write:
    """One completed write request, as the audit log has it."""

    stamp: float
    received: float
    user: str
    verb: str
    resource: str
    subresource: str
    name: str


def _stamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def writes_since(path: Path, start: AuditMark) -> list[Write]:
    """Every completed write request from `start` on (one pass over the log)."""
    found = []
    for entry in audit_entries(path, start):
        if entry.get("stage") != "ResponseComplete" or entry.get("verb") not in WRITE_VERBS:
            continue
        ref = entry.get("objectRef") or {}
        found.append(
            Write(
                stamp=_stamp(entry["stageTimestamp"]),
                received=_stamp(entry["requestReceivedTimestamp"]),
                user=str((entry.get("user") or {}).get("username")),
                verb=str(entry["verb"]),
                resource=str(ref.get("resource") or ""),
                subresource=str(ref.get("subresource") or ""),
                name=str(ref.get("name") or ""),
            )
        )
    return found


def by(writes: Iterable[Write], user: str) -> list[Write]:
    """`user`'s writes, less leader election's Lease renewals."""
    return [w for w in writes if w.user == user and w.resource != "leases"]


def node_label_patches(writes: Iterable[Write]) -> list[Write]:
    return [w for w in writes if w.resource == "nodes" and not w.subresource and w.verb == "patch"]


def floor_seconds(writes: list[Write]) -> float | None:
    """First request received to last response, over the bare label patches."""
    patches = node_label_patches(writes)
    if not patches:
        return None
    return round(max(w.stamp for w in patches) - min(w.received for w in patches), 2)


async def floor_patches(kubeconfig: str, names: list[str]) -> None:
    client = async_client(kubeconfig)
    semaphore = asyncio.Semaphore(WRITE_CONCURRENCY)

    async def one(name: str) -> None:
        async with semaphore:
            await ops.patch_node_labels(client, name, {"bench.gpuop.io/floor": str(time.time_ns())})

    await asyncio.gather(*(one(n) for n in names))
    await client.close()


def measure_floor(cluster: LocalCluster, names: list[str]) -> float | None:
    mark = audit_mark(cluster.audit_log_path)
    asyncio.run(floor_patches(str(cluster.kubeconfig_path), names))
    return floor_seconds(writes_since(cluster.audit_log_path, mark))


def create_nodes(kubeconfig: str, names: list[str]) -> None:
    client = sync_client(kubeconfig)
    specs = [NodeSpec(name, "A10", 2, {BENCH_LABEL: "true"}) for name in names]
    register_hardware(client, specs, stack.NAMESPACE)

    def make(spec: NodeSpec) -> None:
        ops.create_object_sync(client, node_manifest(spec))

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(make, specs))


def advertising_nodes(kubeconfig: str, names: set[str]) -> int:
    """Nodes advertising exactly `nvidia.com/gpu: 2`."""
    advertising = 0
    for node in ops.list_nodes_sync(sync_client(kubeconfig), {BENCH_LABEL: "true"}):
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        gpus = {k: v for k, v in allocatable.items() if is_gpu_resource(k)}
        advertising += node["metadata"]["name"] in names and gpus == {"nvidia.com/gpu": "2"}
    return advertising


def operand_pods(kubeconfig: str) -> tuple[int, int]:
    """(operand pods, those Ready) in the operator's namespace, listed in pages."""
    from lightkube.resources.core_v1 import Pod

    total = ready = 0
    client = sync_client(kubeconfig, timeout=300)
    for pod in client.list(Pod, namespace=stack.NAMESPACE, chunk_size=500):
        total += 1
        conditions = (pod.status.conditions if pod.status else None) or []
        ready += any(c.type == "Ready" and c.status == "True" for c in conditions)
    return total, ready


def wait_labelled(kubeconfig: str, count: int, started: float, timeout: float) -> None:
    """Until every bench node carries the operator's device-plugin deploy label (polled
    every 5 s), then 10 s more for the DaemonSets and the status that follow."""
    selector = {BENCH_LABEL: "true", "nvidia.com/gpu.deploy.device-plugin": "true"}
    while time.monotonic() < started + timeout:
        time.sleep(5)
        if len(ops.list_nodes_sync(sync_client(kubeconfig, timeout=300), selector)) == count:
            break
    time.sleep(10)


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak) of `pid`, in KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_by_process(cluster: LocalCluster, extra: dict[str, int]) -> dict[str, float]:
    pids = {c.name: c.pid for c in cluster.status().components if c.pid is not None}
    pids.update(extra)
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def wait_converged(
    kubeconfig: str, names: set[str], started: float, timeout: float
) -> tuple[float | None, float | None]:
    """Wall-clock times at which the ClusterPolicy was seen ready and every node seen
    advertising (None: not within `timeout`). Polls lightly (a GET every 2 s, a node list
    every 10 s) so as not to load the API server it measures."""
    ready_seen = advertised_seen = None
    next_node_poll = started
    while time.monotonic() < started + timeout:
        policy = stack.get_cluster_policy(kubeconfig, "cluster-policy") or {}
        if ready_seen is None and (policy.get("status") or {}).get("state") == "ready":
            ready_seen = time.time()
        if advertised_seen is None and time.monotonic() >= next_node_poll:
            next_node_poll = time.monotonic() + 10
            if advertising_nodes(kubeconfig, names) == len(names):
                advertised_seen = time.time()
        if advertised_seen is not None and ready_seen is not None:
            break
        time.sleep(2.0)
    return ready_seen, advertised_seen


def last_before(writes: list[Write], seen: float | None, created: float) -> float | None:
    """Seconds from `created` to the last of `writes` before a poll saw their effect."""
    before = [w.stamp for w in writes if seen is not None and w.stamp <= seen]
    return round(max(before) - created, 2) if before else None


def flip_one_node(cluster: LocalCluster, name: str, timeout: float = 30) -> dict[str, Any]:
    """Flip `name` to vm-passthrough; the operator's answer and what else it wrote."""
    path = cluster.audit_log_path
    mark = audit_mark(path)
    client = sync_client(str(cluster.kubeconfig_path))
    ops.patch_node_sync(client, name, labels={WORKLOAD_LABEL: "vm-passthrough"})
    deadline = time.monotonic() + timeout
    answered = None
    while answered is None and time.monotonic() < deadline:
        time.sleep(0.5)
        writes = writes_since(path, mark)
        flip = next((w for w in node_label_patches(writes) if w.name == name), None)
        answer = [w for w in node_label_patches(by(writes, OPERATOR_USER)) if w.name == name]
        if flip is not None and answer:
            answered = round(answer[0].stamp - flip.stamp, 3)
    # What the operator wrote in the five seconds after: the node, its status, nothing else.
    time.sleep(5)
    writes = by(writes_since(path, mark), OPERATOR_USER)
    return {
        "latency_seconds": answered,
        "node_patches": len(node_label_patches(writes)),
        "status_writes": sum(w.resource == "clusterpolicies" for w in writes),
        "other_writes": sum(w.resource not in ("nodes", "clusterpolicies") for w in writes),
    }


def timed_collect(kubeconfig: str, out: Path) -> dict[str, Any]:
    """`gpuop collect` over the converged fleet, in its own process: time and peak memory."""
    started = time.monotonic()
    with (out.parent / f"{out.name}.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gpuop", "collect", "-d", str(out), "--kubeconfig", kubeconfig],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    size = sum(f.stat().st_size for f in out.glob("*") if f.is_file())
    return {
        "seconds": round(time.monotonic() - started, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
        "bundle_mb": round(size / 1e6, 1),
        "exit": process.returncode,
    }


def run_one(
    cluster: LocalCluster,
    count: int,
    quiet_seconds: float,
    ready_timeout: float,
    work: Path,
    operand_pods_made: bool,
    full_collection: float,
) -> dict[str, Any]:
    def say(line: str) -> None:
        print(f"[{count}] {line}", file=sys.stderr, flush=True)

    cluster.down()
    cluster.up(progress=say)
    kubeconfig = str(cluster.kubeconfig_path)
    audit = cluster.audit_log_path
    stack.install_crd(kubeconfig)
    names = [f"bench-{i:05d}" for i in range(count)]
    say(f"creating {count} simulated nodes")
    create_nodes(kubeconfig, names)
    floor = measure_floor(cluster, names)
    say(f"floor: {count} node label patches in {floor}s")

    logs = work / f"logs-{count}"
    operator = stack.start_operator(
        stack.install_operator_access(kubeconfig, work),
        logs,
        ["--full-collection", f"{full_collection:g}"],
    )
    simulator = stack.start_simulator(
        str(stack.install_simulator_access(kubeconfig, work)), logs, work / f"hosts-{count}"
    )
    try:
        deadline = time.monotonic() + 300
        while "ready: watching" not in operator.log_path.read_text(errors="replace"):
            if time.monotonic() > deadline or not operator.alive():
                raise SystemExit("the operator did not become ready:\n" + operator.log_tail())
            time.sleep(0.2)
        # The floor again with gpuop's two controllers watching every node (no ClusterPolicy
        # yet, so neither writes): the API server also streams each change to them now.
        floor_watched = measure_floor(cluster, names)
        say(f"floor with gpuop watching: {floor_watched}s")
        time.sleep(5)
        idle_memory = memory_kib(operator.popen.pid)
        processes = {"operator": operator.popen.pid, "simulator": simulator.popen.pid}
        cpu_before = cpu_by_process(cluster, processes)
        start = audit_mark(audit)
        started = time.monotonic()
        stack.apply_cluster_policy(kubeconfig, stack.lab_policy(sandbox=True))
        if operand_pods_made:
            say("ClusterPolicy created; waiting for every operand pod Ready")
            ready_seen, advertised_seen = wait_converged(
                kubeconfig, set(names), started, ready_timeout
            )
        else:
            say("ClusterPolicy created; waiting for every node labelled (no operand pods)")
            wait_labelled(kubeconfig, count, started, ready_timeout)
            ready_seen = advertised_seen = None
        converge_wall = time.monotonic() - started
        cpu_after = cpu_by_process(cluster, processes)
        writes = writes_since(audit, start)
        pods, pods_ready = operand_pods(kubeconfig)
        say(f"ready: {ready_seen is not None}; operand pods {pods_ready}/{pods} Ready")

        flips = [
            flip_one_node(cluster, names[(i * 2 + 1) * count // (2 * FLIPS)]) for i in range(FLIPS)
        ]
        say(f"one-node flips: {[f['latency_seconds'] for f in flips]}")
        quiet = audit_mark(audit)
        time.sleep(quiet_seconds)
        quiet_writes = len(by(writes_since(audit, quiet), OPERATOR_USER))
        peak_memory = memory_kib(operator.popen.pid)
        collect = timed_collect(kubeconfig, work / f"collect-{count}")
        say(f"collect: {collect}")
    finally:
        operator.stop()
        simulator.stop()
    collections = [
        float(match.group(1))
        for match in FULL_COLLECTION_LOG.finditer(operator.log_path.read_text(errors="replace"))
    ]

    created = next(
        w.stamp for w in writes if w.resource == "clusterpolicies" and w.verb == "create"
    )
    operator_writes = by(writes, OPERATOR_USER)
    wanted = set(names)
    first_patch: dict[str, float] = {}
    for w in node_label_patches(operator_writes):
        if w.name in wanted:
            first_patch.setdefault(w.name, w.stamp)
    labelled = round(max(first_patch.values()) - created, 2) if len(first_patch) == count else None
    daemonsets = [w.stamp for w in operator_writes if w.resource == "daemonsets"]
    latencies = sorted(f["latency_seconds"] for f in flips if f["latency_seconds"] is not None)
    cpu = {name: round(cpu_after[name] - cpu_before.get(name, 0.0), 1) for name in cpu_after}
    return {
        "nodes": count,
        "floor_seconds": floor,
        "floor_watched_seconds": floor_watched,
        "labelled_seconds": labelled,
        "ratio": None if not floor or labelled is None else round(labelled / floor, 2),
        "ratio_watched": None
        if not floor_watched or labelled is None
        else round(labelled / floor_watched, 2),
        "daemonsets_seconds": round(max(daemonsets) - created, 2) if daemonsets else None,
        "ready_seconds": last_before(
            [w for w in operator_writes if w.resource == "clusterpolicies"], ready_seen, created
        ),
        "advertising_seconds": last_before(
            [w for w in by(writes, SIMULATOR_USER) if w.subresource == "status"],
            advertised_seen,
            created,
        ),
        "operand_pods": pods,
        "operand_pods_ready": pods_ready,
        "operator_writes": len(operator_writes),
        "operator_writes_per_node": round(len(operator_writes) / count, 3),
        "status_writes": sum(w.resource == "clusterpolicies" for w in operator_writes),
        "simulator_writes_per_node": round(len(by(writes, SIMULATOR_USER)) / count, 3),
        "operator_rss_idle_mib": round(idle_memory["VmRSS"] / 1024, 1),
        "operator_rss_peak_mib": round(peak_memory["VmHWM"] / 1024, 1),
        "flip_latency_median": latencies[len(latencies) // 2] if latencies else None,
        "flip_latency_max": latencies[-1] if latencies else None,
        "flip_answered": len(latencies),
        "flip_writes": flips,
        "quiet_seconds": quiet_seconds,
        "operator_writes_while_quiet": quiet_writes,
        "converge_wall_seconds": round(converge_wall, 1),
        "cpu_seconds": cpu,
        "collect": collect,
        "full_collection_every": full_collection,
        "full_collections": len(collections),
        "full_collection_max_ms": round(max(collections) * 1000) if collections else None,
    }


def print_table(results: list[dict[str, Any]]) -> None:
    print("\nSeconds from the ClusterPolicy's creation, from the API server's audit timestamps:")
    print(
        "nodes  floor  watched  labelled  ratio  ratio(w)  daemonsets  ready  advertising"
        "  op writes/node  status writes  sim writes/node"
    )
    for r in results:
        print(
            f"{r['nodes']:>5}  {r['floor_seconds']!s:>5}  {r['floor_watched_seconds']!s:>7}"
            f"  {r['labelled_seconds']!s:>8}  {r['ratio']!s:>5}  {r['ratio_watched']!s:>8}"
            f"  {r['daemonsets_seconds']!s:>10}  {r['ready_seconds']!s:>5}"
            f"  {r['advertising_seconds']!s:>11}  {r['operator_writes_per_node']:>14}"
            f"  {r['status_writes']:>13}  {r['simulator_writes_per_node']:>15}"
        )
    print(
        "\nnodes  rss idle MiB  rss peak MiB  flip latency s (median, max, answered)"
        "  writes per flip (node, status, other)  quiet writes (s)"
    )
    for r in results:
        per_flip = {
            key: max(f[key] for f in r["flip_writes"])
            for key in ("node_patches", "status_writes", "other_writes")
        }
        print(
            f"{r['nodes']:>5}  {r['operator_rss_idle_mib']:>12}  {r['operator_rss_peak_mib']:>12}"
            f"  {r['flip_latency_median']!s:>6}, {r['flip_latency_max']!s}, "
            f"{r['flip_answered']}/{FLIPS}"
            f"{'':>24}{per_flip['node_patches']}, {per_flip['status_writes']},"
            f" {per_flip['other_writes']}"
            f"{'':>12}{r['operator_writes_while_quiet']} ({r['quiet_seconds']:g})"
        )
    if len(results) > 1:
        first, last = results[0], results[-1]
        growth = (last["operator_rss_peak_mib"] - first["operator_rss_peak_mib"]) / (
            (last["nodes"] - first["nodes"]) / 1000
        )
        print(
            f"\noperator peak memory grows {growth:.1f} MiB per 1,000 nodes"
            f" ({first['nodes']} to {last['nodes']} nodes)"
        )
    print("\nnodes  full heap collections (every s)  longest ms")
    for r in results:
        print(
            f"{r['nodes']:>5}  {r['full_collections']:>13} ({r['full_collection_every']:g})"
            f"  {r['full_collection_max_ms']!s:>19}"
        )
    print("\nnodes  collect s  collect peak RSS MiB  bundle MB")
    for r in results:
        c = r["collect"]
        print(f"{r['nodes']:>5}  {c['seconds']:>9}  {c['peak_rss_mib']:>20}  {c['bundle_mb']:>9}")
    print("\nCPU seconds while the fleet converged (two cores: 2 s of CPU per second of wall):")
    for r in results:
        cpu = sorted(r["cpu_seconds"].items(), key=lambda item: -item[1])
        share = sum(r["cpu_seconds"].values()) / (2 * r["converge_wall_seconds"])
        print(
            f"{r['nodes']:>5}  over {r['converge_wall_seconds']}s ({share:.0%} of the machine):  "
            + ", ".join(f"{name} {seconds}" for name, seconds in cpu)
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument(
        "--quiet-seconds",
        type=float,
        nargs="+",
        default=[60.0],
        help="one per size, or one for all; the last repeats (e.g. 60 60 600)",
    )
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=None,
        help="seconds to wait for every operand pod Ready (default: 300 or 0.3 s a node)",
    )
    parser.add_argument("--node-lease-seconds", type=int, default=240)
    parser.add_argument(
        "--without-operand-pods",
        action="store_true",
        help="run the controller manager without its DaemonSet controller: the operator"
        " labels and writes DaemonSets, but no operand pod is made (the operator alone,"
        " without the six pods a node that this machine's control plane starts slowly)",
    )
    parser.add_argument(
        "--full-collection",
        type=float,
        default=20.0,
        help="seconds between the operator's full heap collections (its default is 300; a"
        " shorter period makes several fall within a run, each logged with its time)",
    )
    parser.add_argument("--cluster-name", default="bench")
    parser.add_argument("--keep-logs", type=Path, default=None, help="keep gpuop's logs here")
    args = parser.parse_args()
    cluster = LocalCluster(
        args.cluster_name,
        node_lease_seconds=args.node_lease_seconds,
        disabled_controllers=("daemonset-controller",) if args.without_operand_pods else (),
    )
    quiet = [*args.quiet_seconds, *[args.quiet_seconds[-1]] * len(args.nodes)]
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="gpuop-bench-") as tmp:
            work = args.keep_logs or Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            for count, quiet_seconds in zip(args.nodes, quiet, strict=False):
                timeout = args.ready_timeout or max(300.0, 0.3 * count)
                results.append(
                    run_one(
                        cluster,
                        count,
                        quiet_seconds,
                        timeout,
                        work,
                        not args.without_operand_pods,
                        args.full_collection,
                    )
                )
                print(json.dumps(results[-1]), flush=True)
    finally:
        cluster.down()
    print_table(results)
    print(
        "\nfloor: N bare node label patches from one client (concurrency 32); watched: the"
        " same with the operator and the simulator running (and watching every node);"
        " labelled: the operator's last first-time node patch; ratio, ratio(w): labelled /"
        " floor, labelled / watched; ready: the status write that said ready (bounded by the"
        " DaemonSet controller, the scheduler and kwok starting every operand pod);"
        " advertising: the simulator's last node status patch before every node advertised"
        " nvidia.com/gpu: 2; flip: a node's workload label set to vm-passthrough, to the"
        " operator's label patch on it."
    )


if __name__ == "__main__":
    main()
