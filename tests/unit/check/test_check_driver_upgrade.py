"""A driver upgrade under way explains the GPUs a node does not advertise (GPU703), in
place of a missing device plugin (GPU207)."""

from __future__ import annotations

from typing import Any

import managers_corpus
import pytest

from gpuop.check import run_checks

STATE = "nvidia.com/gpu-driver-upgrade-state"


def _node(state: str | None, gpus: str) -> list[dict[str, Any]]:
    labels = {
        **managers_corpus._gfd("NVIDIA-A100-SXM4-40GB", 8),
        **managers_corpus._deploy_labels("mig-manager"),
        "nvidia.com/gpu.present": "true",
        "nvidia.com/mig.config": "all-disabled",
        "nvidia.com/mig.config.state": "success",
    }
    if state is not None:
        labels[STATE] = state
    node = managers_corpus._node("gpu-1", labels, {"nvidia.com/gpu": gpus})
    node["status"]["capacity"]["nvidia.com/gpu"] = "8"
    return [node, managers_corpus._cluster_policy({})]


def _codes(objects: list[dict[str, Any]]) -> list[tuple[str, str]]:
    report = run_checks(objects)
    return sorted((f.code, f.severity) for f in report.findings if f.severity != "info")


@pytest.mark.parametrize("state", ["pod-restart-required", "validation-required"])
def test_an_upgrade_under_way_explains_the_missing_gpus(state: str) -> None:
    assert _codes(_node(state, "0")) == [("GPU703", "warning")]


def test_without_an_upgrade_the_missing_gpus_are_the_plugins() -> None:
    codes = [code for code, _ in _codes(_node(None, "0"))]
    assert "GPU703" not in codes and codes
    assert "GPU703" not in [c for c, _ in _codes(_node("upgrade-done", "0"))]


def test_an_upgrade_that_leaves_the_gpus_advertised_says_nothing() -> None:
    assert _codes(_node("wait-for-jobs-required", "8")) == []
