"""`gpuop collect` over a live fleet: N GPU nodes and P pods, on the local control plane.

Half the pods ask for `nvidia.com/gpu` (what `collect` keeps: it reads the pods that use
NVIDIA resources), the other half ask for none (what it must list and drop as it reads).
Pods are bound to their nodes directly (`spec.nodeName`), so neither the scheduler nor a
DaemonSet is involved, and kwok starts them. `collect` runs in its own process once every
pod is Running (or the wait runs out: the table says how many were), and the benchmark
prints its time, peak resident memory and the bundle's size.

Usage: python bench/collect_bench.py [--nodes 10000] [--pods 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lightkube.resources.core_v1 import Pod
from operator_bench import timed_collect

from gpuop.controlplane import LocalCluster
from gpuop.kube import async_client, ops, sync_client
from gpuop.sim.hardware import NodeSpec, node_manifest

NAMESPACE = "default"
CREATE_CONCURRENCY = 32


def pod(index: int, node: str) -> dict[str, Any]:
    gpu = index % 2 == 0
    resources = {"limits": {"nvidia.com/gpu": "1"}} if gpu else {"requests": {"cpu": "10m"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{'train' if gpu else 'web'}-{index:06d}", "namespace": NAMESPACE},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "main", "image": "registry.example/app:1", "resources": resources}
            ],
        },
    }


async def create_pods(kubeconfig: str, pods: list[dict[str, Any]]) -> None:
    client = async_client(kubeconfig)
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for item in pods:
        queue.put_nowait(item)

    async def worker() -> None:
        while not queue.empty():
            await ops.apply_object(client, queue.get_nowait())

    await asyncio.gather(*(worker() for _ in range(CREATE_CONCURRENCY)))


def running_pods(kubeconfig: str) -> int:
    client = sync_client(kubeconfig)
    return sum(
        1
        for item in client.list(Pod, namespace=NAMESPACE, chunk_size=500)
        if item.status is not None and item.status.phase == "Running"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--running-timeout", type=float, default=900)
    parser.add_argument("--cluster-name", default="collect-bench")
    args = parser.parse_args()

    def say(line: str) -> None:
        print(f"[collect] {line}", file=sys.stderr, flush=True)

    cluster = LocalCluster(args.cluster_name, node_lease_seconds=240)
    cluster.down()
    cluster.up(progress=say)
    try:
        kubeconfig = str(cluster.kubeconfig_path)
        client = sync_client(kubeconfig)
        names = [f"gpu-{i:05d}" for i in range(args.nodes)]
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda n: ops.create_object_sync(client, node_manifest(NodeSpec(n, "A10", 2))),
                    names,
                )
            )
        say(f"{args.nodes} nodes in {time.monotonic() - started:.1f}s")
        started = time.monotonic()
        asyncio.run(
            create_pods(kubeconfig, [pod(i, names[i % len(names)]) for i in range(args.pods)])
        )
        say(f"{args.pods} pods in {time.monotonic() - started:.1f}s")
        deadline = time.monotonic() + args.running_timeout
        running = running_pods(kubeconfig)
        while running < args.pods and time.monotonic() < deadline:
            time.sleep(15)
            running = running_pods(kubeconfig)
            say(f"{running}/{args.pods} pods Running")
        with tempfile.TemporaryDirectory(prefix="gpuop-collect-bench-") as work:
            result = timed_collect(kubeconfig, Path(work) / "bundle")
        print("nodes  pods   running  collect s  peak RSS MiB  bundle MB  exit")
        print(
            f"{args.nodes:<6} {args.pods:<6} {running:<8} {result['seconds']:<10}"
            f" {result['peak_rss_mib']:<13} {result['bundle_mb']:<10} {result['exit']}"
        )
    finally:
        cluster.down()


if __name__ == "__main__":
    main()
