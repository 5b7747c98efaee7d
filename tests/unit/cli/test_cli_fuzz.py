"""Every file-reading command and flag combination against hostile input, in-process.

Each case runs `gpuop.cli.main` with generated files: no traceback on any stream, an exit
status from the documented table (0, 1, 2; 3 is a gpuop bug and fails the test), and no
case past 10 seconds. The full product is over 10,000 cases and carries the `fuzz` marker
(`make test` and CI run it; `make unit` and `-m "not fuzz"` leave it out); a sample of it
always runs.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from fuzzing import scaled

from gpuop.cli import main

HANG_SECONDS = 10.0
# Inputs that take most of a second to read: run once per command, without the flag variants.
HEAVY = {"huge-list-3000-nodes", "long-line", "many-docs", "yaml-bomb", "nested-yaml-block"}
DOCUMENTED = {0, 1, 2}
EXPLAIN_POD = str(Path(__file__).resolve().parents[2] / "corpus" / "explain" / "pod-gpu.yaml")
EXPLAIN_NODES = str(Path(__file__).resolve().parents[2] / "corpus" / "explain" / "nodes.json")


def _nested(depth: int) -> bytes:
    """JSON nested `depth` levels (written as text: json.dumps itself recurses)."""
    return b'{"a": [' * depth + b"1" + b"]}" * depth


def _node(**extra: object) -> dict[str, object]:
    node: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"nvidia.com/gpu.present": "true"}},
        "status": {"allocatable": {"nvidia.com/gpu": "2"}, "capacity": {"nvidia.com/gpu": "2"}},
    }
    node.update(extra)
    return node


def inputs() -> dict[str, bytes]:
    """Named hostile inputs: nesting, size, emptiness, wrong kinds, bytes, numbers."""
    huge_list = {
        "kind": "List",
        "items": [_node(metadata={"name": f"n{i}"}) for i in range(3000)],
    }
    cases: dict[str, object | bytes] = {
        "empty": b"",
        "whitespace": b"  \n\t\n",
        "null": b"null",
        "yaml-null": b"~\n",
        "zero": b"0",
        "string": b'"just a string"',
        "list-of-ints": b"[1, 2, 3]",
        "empty-object": b"{}",
        "empty-list": {"kind": "List", "items": []},
        "configmap-only": {"kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}},
        "wrong-kind": {"kind": "Secret", "metadata": {"name": "x"}},
        "kind-number": {"kind": 7, "metadata": {"name": "x"}},
        "items-string": {"kind": "List", "items": "nope"},
        "items-of-garbage": {"kind": "List", "items": [1, "a", None, [], {}]},
        "node": _node(),
        "node-metadata-list": _node(metadata=[1, 2]),
        "node-labels-string": _node(metadata={"name": "n", "labels": "x=y"}),
        "node-huge-number": _node(
            status={"allocatable": {"nvidia.com/gpu": "9" * 40}, "capacity": {"x": 10**40}}
        ),
        "node-negative": _node(status={"allocatable": {"nvidia.com/gpu": "-5"}}),
        "node-float": _node(status={"allocatable": {"nvidia.com/gpu": 1e308}}),
        "node-name-huge": _node(metadata={"name": "n" * 100_000}),
        "policy-garbage": {"kind": "ClusterPolicy", "metadata": {"name": "p"}, "spec": [1]},
        "policy-types": {
            "kind": "ClusterPolicy",
            "metadata": {"name": None},
            "spec": {"sandboxWorkloads": {"enabled": "maybe", "defaultWorkload": 5}},
        },
        "huge-count": b"kind: Node\nmetadata: {name: n, labels: {nvidia.com/gpu.count: '"
        + b"9" * 25
        + b"'}}\n",
        "nested-json-3000": _nested(3000),
        "nested-json-200": _nested(200),
        "nested-yaml-block": "".join("  " * i + "a:\n" for i in range(2000)).encode()
        + b"  " * 2000
        + b"1\n",
        "nested-flow-yaml": b"[" * 5000 + b"]" * 5000,
        "yaml-bomb": b'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
        + b"".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
            f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n".encode()
            for i in range(6)
        ),
        "multi-doc": b"kind: Node\nmetadata: {name: a}\n---\n---\nkind: Pod\nmetadata: {name: p}\n",
        "broken-json": b'{"kind": "Node", "metadata": {',
        "broken-yaml": b"kind: Node\n  metadata: [\n",
        "tabs-yaml": b"kind:\tNode\n\tmetadata: {}\n",
        "binary": bytes(range(256)) * 64,
        "nul-bytes": b"\x00" * 4096,
        "latin1": "kind: Node\nmetadata: {name: caf\xe9}\n".encode("latin-1"),
        "utf16": '{"kind": "Node"}'.encode("utf-16"),
        "utf8-bom": b"\xef\xbb\xbf" + json.dumps(_node()).encode(),
        "surrogate-escape": b'{"kind": "Node", "metadata": {"name": "\\ud800"}}',
        "huge-list-3000-nodes": huge_list,
        "long-line": b"kind: Node\nmetadata: {name: " + b"x" * 2_000_000 + b"}\n",
        "many-docs": b"---\n".join(b"kind: Node\nmetadata: {name: n%d}\n" % i for i in range(2000)),
        "int-400-digits": b'{"kind": "Node", "metadata": {"name": "n"}, "x": ' + b"7" * 400 + b"}",
        "float-overflow": b"kind: Node\nmetadata: {name: n}\nstatus: {capacity: {nvidia.com/gpu: 1e999}}\n",
        "yaml-nan": b"kind: Node\nmetadata: {name: .nan}\nstatus: {allocatable: {nvidia.com/gpu: .inf}}\n",
        "yaml-bool-name": b"kind: Node\nmetadata: {name: yes, labels: {on: off}}\n",
        "yaml-date": b"kind: Node\nmetadata: {name: 2020-01-01, creationTimestamp: 2020-01-01}\n",
        "yaml-tags": b"kind: !!python/object:os.system Node\n",
        "yaml-binary": b"kind: Node\nmetadata: {name: !!binary aGVsbG8=}\n",
        "ignore-annotation-garbage": _node(
            metadata={"name": "n", "annotations": {"gpuop.io/ignore": ",,,*,GPU[,\x00"}}
        ),
        "pod-bad-resources": {
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1Ei"}}}]
            },
        },
        "vmi-garbage": {"kind": "VirtualMachineInstance", "metadata": {"name": "v"}, "spec": 3},
        "kubevirt-garbage": {
            "kind": "KubeVirt",
            "metadata": {"name": "k"},
            "spec": {"configuration": []},
        },
        "deployment-no-template": {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {}},
        "nested-json-60": _nested(60),
    }
    out: dict[str, bytes] = {}
    for name, value in cases.items():
        out[name] = value if isinstance(value, bytes) else json.dumps(value).encode()
    return out


# Each command line has one FILE placeholder; FLAGS are combined with it below.
COMMANDS: list[list[str]] = [
    ["check", "FILE"],
    ["check", "-f", "FILE", "--fail-on", "warning"],
    ["check", "FILE", "--policy", "FILE"],
    ["check", "FILE", "--config", "FILE"],
    ["check", "FILE", "--vgpu-config", "FILE"],
    ["check", "FILE", "--pci-ids", "FILE"],
    ["kubevirt", "check", "FILE"],
    ["kubevirt", "permitted-devices", "FILE"],
    ["kubevirt", "permitted-devices", "FILE", "--format", "snippet"],
    ["versions", "check", "FILE", "--today", "2026-01-01"],
    ["upgrade", "preview", "26.3.3", "26.7.0", "--dump", "FILE", "--today", "2026-01-01"],
    ["upgrade", "preview", "FILE", "26.7.0", "--today", "2026-01-01"],
    ["explain", "FILE", "--cluster", EXPLAIN_NODES],
    ["explain", EXPLAIN_POD, "--cluster", "FILE"],
    ["explain", "--all-pending", "--cluster", "FILE"],
    ["plan", "--node", "FILE"],
    ["plan", "-f", "FILE"],
    ["plan", "--gpu", "A10", "--policy", "FILE"],
    ["policy", "validate", "FILE"],
    ["audit", "--policy", "FILE"],
    ["render", "--policy", "FILE"],
    ["kubevirt", "vmi-example", "--cluster", "FILE"],
    # -f/--filename, the one input option of every object reader.
    ["kubevirt", "check", "-f", "FILE"],
    ["kubevirt", "permitted-devices", "-f", "FILE", "-f", EXPLAIN_NODES],
    ["kubevirt", "vmi-example", "n1", "-f", "FILE"],
    ["explain", "-f", "FILE", "--cluster", EXPLAIN_NODES],
    ["explain", "--cluster", f"{EXPLAIN_NODES},FILE", EXPLAIN_POD],
    ["policy", "validate", "-f", "FILE"],
    ["audit", "-f", "FILE"],
    ["render", "-f", "FILE"],
    ["render", "--policy", "FILE", "-f", EXPLAIN_NODES],
    ["names", "pci", "-f", "FILE"],
    ["names", "vgpu", "-f", "FILE"],
    ["upgrade", "preview", "26.3.3", "26.7.0", "-f", "FILE", "--today", "2026-01-01"],
]

EVERY = ["text", "wide", "json", "yaml", "name"]
OUTPUTS: dict[str, list[str]] = {
    "check": [*EVERY, "sarif"],
    "kubevirt check": EVERY,
    "kubevirt permitted-devices": EVERY,
    "versions check": [*EVERY, "sarif"],
    "upgrade preview": EVERY,
    "explain": EVERY,
    "plan": EVERY,
    "policy validate": EVERY,
    "audit": [*EVERY, "markdown"],
    "render": ["yaml", "json", "name"],
    "kubevirt vmi-example": ["yaml", "json", "name"],
    "names pci": EVERY,
    "names vgpu": EVERY,
}
# Commands whose default output is text: it fits the 80 columns the cases run in.
TEXT_BY_DEFAULT = set(OUTPUTS) - {"render", "kubevirt vmi-example", "kubevirt permitted-devices"}
WIDTH = 80
FINDINGS = {"check", "kubevirt check", "versions check"}
FINDING_FLAGS = [
    [],
    ["--severity", "warning"],
    ["--severity", "error", "--fail-on", "warning"],
    ["--ignore", "GPU2*", "--ignore", "*:Node/n*"],
    ["--ignore", ":bad"],
]


def _group(command: list[str]) -> str:
    two = " ".join(command[:2])
    return two if two in OUTPUTS else command[0]


def cases(files: dict[str, Path]) -> Iterator[tuple[str, list[str]]]:
    for command in COMMANDS:
        group = _group(command)
        extras: list[list[str]] = [[], ["--no-such-flag"]]
        extras += [["-o", fmt] for fmt in OUTPUTS[group]]
        if group in FINDINGS:
            extras += [[*f, "-o", fmt] for f in FINDING_FLAGS for fmt in ("text", "json")]
        for (name, path), extra in itertools.product(files.items(), extras):
            if name in HEAVY and extra:
                continue  # large inputs once per command: their cost is in reading them
            argv = [arg.replace("FILE", str(path)) for arg in command] + extra
            yield f"{group}|{name}|{' '.join(extra)}", argv


def _is_text(label: str) -> bool:
    """Whether the case's stdout is text (its command's default, or `-o text`)."""
    group, _, extra = label.split("|")
    explicit = extra.split("-o ")[1].split()[0] if "-o " in extra else None
    if explicit is not None:
        return explicit == "text"
    return group in TEXT_BY_DEFAULT


def run_main(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str, float]:
    runner = CliRunner()
    env = {"COLUMNS": "80", "NO_COLOR": "1", "KUBECONFIG": "/nonexistent/kubeconfig"}
    # An 80-column terminal: what text must fit (in a pipe it is never cut).
    monkeypatch.setattr("gpuop.cli.common.stdout_is_terminal", lambda: True)
    started = time.perf_counter()
    with runner.isolation(input=b"", env=env) as (stdout, stderr, _):
        monkeypatch.setattr(sys, "argv", ["gpuop", *argv])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        sys.stdout.flush()
        sys.stderr.flush()
        out = stdout.getvalue().decode(errors="replace")
        err = stderr.getvalue().decode(errors="replace")
    return code, out, err, time.perf_counter() - started


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzz")
    written = {}
    for name, data in inputs().items():
        path = root / f"{name}.yaml"
        path.write_bytes(data)
        written[name] = path
    directory = root / "a-directory"
    directory.mkdir()
    written["directory"] = directory
    written["missing"] = root / "does-not-exist.json"
    return written


def _run_all(
    selected: Callable[[int], bool], files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> int:
    failures: list[str] = []
    count = 0
    for number, (label, argv) in enumerate(cases(files)):
        if not selected(number):
            continue
        count += 1
        code, out, err, seconds = run_main(argv, monkeypatch)
        problem = None
        if "Traceback" in out or "Traceback" in err:
            problem = "traceback"
        elif code not in DOCUMENTED:
            problem = f"exit {code}"
        elif seconds > HANG_SECONDS:
            problem = f"took {seconds:.1f} s"
        elif code == 2 and not (err.strip() or out.strip()):
            problem = "exit 2 without saying why"
        elif _is_text(label) and any(len(line) > WIDTH for line in out.splitlines()):
            problem = f"text wider than {WIDTH} columns"
        if problem:
            failures.append(f"{label}: {problem}: {err.strip()[-300:]}")
    assert not failures, f"{len(failures)} of {count} cases failed:\n" + "\n".join(failures[:40])
    return count


def test_case_count_is_over_ten_thousand(files: dict[str, Path]) -> None:
    assert sum(1 for _ in cases(files)) >= 10_000


def test_sample_of_hostile_inputs(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixed random sample of the full product, for every local run (60 cases under the
    `ci` Hypothesis profile; the full product runs under the `fuzz` marker)."""
    total = sum(1 for _ in cases(files))
    size = min(total, scaled(60))
    chosen = set(random.Random(21).sample(range(total), size))
    assert _run_all(chosen.__contains__, files, monkeypatch) == size


@pytest.mark.fuzz
@pytest.mark.timeout(1800)
def test_every_command_and_flag_on_hostile_inputs(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run_all(lambda _: True, files, monkeypatch) >= 10_000
