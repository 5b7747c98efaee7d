"""Managing findings: --severity, --fail-on, --ignore, .gpuop.yaml, gpuop.io/ignore, grouping."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from unittest import mock

import corpus_gen
import pytest
from click.testing import CliRunner

from gpuop.check import run_checks
from gpuop.check.filters import FilterError, FindingFilter, IgnoreRule, build_filter
from gpuop.check.model import Finding
from gpuop.cli.check import check

CORPUS = corpus_gen.CORPUS
DRIFTED = str(CORPUS / "drift-label-flip.json")  # GPU201 + GPU301 errors on Node lab-1
WARNING_ONLY = str(CORPUS / "operand-not-ready.json")  # one GPU307 warning on a Pod
MIXED = str(CORPUS / "workloads-unadvertised-request.json")  # GPU602 warning, GPU601 error
NOT_PERMITTED = CORPUS / "kubevirt-not-permitted.json"


def run(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(check, list(args), input=stdin, catch_exceptions=False)


def codes(result: Any) -> list[tuple[str, str]]:
    data = json.loads(result.stdout)
    return [(item["code"], f"{item['kind']}/{item['name']}") for item in data["findings"]]


@pytest.fixture(autouse=True)
def _no_config_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs where no .gpuop.yaml is, unless it writes one."""
    monkeypatch.chdir(tmp_path)


def test_fail_on_warning_makes_warnings_fail() -> None:
    assert run(WARNING_ONLY).exit_code == 0
    assert run(WARNING_ONLY, "--fail-on", "warning").exit_code == 1
    assert run(WARNING_ONLY, "--fail-on", "WARNING").exit_code == 1


def test_severity_hides_lower_findings_and_counts_them() -> None:
    result = run(MIXED, "--severity", "error", "-o", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert [item["code"] for item in data["findings"]] == ["GPU601"]
    assert data["summary"]["suppressed"] == {"below_severity": 1}
    assert data["summary"]["by_code"] == {"GPU601": 1}
    text = run(MIXED, "--severity", "error")
    assert "1 not shown: 1 below --severity" in text.stdout


def test_fail_on_below_the_shown_severity_is_refused() -> None:
    result = run(MIXED, "--severity", "error", "--fail-on", "warning")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: fail-on warning with severity error")


@pytest.mark.parametrize(
    ("pattern", "left"),
    [
        ("GPU201", {"GPU301"}),
        ("gpu2*", {"GPU301"}),
        ("GPU201:Node/lab-1", {"GPU301"}),
        ("GPU201:node/lab-*", {"GPU301"}),
        ("GPU201:Node/lab-2", {"GPU201", "GPU301"}),
        ("*:Node/lab-1", set()),
    ],
)
def test_ignore_patterns(pattern: str, left: set[str]) -> None:
    result = run(DRIFTED, "--ignore", pattern, "-o", "json")
    assert {code for code, _ in codes(result)} == left
    assert result.exit_code == (1 if left else 0)


def test_ignore_namespaced_objects_with_and_without_namespace() -> None:
    for pattern in ("GPU307:Pod/nvidia-driver-*", "GPU307:Pod/*/nvidia-driver-daemonset-dafcb"):
        result = run(WARNING_ONLY, "--ignore", pattern, "-o", "json")
        assert codes(result) == [], pattern


@pytest.mark.parametrize("pattern", ["", ":Node/x", "GPU201:Node", "GPU201:/x", "GPU201:Node/"])
def test_bad_ignore_pattern_is_exit_2(pattern: str) -> None:
    result = run(DRIFTED, "--ignore", pattern)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ignore ")
    assert "Traceback" not in result.output


def test_config_file_in_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / ".gpuop.yaml").write_text(
        "severity: warning\nfail-on: warning\nignore:\n  - GPU201:Node/lab-1\n"
    )
    result = run(DRIFTED, "-o", "json")
    assert {code for code, _ in codes(result)} == {"GPU301"}
    assert run(WARNING_ONLY).exit_code == 1  # fail-on: warning from the file
    # Flags win over the file; --ignore adds to its list.
    assert run(WARNING_ONLY, "--fail-on", "error").exit_code == 0
    both = run(DRIFTED, "--ignore", "GPU301", "-o", "json")
    assert codes(both) == []


def test_config_file_given_by_flag(tmp_path: Path) -> None:
    config = tmp_path / "ci.yaml"
    config.write_text("ignore: GPU307\n")
    assert codes(run(WARNING_ONLY, "--config", str(config), "-o", "json")) == []


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("severity: loud\n", "severity 'loud'"),
        ("fail_on: warning\n", "unknown key 'fail_on'"),
        ("- a list\n", "expected a mapping"),
        ("ignore: {a: 1}\n", "ignore must be a list"),
        ("ignore: [3]\n", "ignore must be a list"),
        ("annotations: maybe\n", "annotations must be true or false"),
        ("severity: [1]\n", "severity must be one of"),
        ("a: [\n", "not valid YAML"),
    ],
)
def test_bad_config_file_is_exit_2(tmp_path: Path, content: str, needle: str) -> None:
    (tmp_path / ".gpuop.yaml").write_text(content)
    result = run(DRIFTED)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_config_file_is_exit_2() -> None:
    result = run(DRIFTED, "--config", "/no/such/gpuop.yaml")
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_empty_config_file_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / ".gpuop.yaml").write_text("# nothing yet\n")
    assert run(DRIFTED).exit_code == 1


def _annotated(path: str, kind: str, name: str, value: str) -> str:
    data = json.loads(Path(path).read_text())
    items = data.get("items", [data])
    for item in items:
        if item.get("kind") == kind and item["metadata"]["name"] == name:
            item["metadata"].setdefault("annotations", {})["gpuop.io/ignore"] = value
    return json.dumps(data)


def test_annotation_suppresses_codes_for_that_object() -> None:
    dump = _annotated(DRIFTED, "Node", "lab-1", "GPU201, gpu30*")
    result = run("-", "-o", "json", stdin=dump)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["findings"] == []
    assert data["summary"]["suppressed"] == {"annotation": 2}
    # The config file can switch annotations off.
    config = Path(".gpuop.yaml")
    config.write_text("annotations: false\n")
    assert run("-", stdin=dump).exit_code == 1


def test_annotation_on_a_pod() -> None:
    dump = _annotated(WARNING_ONLY, "Pod", "nvidia-driver-daemonset-dafcb", "GPU307")
    result = run("-", "-o", "json", "--fail-on", "warning", stdin=dump)
    assert result.exit_code == 0
    assert codes(result) == []


def _many_pending_vmis(copies: int) -> str:
    data = json.loads(NOT_PERMITTED.read_text())
    items = data["items"]
    pending = next(
        item
        for item in items
        if item["kind"] == "VirtualMachineInstance" and item["metadata"]["name"] == "vm-vgpu-1"
    )
    for number in range(copies):
        clone = copy.deepcopy(pending)
        clone["metadata"]["name"] = f"vm-copy-{number:03d}"
        clone["metadata"]["uid"] = f"copy-{number}"
        items.append(clone)
    return json.dumps(data)


def test_identical_findings_print_once_with_a_count() -> None:
    dump = _many_pending_vmis(40)
    text = run("-", stdin=dump)
    assert text.exit_code == 1
    out = text.stdout
    assert out.count("GPU506 failed to render launch manifest: GPU") == 1
    # The first of the 41 (by name) carries them; the others are named, not repeated.
    assert "VirtualMachineInstance vms/vm-copy-000\n" in out
    assert "×41: also on VirtualMachineInstance vms/vm-copy-001," in out
    assert "VirtualMachineInstance vms/vm-copy-039\n" not in out
    # In a pipe every other place is named; at a terminal three, then a count.
    assert "and 37 more" not in out and "vms/vm-copy-039, " in out
    with mock.patch("gpuop.cli.common.stdout_is_terminal", return_value=True):
        at_terminal = CliRunner(env={"COLUMNS": "120"}).invoke(
            check, ["-"], input=dump, catch_exceptions=False
        )
    assert "and 37 more" in at_terminal.stdout
    assert "43 errors, 0 warnings, 0 info" in out
    # JSON keeps every finding, and counts them by code.
    data = json.loads(run("-", "-o", "json", stdin=dump).stdout)
    assert data["summary"]["by_code"] == {"GPU501": 1, "GPU506": 42}
    assert len(data["findings"]) == 43


def test_name_output_lists_objects_with_findings_for_ignore() -> None:
    result = run(MIXED, "-o", "name")
    assert result.exit_code == 1
    names = result.stdout.splitlines()
    assert names == ["Node/gpu-2", "Pod/ml/passthrough-test"]
    # Each line works as an --ignore subject.
    ignores = [arg for name in names for arg in ("--ignore", f"*:{name}")]
    assert run(MIXED, *ignores, "-o", "json").exit_code == 0


def test_yaml_output_is_the_json_document() -> None:
    import yaml

    as_yaml = yaml.safe_load(run(DRIFTED, "-o", "yaml").stdout)
    as_json = json.loads(run(DRIFTED, "-o", "json").stdout)
    assert as_yaml == as_json


def test_filename_flag_is_the_same_as_files() -> None:
    assert run("-f", DRIFTED, "-o", "json").stdout == run(DRIFTED, "-o", "json").stdout


# --- the pure filter --------------------------------------------------------------------


def _finding(code: str, severity: Any, kind: str = "Node", name: str = "n1") -> Finding:
    return Finding(code, severity, kind, name, "message", "hint")


def test_filter_defaults_change_nothing() -> None:
    report = run_checks(corpus_gen.kubevirt_not_permitted())
    assert FindingFilter().apply(report).findings == report.findings
    assert FindingFilter().is_default


def test_ignore_rule_parse_and_str() -> None:
    assert str(IgnoreRule.parse(" gpu201 : Node/x ")) == "GPU201:node/x"
    assert IgnoreRule.parse("GPU2*").matches(_finding("GPU201", "error"))
    assert not IgnoreRule.parse("GPU3*").matches(_finding("GPU201", "error"))


def test_build_filter_rejects_bad_values() -> None:
    with pytest.raises(FilterError):
        build_filter(severity="loud")
    with pytest.raises(FilterError):
        build_filter(severity="error", fail_on="info")
    assert build_filter(fail_on="warning").fail_on == "warning"


def test_findings_that_name_their_own_node_group_too() -> None:
    """GPU206 on 50 nodes ("check `lspci` on NODE") prints once, the fix saying "the node"."""
    labels = {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-A10",
        "nvidia.com/gpu.count": "2",
    }
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"gpu-{index:03d}", "labels": labels},
            "status": {"allocatable": {"nvidia.com/gpu": "1"}},
        }
        for index in range(50)
    ]
    dump = json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes})
    out = run("-", stdin=dump).stdout
    assert out.count("GPU206") == 1
    assert "×50: also on Node gpu-001" in out
    assert "on the node:" in out and "on gpu-000:" not in out
    data = json.loads(run("-", "-o", "json", stdin=dump).stdout)
    assert data["summary"]["by_code"]["GPU206"] == 50


def test_a_broken_config_whose_path_says_empty_is_still_refused(tmp_path: Path) -> None:
    """Only an empty config counts as none: the path is no part of the decision."""
    folder = tmp_path / "empty-dir"
    folder.mkdir()
    broken = folder / "empty.yaml"
    broken.write_text("a: [\n")
    result = run(DRIFTED, "--config", str(broken))
    assert result.exit_code == 2 and "not valid YAML" in result.stderr
    blank = folder / "blank.yaml"
    blank.write_text("# nothing configured\n")
    assert run(DRIFTED, "--config", str(blank)).exit_code != 2
