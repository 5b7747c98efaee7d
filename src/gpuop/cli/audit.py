"""The `gpuop audit` command: what every operand may do on a GPU node's host."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click
import yaml

from gpuop.cli.common import UserError, emit_data, output_option
from gpuop.cli.support import load_policy_document


def _toolkit_changes(runtime_class: str) -> list[str]:
    """The container toolkit's containerd change, measured on a stock host root (dry run)."""
    from gpuop.sim.hostroot import ensure_host_root
    from gpuop.toolkit import ToolkitError
    from gpuop.toolkit.configuring import RuntimeOptions, configure_runtime

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
@output_option("text", "json", "markdown")
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
    """
    from gpuop.policy import PolicyError, default_policy_object, parse_cluster_policy
    from gpuop.render.audit import audit_operands, render_markdown, summary_counts

    raw = (
        load_policy_document(policy_file, "gpuop audit --policy")
        if policy_file
        else default_policy_object()
    )
    if sandbox and isinstance(raw, dict):
        raw = yaml.safe_load(yaml.safe_dump(raw))
        raw.setdefault("spec", {}).setdefault("sandboxWorkloads", {})["enabled"] = True
    try:
        policy = parse_cluster_policy(raw, policy_file or "default ClusterPolicy")
        changes = {"container-toolkit": _toolkit_changes(policy.runtime_class)}
        rows = audit_operands(policy, namespace, changes)
    except PolicyError as exc:
        raise UserError("; ".join(exc.problems)) from exc
    if output == "json":
        emit_data(
            {
                "policy": policy.name,
                "summary": summary_counts(rows),
                "operands": [r.to_dict() for r in rows],
            },
            "json",
        )
        return
    if output == "markdown":
        click.echo(render_markdown(rows, policy.name))
        return
    header = f"{'operand':<28} {'priv':<5} {'hostPID':<8} {'hostIPC':<8} {'kmod':<5} {'reboot':<7} writable host paths"
    click.echo(header)
    for row in rows:
        writable = ", ".join(m.path for m in row.mounts if m.writable) or "-"
        click.echo(
            f"{row.operand:<28} {'yes' if row.privileged else 'no':<5} {'yes' if row.host_pid else 'no':<8}"
            f" {'yes' if row.host_ipc else 'no':<8} {'yes' if row.kernel_modules else 'no':<5}"
            f" {'yes' if row.reboots_node else 'no':<7} {writable}"
        )
    counts = summary_counts(rows)
    click.echo(
        f"\n{counts['operands']} operands: {counts['privileged']} privileged, {counts['hostPID']} see host"
        f" processes, {counts['writes_host_files']} write host files, {counts['loads_kernel_modules']}"
        f" load kernel modules, {counts['may_reboot_node']} may reboot the node"
    )
    for change in changes["container-toolkit"]:
        click.echo(f"container-toolkit host change: {change}")
    click.echo("\nAPI rights (each operand runs under its own ServiceAccount):")
    for row in rows:
        click.echo(f"{row.operand} (ServiceAccount {row.service_account or '-'}):")
        for right in row.api_rights:
            click.echo(f"  {right}")
