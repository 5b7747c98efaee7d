"""Measure the local control plane: cold build time, warm start time, memory per component.

Why this script exists: the e2e tests and the lab stand on this control plane, and CI has
2 cores and 90 minutes; these numbers say what it costs. Run it with the project's venv:

    .venv/bin/python bench/controlplane.py            # warm start + memory (binaries cached)
    .venv/bin/python bench/controlplane.py --cold     # also a cold build (~20 min on 2 cores)
    .venv/bin/python bench/controlplane.py --json

``--cold`` builds every component with ``go build`` into a temporary binary cache and a
temporary GOCACHE (so nothing is reused from earlier builds); Go modules already in GOMODCACHE
are reused, so the time is compile-and-link time, not download time. The warm start runs a
throw-away cluster in a temporary state directory and stops it at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpuop.controlplane import COMPONENTS, ControlPlaneError, LocalCluster, ensure_binaries


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cold_build() -> dict[str, Any]:
    """Build everything from scratch into temporary caches; seconds per component and total."""
    saved = {key: os.environ.get(key) for key in ("GPUOP_CACHE_DIR", "GOCACHE")}
    per_component: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="gpuop-bench-cache-") as tmp:
        os.environ["GPUOP_CACHE_DIR"] = str(Path(tmp) / "gpuop")
        os.environ["GOCACHE"] = str(Path(tmp) / "go-build")
        try:
            for comp in COMPONENTS:
                started = time.monotonic()
                ensure_binaries(progress=_log, components=[comp], allow_download=False)
                per_component[comp.name] = round(time.monotonic() - started, 1)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    return {"seconds": per_component, "total_seconds": round(sum(per_component.values()), 1)}


def warm_start(name: str) -> dict[str, Any]:
    """Start a throw-away cluster with cached binaries; time to ready, RSS, time to stop."""
    binaries = ensure_binaries(progress=_log)
    with tempfile.TemporaryDirectory(prefix="gpuop-bench-state-") as tmp:
        cluster = LocalCluster(name, state_root_dir=Path(tmp))
        started = time.monotonic()
        try:
            info = cluster.up(progress=_log, binaries=binaries)
            ready = time.monotonic() - started
            time.sleep(5)  # let the controllers settle before reading memory
            rss = cluster.component_rss()
        finally:
            stop_started = time.monotonic()
            cluster.down()
            stopped = time.monotonic() - stop_started
    return {
        "start_seconds": round(ready, 2),
        "start_seconds_reported": info.start_seconds,
        "stop_seconds": round(stopped, 2),
        "rss_mib": {key: round(value / 2**20, 1) for key, value in rss.items()},
        "rss_total_mib": round(sum(rss.values()) / 2**20, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cold", action="store_true", help="also measure a cold go build")
    parser.add_argument("--name", default="bench", help="name of the throw-away cluster")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    results: dict[str, Any] = {"cpus": os.cpu_count()}
    try:
        if args.cold:
            results["cold_build"] = cold_build()
        results["warm"] = warm_start(args.name)
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    if "cold_build" in results:
        cold = results["cold_build"]
        print(f"cold build ({results['cpus']} CPUs):")
        for comp, seconds in cold["seconds"].items():
            print(f"  {comp:<24} {seconds:8.1f} s")
        print(f"  {'total':<24} {cold['total_seconds']:8.1f} s")
    warm = results["warm"]
    print(
        f"warm start to ready: {warm['start_seconds']:.1f} s   (stop: {warm['stop_seconds']:.1f} s)"
    )
    print("resident memory after start:")
    for comp, mib in warm["rss_mib"].items():
        print(f"  {comp:<24} {mib:8.1f} MiB")
    print(f"  {'total':<24} {warm['rss_total_mib']:8.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
