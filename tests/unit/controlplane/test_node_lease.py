"""kwok's node Lease length reaches its command line, and stays inside the controller
manager's grace period (a longer Lease would let nodes go NotReady between renewals)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpuop.controlplane import LocalCluster
from gpuop.controlplane.binaries import Binaries
from gpuop.controlplane.components import (
    AUDIT_POLICY,
    KCM,
    KWOK,
    NODE_MONITOR_GRACE_SECONDS,
    component_argv,
)

BINS = Binaries(
    {
        name: Path(f"/bin/{name}")
        for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
    }
)
PORTS = {"etcd": 1, "etcd-peer": 2, "kube-apiserver": 3, KCM: 4, "kube-scheduler": 5, KWOK: 6}


def _flag(argv: list[str], name: str) -> str:
    return next(a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}="))


def test_the_lease_length_reaches_kwok(tmp_path: Path) -> None:
    argv = component_argv(tmp_path, "t", BINS, PORTS, node_lease_seconds=240)
    assert _flag(argv[KWOK], "node-lease-duration-seconds") == "240"
    assert _flag(argv[KCM], "node-monitor-grace-period") == f"{NODE_MONITOR_GRACE_SECONDS}s"


def test_the_default_is_the_kubelets(tmp_path: Path) -> None:
    argv = component_argv(tmp_path, "t", BINS, PORTS)
    assert _flag(argv[KWOK], "node-lease-duration-seconds") == "40"


@pytest.mark.parametrize("seconds", [0, 3, NODE_MONITOR_GRACE_SECONDS, 3600])
def test_a_lease_past_the_grace_period_is_refused(tmp_path: Path, seconds: int) -> None:
    with pytest.raises(ValueError, match="node_lease_seconds"):
        LocalCluster("t", state_root_dir=tmp_path, node_lease_seconds=seconds)


def test_node_lease_renewals_are_left_out_of_the_audit_log() -> None:
    rules = yaml.safe_load(AUDIT_POLICY)["rules"]
    silent = [r for r in rules if r["level"] == "None" and "namespaces" in r]
    assert silent == [
        {
            "level": "None",
            "namespaces": ["kube-node-lease"],
            "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}],
        }
    ]


def test_every_controller_runs_unless_one_is_left_off(tmp_path: Path) -> None:
    assert _flag(component_argv(tmp_path, "t", BINS, PORTS)[KCM], "controllers") == "*"
    argv = component_argv(
        tmp_path, "t", BINS, PORTS, disabled_controllers=("daemonset-controller",)
    )
    assert _flag(argv[KCM], "controllers") == "*,-daemonset-controller"
