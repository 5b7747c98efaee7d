"""Every offline command over one fleet-size dump: time and peak memory of each.

    .venv/bin/python bench/offline_bench.py [--nodes 10000] [--pods 50000] [--pending 2000]

The dump is `check_bench.py`'s (a mixed fleet of container, vm-passthrough and vm-vgpu
nodes, the ClusterPolicy and KubeVirt CR, `--pods` running GPU pods) with `--pending` pods
that wait for one GPU each. Each command runs in a fresh Python process through the real
command-line entry point, output to /dev/null, and reports its wall time and the peak
resident memory of that process:

    gpuop check DUMP -o json
    gpuop explain --all-pending --cluster DUMP
    gpuop plan -f DUMP -o json
    gpuop render -f DUMP -o json

`gpuop collect` reads a live cluster only; it is measured with the operator's scale bench
(`bench/operator_bench.py`), which has the API server to read from.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import check_bench  # noqa: E402

# Run the CLI in this process, then print the process's peak resident set (KiB) last.
_RUNNER = """
import resource, sys
from gpuop.cli import main
sys.argv[0] = "gpuop"
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
print(f"PEAK {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
"""


# json.load alone, the floor of every command that reads the dump.
_LOADER = """
import json, resource, sys
with open(sys.argv[1], encoding="utf-8") as handle:
    json.load(handle)
print(f"PEAK {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
"""


def write_dump(path: Path, nodes: int, pods: int, pending: int) -> None:
    dump = check_bench.build_dump(nodes)
    node_objects = [item for item in dump["items"] if item.get("kind") == "Node"]
    dump["items"] += check_bench.workload_pods(node_objects, pods)
    dump["items"] += check_bench.pending_pods(pending)
    path.write_text(json.dumps(dump, indent=4) + "\n", encoding="utf-8")


def measure(script: str, args: list[str]) -> tuple[float, float, int]:
    """(seconds, peak MiB, exit code) of a Python `script` with ARGS in a fresh process.

    This process stays small (the dump is written by another one): a child's peak counts
    the memory of the process it was forked from."""
    started = time.perf_counter()
    with open(os.devnull, "w") as sink:
        done = subprocess.run(
            [sys.executable, "-c", script, *args],
            stdout=sink,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    seconds = time.perf_counter() - started
    peak = next(
        (int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK ")),
        0,
    )
    return seconds, peak / 1024, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--pending", type=int, default=2_000)
    parser.add_argument("--write", metavar="FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        write_dump(Path(args.write), args.nodes, args.pods, args.pending)
        return 0
    with tempfile.TemporaryDirectory(prefix="gpuop-bench-") as tmp:
        path = Path(tmp) / "dump.json"
        subprocess.run(
            [
                sys.executable,
                __file__,
                *("--nodes", str(args.nodes), "--pods", str(args.pods)),
                *("--pending", str(args.pending), "--write", str(path)),
            ],
            check=True,
        )
        print(
            f"dump: {args.nodes} nodes, {args.pods} running and {args.pending} pending pods,"
            f" {path.stat().st_size / 1e6:.0f} MB"
        )
        dump_file = str(path)
        seconds, peak, _ = measure(_LOADER, [dump_file])
        print(f"json.load alone: {seconds:.1f} s, peak RSS {peak:.0f} MiB")
        commands = {
            "check": ["check", dump_file, "-o", "json"],
            "explain --all-pending": ["explain", "--all-pending", "--cluster", dump_file],
            "plan -f": ["plan", "-f", dump_file, "-o", "json"],
            "render -f": ["render", "-f", dump_file, "-o", "json"],
        }
        for name, command in commands.items():
            seconds, peak, code = measure(_RUNNER, command)
            print(f"gpuop {name}: {seconds:.1f} s, peak RSS {peak:.0f} MiB (exit {code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
