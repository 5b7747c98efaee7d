"""The `gpuop audit` command: what every operand may do on a GPU node's host."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpuop.cli.common import UserError, emit_data, kubectl_name, text_width
from gpuop.cli.inputs import load_policy
from gpuop.cli.layout import Column, fit_lines, fit_table
from gpuop.cli.options import output_option

if TYPE_CHECKING:
    from gpuop.render.audit import OperandAudit


def _toolkit_changes(runtime_class: str) -> list[str]:
    """The container toolkit's containerd change, measured on a stock host root (dry run)."""
    from gpuop.sim.hostroot import ensure_host_root
    from gpuop.toolkit import ToolkitError
    from gpuop.toolkit.configuring import configure_runtime
    from gpuop.toolkit.options import RuntimeOptions

    with tempfile.TemporaryDirectory(prefix="gpuop-audit-") as root:
        ensure_host_root(Path(root))
        options = RuntimeOptions(runtime_class=runtime_class)
        try:
            result = configure_runtime(root, options, dry_run=True)
        except ToolkitError as exc:
            raise UserError(f"the container toolkit would refuse this policy: {exc}") from None
    lines = [f"{item.action} {item.path}" for item in result.files if item.action != "unchanged"]
    lines += [f"{change.file}: {change.kind} {change.key_text}" for change in result.changes]
    lines.append("signals containerd to reload its configuration (hostPID)")
    return lines


@click.command()
@click.option(
    "--policy",
    "-f",
    "--filename",
    "policy_file",
    default=None,
    metavar="FILE",
    help="ClusterPolicy file or `-`; a List or multi-document YAML holding one (default: the"
    " chart defaults).",
)
@click.option(
    "--sandbox", is_flag=True, help="Audit with sandboxWorkloads.enabled=true (VM operands too)."
)
@click.option("--namespace", default="gpu-operator", show_default=True)
@output_option("text", "wide", "json", "yaml", "name", "markdown")
def audit(policy_file: str | None, sandbox: bool, namespace: str, output: str) -> None:
    """What each operand may do on a host and through the API.

    Host: privileges, host paths, writes, kernel modules, reboots. API: the
    ServiceAccount each operand runs under and every right its Role and ClusterRole grant.

    Reads the DaemonSets gpuop would deploy for the ClusterPolicy, and measures the
    container toolkit's containerd change on a stock configuration (a dry run).

    \b
    Examples:
      gpuop audit                          # the default ClusterPolicy
      gpuop audit --policy cp.yaml -o markdown > operand-privileges.md
      gpuop audit -f cp.yaml -o json
      gpuop audit -o name                  # daemonset.apps/NAME of each operand
    """
    from gpuop.policy import PolicyError
    from gpuop.render.audit import audit_operands, render_markdown, summary_counts

    policy, _source = load_policy(policy_file, "gpuop audit --policy", sandbox=sandbox)
    try:
        changes = {"container-toolkit": _toolkit_changes(policy.runtime_class)}
        rows = audit_operands(policy, namespace, changes)
    except PolicyError as exc:
        raise UserError("; ".join(exc.problems)) from exc
    if output in ("json", "yaml"):
        emit_data(
            {
                "policy": policy.name,
                "summary": summary_counts(rows),
                "operands": [r.to_dict() for r in rows],
            },
            output,
        )
        return
    if output == "name":
        names = (kubectl_name("DaemonSet", row.daemonset) for row in rows)
        click.echo("".join(f"{name}\n" for name in names), nl=False)
        return
    if output == "markdown":
        click.echo(render_markdown(rows, policy.name))
        return
    click.echo(_render_text(rows, changes["container-toolkit"], text_width(output)))


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _render_text(rows: list[OperandAudit], toolkit_changes: list[str], width: int) -> str:
    """The privileges table, the summary, the toolkit's host change and each operand's rights.

    The writable host paths are the table's last column when it fits the width, else a
    section of their own under it.
    """
    from gpuop.render.audit import summary_counts

    writable = {row.operand: ", ".join(m.path for m in row.mounts if m.writable) for row in rows}
    columns = [
        Column("OPERAND"),
        Column("PRIV"),
        Column("HOSTPID"),
        Column("HOSTIPC"),
        Column("KMOD"),
        Column("REBOOT"),
        Column("WRITABLE HOST PATHS", wrap=True, drop=1, min_width=30),
    ]
    cells = [
        [
            row.operand,
            _yes(row.privileged),
            _yes(row.host_pid),
            _yes(row.host_ipc),
            _yes(row.kernel_modules),
            _yes(row.reboots_node),
            writable[row.operand] or "-",
        ]
        for row in rows
    ]
    table = fit_table(columns, cells, width=width)
    out = [table.text]
    if table.dropped:
        out += ["", "Writable host paths:"]
        out += [f"  {row.operand}: {writable[row.operand] or 'none'}" for row in rows]
    counts = summary_counts(rows)
    out += [
        "",
        f"{counts['operands']} operands: {counts['privileged']} privileged,"
        f" {counts['hostPID']} see host processes, {counts['writes_host_files']} write host"
        f" files, {counts['loads_kernel_modules']} load kernel modules,"
        f" {counts['may_reboot_node']} may reboot the node",
    ]
    out += [f"container-toolkit host change: {change}" for change in toolkit_changes]
    out += ["", "API rights (each operand runs under its own ServiceAccount):"]
    for row in rows:
        out.append(f"{row.operand} (ServiceAccount {row.service_account or '-'}):")
        out += [f"  {right}" for right in row.api_rights]
    return fit_lines("\n".join(out), width)
