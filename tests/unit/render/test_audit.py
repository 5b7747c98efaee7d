"""The host-privilege audit follows the rendered DaemonSets."""

from __future__ import annotations

import json

from click.testing import CliRunner

from gpuop.cli import cli
from gpuop.policy import default_policy
from gpuop.render.audit import audit_operands, render_markdown


def test_audit_rows_come_from_the_rendered_daemonsets() -> None:
    rows = {row.operand: row for row in audit_operands(default_policy())}
    toolkit = rows["container-toolkit"]
    assert toolkit.privileged and toolkit.host_pid
    assert {m.path for m in toolkit.mounts if m.writable} >= {
        "/etc/containerd",
        "/usr/local/nvidia",
    }
    assert rows["mig-manager"].reboots_node and rows["mig-manager"].host_ipc
    assert "vfio-manager" not in rows


def test_markdown_page_lists_every_operand() -> None:
    rows = audit_operands(default_policy())
    page = render_markdown(rows, "cluster-policy")
    for row in rows:
        assert f"### {row.operand}" in page


def test_cli_json_includes_the_measured_containerd_change() -> None:
    result = CliRunner().invoke(cli, ["audit", "--output", "json", "--sandbox"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    toolkit = next(r for r in data["operands"] if r["operand"] == "container-toolkit")
    assert any("99-nvidia.toml" in change for change in toolkit["hostChanges"])
    assert any(r["operand"] == "vfio-manager" for r in data["operands"])
