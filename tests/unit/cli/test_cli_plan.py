"""`gpuop plan`: golden output, the seed's numbers, and one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_support import REPO_ROOT, GoldenCheck, RunCli

from gpuop.api.labels import INVENTORY_ANNOTATION
from gpuop.cli.common import UserError
from gpuop.cli.inputs import SYSTEM_PCI_IDS, load_pci_database
from gpuop.naming import PciDatabase
from gpuop.planner.inventory import GpuCard, encode_inventory

REPO = REPO_ROOT
INPUTS_REL = "tests/golden/cli/inputs"
A10X2 = ("--gpu", "A10", "--count", "2", "--pci-ids", "builtin")


def argv(text: str) -> tuple[str, ...]:
    return tuple(text.split())


GOLDEN_CASES: dict[str, tuple[str, ...]] = {
    "a10x2-container": A10X2,
    "a10x2-vm-vgpu": (*A10X2, *argv("--workload vm-vgpu --sandbox")),
    "a10x2-vm-vgpu-a10-4q": (*A10X2, *argv("--workload vm-vgpu --vgpu-config A10-4Q --sandbox")),
    "a10x2-vm-passthrough": (*A10X2, *argv("--workload vm-passthrough --sandbox")),
    "a10x2-label-ignored": (*A10X2, *argv("--workload vm-vgpu")),
    "a100-node-file": argv(f"--node {INPUTS_REL}/node-a100.yaml --pci-ids builtin"),
    "l40s-kata-policy": argv(
        f"--gpu L40S --policy {INPUTS_REL}/kata-policy.yaml --pci-ids builtin"
    ),
    "t4-vm-vgpu-infeasible": argv(
        "--gpu T4 --workload vm-vgpu --vgpu-config A10-12Q --sandbox --pci-ids builtin"
    ),
}


def plan_json(gpuop: RunCli, *args: str) -> dict[str, Any]:
    run = gpuop("plan", *args, "--output", "json")
    assert run.code == 0, run.stderr
    data = json.loads(run.stdout)
    assert isinstance(data, dict)
    return data


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


# Plans with error-level notices exit 1 (see `gpuop plan --help`).
GOLDEN_EXIT = {"t4-vm-vgpu-infeasible": 1}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_json(gpuop: RunCli, golden: GoldenCheck, case: str) -> None:
    run = gpuop("plan", *GOLDEN_CASES[case], "-o", "json")
    assert run.code == GOLDEN_EXIT.get(case, 0), run.stderr
    golden(f"plan-{case}.json", run.stdout)


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_text(gpuop: RunCli, golden: GoldenCheck, case: str) -> None:
    run = gpuop("plan", *GOLDEN_CASES[case])
    assert run.code == GOLDEN_EXIT.get(case, 0), run.stderr
    assert run.stderr == ""
    golden(f"plan-{case}.txt", run.stdout)


@pytest.mark.parametrize(
    ("args", "advertises"),
    [
        ((), {"nvidia.com/gpu": 2}),
        (("--workload", "vm-vgpu", "--sandbox"), {"nvidia.com/NVIDIA_A10-12Q": 4}),
        (
            ("--workload", "vm-vgpu", "--vgpu-config", "A10-4Q", "--sandbox"),
            {"nvidia.com/NVIDIA_A10-4Q": 12},
        ),
        (("--workload", "vm-passthrough", "--sandbox"), {"nvidia.com/GA102GL_A10": 2}),
    ],
)
def test_seed_numbers(gpuop: RunCli, args: tuple[str, ...], advertises: dict[str, int]) -> None:
    assert plan_json(gpuop, *A10X2, *args)["advertises"] == advertises


def test_inputs_are_reported(gpuop: RunCli) -> None:
    data = plan_json(gpuop, *A10X2, "--sandbox")
    assert data["inputs"] == {
        "policy": "default ClusterPolicy",
        "sandbox_enabled": True,
        "sandbox_mode": "kubevirt",
        "default_workload": "container",
        "pci_ids": {"source": "shipped", "version": "2025.07.11"},
    }


def test_yaml_output(gpuop: RunCli) -> None:
    run = gpuop("plan", *A10X2, "-o", "yaml")
    assert run.code == 0
    assert yaml.safe_load(run.stdout)["advertises"] == {"nvidia.com/gpu": 2}


def test_built_node_is_what_nfd_labels(gpuop: RunCli) -> None:
    data = plan_json(gpuop, *A10X2, "--name", "n7", "--label", "team=ml", "--label", "x=")
    assert data["node"] == "n7"
    assert data["gpu_detection"] == "feature.node.kubernetes.io/pci-10de.present"
    assert data["inventory"]["source"] == "annotation"
    assert data["label_changes"]["nvidia.com/gpu.present"] == "true"


def test_gpu_model_is_case_insensitive(gpuop: RunCli) -> None:
    assert plan_json(gpuop, "--gpu", "l40s", "--pci-ids", "builtin")["advertises"] == {
        "nvidia.com/gpu": 1
    }


def test_mig_capable_label_flag(gpuop: RunCli) -> None:
    data = plan_json(
        gpuop, "--gpu", "A100", "--label", "nvidia.com/mig.capable=true", "--pci-ids", "builtin"
    )
    assert data["label_changes"]["nvidia.com/mig.config"] == "all-disabled"
    assert data["label_changes"]["nvidia.com/gpu.deploy.mig-manager"] == "true"


def test_node_from_stdin_with_overlays(gpuop: RunCli) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "from-stdin",
            "labels": {"feature.node.kubernetes.io/pci-0302_10de.present": "true"},
            "annotations": {INVENTORY_ANNOTATION: encode_inventory([GpuCard(0, "27b8")])},
        },
    }
    run = gpuop(
        "plan",
        "--node",
        "-",
        "--workload",
        "vm-vgpu",
        "--sandbox",
        "--pci-ids",
        "builtin",
        "-o",
        "json",
        input=json.dumps(node),
    )
    assert run.code == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["node"] == "from-stdin"
    assert data["advertises"] == {"nvidia.com/NVIDIA_L4-12Q": 2}


def test_policy_from_stdin_and_sandbox_flag(gpuop: RunCli) -> None:
    policy = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "p"},
        "spec": {
            "sandboxWorkloads": {"enabled": False, "defaultWorkload": "vm-passthrough"},
            "vfioManager": {"enabled": True},
            "sandboxDevicePlugin": {"enabled": True},
        },
    }
    run = gpuop(
        "plan", *A10X2, "--policy", "-", "--sandbox", "-o", "json", input=yaml.safe_dump(policy)
    )
    assert run.code == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["inputs"]["policy"] == "stdin"
    assert data["workload"]["config"] == "vm-passthrough"
    assert data["advertises"] == {"nvidia.com/GA102GL_A10": 2}


def test_pci_ids_file_decides_passthrough_names(
    gpuop: RunCli, pci_ids_file: Path, tmp_path: Path
) -> None:
    node = {
        "kind": "Node",
        "metadata": {
            "name": "embedded",
            "labels": {"feature.node.kubernetes.io/pci-10de.present": "true"},
            "annotations": {INVENTORY_ANNOTATION: encode_inventory([GpuCard(0, "24fa")])},
        },
    }
    node_file = tmp_path / "node.yaml"
    node_file.write_text(yaml.safe_dump(node), encoding="utf-8")
    args = argv(f"--node {node_file} --workload vm-passthrough --sandbox --pci-ids {pci_ids_file}")
    data = plan_json(gpuop, *args)
    assert data["advertises"] == {"nvidia.com/GA104_RTX_A4500_EMBEDDED_GPU_": 1}
    assert [n["code"] for n in data["notices"]] == ["InvalidResourceName"]
    assert data["inputs"]["pci_ids"] == {"source": str(pci_ids_file), "version": "2025.07.11"}


def test_text_summarises_long_must_not_lists(gpuop: RunCli) -> None:
    run = gpuop("plan", *A10X2, "-o", "wide")
    line = next(x for x in run.stdout.splitlines() if x.startswith("Must not advertise"))
    assert line.startswith("Must not advertise (25): ")
    assert line.endswith(" and 19 more")


def test_default_pci_ids_is_the_shipped_table() -> None:
    for chosen in (load_pci_database(None), load_pci_database("builtin")):
        assert (chosen.source, chosen.database.version) == ("shipped", "2025.07.11")
        assert chosen.database is PciDatabase.builtin()
        assert chosen.describe() == "2025.07.11 (shipped)"


def test_pci_ids_system_is_debians_file() -> None:
    if Path(SYSTEM_PCI_IDS).is_file():
        assert load_pci_database("system").source == SYSTEM_PCI_IDS
    else:
        with pytest.raises(UserError, match=f"cannot read {SYSTEM_PCI_IDS}"):
            load_pci_database("system")


def test_plan_without_pci_ids_names_new_cards(gpuop: RunCli, tmp_path: Path) -> None:
    node = {
        "kind": "Node",
        "metadata": {
            "name": "hgx",
            "labels": {"feature.node.kubernetes.io/pci-10de.present": "true"},
            "annotations": {INVENTORY_ANNOTATION: encode_inventory([GpuCard(0, "2901")])},
        },
    }
    node_file = tmp_path / "node.yaml"
    node_file.write_text(yaml.safe_dump(node), encoding="utf-8")
    data = plan_json(gpuop, *argv(f"--node {node_file} --workload vm-passthrough --sandbox"))
    assert data["advertises"] == {"nvidia.com/GB100_B200": 1}
    assert data["inputs"]["pci_ids"] == {"source": "shipped", "version": "2025.07.11"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--gpu", "B300"),
            "unknown GPU model 'B300' (known: A10, A16, A2, A30, A40, L4, L40S, T4, A100, H100)",
        ),
        (("--gpu", "A10", "--count", "0"), "--count 0: a GPU node has at least 1 GPU"),
        (("--gpu", "A10", "--count", "-2"), "--count -2: a GPU node has at least 1 GPU"),
        ((), "give --node FILE (a Node manifest) or --gpu MODEL (e.g. --gpu A10)"),
        (("--gpu", "A10", "--node", "x.yaml"), "give either --node FILE or --gpu MODEL, not both"),
        (("--node", "-", "--policy", "-"), "--node and --policy cannot both read stdin"),
        (("--gpu", "A10", "--label", "novalue"), "--label 'novalue': expected KEY=VALUE"),
        (("--gpu", "A10", "--policy", "/nonexistent/cp.yaml"), "cannot read /nonexistent/cp.yaml"),
        (
            ("--node", "tests/golden/cli/inputs/kata-policy.yaml"),
            "expected a Node manifest (kind: Node), got 'ClusterPolicy'",
        ),
    ],
)
def test_errors_are_one_line_with_exit_2(
    gpuop: RunCli, args: tuple[str, ...], message: str
) -> None:
    run = gpuop("plan", *args)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.startswith("error: ")
    assert message in run.stderr
    assert run.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Pod\nmetadata: {name: x}\n", "expected a Node manifest (kind: Node), got 'Pod'"),
        ("- a\n- b\n", "expected a Node manifest (kind: Node), got a list"),
        ("metadata: {name: x}\n", "got an object with no kind"),
        ("kind: Node\nmetadata: [1]\n", "metadata is not a mapping"),
        ("kind: Node\nmetadata: {labels: [a]}\n", "metadata.labels is not a mapping"),
        ("kind: Node\n---\nkind: Node\n", "2 documents; expected one Node"),
        ("kind: [Node\n", "not valid YAML or JSON (line 2, column 1)"),
        ("", "no objects of the kinds gpuop plan --node reads (Node); it is empty"),
    ],
)
def test_node_input_that_is_not_a_node(gpuop: RunCli, text: str, message: str) -> None:
    run = gpuop("plan", "--node", "-", input=text)
    assert run.code == 2
    assert message in run.stderr and run.stderr.startswith("error: stdin: ")


def test_invalid_policy_prints_every_problem(gpuop: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "cp.yaml"
    path.write_text(
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nspec:\n  driver: {enabled: 'yes'}\n"
        "  bogus: 1\n"
        "  sandboxWorkloads: {mode: kvm}\n",
        encoding="utf-8",
    )
    run = gpuop("plan", "--gpu", "A10", "--policy", str(path))
    assert run.code == 2
    assert run.stderr.splitlines() == [
        f"error: {path}: not a valid ClusterPolicy:"
        " spec.driver.enabled: expected a boolean, got a string;"
        " spec.sandboxWorkloads.mode: Input should be 'kubevirt' or 'kata';"
        " spec.bogus: unknown field",
    ]


def test_pci_ids_without_nvidia_is_an_error(gpuop: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "pci.ids"
    path.write_text("1002  AMD\n\t73bf  Navi 21\n", encoding="utf-8")
    run = gpuop("plan", "--gpu", "A10", "--pci-ids", str(path))
    assert run.code == 2
    assert "no NVIDIA (vendor 10de) devices found" in run.stderr


def test_help_teaches_with_examples(gpuop: RunCli) -> None:
    run = gpuop("plan", "--help")
    assert run.code == 0
    assert "Examples:" in run.stdout
    assert "gpuop plan --gpu A10 --count 2 --workload vm-vgpu --sandbox" in run.stdout


def test_headings_are_plain_without_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    """At a terminal, NO_COLOR (which `gpuop --no-color` sets) leaves no bold escape."""
    import io
    import sys

    from gpuop.cli.plan.support import heading

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" in heading("Node a")
    monkeypatch.setenv("NO_COLOR", "1")
    assert heading("Node a") == "Node a"
