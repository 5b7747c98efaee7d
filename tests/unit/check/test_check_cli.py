"""`gpuop check` and `gpuop collect` on the command line: exit codes, formats, inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import corpus_gen
import pytest
import yaml
from click.testing import CliRunner

from gpuop.cli.check import check, collect, write_bundle
from gpuop.kube.collect import Collected

CORPUS = corpus_gen.CORPUS
HEALTHY = str(CORPUS / "healthy-lab.json")
DRIFTED = str(CORPUS / "drift-label-flip.json")


def run(*args: str, stdin: bytes | str | None = None) -> Any:
    return CliRunner().invoke(check, list(args), input=stdin, catch_exceptions=False)


def test_exit_0_when_healthy_and_1_with_errors() -> None:
    healthy = run(HEALTHY)
    assert healthy.exit_code == 0, healthy.output
    assert "No problems found." in healthy.stdout
    drifted = run(DRIFTED)
    assert drifted.exit_code == 1
    assert "GPU201" in drifted.stdout and "GPU301" in drifted.stdout


def test_warnings_only_exit_0() -> None:
    result = run(str(CORPUS / "operand-not-ready.json"), "-o", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["summary"]["warning"] == 1


@pytest.mark.parametrize(
    ("args", "stdin", "needle"),
    [
        ((), None, "give dump files"),
        (("/no/such/file.json",), None, "cannot read /no/such/file.json"),
        (("-",), b"\xc3\x28garbage", "not UTF-8"),
        (("-",), b"\xff\xfe\x00\xd8", "not UTF-16"),  # a byte-order mark, then a lone surrogate
        (("-",), b'{"kind": "Node", "metadata": {', "not valid JSON"),
        (("-",), b"- just\n- a list\n", "expected a Kubernetes object"),
        (("-",), b"kind: NodeList\nitems: 3\n", "'items' is"),
        (("--live", HEALTHY), None, "not both"),
        ((HEALTHY, "--context", "x"), None, "need --live"),
        ((HEALTHY, "--policy", HEALTHY.replace("healthy-lab", "nope")), None, "cannot read"),
        ((HEALTHY, "--pci-ids", HEALTHY), None, "no NVIDIA (vendor 10de) devices"),
        ((HEALTHY, "--pci-ids", "/no/such/pci.ids"), None, "cannot read /no/such/pci.ids"),
        (("-", "-"), b"{}", "once"),
        (("-", "--pci-ids", "-"), b"{}", "once"),
    ],
)
def test_exit_2_on_unreadable_input_with_one_line(
    args: tuple[str, ...], stdin: bytes | None, needle: str
) -> None:
    result = run(*args, stdin=stdin)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert needle in lines[0]
    assert "Traceback" not in result.output


def test_bad_option_value_is_a_usage_error() -> None:
    result = run(HEALTHY, "-o", "xml")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_json_output_fields() -> None:
    result = run(DRIFTED, "-o", "json")
    data = json.loads(result.stdout)
    assert set(data) == {
        "schema_version",
        "tool",
        "policy",
        "operator_release",
        "summary",
        "findings",
        "nodes",
    }
    assert data["schema_version"] == 1
    assert data["policy"]["sandbox_enabled"] is True
    finding = data["findings"][0]
    assert set(finding) >= {"code", "severity", "title", "kind", "name", "message", "hint"}
    assert {(f["code"], f["kind"], f["name"]) for f in data["findings"]} == {
        ("GPU201", "Node", "lab-1"),
        ("GPU301", "Node", "lab-1"),
    }
    assert data["summary"]["nodes_checked"] == 3


def test_sarif_output() -> None:
    result = run(str(CORPUS / "kubevirt-case-mismatch.json"), "-o", "sarif")
    assert result.exit_code == 1
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"GPU502", "GPU508", "GPU601"}
    names = {r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] for r in results}
    assert "KubeVirt/kubevirt/kubevirt" in names


def test_stdin_yaml_multi_document_and_several_files(tmp_path: Path) -> None:
    objects = json.loads(Path(DRIFTED).read_text())["items"]
    text = yaml.safe_dump_all(objects)
    from_stdin = run("-", "-o", "json", stdin=text)
    assert from_stdin.exit_code == 1
    nodes = [o for o in objects if o["kind"] == "Node"]
    rest = [o for o in objects if o["kind"] != "Node"]
    (tmp_path / "nodes.json").write_text(
        json.dumps({"kind": "NodeList", "apiVersion": "v1", "items": nodes})
    )
    (tmp_path / "rest.yaml").write_text(yaml.safe_dump_all(rest))
    split = run(str(tmp_path / "nodes.json"), str(tmp_path / "rest.yaml"), "-o", "json")
    assert json.loads(split.stdout)["findings"] == json.loads(from_stdin.stdout)["findings"]


def test_policy_override_file(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump(corpus_gen.policy_object(sandbox=False)))
    result = run(HEALTHY, "--policy", str(policy), "-o", "json")
    assert result.exit_code == 1
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert "GPU101" in codes


def test_pci_ids_option(tmp_path: Path) -> None:
    pci = tmp_path / "pci.ids"
    pci.write_bytes(
        b"# Version: 2099.01.01\n10de  NVIDIA Corporation\n\t2236  GA102GL [A10]\n\xe9\n"
    )
    result = run(HEALTHY, "--pci-ids", str(pci))
    assert result.exit_code == 0, result.output


def test_vgpu_config_option(tmp_path: Path) -> None:
    config = tmp_path / "vgpu.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "version": "v1",
                "vgpu-configs": {"default": [{"devices": "all", "vgpu-devices": {"A10-24Q": 1}}]},
            }
        )
    )
    result = run(HEALTHY, "--vgpu-config", str(config), "-o", "json")
    assert result.exit_code == 1
    assert "GPU203" in {f["code"] for f in json.loads(result.stdout)["findings"]}
    config.write_text("version: v2\n")
    bad = run(HEALTHY, "--vgpu-config", str(config))
    assert bad.exit_code == 2


def test_bundle_directory_round_trip(tmp_path: Path) -> None:
    objects = json.loads(Path(DRIFTED).read_text())["items"]
    collected = Collected(collected_at="2026-08-01T10:00:00Z")
    for obj in objects:
        collected.objects.setdefault(obj["kind"], []).append(obj)
    collected.skipped.append(("KubeVirt", "the CRD is not installed"))
    written = write_bundle(collected, tmp_path / "bundle", "lab")
    manifest = json.loads((tmp_path / "bundle" / "bundle.json").read_text())
    assert manifest["files"]["Node"] == {"file": "nodes.json", "count": 3}
    assert manifest["skipped"] == [{"kind": "KubeVirt", "reason": "the CRD is not installed"}]
    assert len(written) == len(manifest["files"]) + 1
    result = run(str(tmp_path / "bundle"), "-o", "json")
    assert result.exit_code == 1
    assert (
        json.loads(result.stdout)["findings"]
        == json.loads(run(DRIFTED, "-o", "json").stdout)["findings"]
    )


def test_directory_without_manifest_reads_every_dump(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(Path(HEALTHY).read_text())
    (tmp_path / "notes.txt").write_text("ignored")
    assert run(str(tmp_path)).exit_code == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(str(empty)).exit_code == 2


def test_collect_reports_an_unreachable_cluster(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    result = CliRunner().invoke(
        collect, ["--output-dir", str(tmp_path / "out"), "--kubeconfig", str(kubeconfig)]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines()[-1].startswith("error: cannot reach the cluster")
    live = run("--live", "--kubeconfig", str(tmp_path / "missing"))
    assert live.exit_code == 2
    assert "kubeconfig" in live.stderr


# The way `gpuop.cli.main` runs commands: a group, called with standalone_mode=False.
_MAIN = (
    "import sys, click; from gpuop.cli.check import check;"
    " group = click.Group('gpuop'); group.add_command(check);"
    " group(['check', *sys.argv[1:]], standalone_mode=False)"
)


@pytest.mark.parametrize(
    ("args", "stdin", "code"),
    [
        (["-"], b'{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": 7}}, 1]}', 2),
        ([DRIFTED, "-o", "json"], b"", 1),
    ],
)
def test_exit_codes_survive_the_gpuop_main_path(args: list[str], stdin: bytes, code: int) -> None:
    """In a real process, as `gpuop check` runs: the exit status and no traceback."""
    done = subprocess.run(
        [sys.executable, "-c", _MAIN, *args], input=stdin, capture_output=True, timeout=120
    )
    assert done.returncode == code, done.stderr
    assert b"Traceback" not in done.stderr
    if code == 2:
        assert done.stderr.decode().count("\n") == 1


def test_all_nodes_lists_every_node_with_its_manager() -> None:
    described = (
        Path(__file__).resolve().parents[2] / "data" / "describe" / "gke-l4-time-sharing.txt"
    )
    runner = CliRunner()
    plain = runner.invoke(check, [str(described), "-o", "json"])
    assert [n["name"] for n in json.loads(plain.stdout)["nodes"]] == [
        "gke-ml-shared-pool-5e1b7a90-x8vn"  # the one with a finding
    ]
    every = runner.invoke(check, [str(described), "-o", "json", "--all-nodes"])
    nodes = json.loads(every.stdout)["nodes"]
    assert len(nodes) == 3
    assert {n["management"]["managers"][0] for n in nodes} == {"gke"}
    assert all(n["management"]["evidence"] for n in nodes)
    text = runner.invoke(check, [str(described), "--all-nodes", "-o", "wide"]).stdout
    assert "Nodes:" in text
    assert "gke-ml-l4-pool-3f9a2c1d-7hxk  gke: " in text


def test_utf16_with_its_byte_order_mark_is_read() -> None:
    # What Windows PowerShell's `kubectl get nodes -o json > nodes.json` writes.
    text = (CORPUS / "operand-not-ready.json").read_text(encoding="utf-8")
    result = run("-", "-o", "json", stdin=text.encode("utf-16"))
    assert result.exit_code == 0
    assert json.loads(result.stdout)["summary"]["warning"] == 1
