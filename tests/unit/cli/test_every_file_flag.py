"""The hostile corpus through every flag and argument of every command that reads a file.

`test_deep_input.py` holds the corpus (deep, binary, truncated, wide, long files) and
drives the main inputs one process each; this drives every other file-taking parameter,
found by walking the command tree (what completes as a file), so a new flag cannot be
left out. Each parameter's cases run in one child process (a signal would kill the test
runner with it): unreadable input ends with exit 2 and one `error:` line naming the file;
large input gets an answer; never a signal, a traceback or a hang.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from test_deep_input import FILES, POLICY, write_files

from gpuop.cli import _FILE_METAVARS, cli

DUMP = Path(__file__).parents[2] / "corpus" / "check" / "healthy-lab.json"

# Every file-taking parameter (command, its option or argument) and the command line that
# gives it the FILE, with how it reads: "objects" (YAML or JSON: unreadable is one error
# line), "verdict" (a validator: an unreadable or invalid document is its answer, exit 2)
# or "lines" (pci.ids, `names -f`: any bytes are input, judged line by line).
CASES: dict[tuple[str, str], tuple[str, str]] = {
    ("adopt", "files"): ("adopt FILE", "objects"),
    ("adopt", "-f"): ("adopt -f FILE", "objects"),
    ("adopt", "--kubeconfig"): ("adopt --live --kubeconfig FILE", "objects"),
    ("audit", "--policy"): ("audit --policy FILE", "objects"),
    ("check", "files"): ("check FILE", "objects"),
    ("check", "-f"): ("check -f FILE", "objects"),
    ("check", "--kubeconfig"): ("check --live --kubeconfig FILE", "objects"),
    ("check", "--policy"): ("check DUMP --policy FILE", "objects"),
    ("check", "--pci-ids"): ("check DUMP --pci-ids FILE", "lines"),
    ("check", "--vgpu-config"): ("check DUMP --vgpu-config FILE", "objects"),
    ("check", "--config"): ("check DUMP --config FILE", "objects"),
    ("collect", "--kubeconfig"): ("collect --kubeconfig FILE -d OUT", "objects"),
    ("explain", "manifests"): ("explain FILE --cluster DUMP", "objects"),
    ("explain", "-f"): ("explain -f FILE --cluster DUMP", "objects"),
    ("explain", "--kubeconfig"): ("explain --all-pending --live --kubeconfig FILE", "objects"),
    ("explain", "--cluster"): ("explain --all-pending --cluster FILE", "objects"),
    ("kubevirt check", "files"): ("kubevirt check FILE", "objects"),
    ("kubevirt check", "-f"): ("kubevirt check -f FILE", "objects"),
    ("kubevirt check", "--kubeconfig"): ("kubevirt check --live --kubeconfig FILE", "objects"),
    ("kubevirt check", "--pci-ids"): ("kubevirt check DUMP --pci-ids FILE", "lines"),
    ("kubevirt check", "--config"): ("kubevirt check DUMP --config FILE", "objects"),
    ("kubevirt permitted-devices", "files"): ("kubevirt permitted-devices FILE", "objects"),
    ("kubevirt permitted-devices", "-f"): ("kubevirt permitted-devices -f FILE", "objects"),
    ("kubevirt permitted-devices", "--kubeconfig"): (
        "kubevirt permitted-devices --live --kubeconfig FILE",
        "objects",
    ),
    ("kubevirt permitted-devices", "--pci-ids"): (
        "kubevirt permitted-devices DUMP --pci-ids FILE",
        "lines",
    ),
    ("kubevirt vmi-example", "--cluster"): ("kubevirt vmi-example n1 --cluster FILE", "objects"),
    ("kubevirt vmi-example", "-f"): ("kubevirt vmi-example n1 -f FILE", "objects"),
    ("kubevirt vmi-example", "--kubeconfig"): (
        "kubevirt vmi-example n1 --live --kubeconfig FILE",
        "objects",
    ),
    ("kubevirt vmi-example", "--values"): (
        "kubevirt vmi-example --values FILE --resource-from-values a.b",
        "objects",
    ),
    ("names pci", "-f"): ("names pci -f FILE", "lines"),
    ("names pci", "--pci-ids"): ("names pci 2236 --pci-ids FILE", "lines"),
    ("names vgpu", "-f"): ("names vgpu -f FILE", "lines"),
    ("plan", "--node"): ("plan --node FILE", "objects"),
    ("plan", "-f"): ("plan -f FILE", "objects"),
    ("plan", "--policy"): ("plan --gpu A10 --policy FILE", "objects"),
    ("plan", "--gpu-cluster"): ("plan --gpu A10 --gpu-cluster FILE", "objects"),
    ("plan", "--pci-ids"): ("plan --gpu A10 --pci-ids FILE", "lines"),
    ("policy validate", "files"): ("policy validate FILE", "verdict"),
    ("policy validate", "-f"): ("policy validate -f FILE", "verdict"),
    ("render", "--policy"): ("render --policy FILE", "objects"),
    ("render", "--nodes"): ("render --policy POLICY --nodes FILE", "objects"),
    ("render", "-f"): ("render -f FILE", "objects"),
    ("operator run", "--kubeconfig"): (
        "operator run --kubeconfig FILE --metrics-port 0 --health-probe-port 0",
        "objects",
    ),
    ("sim apply", "file"): ("sim apply FILE --kubeconfig MISSING", "objects"),
    ("sim apply", "--kubeconfig"): ("sim apply SPEC --kubeconfig FILE", "objects"),
    ("sim drift", "--kubeconfig"): ("sim drift n1 stale-resource --kubeconfig FILE", "objects"),
    ("sim node add", "--kubeconfig"): ("sim node add n1 --gpu A10 --kubeconfig FILE", "objects"),
    ("sim node list", "--kubeconfig"): ("sim node list --kubeconfig FILE", "objects"),
    ("sim node rm", "--kubeconfig"): ("sim node rm n1 --kubeconfig FILE", "objects"),
    ("sim run", "--kubeconfig"): ("sim run --kubeconfig FILE", "objects"),
    ("sim run", "--pci-ids"): ("sim run --pci-ids FILE", "lines"),
    ("upgrade preview", "--dump"): ("upgrade preview 26.3.3 26.7.0 -f FILE", "objects"),
    ("upgrade preview", "--kubeconfig"): (
        "upgrade preview 26.3.3 26.7.0 --live --kubeconfig FILE",
        "objects",
    ),
    ("upgrade preview", "--policy"): ("upgrade preview 26.3.3 26.7.0 --policy FILE", "objects"),
    ("versions check", "files"): ("versions check FILE", "objects"),
    ("versions check", "-f"): ("versions check -f FILE", "objects"),
    ("versions check", "--kubeconfig"): ("versions check --live --kubeconfig FILE", "objects"),
    ("versions check", "--policy"): ("versions check DUMP --policy FILE", "objects"),
    ("versions check", "--config"): ("versions check DUMP --config FILE", "objects"),
}
# Readable, only large (a tenth of test_deep_input's, which reads them at full size on the
# main inputs): an answer, any exit status but a crash's.
ODD_FILES = {
    "wide.yaml": "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n"
    + "".join(f"    k{i}: v\n" for i in range(20_000)),
    "long.yaml": "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: "
    + "a" * 300_000
    + "\n",
}
# Parameters that name a file gpuop writes, not one it reads.
WRITTEN = {("collect", "--output-dir")}

# Runs one parameter's cases in this child process, one JSON line per case.
_DRIVER = """
import contextlib, io, json, sys
import gpuop.cli as cli
for case in json.loads(sys.argv[1]):
    err = io.StringIO()
    sys.argv = ["gpuop", *case["args"]]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            cli.main()
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    print(json.dumps({"file": case["file"], "code": code, "stderr": err.getvalue()}), flush=True)
"""


def _file_parameters() -> set[tuple[str, str]]:
    """(command, first option or the argument's name) of every parameter that takes a file."""
    found: set[tuple[str, str]] = set()

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group):
            context = click.Context(command)
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                assert sub is not None
                walk(sub, [*path, name])
            return
        for param in command.params:
            if any(word in (param.metavar or "") for word in _FILE_METAVARS):
                name = param.name if isinstance(param, click.Argument) else param.opts[0]
                found.add((" ".join(path), str(name)))

    walk(cli, [])
    return found


def test_every_file_parameter_meets_the_hostile_corpus() -> None:
    missing = _file_parameters() - set(CASES) - WRITTEN
    assert not missing, f"file-taking parameters the corpus does not reach: {sorted(missing)}"
    files = len(FILES) + len(ODD_FILES)
    print(f"hostile corpus: {len(CASES)} parameters x {files} files = {len(CASES) * files} cases")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("hostile"), {**FILES, **ODD_FILES})


@pytest.mark.parametrize("parameter", sorted(CASES), ids=" ".join)
def test_hostile_files_through_the_parameter(
    hostile: Path, tmp_path: Path, parameter: tuple[str, str]
) -> None:
    template, reading = CASES[parameter]
    spec = tmp_path / "spec.yaml"
    spec.write_text("nodes:\n  - {name: n1, gpu: A10, count: 1}\n")
    cases = []
    for file in sorted({**FILES, **ODD_FILES}):
        words = template.split()
        args = [
            {
                "FILE": str(hostile / file),
                "DUMP": str(DUMP),
                "POLICY": str(POLICY),
                "OUT": str(tmp_path / "out"),
                "MISSING": str(tmp_path / "no-kubeconfig"),
                "SPEC": str(spec),
            }.get(word, word)
            for word in words
        ]
        cases.append({"file": file, "args": args})
    child = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    results = [json.loads(line) for line in child.stdout.splitlines() if line.startswith("{")]
    assert child.returncode == 0 and len(results) == len(cases), (
        f"{template}: the process ended with {child.returncode} after"
        f" {[r['file'] for r in results]}: {child.stderr[-800:]}"
    )
    for result in results:
        where = f"{template} with {result['file']}: exit {result['code']}: {result['stderr']!r}"
        stderr = result["stderr"]
        assert "Traceback" not in stderr and "internal error" not in stderr, where
        assert result["code"] in (0, 1, 2), where
        lines = stderr.strip().splitlines()
        if result["code"] == 2 and reading == "objects":
            assert lines and lines[-1].startswith("error: "), where
        if result["file"] in FILES and reading != "lines":
            assert result["code"] == 2, where
        if result["file"] in FILES and reading == "objects":
            assert result["code"] == 2, where
            errors = [line for line in lines if line.startswith("error: ")]
            assert len(errors) == 1 and result["file"] in errors[0], where
