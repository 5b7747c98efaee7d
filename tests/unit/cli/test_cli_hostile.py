"""Hostile input for every file-reading command: one clear line, the documented exit code.

Each case writes the input to a file, runs the command in-process and asserts that no
traceback reaches the output and that the exit code is the one the command documents.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import RunCli

from gpuop.manifests import MAX_NESTING

DEEP_BLOCK_YAML = "".join("  " * level + "a:\n" for level in range(2000)) + "  " * 2000 + "x\n"
DEEP_JSON_ARRAY = "[" * 5000 + "]" * 5000
DEEP_JSON_OBJECT = '{"a":' * 3000 + "1" + "}" * 3000
# Deep enough to refuse, shallow enough for every parser: only the depth guard catches it.
PARSABLE_BUT_DEEP = json.dumps(
    {
        "kind": "Node",
        "metadata": {"labels": {}},
        "x": json.loads("[" * MAX_NESTING + "]" * MAX_NESTING),
    }
)

DEEP_INPUTS = {
    "block-yaml": DEEP_BLOCK_YAML,
    "json-array": DEEP_JSON_ARRAY,
    "json-object": DEEP_JSON_OBJECT,
    "parsable": PARSABLE_BUT_DEEP,
}

FILE_COMMANDS = {
    "plan --node": ("plan", "--node", "{}"),
    "plan --policy": ("plan", "--gpu", "A10", "--policy", "{}"),
    "plan -f": ("plan", "-f", "{}"),
    "policy validate": ("policy", "validate", "{}"),
    "audit --policy": ("audit", "--policy", "{}"),
    "check": ("check", "{}"),
    "kubevirt check": ("kubevirt", "check", "{}"),
    "versions check": ("versions", "check", "{}"),
    "explain": ("explain", "pod/x", "--cluster", "{}"),
    "check --vgpu-config": ("check", "-", "--vgpu-config", "{}"),
    "kubevirt vmi-example --values": (
        "kubevirt",
        "vmi-example",
        "--values",
        "{}",
        "--resource-from-values",
        "gpuResource",
    ),
}


def _run(gpuop: RunCli, tmp_path: Path, argv: tuple[str, ...], text: str) -> tuple[int, str]:
    path = tmp_path / "input.yaml"
    path.write_text(text, encoding="utf-8")
    run = gpuop(*(arg.replace("{}", str(path)) for arg in argv))
    output = run.stdout + run.stderr
    assert "Traceback" not in output
    assert "RecursionError" not in output
    return run.code, output


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize("shape", DEEP_INPUTS)
def test_deep_nesting_is_one_line_and_exit_2(
    gpuop: RunCli, tmp_path: Path, command: str, shape: str
) -> None:
    code, output = _run(gpuop, tmp_path, FILE_COMMANDS[command], DEEP_INPUTS[shape])
    assert code == 2, output
    assert "nested too deeply" in output
    assert len(output.strip().splitlines()) == 1


@pytest.mark.parametrize("count", ["257", "1000000", "12345678901234567890"])
def test_plan_count_is_bounded(gpuop: RunCli, count: str) -> None:
    run = gpuop("plan", "--gpu", "A10", "--count", count)
    assert run.code == 2
    assert run.stderr == f"error: --count {count}: more GPUs than a node holds (at most 256)\n"


def test_plan_count_at_the_bound_plans(gpuop: RunCli) -> None:
    run = gpuop("plan", "--gpu", "A10", "--count", "256", "-o", "json")
    assert run.code in (0, 1), run.stderr
    assert json.loads(run.stdout)["advertises"]["nvidia.com/gpu"] == 256


NO_OBJECTS = {
    "empty": "",
    "null": "null\n",
    "empty-list": '{"apiVersion": "v1", "kind": "List", "items": []}',
    "configmap-only": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
}
READERS = {
    "check": ("check", "{}"),
    "kubevirt check": ("kubevirt", "check", "{}"),
    "kubevirt permitted-devices": ("kubevirt", "permitted-devices", "{}"),
    "versions check": ("versions", "check", "{}"),
    "explain --cluster": ("explain", "--pod", "p", "--cluster", "{}"),
    "upgrade preview --dump": ("upgrade", "preview", "25.10.0", "26.7.0", "--dump", "{}"),
}


@pytest.mark.parametrize("command", READERS)
@pytest.mark.parametrize("shape", NO_OBJECTS)
def test_input_without_the_kinds_read_is_exit_2(
    gpuop: RunCli, tmp_path: Path, command: str, shape: str
) -> None:
    code, output = _run(gpuop, tmp_path, READERS[command], NO_OBJECTS[shape])
    assert code == 2, output
    assert "no objects of the kinds" in output
    expected = "it holds 1 ConfigMap" if shape == "configmap-only" else "it is empty"
    assert expected in output
    assert len(output.strip().splitlines()) == 1


def test_plan_with_error_notices_exits_1(gpuop: RunCli) -> None:
    argv = ("plan", "--gpu", "T4", "--workload", "vm-vgpu", "--vgpu-config", "A10-12Q")
    for extra in ((), ("-o", "json"), ("-o", "yaml")):
        run = gpuop(*argv, "--sandbox", *extra)
        assert run.code == 1, run.stderr
        assert "VgpuConfigInfeasible" in run.stdout or "A10-12Q" in run.stdout


def test_plan_batch_with_error_notices_exits_1(gpuop: RunCli, tmp_path: Path) -> None:
    from gpuop.cli.plan import node_from_flags

    nodes = {"apiVersion": "v1", "kind": "List", "items": [node_from_flags("n1", "T4", 1)]}
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes), encoding="utf-8")
    argv = ("plan", "-f", str(path), "--workload", "vm-vgpu", "--vgpu-config", "A10-12Q")
    assert gpuop(*argv, "--sandbox", "-o", "json").code == 1
    assert gpuop(*argv, "--sandbox").code == 1
    assert gpuop("plan", "-f", str(path)).code == 0


def test_plan_help_documents_exit_codes(gpuop: RunCli) -> None:
    assert (
        "Exit status: 0 planned, 1 a plan has error-level notices" in gpuop("plan", "--help").stdout
    )


def test_plan_states_the_readme_notice_once(gpuop: RunCli) -> None:
    run = gpuop("plan", "--gpu", "A10", "--count", "2", "--workload", "vm-vgpu", columns=1000)
    assert run.code == 0
    assert run.stdout.count("is ignored because sandboxWorkloads.enabled is false") == 1
    assert "warning: nvidia.com/gpu.workload.config=vm-vgpu is ignored" in run.stdout


@pytest.mark.parametrize("extra", [(), ("2236",)])
def test_names_pci_does_not_echo_huge_input(gpuop: RunCli, extra: tuple[str, ...]) -> None:
    huge = "x" * 100_000
    run = gpuop("names", "pci", huge, *extra)
    assert run.code == 2
    assert len(run.stdout) + len(run.stderr) < 1_000
    assert "(100000 characters)" in run.stdout + run.stderr


def test_policy_validate_reads_a_list_item_by_item(gpuop: RunCli) -> None:
    items = [
        {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "a"}},
        {"metadata": {"name": "b"}, "spec": {"driver": {"enabled": 3}}},
        {
            "metadata": {"name": None},
            "spec": {"daemonsets": {"rollingUpdate": {"maxUnavailable": -1}}},
        },
        None,
    ]
    text = json.dumps({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicyList", "items": items})
    run = gpuop("policy", "validate", "-", input=text)
    assert run.code == 2
    assert run.stdout.splitlines()[:3] == [
        "stdin items[0]: valid ClusterPolicy a",
        "stdin items[1]: invalid ClusterPolicy b (1 problem)",
        "  spec.driver.enabled: expected a boolean, got a number",
    ]
    as_json = gpuop("policy", "validate", "-", "-o", "json", input=text)
    assert as_json.code == 2
    results = json.loads(as_json.stdout)
    assert [r["valid"] for r in results] == [True, False, False, False]
    for leak in ("constrained-", "NoneType", '"name": null', "instance of"):
        assert leak not in run.stdout + as_json.stdout
    kubectl_list = json.dumps({"apiVersion": "v1", "kind": "List", "items": items[:1]})
    assert gpuop("policy", "validate", "-", input=kubectl_list).code == 0
    assert gpuop("policy", "validate", "-", input='{"kind": "List", "items": []}').code == 2


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--config", "/etc/containerd/config.tml"), "pass --create-config to create it"),
        (("--runtime-class", "runc"), "is containerd's default runtime"),
    ],
)
def test_configure_runtime_refuses_changes_containerd_would_misread(
    gpuop: RunCli, tmp_path: Path, flags: tuple[str, ...], message: str
) -> None:
    (tmp_path / "etc" / "containerd").mkdir(parents=True)
    run = gpuop("toolkit", "configure-runtime", "--root", str(tmp_path), *flags)
    assert run.code == 2
    assert message in run.stderr
    assert "Traceback" not in run.stdout + run.stderr
    assert list((tmp_path / "etc" / "containerd").iterdir()) == []


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--name", "My_VM"),
        ("--name", "-vm"),
        ("--name", "vm." * 30),
        ("--name", ""),
        ("--namespace", "a" * 64),
        ("--namespace", "Team A"),
    ],
)
def test_vmi_example_refuses_invalid_names(gpuop: RunCli, flag: str, value: str) -> None:
    run = gpuop("kubevirt", "vmi-example", "nvidia.com/GA102GL_A10", flag, value)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f"error: {flag} ")
    assert len(run.stderr.splitlines()) == 1


def test_vmi_example_keeps_valid_names(gpuop: RunCli) -> None:
    run = gpuop("kubevirt", "vmi-example", "nvidia.com/GA102GL_A10", "--name", "vdi-1", "-n", "vdi")
    assert run.code == 0, run.stderr
    assert "name: vdi-1\n" in run.stdout
