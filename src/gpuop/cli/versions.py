"""`gpuop versions check` and `gpuop upgrade preview`: the cluster against the version matrix.

Exit status, as `gpuop check`: 0 without error-level findings, 1 with, 2 when an input or a
version given on the command line cannot be read (one line on stderr, never a traceback).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from datetime import date
from typing import Any

import click

from gpuop.catalog.versions import VersionMatrix, version_matrix
from gpuop.check.release import describe_releases
from gpuop.check.state import KNOWN_KINDS
from gpuop.check.versions.engine import check_versions
from gpuop.check.versions.parse import (
    VersionError,
    kubernetes_minor,
    looks_like_release,
    release_name,
)
from gpuop.check.versions.report import render_versions_text, to_versions_sarif
from gpuop.cli.common import (
    UserError,
    emit_data,
    kubectl_name,
    text_width,
)
from gpuop.cli.completers import complete_operator_releases, complete_release_or_file
from gpuop.cli.exits import exit_codes_help
from gpuop.cli.findings import CheckerArgs, Verdict, checker_options
from gpuop.cli.inputs import input_paths, load_policy, read_dump, shown
from gpuop.cli.layout import note
from gpuop.cli.live import LiveTarget, live_target
from gpuop.cli.options import live_options, output_option, policy_override_option
from gpuop.cli.running import guarded, read_live_with
from gpuop.policy import PolicyError, ResolvedPolicy, default_policy, parse_cluster_policy
from gpuop.versions import (
    Side,
    preview_upgrade,
    render_preview_text,
    side_from_policy,
    side_from_release,
)


def _today(value: str | None) -> date:
    if value is None:
        return date.today()
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise UserError(f"--today {value!r}: expected a date as YYYY-MM-DD") from None


def _kubernetes(option: str, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        kubernetes_minor(value)
    except VersionError as exc:
        raise UserError(f"{option}: {exc}") from None
    return value.strip()


def _release_option(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return release_name(value)
    except VersionError as exc:
        raise UserError(f"--operator-release: {exc}") from None


def _live(target: LiveTarget, quiet: bool = False) -> Any:
    from gpuop.kube.versions import read_server_version, read_version_inputs

    if not quiet:
        note(f"reading Nodes, ClusterPolicies and /version of {target.describe()}")
    return read_live_with(
        target,
        lambda client: read_version_inputs(
            client, lambda: read_server_version(target.files, target.context)
        ),
    )


@click.group("versions")
def versions() -> None:
    """The cluster against the GPU Operator version matrix.

    Driver, CUDA, toolkit, operator and Kubernetes each have support ranges; `check`
    finds nodes and ClusterPolicies outside them, and nodes of one pool that drifted apart.
    """


@versions.command("check", epilog=exit_codes_help())
@checker_options("text", "wide", "json", "yaml", "name", "sarif")
@policy_override_option
@click.option(
    "--operator-release",
    "--operator-version",
    "operator_release",
    metavar="X.Y.Z",
    shell_complete=complete_operator_releases,
    help="The GPU Operator release the cluster runs (default: what the operator's image or"
    " Helm labels say, else the ClusterPolicy's operand versions). --operator-version is the"
    " same option.",
)
@click.option(
    "--kubernetes-version",
    metavar="VERSION",
    help="The cluster's Kubernetes version (default: the API server's with --live).",
)
@click.option("--today", metavar="YYYY-MM-DD", help="Date for end-of-life checks (default: today).")
def check(
    args: CheckerArgs,
    policy_file: str | None,
    operator_release: str | None,
    kubernetes_version: str | None,
    today: str | None,
) -> None:
    """Check nodes and the ClusterPolicy against the GPU Operator version matrix.

    FILES are `kubectl get nodes,clusterpolicies -o json|yaml` output, `-` for stdin,
    or a directory written by `gpuop collect`.

    \b
      gpuop versions check dump.json
      gpuop versions check --live --context lab -o sarif > versions.sarif
      gpuop versions check dump.json --operator-release 25.10.1 --kubernetes-version 1.31
      gpuop versions check dump.json --severity warning --ignore VER004

    Findings are managed as in `gpuop check`: --severity, --fail-on, --ignore, .gpuop.yaml
    and the gpuop.io/ignore annotation.
    """

    def body() -> int:
        run = args.read(stdin_options=(policy_file,))
        target = run.target
        release = _release_option(operator_release)
        kube = _kubernetes("--kubernetes-version", kubernetes_version)
        day = _today(today)
        policy = (
            load_policy(policy_file, "gpuop versions check --policy")[0] if policy_file else None
        )
        kube_source = "--kubernetes-version"
        if target is not None:
            inputs = _live(target, quiet=args.output not in ("text", "wide"))
            objects: list[Any] = inputs.objects
            if kube is None and inputs.server_version:
                kube = _kubernetes("the API server's /version", inputs.server_version)
                kube_source = "API server /version"
        else:
            objects = read_dump(
                run.paths,
                needs=("Node", "ClusterPolicy"),
                reads=KNOWN_KINDS,
                command="gpuop versions check",
            )
        result = check_versions(
            objects,
            today=day,
            policy=policy,
            policy_source=f"--policy {policy_file}",
            operator_release=release,
            kubernetes_version=kube,
            kubernetes_source=kube_source,
        )
        result = dataclasses.replace(result, report=run.chosen.apply(result.report, objects))
        verdict = Verdict(
            result.report,
            document=result.to_dict,
            text=lambda color, width: render_versions_text(result, color=color, width=width),
            sarif=lambda: to_versions_sarif(result),
        )
        return args.print(verdict, target)

    sys.exit(guarded(body, (VersionError,), reads_whole_dumps=True))


@click.group("upgrade")
def upgrade() -> None:
    """What an operator or ClusterPolicy change will move, before it happens."""


def _side(value: str, placement: ResolvedPolicy, matrix: VersionMatrix) -> Side:
    if value == "-" or os.path.exists(value):
        policy = load_policy(value, "gpuop upgrade preview")[0]
        return side_from_policy(policy, shown(value), matrix)
    if looks_like_release(value):
        name = release_name(value)
        release = matrix.release(name)
        if release is None:
            raise UserError(
                f"{value}: not an operator release gpuop knows"
                f" ({describe_releases(matrix, matrix.release_names)}, as of {matrix.as_of})"
            )
        return side_from_release(release, placement, matrix)
    raise UserError(f"{value}: no such file, and not an operator release (YY.MM.PP, e.g. 26.7.0)")


@upgrade.command("preview")
@click.argument("old", metavar="OLD", shell_complete=complete_release_or_file)
@click.argument("new", metavar="NEW", shell_complete=complete_release_or_file)
@click.option(
    "--dump",
    "-f",
    "--filename",
    "dumps",
    multiple=True,
    metavar="FILE",
    help="Nodes to preview (dump file, bundle directory or '-'); repeatable, or A,B.",
)
@live_options
@click.option(
    "--policy",
    "policy_file",
    metavar="FILE",
    help="ClusterPolicy that places operands when OLD or NEW is a release name"
    " (default: the one in the dump, else gpuop's default).",
)
@click.option("--kubernetes-from", metavar="VERSION", help="Kubernetes before the change.")
@click.option("--kubernetes-to", metavar="VERSION", help="Kubernetes after the change.")
@click.option("--today", metavar="YYYY-MM-DD", help="Date for end-of-life checks (default: today).")
@output_option("text", "wide", "json", "yaml", "name")
def preview(
    old: str,
    new: str,
    dumps: tuple[str, ...],
    live: bool,
    kubeconfig: str | None,
    context_name: str | None,
    policy_file: str | None,
    kubernetes_from: str | None,
    kubernetes_to: str | None,
    today: str | None,
    output: str,
) -> None:
    """Preview moving from OLD to NEW: operand versions, node restarts, disruption.

    OLD and NEW are ClusterPolicy files or GPU Operator releases (26.3.3, 26.7.0).

    \b
      gpuop upgrade preview 26.3.3 26.7.0
      gpuop upgrade preview old.yaml new.yaml --dump nodes.json
      gpuop upgrade preview 26.3.3 26.7.0 --live --kubernetes-from 1.32 --kubernetes-to 1.33

    It warns when one change moves more than one of driver, toolkit, operator release and
    Kubernetes: one change per maintenance window, or you cannot tell which one broke it.
    -o name prints Node/NAME for each node where an operand pod restarts, starts or stops.
    """

    def body() -> int:
        dump_paths = input_paths(dumps)
        if live and dump_paths:
            raise UserError("give --dump or --live, not both")
        target = live_target(live, kubeconfig, context_name)
        if (kubernetes_from is None) != (kubernetes_to is None):
            raise UserError("give --kubernetes-from and --kubernetes-to together")
        start = _kubernetes("--kubernetes-from", kubernetes_from)
        end = _kubernetes("--kubernetes-to", kubernetes_to)
        day = _today(today)
        matrix = version_matrix()
        nodes: list[Any] | None = None
        dumped_policy: ResolvedPolicy | None = None
        if live or dump_paths:
            if target is not None:
                objects = _live(target, quiet=output not in ("text", "wide")).objects
            else:
                objects = read_dump(
                    dump_paths,
                    needs=("Node",),
                    reads=("ClusterPolicy",),
                    command="gpuop upgrade preview --dump",
                )
            nodes = [obj for obj in objects if isinstance(obj, dict) and obj.get("kind") == "Node"]
            policies = [
                obj
                for obj in objects
                if isinstance(obj, dict) and obj.get("kind") == "ClusterPolicy"
            ]
            if policies and policy_file is None:
                try:
                    dumped_policy = parse_cluster_policy(policies[0], "the dump's ClusterPolicy")
                except PolicyError:
                    dumped_policy = None
        placement = (
            load_policy(policy_file, "gpuop upgrade preview --policy")[0]
            if policy_file
            else dumped_policy or default_policy()
        )
        old_side = _side(old, placement, matrix)
        new_side = _side(new, placement, matrix)
        kubernetes = (start, end) if start is not None and end is not None else None
        result = preview_upgrade(
            old_side, new_side, nodes, today=day, kubernetes=kubernetes, matrix=matrix
        )
        if output in ("json", "yaml"):
            emit_data(result.to_dict(), output)
        elif output == "name":
            moved = [
                node.node
                for node in result.nodes or ()
                if node.restarts or node.starts or node.stops
            ]
            sys.stdout.write("".join(f"{kubectl_name('Node', name)}\n" for name in moved))
        else:
            sys.stdout.write(render_preview_text(result, width=text_width(output)))
        return result.exit_code

    sys.exit(guarded(body, (VersionError,), reads_whole_dumps=True))


__all__ = ["check", "preview", "upgrade", "versions"]
