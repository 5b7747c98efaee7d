"""Input nested tens of thousands of levels deep, through every kind of file-taking flag.

libyaml parses flow collections by recursion in C: a 60 kB file of brackets used to end
`gpuop render --policy FILE` in a segmentation fault. Each case runs as its own process (a
signal would kill the test runner with it) and must end with exit 2 and one line naming
the file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DEPTH = 30_000
POLICY = Path(__file__).parents[2] / "data" / "upstream-v26.7.0" / "cluster-policy.yaml"

FILES = {
    "flow.yaml": "[" * DEPTH + "]" * DEPTH + "\n",
    "mapping.yaml": "a: " + "[" * DEPTH + "]" * DEPTH + "\n",
    "flow-mappings.yaml": "kind: Node\nspec: " + "{a: " * DEPTH + "1" + "}" * DEPTH + "\n",
    "deep.json": '{"kind": "Node", "a": ' + "[" * DEPTH + "]" * DEPTH + "}\n",
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
    folder = tmp_path_factory.mktemp("deep")
    for name, text in FILES.items():
        (folder / name).write_text(text)
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
