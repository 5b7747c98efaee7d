"""One reading of a dump for every command: each takes the kinds it reads from a mixed List
(what `kubectl get nodes,pods,configmaps,services -A -o json` prints) and names, in one
stderr line, the kinds it left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import RunCli

NFD = "feature.node.kubernetes.io/pci-10de.present"


def _mixed_list(policy: bool) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "gpu-1",
                "labels": {NFD: "true", "nvidia.com/gpu.present": "true"},
            },
            "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"}},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Running"},
        },
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "x"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "x"}},
    ]
    if policy:
        items.append(
            {
                "apiVersion": "nvidia.com/v1",
                "kind": "ClusterPolicy",
                "metadata": {"name": "cluster-policy"},
                "spec": {},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}


# command line (DUMP stands for the file), and the kinds it must call unread.
CASES: dict[str, tuple[str, set[str]]] = {
    "check": ("check DUMP", {"1 Service", "1 Secret"}),
    "versions-check": (
        "versions check DUMP --operator-release 26.7.0 --kubernetes-version 1.33",
        {"1 Service", "1 Secret"},
    ),
    "upgrade-preview": ("upgrade preview 25.10.1 26.7.0 --dump DUMP", {"1 Pod", "1 Service"}),
    "adopt": ("adopt DUMP", {"1 Secret"}),
    "plan": ("plan -f DUMP", {"1 Pod", "1 Service", "1 ClusterPolicy"}),
    "render": ("render -f DUMP", {"1 Pod", "1 Service", "1 Secret"}),
    "explain": ("explain --all-pending --cluster DUMP", {"1 Service", "1 Secret"}),
    "kubevirt-check": ("kubevirt check DUMP", {"1 Service", "1 Secret"}),
    "kubevirt-permitted": ("kubevirt permitted-devices DUMP", {"1 Pod", "1 Service"}),
    "policy-validate": ("policy validate DUMP", {"1 Node", "1 Pod", "1 Service"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_mixed_list_is_read_and_what_is_left_out_is_named(
    gpuop: RunCli, tmp_path: Path, name: str
) -> None:
    command, unread = CASES[name]
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps(_mixed_list(policy=True)))
    result = gpuop(*command.replace("DUMP", str(dump)).split())
    assert "Traceback" not in result.stderr
    assert result.code in (0, 1), result.stderr
    lines = [line for line in result.stderr.splitlines() if "not read by gpuop" in line]
    assert len(lines) == 1, result.stderr
    for kind in unread:
        assert kind in lines[0], lines[0]
    assert "Node" not in lines[0] or name == "policy-validate", lines[0]


def test_an_object_without_a_kind_is_bad_input_for_every_reader(
    gpuop: RunCli, tmp_path: Path
) -> None:
    listed = _mixed_list(policy=True)
    del listed["items"][1]["kind"]
    listed["kind"] = "List"
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps(listed))
    for name, (command, _) in CASES.items():
        result = gpuop(*command.replace("DUMP", str(dump)).split())
        assert result.code == 2, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        if name == "policy-validate":  # a validator: the verdict is its output
            assert f"{dump} items[1]: invalid" in result.stdout
            continue
        assert len(result.stderr.strip().splitlines()) == 1, (command, result.stderr)
        assert str(dump) in result.stderr, (command, result.stderr)
