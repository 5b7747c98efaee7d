"""How long the `gpuop` command line takes to start and plan, against bare Python.

    .venv/bin/python bench/cli_startup.py [--runs 10] [--nodes 1000] [--json] [--check]

Each command runs as a fresh process (`python -m gpuop ...`, the code `import gpuop`
finds) with its output thrown away; a figure is the median wall time of `--runs` runs
after one untimed warm-up run, and its ratio is to `python -c pass` measured in the same
run, so a busy machine slows both. The batch case plans a generated kubectl-style List
(4-space indent, as `kubectl get nodes -o json` writes) of a mixed cluster: container,
vm-passthrough and vm-vgpu nodes with A10 and L40S cards, each with its own hostname,
addresses, machine ids and GPU feature discovery timestamp (so every node has its own
planning key, as in a real cluster), under a ClusterPolicy with sandbox workloads on.

The targets hold on an idle machine; `--check` exits 1 when one is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit" / "check"))

import corpus_gen  # noqa: E402

SHAPES = corpus_gen.FLEET_SHAPES


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]
    target_s: float | None


def build_nodes(count: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A List of `count` Nodes as the operator and plugins leave them, and their policy."""
    policy_obj = corpus_gen.lab_policy()
    policy = corpus_gen.resolved(policy_obj)
    nodes = corpus_gen.fleet(policy, count, SHAPES)
    return corpus_gen.as_list(nodes), policy_obj


def time_runs(argv: list[str], runs: int, env: dict[str, str]) -> list[float]:
    """Wall seconds of each of `runs` runs, after one warm-up; a failed run stops the bench."""
    times = []
    for number in range(runs + 1):
        started = time.perf_counter()
        done = subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False
        )
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(
                f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr.decode(errors='replace')}"
            )
        if number:
            times.append(elapsed)
    return times


def count_lines(argv: list[str], env: dict[str, str]) -> int:
    done = subprocess.run(argv, capture_output=True, env=env, check=True)
    return len(done.stdout.splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per command (median)")
    parser.add_argument("--nodes", type=int, default=1000, help="nodes in the batch List")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args()
    if args.runs < 1 or args.nodes < 1:
        parser.error("--runs and --nodes must be at least 1")

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    python = sys.executable
    gpuop = [python, "-m", "gpuop"]
    with tempfile.TemporaryDirectory(prefix="gpuop-bench-") as tmp:
        node_list, policy_obj = build_nodes(args.nodes)
        nodes_path = Path(tmp) / "nodes.json"
        nodes_path.write_text(json.dumps(node_list, indent=4) + "\n", encoding="utf-8")
        policy_path = Path(tmp) / "policy.json"
        policy_path.write_text(json.dumps(policy_obj), encoding="utf-8")
        batch = [*gpuop, "plan", "-f", str(nodes_path), "--policy", str(policy_path), "-o", "json"]
        cases = [
            Case("python -c pass", [python, "-c", "pass"], None),
            Case("gpuop --version", [*gpuop, "--version"], 0.25),
            Case("gpuop --help", [*gpuop, "--help"], 0.25),
            Case(
                "gpuop plan --gpu A10 --count 2",
                [*gpuop, "plan", "--gpu", "A10", "--count", "2"],
                0.6,
            ),
            Case(f"gpuop plan -f <{args.nodes}-node List> -o json", batch, 2.0),
        ]
        planned = count_lines(batch, env)
        if planned != args.nodes:
            raise SystemExit(f"the batch printed {planned} plans for {args.nodes} nodes")
        results = []
        for case in cases:
            times = time_runs(case.argv, args.runs, env)
            results.append((case, statistics.median(times), min(times), max(times)))
        size_mb = nodes_path.stat().st_size / 1e6

    baseline = results[0][1]
    rows = []
    missed = []
    for case, median, fastest, slowest in results:
        met = case.target_s is None or median <= case.target_s
        if not met:
            missed.append(case.name)
        rows.append(
            {
                "command": case.name,
                "median_s": round(median, 4),
                "min_s": round(fastest, 4),
                "max_s": round(slowest, 4),
                "ratio": round(median / baseline, 1),
                "target_s": case.target_s,
                "met": met,
            }
        )
    if args.json:
        print(json.dumps({"runs": args.runs, "nodes": args.nodes, "results": rows}, indent=2))
    else:
        print(
            f"{args.runs} runs each (median; min-max), python {sys.version.split()[0]},"
            f" {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f};"
            f" batch input {size_mb:.1f} MB"
        )
        width = max(len(row["command"]) for row in rows)
        for row in rows:
            target = (
                ""
                if row["target_s"] is None
                else f"  target {row['target_s']:.2f} s: {'met' if row['met'] else 'NOT met'}"
            )
            print(
                f"  {row['command']:<{width}}  {row['median_s']:.3f} s"
                f" ({row['min_s']:.3f}-{row['max_s']:.3f})  {row['ratio']:>5.1f}x python{target}"
            )
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
