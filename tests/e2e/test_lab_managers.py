"""The lab's managers step on a real API server: a node as each other manager of GPUs
leaves it, each named by `gpuop check` with nothing wrong, then a resource registered with
0 devices found on its node alone, and every node removed afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuop.kube import ops, sync_client
from gpuop.lab.managers import lab_shapes, node_name, run_step

pytestmark = pytest.mark.e2e


def test_the_managers_step_names_every_manager_and_finds_the_zeroed_resource(
    kubeconfig_path: Path,
) -> None:
    client = sync_client(str(kubeconfig_path))
    said: list[str] = []
    record = run_step(client, said.append)
    named = {row["manager"]: row["named"][:1] for row in record["nodes"]}
    assert set(named) == set(lab_shapes())
    assert named["aks"] == ["nvidia-device-plugin"]
    assert named["aks-managed-gpu"] == ["aks-managed-gpu"]
    assert named["nvidia-dra-driver"] == ["nvidia-dra-driver"]
    assert record["zeroed"] == {"node": node_name("hami"), "resource": "nvidia.com/gpu"}
    assert any("GPU211 on lab-m-hami, nothing on the others" in line for line in said)
    assert all(ops.get_node(client, node_name(m)) is None for m in lab_shapes())
