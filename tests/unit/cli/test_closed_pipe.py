"""A reader that stops early (`gpuop ... | head -1`) ends gpuop quietly, as it does kubectl.

Each command runs as a process whose stdout is a pipe closed after the first line: no line
on stderr, and the exit status of a process ended by SIGPIPE (141) (0 when the output fit
in the pipe before it closed), never 1 (problems found) or 3 (a gpuop bug).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"gpu-{i:05d}", "labels": {"nvidia.com/gpu.present": "true"}},
        }
        for i in range(3000)
    ]
    path = tmp_path_factory.mktemp("pipe") / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["check", "-o", "json", "{dump}"],
        ["check", "-o", "wide", "{dump}"],
        ["plan", "-f", "{dump}"],
        ["plan", "-f", "{dump}", "-o", "json"],
    ],
    ids=lambda args: " ".join(args),
)
def test_a_closed_pipe_ends_quietly(big_dump: Path, args: list[str]) -> None:
    command = [sys.executable, "-m", "gpuop", *(a.format(dump=big_dump) for a in args)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read()
    code = process.wait(timeout=120)
    assert first
    assert stderr == b""
    # 141 when gpuop was still writing; 0 when all it had to say fit in the pipe already.
    assert code in (0, 141)
