"""Benchmark `gpuop explain --all-pending` on a fleet-size dump.

    .venv/bin/python bench/explain_bench.py [--nodes 5000] [--running 20000] [--pending 2000]
                                            [--full] [-o text|json]

The dump is a kubectl-style List of `--nodes` GPU nodes over three zones (eight GPUs each,
one node in twenty cordoned), `--running` training pods bound to them (one GPU each, in
jobs of eight; with `--full`, eight on every node, so that every pending pod waits and
preemption looks at every node) and `--pending` pods: a third plain one-GPU pods, a third spread
over zones by job (`topologySpreadConstraints`, DoNotSchedule), a third inference
replicas with required anti-affinity by host and affinity to their job. `gpuop explain
--all-pending --cluster DUMP -o text` (or `-o json`: every node of every pod) runs
in-process through the real command, file reading and output included; the time and peak
memory (resident set) are printed with the number of pods that fit and wait.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpuop.cli.explain import explain

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def _node(index: int, rng: random.Random) -> dict[str, Any]:
    name = f"gpu-{index:05d}"
    allocatable = {"cpu": "96", "memory": "1Ti", "pods": "110", "nvidia.com/gpu": "8"}
    spec: dict[str, Any] = {"unschedulable": True} if rng.random() < 0.05 else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {HOST: name, ZONE: f"zone-{index % 3}", "nvidia.com/gpu.present": "true"},
        },
        "spec": spec,
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }


def _pod(name: str, job: str, node: str | None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                "resources": {
                    "requests": {"cpu": "4", "memory": "32Gi"},
                    "limits": {"nvidia.com/gpu": "1"},
                },
            }
        ],
        **spec,
    }
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "labels": {"job": job}},
        "spec": body,
        "status": {"phase": "Running" if node else "Pending"},
    }
    if node:
        body["nodeName"] = node
    return pod


def build_dump(nodes: int, running: int, pending: int, *, full: bool = False) -> dict[str, Any]:
    rng = random.Random(5)
    node_objects = [_node(i, rng) for i in range(nodes)]
    names = [n["metadata"]["name"] for n in node_objects]
    items: list[dict[str, Any]] = list(node_objects)
    if full:
        running = 8 * nodes
    for i in range(running):
        where = names[i // 8] if full else rng.choice(names)
        items.append(_pod(f"train-{i:06d}", f"job-{i // 8}", where))
    for i in range(pending):
        job = f"job-{rng.randrange(max(running // 8, 1))}"
        kind = i % 3
        if kind == 0:
            items.append(_pod(f"wait-{i:05d}", job, None))
        elif kind == 1:
            spread = [
                {
                    "maxSkew": 1,
                    "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"job": job}},
                }
            ]
            items.append(_pod(f"spread-{i:05d}", job, None, topologySpreadConstraints=spread))
        else:
            affinity = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": HOST, "labelSelector": {"matchLabels": {"job": job}}}
                    ]
                },
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"job": job}}}
                    ]
                },
            }
            items.append(_pod(f"serve-{i:05d}", job, None, affinity=affinity))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--running", type=int, default=20_000)
    parser.add_argument("--pending", type=int, default=2_000)
    parser.add_argument("--full", action="store_true", help="eight running pods on every node")
    parser.add_argument("-o", "--output", default="text", choices=("text", "json"))
    args = parser.parse_args()
    running = 8 * args.nodes if args.full else args.running
    with tempfile.TemporaryDirectory(prefix="gpuop-bench-") as tmp:
        path = Path(tmp) / "dump.json"
        dump = build_dump(args.nodes, args.running, args.pending, full=args.full)
        path.write_text(json.dumps(dump))
        print(
            f"dump: {args.nodes} nodes, {running} running and {args.pending} pending pods,"
            f" {path.stat().st_size / 1e6:.1f} MB"
        )
        out = io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            explain.main(
                ["--all-pending", "--cluster", str(path), "-o", args.output],
                prog_name="gpuop explain",
                standalone_mode=False,
            )
        seconds = time.perf_counter() - started
        text = out.getvalue()
        if args.output == "json":
            results = json.loads(text)
            pods, fit = len(results), sum(1 for r in results if r["feasible"])
        else:
            pods = text.count("\nPod ") + text.startswith("Pod ")
            fit = pods - text.count(": fits none of")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"explain --all-pending -o {args.output}: {seconds:.1f} s for {pods} pods"
            f" ({fit} fit, {pods - fit} wait), {len(text) / 1e6:.1f} MB out,"
            f" peak RSS {peak:.0f} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
