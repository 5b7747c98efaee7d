"""Hostile files through every kind of file-taking flag: deep, binary, truncated, wide, long.

libyaml parses flow collections by recursion in C: a 60 kB file of brackets used to end
`gpuop render --policy FILE` in a segmentation fault. Each case runs as its own process (a
signal would kill the test runner with it). Unreadable input (too deep, not UTF-8, cut
short) must end with exit 2 and one line naming the file; readable but odd input (200,000
labels, a 3 MB name) with an answer, never a signal or a traceback.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

DEPTH = 30_000
POLICY = Path(__file__).parents[2] / "data" / "upstream-v26.7.0" / "cluster-policy.yaml"

_NODES = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "List",
        "items": [{"kind": "Node", "metadata": {"name": f"n{i}"}} for i in range(100)],
    }
)
FILES: dict[str, str | bytes] = {
    "flow.yaml": "[" * DEPTH + "]" * DEPTH + "\n",
    "mapping.yaml": "a: " + "[" * DEPTH + "]" * DEPTH + "\n",
    "flow-mappings.yaml": "kind: Node\nspec: " + "{a: " * DEPTH + "1" + "}" * DEPTH + "\n",
    "deep.json": '{"kind": "Node", "a": ' + "[" * DEPTH + "]" * DEPTH + "}\n",
    "binary.yaml": b"\xff\xfe\x00" + bytes(random.Random(1).randrange(256) for _ in range(50_000)),
    "truncated.json": _NODES[:3000],
    "truncated.yaml": "apiVersion: v1\nkind: Node\nmetadata:\n  labels: {a: b, c: [1, 2",
}
# Readable, only large: an answer (any exit status but a crash's).
ODD_FILES = {
    "wide.yaml": "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n"
    + "".join(f"    k{i}: v\n" for i in range(200_000)),
    "long.yaml": "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: "
    + "a" * 3_000_000
    + "\n",
}

COMMANDS = [
    ["plan", "-f", "{file}"],
    ["plan", "--gpu", "A10", "--policy", "{file}"],
    ["policy", "validate", "{file}"],
    ["render", "--policy", "{file}"],
    ["render", "--policy", str(POLICY), "--nodes", "{file}"],
    ["audit", "--policy", "{file}"],
    ["check", "{file}"],
    ["versions", "check", "{file}"],
    ["adopt", "{file}"],
    ["upgrade", "preview", "26.3.3", "26.7.0", "--policy", "{file}"],
]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("deep"), {**FILES, **ODD_FILES})


def write_files(folder: Path, files: dict[str, str | bytes]) -> Path:
    """The corpus written into `folder`, text or bytes as each file is."""
    for name, content in files.items():
        if isinstance(content, bytes):
            (folder / name).write_bytes(content)
        else:
            (folder / name).write_text(content)
    return folder


@pytest.mark.parametrize("file", sorted(FILES))
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]) + " " + c[-2])
def test_deep_input_is_refused_in_one_line(hostile: Path, command: list[str], file: str) -> None:
    path = hostile / file
    args = [arg.format(file=path) for arg in command]
    result = subprocess.run(
        [sys.executable, "-m", "gpuop", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, (result.returncode, result.stderr[-500:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-500:]
    assert file in lines[0]


@pytest.mark.parametrize("file", sorted(ODD_FILES))
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]) + " " + c[-2])
def test_large_input_gets_an_answer(hostile: Path, command: list[str], file: str) -> None:
    args = [arg.format(file=hostile / file) for arg in command]
    result = subprocess.run(
        [sys.executable, "-m", "gpuop", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode in (0, 1, 2), (result.returncode, result.stderr[-500:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if result.returncode == 2 and result.stderr.strip():
        assert result.stderr.strip().splitlines()[-1].startswith("error: ")
