"""Every command reads a Node's labels alike: YAML's unquoted `true` is the label "true"."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import RunCli

NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels:
    feature.node.kubernetes.io/pci-10de.present: true
    nvidia.com/gpu.count: 2
status:
  allocatable:
    nvidia.com/gpu: 2
"""


def test_plan_and_check_agree_on_an_unquoted_true(gpuop: RunCli, tmp_path: Path) -> None:
    node = tmp_path / "node.yaml"
    node.write_text(NODE)
    planned = json.loads(gpuop("plan", "--node", str(node), "-o", "json").stdout)
    assert planned["gpu_node"] is True
    checked = json.loads(gpuop("check", str(node), "-o", "json").stdout)
    assert checked["summary"]["gpu_nodes"] == 1
