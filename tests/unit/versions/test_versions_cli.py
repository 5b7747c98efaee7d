"""`gpuop versions check` and `gpuop upgrade preview` on the command line.

Exit codes, one-line errors, and golden outputs for `upgrade preview` in
tests/golden/upgrade/ (regenerate after an intended change with
`.venv/bin/pytest tests/unit/versions/test_versions_cli.py --update-golden` and review the diff).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from click.testing import CliRunner, Result

from gpuop.cli.versions import upgrade, versions
from kit.golden import GoldenCheck, golden_in
from kit.versions_support import GOLDEN_DIR, cluster_policy, cpu_node, gpu_node

INPUTS = GOLDEN_DIR / "inputs"
TODAY = ("--today", "2026-11-29")


def invoke(group: Any, *args: str, stdin: str | None = None) -> Result:
    # At a terminal, text wraps at $COLUMNS: a fixed width keeps the golden files the same
    # in every shell.
    runner = CliRunner(env={"COLUMNS": "100"})
    with mock.patch("gpuop.cli.common.stdout_is_terminal", return_value=True):
        return runner.invoke(group, list(args), input=stdin, catch_exceptions=False)


@pytest.fixture
def golden(update_golden: bool) -> GoldenCheck:
    return golden_in(GOLDEN_DIR, update=update_golden)


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "dump.json"
    items = [
        cluster_policy("26.7.0"),
        gpu_node("gpu-1"),
        gpu_node("gpu-2", driver="580.126.20"),
        cpu_node("cpu-1"),
    ]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


# --- versions check ----------------------------------------------------------------------


def test_check_exit_0_with_warnings_only(dump: Path) -> None:
    result = invoke(versions, "check", str(dump), *TODAY)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("gpuop versions check: 3 nodes (2 with GPUs)")
    assert "VER301" in result.stdout


def test_check_exit_1_with_errors(dump: Path) -> None:
    result = invoke(versions, "check", str(dump), "--kubernetes-version", "v1.31.4", *TODAY)
    assert result.exit_code == 1
    assert "Cluster control-plane" in result.stdout and "VER101" in result.stdout


def test_check_reads_stdin_and_bundles(dump: Path, tmp_path: Path) -> None:
    piped = invoke(versions, "check", "-", *TODAY, stdin=dump.read_text())
    assert piped.exit_code == 0
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "nodes.json").write_text(dump.read_text())
    assert invoke(versions, "check", str(bundle), *TODAY).exit_code == 0


def test_check_json_and_sarif(dump: Path) -> None:
    data = json.loads(invoke(versions, "check", str(dump), "-o", "json", *TODAY).stdout)
    assert data["tool"]["name"] == "gpuop versions check"
    assert data["versions"]["operator_release"] == "26.7.0"
    assert {f["code"] for f in data["findings"]} == {"VER205", "VER301"}
    sarif = json.loads(invoke(versions, "check", str(dump), "-o", "sarif", *TODAY).stdout)
    assert sarif["version"] == "2.1.0"
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} == {"VER205", "VER301"}


def test_check_with_a_policy_file_and_a_release(dump: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(cluster_policy("25.10.1")))
    result = invoke(versions, "check", str(dump), "--policy", str(policy), "-o", "json", *TODAY)
    assert json.loads(result.stdout)["versions"]["release"] == "25.10.1"
    result = invoke(versions, "check", str(dump), "--operator-release", "v26.3.3", "-o", "json")
    assert json.loads(result.stdout)["versions"]["source"] == "option"
    # `gpuop check` spells the option --operator-version: both commands take both names.
    same = invoke(versions, "check", str(dump), "--operator-version", "v26.3.3", "-o", "json")
    assert same.stdout == result.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ("--kubernetes-version", "one.two"),
            "--kubernetes-version: 'one.two' is not a Kubernetes",
        ),
        (
            ("--operator-release", "26.7"),
            "--operator-release: '26.7' is not a GPU Operator release",
        ),
        (("--today", "tomorrow"), "--today 'tomorrow': expected a date"),
        (("--context", "lab"), "--kubeconfig and --context need --live"),
        (("--live",), "not both"),
        (("--policy", "/no/such/policy.yaml"), "cannot read /no/such/policy.yaml"),
    ],
)
def test_check_exit_2_with_one_line(dump: Path, args: tuple[str, ...], needle: str) -> None:
    result = invoke(versions, "check", str(dump), *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], result.stderr
    assert "Traceback" not in result.output


def test_check_without_input_or_with_bad_input() -> None:
    assert invoke(versions, "check").exit_code == 2
    result = invoke(versions, "check", "/no/such/dump.json")
    assert result.exit_code == 2 and "cannot read /no/such/dump.json" in result.stderr
    broken = invoke(versions, "check", "-", stdin='{"kind": "Node", "metadata": {')
    assert broken.exit_code == 2 and "not valid JSON" in broken.stderr


def test_an_unknown_release_is_a_finding_not_an_error(dump: Path) -> None:
    result = invoke(versions, "check", str(dump), "--operator-release", "27.1.0", *TODAY)
    assert result.exit_code == 0
    assert "VER001" in result.stdout and "27.1.0 is not in gpuop's version matrix" in result.stdout


def test_check_live_uses_the_server_version(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from gpuop.kube.versions import VersionInputs

    def fake_live(target: Any, quiet: bool = False) -> VersionInputs:
        return VersionInputs([cluster_policy("26.7.0"), gpu_node("gpu-1")], "v1.31.4-eks-abc")

    # `gpuop.cli.versions` as an attribute is the click group the package exports; patch the module.
    monkeypatch.setattr(sys.modules["gpuop.cli.versions"], "_live", fake_live)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "current-context: lab\ncontexts: [{name: lab, context: {cluster: lab-cluster}}]\n"
        "clusters: [{name: lab-cluster, cluster: {server: 'https://10.0.0.1:6443'}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    result = invoke(versions, "check", "--live", "-o", "json", *TODAY)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["versions"]["kubernetes"] == "v1.31.4-eks-abc"
    assert data["versions"]["kubernetes_source"] == "API server /version"
    # The report names the cluster it read (kubectl's rule: $KUBECONFIG here).
    assert data["cluster"] == {
        "cluster": "lab-cluster",
        "server": "https://10.0.0.1:6443",
        "context": "lab",
        "kubeconfig": str(kubeconfig),
    }
    text = invoke(versions, "check", "--live", *TODAY)
    # Under the title (two lines when it wraps at 100 columns).
    cluster_line = "cluster lab-cluster (https://10.0.0.1:6443), context lab"
    assert cluster_line in text.stdout.splitlines()[1:3]


# --- upgrade preview ---------------------------------------------------------------------


def test_golden_patch_upgrade(monkeypatch: pytest.MonkeyPatch, golden: GoldenCheck) -> None:
    monkeypatch.chdir(INPUTS)
    result = invoke(upgrade, "preview", "25.3.3", "25.3.4", "--dump", "nodes.json", *TODAY)
    assert result.exit_code == 0, result.output
    golden("patch-25.3.3-to-25.3.4.txt", result.stdout)


def test_golden_driver_branch_change(monkeypatch: pytest.MonkeyPatch, golden: GoldenCheck) -> None:
    monkeypatch.chdir(INPUTS)
    result = invoke(
        upgrade,
        "preview",
        "policy-26.3.2.yaml",
        "policy-26.3.2-driver-595.yaml",
        "--dump",
        "nodes.json",
        *TODAY,
    )
    assert result.exit_code == 0, result.output
    golden("driver-branch-580-to-595.txt", result.stdout)


@pytest.mark.parametrize("fmt", ["txt", "json"])
def test_golden_operator_and_kubernetes_move(
    monkeypatch: pytest.MonkeyPatch, golden: GoldenCheck, fmt: str
) -> None:
    monkeypatch.chdir(INPUTS)
    args = ["26.3.3", "26.7.0", "--dump", "nodes.json", "--kubernetes-from", "1.32"]
    args += ["--kubernetes-to", "1.33", *TODAY, "-o", "json" if fmt == "json" else "text"]
    result = invoke(upgrade, "preview", *args)
    assert result.exit_code == 0, result.output
    assert "VER401" in result.stdout
    golden(f"operator-and-kubernetes.{fmt}", result.stdout)


def test_preview_without_nodes_and_with_a_policy_for_placement(tmp_path: Path) -> None:
    policy = tmp_path / "sandbox.yaml"
    policy.write_text(yaml.safe_dump(cluster_policy(spec={"sandboxWorkloads": {"enabled": True}})))
    result = invoke(upgrade, "preview", "26.3.3", "26.7.0", "--policy", str(policy), *TODAY)
    assert result.exit_code == 0
    assert "Nodes: none given" in result.stdout
    assert "sandbox-validator" in result.stdout  # deployed once sandbox workloads are on


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("26.3.3", "27.0.0"), "27.0.0: not an operator release gpuop knows"),
        (("26.3.3", "nope"), "nope: no such file, and not an operator release"),
        (("26.3", "26.7.0"), "26.3: no such file"),
        (("26.3.3", "26.7.0", "--kubernetes-from", "1.32"), "together"),
        (("26.3.3", "26.7.0", "--kubernetes-from", "x", "--kubernetes-to", "1.33"), "'x'"),
        (("26.3.3", "26.7.0", "--live", "--dump", "n.json"), "not both"),
        (("26.3.3", "26.7.0", "--today", "2026-13-01"), "--today"),
    ],
)
def test_preview_exit_2_with_one_line(args: tuple[str, ...], needle: str) -> None:
    result = invoke(upgrade, "preview", *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], result.stderr


def test_preview_rejects_a_file_without_a_valid_cluster_policy(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("kind: ConfigMap\nmetadata: {name: x}\n")
    result = invoke(upgrade, "preview", str(empty), "26.7.0")
    assert result.exit_code == 2 and "expected ClusterPolicy, got 'ConfigMap'" in result.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cluster_policy(spec={"driver": {"enabled": "yes"}})))
    result = invoke(upgrade, "preview", str(bad), "26.7.0")
    assert result.exit_code == 2 and "not a valid ClusterPolicy" in result.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("versions", "check", "DUMP", *TODAY), 0),
        (("versions", "check", "DUMP", "--kubernetes-version", "1.31", *TODAY), 1),
        (("versions", "check", "DUMP", "--kubernetes-version", "x"), 2),
        (("upgrade", "preview", "26.3.3", "26.7.0", *TODAY), 0),
        (("upgrade", "preview", "26.3.3", "nope"), 2),
    ],
)
def test_exit_codes_survive_gpuops_main(
    monkeypatch: pytest.MonkeyPatch, dump: Path, args: tuple[str, ...], code: int
) -> None:
    """Registered in `gpuop.cli` (as the maintainer will), through `main` as the script runs."""
    import sys

    from gpuop.cli import cli, main

    monkeypatch.setitem(cli.commands, "versions", versions)
    monkeypatch.setitem(cli.commands, "upgrade", upgrade)
    argv = ["gpuop", *(str(dump) if arg == "DUMP" else arg for arg in args)]
    runner = CliRunner()
    with runner.isolation() as (_stdout, stderr, _):
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as exit_info:
            main()
    assert exit_info.value.code == code, stderr.getvalue()


def test_wide_preview_names_every_disrupted_node(tmp_path: Path) -> None:
    """`-o wide` (and a pipe) never ends a list of nodes with `and N more`."""
    dump = json.loads((INPUTS / "nodes.json").read_text())
    items = dump["items"] if isinstance(dump, dict) else dump
    template = items[0]
    many = []
    for index in range(20):
        node = json.loads(json.dumps(template))
        node["metadata"]["name"] = f"gpu-many-{index:02d}"
        many.append(node)
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": many}))
    args = ("preview", "26.3.3", "26.7.0", "--dump", str(path), *TODAY)
    wide = invoke(upgrade, *args, "-o", "wide")
    assert wide.exit_code == 0, wide.output
    assert " more" not in wide.output
    assert all(f"gpu-many-{index:02d}" in wide.output for index in range(20))
    text = invoke(upgrade, *args)
    assert "and 8 more" in text.output
