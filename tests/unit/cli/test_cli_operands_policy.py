"""`gpuop operands` and `gpuop policy crd|validate|defaults`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_support import REPO_ROOT, RunCli

from gpuop.catalog import operand_table
from gpuop.planner.tables import operands_markdown
from gpuop.policy import default_policy_object
from gpuop.policy.crd import crd_manifest

REPO = REPO_ROOT
SAMPLES = REPO / "tests" / "unit" / "policy" / "samples"


# --- operands ---------------------------------------------------------------------------


def test_operands_wide_lists_every_operand(gpuop: RunCli) -> None:
    run = gpuop("operands", "-o", "wide")
    assert run.code == 0
    lines = run.stdout.splitlines()
    assert lines[0].split()[:3] == ["OPERAND", "DAEMONSET", "DEPLOY"]
    for op in operand_table().operands:
        assert any(line.split()[:2] == [op.name, op.daemonset] for line in lines), op.name
    mig = next(line for line in lines if line.startswith("mig-manager "))
    assert "container (MIG-capable)" in mig and "migManager" in mig


def test_operands_json(gpuop: RunCli) -> None:
    run = gpuop("operands", "-o", "json")
    data = json.loads(run.stdout)
    assert [d["name"] for d in data] == [op.name for op in operand_table().operands]
    driver = data[0]
    assert driver["deploy_label"] == "nvidia.com/gpu.deploy.driver"
    assert driver["enabled_by"] == "driver.enabled"
    assert driver["default"] == "on"
    assert driver["workloads"] == ["container"]
    assert set(driver) >= {"daemonset", "waits_for", "advertises", "placements"}


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        (
            "vm-vgpu",
            {"vgpu-manager", "vgpu-device-manager", "sandbox-validator", "sandbox-device-plugin"},
        ),
        (
            "vm-passthrough",
            {
                "sandbox-validator",
                "vfio-manager",
                "sandbox-device-plugin",
                "kata-sandbox-device-plugin",
                "cc-manager",
            },
        ),
    ],
)
def test_operands_filter_by_workload(gpuop: RunCli, workload: str, expected: set[str]) -> None:
    run = gpuop("operands", "--workload", workload, "-o", "yaml")
    assert {d["name"] for d in yaml.safe_load(run.stdout)} == expected


def test_operands_container_filter_has_the_container_stack(gpuop: RunCli) -> None:
    data = json.loads(gpuop("operands", "-w", "container", "-o", "json").stdout)
    names = {d["name"] for d in data}
    assert {"driver", "mig-manager", "mps-control-daemon"} <= names
    assert "sandbox-validator" not in names


def test_operands_markdown(gpuop: RunCli) -> None:
    assert gpuop("operands", "--markdown").stdout == operands_markdown()
    assert gpuop("operands", "--markdown", "-w", "vm-vgpu").stdout == operands_markdown("vm-vgpu")


# --- policy -----------------------------------------------------------------------------


def test_policy_crd_is_deploy_crd_yaml(gpuop: RunCli) -> None:
    run = gpuop("policy", "crd")
    assert run.code == 0
    assert run.stdout == (REPO / "deploy" / "crd.yaml").read_text(encoding="utf-8")
    assert json.loads(gpuop("policy", "crd", "-o", "json").stdout) == crd_manifest()


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.yaml")))
def test_validate_samples(gpuop: RunCli, sample: str) -> None:
    # Wide: the sample's absolute path would wrap the line on a narrow terminal.
    run = gpuop("policy", "validate", str(SAMPLES / sample), "-o", "wide")
    assert run.code == 0, run.stdout
    assert run.stdout.splitlines()[0].startswith(f"{SAMPLES / sample}: valid ClusterPolicy ")


def test_validate_prints_warnings(gpuop: RunCli) -> None:
    run = gpuop("policy", "validate", str(SAMPLES / "helm-default.yaml"), "-o", "wide")
    assert run.stdout.splitlines()[1:] == [
        "  warning: spec.psp is ignored (PodSecurityPolicy no longer exists)",
        "  warning: spec.operator.defaultRuntime is deprecated and ignored",
    ]


def test_validate_invalid_lists_every_problem(gpuop: RunCli) -> None:
    text = (
        "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: p}\nspec:\n"
        "  driver: {enabled: 'yes'}\n  daemonsets: {tolerations: [{effect: Never}]}\n"
        "  gfd: {enabeld: true}\n"
    )
    run = gpuop("policy", "validate", "-", input=text, columns=120)
    assert run.code == 2
    assert run.stdout.splitlines() == [
        "stdin: invalid ClusterPolicy p (3 problems)",
        "  spec.daemonsets.tolerations[0].effect: Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'",
        "  spec.driver.enabled: expected a boolean, got a string",
        "  spec.gfd.enabeld: unknown field",
    ]


def test_validate_checks_image_settings(gpuop: RunCli) -> None:
    text = yaml.safe_dump(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "spec": {
                "toolkit": {"repository": "mirror.example.com", "image": "container-toolkit"},
                "sandboxWorkloads": {"enabled": True},
                "vgpuManager": {"enabled": True},
            },
        }
    )
    run = gpuop("policy", "validate", "-", "-o", "json", input=text)
    assert run.code == 2
    assert json.loads(run.stdout) == {
        "valid": False,
        "problems": [
            "spec.toolkit: version must be set with the other image fields",
            "spec.vgpuManager: no public image exists for vgpu-manager;"
            " set repository, image and version",
        ],
        "warnings": [],
    }


def test_validate_json_for_a_valid_policy(gpuop: RunCli) -> None:
    run = gpuop("policy", "validate", str(SAMPLES / "sandbox-kubevirt.yaml"), "-o", "json")
    assert run.code == 0
    assert json.loads(run.stdout) == {
        "valid": True,
        "name": "gpu-cluster-policy",
        "problems": [],
        "warnings": [],
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("spec: [\n", "not valid YAML or JSON"),
        ("", "no objects of the kinds gpuop policy validate reads (ClusterPolicy); it is empty"),
        ('{"kind": "List", "items": []}', "no objects of the kinds gpuop policy validate reads"),
    ],
)
def test_validate_unreadable_input(gpuop: RunCli, text: str, message: str) -> None:
    run = gpuop("policy", "validate", "-", input=text)
    assert run.code == 2
    assert run.stderr.startswith("error: stdin: ") and message in run.stderr


def test_validate_not_a_policy(gpuop: RunCli) -> None:
    """A Node is not a policy: with nothing else it is bad input, said in one line; beside a
    policy it is not checked, and said so."""
    run = gpuop("policy", "validate", "-", input="kind: Node\n")
    assert run.code == 2
    assert run.stderr.count("\n") == 1 and "it holds 1 Node" in run.stderr
    policy = "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: p}\nspec: {}\n"
    run = gpuop("policy", "validate", "-", input=f"kind: Node\n---\n{policy}")
    assert "not read by gpuop policy validate: 1 Node" in run.stderr


def test_validate_refuses_an_object_without_apiversion_and_kind(gpuop: RunCli) -> None:
    run = gpuop("policy", "validate", "-", input="{}\n")
    assert run.code == 2
    assert "apiVersion: required (nvidia.com/v1)" in run.stdout
    assert "kind: required (ClusterPolicy)" in run.stdout
    rendered = gpuop("render", "--policy", "-", input="{}\n")
    assert rendered.code == 2 and rendered.stdout == ""


def test_validate_missing_file(gpuop: RunCli, tmp_path: Path) -> None:
    run = gpuop("policy", "validate", str(tmp_path / "nope.yaml"))
    assert run.code == 2 and "cannot read" in run.stderr


def test_defaults_round_trip(gpuop: RunCli) -> None:
    run = gpuop("policy", "defaults")
    assert run.code == 0
    assert yaml.safe_load(run.stdout) == default_policy_object()
    valid = gpuop("policy", "validate", "-", input=run.stdout)
    assert valid.code == 0 and valid.stdout == "stdin: valid ClusterPolicy cluster-policy\n"
    assert json.loads(gpuop("policy", "defaults", "-o", "json").stdout) == default_policy_object()


def test_help_texts(gpuop: RunCli) -> None:
    for args in (("operands",), ("policy",), ("policy", "validate"), ("policy", "crd")):
        run = gpuop(*args, "--help")
        assert run.code == 0, args
    assert "Examples:" in gpuop("operands", "--help").stdout
    assert "Examples:" in gpuop("policy", "--help").stdout
    assert "Examples:" in gpuop("policy", "validate", "--help").stdout


def test_operands_text_fits_80_columns_and_names_what_it_leaves_out(gpuop: RunCli) -> None:
    run = gpuop("operands", columns=80)
    assert run.code == 0
    lines = run.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].split() == ["OPERAND", "ENABLED", "BY", "DEFAULT", "WORKLOADS"]
    names = {line.split()[0] for line in lines if line and not line.startswith(" ")}
    assert {op.name for op in operand_table().operands} <= names
    assert "(-o wide adds DAEMONSET, DEPLOY LABEL, WAITS FOR, ADVERTISES)" in lines


def test_operands_name_is_one_daemonset_a_line(gpuop: RunCli) -> None:
    run = gpuop("operands", "-w", "vm-vgpu", "-o", "name")
    assert run.code == 0
    assert run.stdout.splitlines() == [
        "daemonset.apps/nvidia-vgpu-manager-daemonset",
        "daemonset.apps/nvidia-vgpu-device-manager",
        "daemonset.apps/nvidia-sandbox-validator",
        "daemonset.apps/nvidia-sandbox-device-plugin-daemonset",
    ]


def test_validate_name_lists_the_invalid_policies(gpuop: RunCli) -> None:
    bad = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "bad"}}
    good = {**bad, "metadata": {"name": "good"}, "spec": {}}
    items = [{**bad, "spec": {"driver": {"enabled": "yes"}}}, good]
    run = gpuop(
        "policy", "validate", "-", "-o", "name", input=json.dumps({"kind": "List", "items": items})
    )
    assert (run.code, run.stdout) == (2, "ClusterPolicy/bad\n")
    assert run.stderr == "stdin items[0]: invalid ClusterPolicy (1 problem)\n"


def test_defaults_and_crd_names(gpuop: RunCli) -> None:
    assert (
        gpuop("policy", "defaults", "-o", "name").stdout
        == "clusterpolicy.nvidia.com/cluster-policy\n"
    )
    crd = gpuop("policy", "crd", "-o", "name").stdout
    assert crd == "customresourcedefinition.apiextensions.k8s.io/clusterpolicies.nvidia.com\n"


def test_defaults_text_is_a_table_of_the_blocks(gpuop: RunCli) -> None:
    run = gpuop("policy", "defaults", "-o", "text", columns=80)
    assert run.code == 0
    rows = {line.split()[0]: line.split()[1:] for line in run.stdout.splitlines()[1:]}
    assert rows["BLOCK"] == ["ENABLED", "SETTINGS"]
    assert rows["driver"][0] == "true"
    assert "upgradePolicy=" in "".join(rows["driver"][1:])
    assert rows["sandboxWorkloads"][0] == "false"
    assert max(len(line) for line in run.stdout.splitlines()) <= 80


def test_render_on_openshift_nodes_says_the_driver_is_not_rendered(gpuop: RunCli) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "worker-gpu-0",
            "labels": {"node.openshift.io/os_id": "rhcos", "nvidia.com/gpu.present": "true"},
        },
    }
    policy = default_policy_object()
    dump = json.dumps({"apiVersion": "v1", "kind": "List", "items": [policy, node]})
    run = gpuop("render", "-f", "-", "-o", "name", input=dump)
    assert run.code == 0
    assert "daemonset.apps/nvidia-driver-daemonset" not in run.stdout
    assert "the nodes are OpenShift's: the driver DaemonSets are not rendered" in run.stderr
    plain = gpuop("render", "--policy", "-", "-o", "name", input=json.dumps(policy))
    assert "daemonset.apps/nvidia-driver-daemonset" in plain.stdout
    assert "OpenShift" not in plain.stderr
