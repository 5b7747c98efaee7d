"""Benchmark `gpuop check` on a 10,000-node dump against plain `json.load` of the same file.

    .venv/bin/python bench/check_bench.py [--nodes 10000] [--pods 50000] [--pending 2000]
                                          [--repeat 3]

The dump is a kubectl-style List (4-space indent, as `kubectl get -o json` writes) of a
mixed cluster: container, vm-passthrough and vm-vgpu nodes with two or four GPUs each,
built from `plan()` output like the test corpus, plus the ClusterPolicy and KubeVirt CR, and
`--pods` running GPU workload pods (one `nvidia.com/gpu` each) spread over the nodes and
`--pending` GPU pods waiting (each a finding).
`gpuop check` runs in-process through the real command (`gpuop check FILE -o json`), file
reading and output included. The target is at most 1.5x the time of `json.load`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "check"))

import corpus_gen  # noqa: E402

from gpuop.cli.check import check  # noqa: E402

TARGET = 1.5


def build_dump(count: int) -> dict[str, Any]:
    policy_obj = corpus_gen.lab_policy()
    policy = corpus_gen.resolved(policy_obj)
    nodes = corpus_gen.fleet(policy, count)
    kubevirt = corpus_gen.kubevirt_object(
        [
            corpus_gen.node_object(f"k{i}", policy, workload=w, model=m, count=c)[0]
            for i, (w, m, c) in enumerate(
                (
                    ("vm-passthrough", "A10", 2),
                    ("vm-vgpu", "A10", 2),
                    ("vm-passthrough", "L40S", 4),
                    ("vm-vgpu", "L40S", 4),
                )
            )
        ]
    )
    return corpus_gen.as_list([policy_obj, *nodes, kubevirt])


def workload_pods(nodes: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """`count` running training pods, each asking for one GPU, on nodes chosen at random."""
    rng = random.Random(3)
    names = [node["metadata"]["name"] for node in nodes]
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"train-{index:06d}",
                "namespace": "ml",
                "labels": {"app": "train"},
                "ownerReferences": [{"kind": "ReplicaSet", "name": "train", "controller": True}],
            },
            "spec": {
                "nodeName": rng.choice(names),
                "containers": [
                    {
                        "name": "main",
                        "image": "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ],
            },
            "status": {"phase": "Running"},
        }
        for index in range(count)
    ]


def pending_pods(count: int) -> list[dict[str, Any]]:
    """`count` pods waiting for one GPU each."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"wait-{index:05d}", "namespace": "ml"},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ]
            },
            "status": {"phase": "Pending"},
        }
        for index in range(count)
    ]


def best_of(repeat: int, action: Any) -> tuple[float, Any]:
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - start)
    return best, result


def run_check(path: Path) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            check.main([str(path), "-o", "json"], prog_name="gpuop check", standalone_mode=False)
            code = 0
        except SystemExit as exc:  # pragma: no cover - standalone_mode=False returns instead
            code = int(exc.code or 0)
    return code, out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--pending", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="gpuop-bench-") as tmp:
        path = Path(tmp) / "dump.json"
        started = time.perf_counter()
        dump = build_dump(args.nodes)
        nodes = [item for item in dump["items"] if item.get("kind") == "Node"]
        dump["items"] += workload_pods(nodes, args.pods)
        dump["items"] += pending_pods(args.pending)
        path.write_text(json.dumps(dump, indent=4) + "\n", encoding="utf-8")
        size = path.stat().st_size
        print(
            f"dump: {args.nodes} nodes, {args.pods} running and {args.pending} pending pods,"
            f" {size / 1e6:.1f} MB, built in"
            f" {time.perf_counter() - started:.1f} s"
        )

        def load() -> Any:
            with path.open(encoding="utf-8") as handle:
                return json.load(handle)

        load_s, _ = best_of(args.repeat, load)
        check_s, (code, output) = best_of(args.repeat, lambda: run_check(path))
        report = json.loads(output)
        summary = report["summary"]
        ratio = check_s / load_s
        print(f"json.load:   {load_s:.3f} s")
        print(
            f"gpuop check: {check_s:.3f} s (exit {code}, {summary['nodes_checked']} nodes,"
            f" {summary['findings']} findings)"
        )
        print(
            f"ratio:       {ratio:.2f}x (target <= {TARGET:.1f}x: {'met' if ratio <= TARGET else 'NOT met'})"
        )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
