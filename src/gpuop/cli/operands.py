"""The `gpuop operands` command: the operand table, per workload config."""

from __future__ import annotations

import click

from gpuop.catalog import WORKLOAD_CONFIGS, operand_table
from gpuop.cli.common import emit_data, kubectl_name, text_width
from gpuop.cli.layout import Column, fit_lines, fit_table
from gpuop.cli.options import output_option
from gpuop.planner.tables import COLUMNS, OperandRow, operand_rows, operands_markdown

_QUALIFIER: dict[str, str] = {
    "yes": "",
    "mig-capable": " (MIG-capable)",
    "mps-capable": " (mps.capable)",
}


def _workloads_cell(row: OperandRow) -> str:
    titles = {
        c.key: c.title.replace(" (kubevirt)", "").replace(" (kata)", "/kata") for c in COLUMNS
    }
    parts = [titles[key] + _QUALIFIER.get(row.placements[key], "") for key in row.workloads]
    if not parts and row.operand.deprecated:
        return "none (deprecated)"
    return ", ".join(parts) or "-"


def _enabled_by_cell(row: OperandRow) -> str:
    op = row.operand
    if op.deprecated:
        return "never (deprecated)"
    parts = (["sandbox"] if op.requires_sandbox else []) + (
        [op.policy_field] if op.policy_field else []
    )
    text = " + ".join(parts) or "always"
    return f"{text} ({op.requires_mode} mode)" if op.requires_mode else text


def _matches(row: OperandRow, workload: str | None) -> bool:
    if workload is None:
        return True
    return any(
        column.workload == workload and key in row.workloads
        for column in COLUMNS
        for key in [column.key]
    )


@click.command()
@click.option(
    "--workload",
    "-w",
    type=click.Choice(list(WORKLOAD_CONFIGS)),
    default=None,
    help="Only the operands that run on nodes with this workload config.",
)
@click.option(
    "--markdown",
    is_flag=True,
    help="Print the per-workload Markdown table the docs embed (docs/operands.md).",
)
@output_option("text", "wide", "json", "yaml", "name")
def operands(workload: str | None, markdown: bool, output: str) -> None:
    """Show every operand gpuop deploys: its DaemonSet, what switches it on, and where it runs.

    An operand runs on a node when the ClusterPolicy enables it and the node's deploy
    label `nvidia.com/gpu.deploy.<label>` is exactly `true`; the workload config of the
    node decides which deploy labels it gets. WAITS FOR lists the operands whose
    readiness it waits for on the same node.

    \b
    Examples:
      gpuop operands                        the whole table
      gpuop operands -w vm-vgpu             what a vm-vgpu node runs
      gpuop operands -o json | jq '.[] | select(.default == "off") | .name'
      gpuop operands --markdown > table.md  the table in docs/operands.md
    """
    if markdown:
        click.echo(operands_markdown(workload), nl=False)
        return
    rows = [row for row in operand_rows() if _matches(row, workload)]
    if output == "name":
        names = (kubectl_name("DaemonSet", row.operand.daemonset) for row in rows)
        click.echo("".join(f"{name}\n" for name in names), nl=False)
        return
    if output not in ("text", "wide"):
        emit_data([row.to_dict() for row in rows], output)
        return
    width = text_width(output)
    prefix = operand_table().deploy_labels.prefix
    table = [
        [
            row.operand.name,
            row.operand.daemonset,
            row.operand.deploy_label,
            _enabled_by_cell(row),
            row.default,
            _workloads_cell(row),
            ", ".join(row.operand.waits_for) or "-",
            ", ".join(row.advertises) or "-",
        ]
        for row in rows
    ]
    # Narrow terminals keep what an operand is, what switches it on and where it runs.
    columns = [
        Column("OPERAND"),
        Column("DAEMONSET", drop=4),
        Column("DEPLOY LABEL", drop=5),
        Column("ENABLED BY", wrap=True, min_width=14),
        Column("DEFAULT"),
        Column("WORKLOADS", wrap=True, min_width=16),
        Column("WAITS FOR", wrap=True, drop=3),
        Column("ADVERTISES", wrap=True, drop=2, min_width=16),
    ]
    fitted = fit_table(columns, table, width=width)
    click.echo(fitted.text)
    notes = [
        f"DEPLOY LABEL: the operand runs where {prefix}<DEPLOY LABEL>=true."
        if "DEPLOY LABEL" not in fitted.dropped
        else f"An operand runs where {prefix}<its deploy label>=true.",
        "ENABLED BY: the ClusterPolicy blocks whose `enabled` switches it on;"
        " sandbox is sandboxWorkloads.enabled.",
        "DEFAULT: in the default ClusterPolicy."
        " `gpuop operands --markdown` prints the table per workload config.",
    ]
    wide = fitted.wide_note()
    if wide is not None:
        notes.append(wide)
    click.echo("\n" + fit_lines("\n".join(notes), width))
