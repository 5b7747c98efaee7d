"""Fault injection on the session cluster: a short version of ``bench/faults.py``.

30 simulated nodes converge under the operator and the simulator while the API server,
etcd and the operator are SIGKILLed and restarted, watches are expired (etcd compacted,
API server restarted), a node's mode switch is held for a GPU pod, a vGPU profile changes
and a user edits labels and the ClusterPolicy concurrently. After every fault the cluster
must reconverge to the planner's desired state with no invariant violated. The seed is
printed (``GPUOP_FAULTS_SEED`` replays a run).
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gpuop.controlplane import LocalCluster

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gpuop_bench_faults", REPO / "bench" / "faults.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _cluster(kubeconfig: Path, cluster: LocalCluster | None) -> LocalCluster:
    if cluster is not None:
        return cluster
    # GPUOP_TEST_KUBECONFIG naming a gpuop LocalCluster: <root>/clusters/<name>/kubeconfig.
    directory = kubeconfig.resolve().parent
    return LocalCluster(directory.name, state_root_dir=directory.parent.parent)


def test_cluster_reconverges_after_every_fault(
    e2e_cluster: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    faults = _bench()
    kubeconfig: Path = e2e_cluster.kubeconfig  # type: ignore[attr-defined]
    cluster = _cluster(kubeconfig, e2e_cluster.cluster)  # type: ignore[attr-defined]
    if not cluster.info_path.exists():
        pytest.fail(f"{kubeconfig} is not a gpuop LocalCluster: cannot restart its components")
    seed_text = os.environ.get("GPUOP_FAULTS_SEED", "").strip()
    seed = int(seed_text) if seed_text else random.SystemRandom().randrange(2**31)
    nodes = int(os.environ.get("GPUOP_FAULTS_NODES", "30"))
    with capsys.disabled():
        print(f"\n[faults] seed {seed} (GPUOP_FAULTS_SEED={seed} replays it)", flush=True)
    report = faults.run_faults(
        cluster, tmp_path, nodes=nodes, faults=4, seed=seed, timeout=180.0, prefix="e2e-faults"
    )
    summary = report.summary()
    with capsys.disabled():
        print(f"[faults] {summary}", flush=True)
    assert report.violations == [], f"seed {seed}: {report.violations}"
    assert summary["faults_survived"] == summary["faults_injected"] == 7
    assert cluster.status().api_ready
