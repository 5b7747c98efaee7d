"""`-o text|wide|json|yaml|name` on the data commands: yaml is the JSON document, name is one
Kind/name (or resource name) a line."""

from __future__ import annotations

import json

import pytest
import yaml
from cli_support import REPO_ROOT, RunCli

EXPLAIN = "tests/corpus/explain"
UPGRADE = "tests/golden/upgrade/inputs"
TODAY = ("--today", "2026-11-29")


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO_ROOT)


@pytest.mark.parametrize(
    "args",
    [
        ("operands",),
        ("audit",),
        ("plan", "--gpu", "A10", "--count", "2"),
        ("names", "pci", "2236", "20b5"),
        ("names", "vgpu", "A10-12Q"),
        ("policy", "validate", "tests/data/upstream-v26.7.0/cluster-policy.yaml"),
        ("policy", "defaults"),
        ("upgrade", "preview", "26.3.3", "26.7.0", *TODAY),
        ("kubevirt", "permitted-devices", f"{EXPLAIN}/nodes.json", f"{EXPLAIN}/kubevirt.json"),
    ],
)
def test_yaml_is_the_json_document(gpuop: RunCli, args: tuple[str, ...]) -> None:
    as_json = gpuop(*args, "-o", "json")
    as_yaml = gpuop(*args, "-o", "yaml")
    assert as_json.code == as_yaml.code, (as_json.stderr, as_yaml.stderr)
    assert yaml.safe_load(as_yaml.stdout) == json.loads(as_json.stdout)


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("plan", "--gpu", "A10", "--name", "gpu-7"), ["node/gpu-7"]),
        (
            ("plan", "-f", "tests/data/upstream-v26.7.0/nodes.yaml"),
            ["node/gpu-container", "node/gpu-vm-passthrough"],
        ),
        (
            ("names", "pci", "2236", "20b5"),
            ["nvidia.com/GA102GL_A10", "nvidia.com/GA100_A100_PCIE_80GB"],
        ),
        (("names", "vgpu", "A10-12Q"), ["nvidia.com/NVIDIA_A10-12Q"]),
        (
            ("kubevirt", "permitted-devices", f"{EXPLAIN}/nodes.json", f"{EXPLAIN}/kubevirt.json"),
            ["nvidia.com/GA102GL_A10", "nvidia.com/NVIDIA_A10-12Q"],
        ),
        (
            ("kubevirt", "vmi-example", "nvidia.com/GA102GL_A10", "-n", "vms", "--name", "vm-1"),
            ["virtualmachineinstance.kubevirt.io/vm-1"],
        ),
        (
            ("upgrade", "preview", "26.3.3", "26.7.0", "--dump", f"{UPGRADE}/nodes.json", *TODAY),
            ["node/gpu-a100-1", "node/gpu-a100-2", "node/gpu-l40s-1"],
        ),
    ],
)
def test_name_prints_one_name_a_line(
    gpuop: RunCli, args: tuple[str, ...], names: list[str]
) -> None:
    run = gpuop(*args, "-o", "name")
    assert run.code == 0, run.stderr
    assert run.stdout.splitlines() == names


def test_audit_name_and_yaml(gpuop: RunCli) -> None:
    names = gpuop("audit", "--namespace", "gpu", "-o", "name").stdout.splitlines()
    assert names[0] == "daemonset.apps/nvidia-driver-daemonset"
    assert all(name.startswith("daemonset.apps/") for name in names)
    data = yaml.safe_load(gpuop("audit", "-o", "yaml").stdout)
    assert [row["daemonset"] for row in data["operands"]] == [n.rsplit("/", 1)[1] for n in names]


def test_render_name_lists_every_object(gpuop: RunCli) -> None:
    policy = "tests/data/upstream-v26.7.0/cluster-policy.yaml"
    names = gpuop("render", "--policy", policy, "-o", "name").stdout.splitlines()
    items = json.loads(gpuop("render", "--policy", policy, "-o", "json").stdout)["items"]
    assert len(names) == len(items)
    assert "runtimeclass.node.k8s.io/nvidia" in names
    assert "daemonset.apps/nvidia-driver-daemonset" in names


def test_permitted_devices_text_is_a_table(gpuop: RunCli) -> None:
    args = ("kubevirt", "permitted-devices", f"{EXPLAIN}/nodes.json", f"{EXPLAIN}/kubevirt.json")
    lines = gpuop(*args, "-o", "text", columns=80).stdout.splitlines()
    assert lines[0].split() == ["RESOURCE", "SECTION", "SELECTOR"]
    assert lines[1].split() == ["nvidia.com/GA102GL_A10", "pciHostDevices", "10DE:2236"]
    assert "feature gates: GPU, DisableMDEVConfiguration" in lines
    # --format snippet is YAML to paste: no -o with it.
    assert gpuop(*args, "--format", "snippet", "-o", "name").code == 2
