"""The `gpuop` command line.

Each command group lives in its own module; this one only assembles them and turns
expected failures into one clear line and a non-zero exit code instead of a traceback.
"""

from __future__ import annotations

import sys

import click

from gpuop import __version__
from gpuop.cli.audit import audit
from gpuop.cli.check import check, collect
from gpuop.cli.cluster import cluster
from gpuop.cli.common import UserError
from gpuop.cli.explain import explain
from gpuop.cli.kubevirt import kubevirt
from gpuop.cli.lab import lab
from gpuop.cli.names import names
from gpuop.cli.operands import operands
from gpuop.cli.operator import operator
from gpuop.cli.plan import plan
from gpuop.cli.policy import policy
from gpuop.cli.sim import sim
from gpuop.cli.toolkit import toolkit
from gpuop.cli.versions import upgrade, versions


@click.group(
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="gpuop")
def cli() -> None:
    """gpuop: run GPU nodes from one ClusterPolicy, and see why they do what they do.

    \b
    Start here:
      gpuop lab                 run the whole three-node lab on a local cluster
      gpuop cluster up          start a local control plane (etcd, apiserver, scheduler, kwok)
      gpuop plan --gpu A10 --count 2 --workload vm-vgpu
                                what would a node run and advertise?
      gpuop operands            the operand table, per workload config
    """


cli.add_command(cluster)
cli.add_command(plan)
cli.add_command(names)
cli.add_command(operands)
cli.add_command(policy)
cli.add_command(operator)
cli.add_command(sim)
cli.add_command(lab)
cli.add_command(check)
cli.add_command(collect)
cli.add_command(audit)
cli.add_command(versions)
cli.add_command(upgrade)
cli.add_command(explain)
cli.add_command(kubevirt)
cli.add_command(toolkit)


def main() -> None:
    try:
        result = cli(standalone_mode=False)
        if isinstance(result, int) and result:
            sys.exit(result)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if exc.exit_code == 1 else exc.exit_code)
    except UserError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
