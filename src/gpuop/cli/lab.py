"""The `gpuop lab` command: the whole scenario, one step, or clean-up."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from gpuop.cli.common import UserError


@contextlib.contextmanager
def _user_errors() -> Iterator[None]:
    from gpuop.controlplane import ControlPlaneError
    from gpuop.lab.stack import StackError

    try:
        yield
    except (ControlPlaneError, StackError) as exc:
        raise UserError(str(exc)) from exc


def _context(seed: int | None, name: str) -> Any:
    from gpuop.controlplane.paths import cluster_dir
    from gpuop.lab.runner import LabContext, lab_work_dir

    chosen = seed if seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    with _user_errors():
        work_dir = lab_work_dir(cluster_dir(name))
    work_dir.mkdir(parents=True, exist_ok=True)
    return LabContext(
        cluster_name=name, work_dir=work_dir, say=lambda line: click.echo(line), seed=chosen
    )


@click.group(invoke_without_command=True)
@click.option(
    "--keep", is_flag=True, help="Leave the cluster, operator and simulator running afterwards."
)
@click.option(
    "--seed", type=int, default=None, help="Seed for the drift step (printed when not given)."
)
@click.option(
    "--report-dir", type=click.Path(file_okay=False), default="lab-report", show_default=True
)
@click.option("--cluster-name", default="gpuop", show_default=True)
@click.option(
    "--dra", is_flag=True, help="Also run the DRA step: containers and VMs on one node, the race."
)
@click.option(
    "--managers",
    "with_managers",
    is_flag=True,
    help="Also run the managers step: a node as each other manager of GPUs leaves it, checked.",
)
@click.pass_context
def lab(
    ctx: click.Context,
    keep: bool,
    seed: int | None,
    report_dir: str,
    cluster_name: str,
    dra: bool,
    with_managers: bool,
) -> None:
    """Run the three-node lab on a local cluster and write a report.

    \b
    What it does, step by step:
      1 control plane, CRD, RBAC, operator (as its ServiceAccount), node simulator
      2 three 2x A10 nodes: container, vm-passthrough, vm-vgpu
      3 operands, deploy labels and advertised resources per node
      4 a pod, two VMs and three cross requests placed by the real kube-scheduler;
        a training job spread by host and an inference pair kept apart: each second
        pod waits, explained
      5 vGPU profile A10-12Q -> A10-4Q: 4 -> 12 devices
      6 the silent trap: sandbox workloads off, labels ignored (now with Warnings)
      7 drift on purpose; the checker finds exactly the drifted nodes
      8 report: lab-report/lab-report.{json,md,html}
    With --dra, before the report: a 2x A10 node whose cards the simulated DRA
    driver publishes race-free, a CUDA pod and a VM's launcher pod with claims on
    different cards, and the race counted against NVIDIA's two-faced publication.
    With --managers, before the report: a node as each other manager of GPUs
    leaves it (the standalone plugin, GKE, EKS, AKS, Bottlerocket, NVIDIA's
    KubeVirt and DRA drivers, HAMi, ...), each named by `gpuop check` with
    nothing wrong, then a resource registered with 0 devices, found on its node.

    The first run builds the control plane from source (long, once); later runs reuse it.
    A lab that passes stops everything it started, the control plane included; a cluster
    that was already running before it is left running. With --keep, explore afterwards
    with the printed KUBECONFIG and stop with `gpuop lab down`. A lab that fails leaves
    everything up for inspection.
    """
    if ctx.invoked_subcommand is not None:
        return
    from gpuop.lab.report import write_reports
    from gpuop.lab.runner import STEP_TITLES, STEPS, LabFailure, finish, teardown_for

    context = _context(seed, cluster_name)
    report: dict[str, Any] = {"seed": context.seed, "steps": {}, "timings": {}}
    started = time.monotonic()
    failure: LabFailure | None = None
    try:
        for number, step in STEPS.items():
            click.secho(f"\n[{number}/8] {STEP_TITLES[number]}", bold=True)
            step_started = time.monotonic()
            report["steps"][str(number)] = step(context)
            report["timings"][str(number)] = round(time.monotonic() - step_started, 2)
            if number == 1:
                report["kubernetes"] = report["steps"]["1"].get("kubernetes")
                report["cluster"] = report["steps"]["1"].get("cluster")
        if dra:
            from gpuop.lab.dra import lab_step

            click.secho(f"\n[dra] {STEP_TITLES[9]}", bold=True)
            step_started = time.monotonic()
            report["steps"]["dra"] = lab_step(context)
            report["timings"]["dra"] = round(time.monotonic() - step_started, 2)
        if with_managers:
            from gpuop.lab.managers import lab_step as managers_step

            click.secho(f"\n[managers] {STEP_TITLES[10]}", bold=True)
            step_started = time.monotonic()
            report["steps"]["managers"] = managers_step(context)
            report["timings"]["managers"] = round(time.monotonic() - step_started, 2)
    except LabFailure as exc:
        failure = exc
        report["failure"] = str(exc)
    except Exception as exc:
        failure = LabFailure(
            len(report["steps"]) + 1, "the step to finish", f"{type(exc).__name__}: {exc}"
        )
        report["failure"] = str(failure)
    report["ok"] = failure is None
    report["duration_seconds"] = round(time.monotonic() - started, 1)
    click.secho("\n[8/8] Report", bold=True)
    paths = write_reports(report, Path(report_dir))
    for kind, path in paths.items():
        click.echo(f"  {kind:<8} {path}")
    teardown = teardown_for(
        passed=failure is None, keep=keep, started_cluster=context.started_cluster
    )
    if failure is not None:
        click.secho(f"\nlab failed: {failure}", fg="red", err=True)
        for line in finish(context, teardown):
            click.echo(line, err=True)
        raise SystemExit(1)
    click.secho(f"\nlab passed in {report['duration_seconds']}s", fg="green")
    with _user_errors():
        lines = finish(context, teardown)
    for line in lines:
        click.echo(line)


@lab.command("step")
@click.argument("number", type=click.IntRange(1, 7))
@click.option("--seed", type=int, default=None)
@click.option("--cluster-name", default="gpuop", show_default=True)
def step(number: int, seed: int | None, cluster_name: str) -> None:
    """Run one step on a cluster left up by `gpuop lab --keep` (or step 1 to start one)."""
    from gpuop.lab.runner import STEPS

    _run_step(str(number), number, STEPS[number], seed, cluster_name)


@lab.command("dra")
@click.option("--cluster-name", default="gpuop", show_default=True)
def dra_step(cluster_name: str) -> None:
    """Run the DRA step alone on a cluster left up by `gpuop lab --keep`."""
    from gpuop.lab.dra import lab_step

    _run_step("dra", 9, lab_step, 0, cluster_name)


def _run_step(
    shown: str, number: int, run: Callable[[Any], Any], seed: int | None, cluster_name: str
) -> None:
    """One lab step on its own: its title, then what it returned, as JSON (cut at 4000)."""
    import json

    from gpuop.lab.runner import STEP_TITLES, LabFailure

    context = _context(seed, cluster_name)
    click.secho(f"[{shown}] {STEP_TITLES[number]}", bold=True)
    try:
        result = run(context)
    except LabFailure as exc:
        raise UserError(str(exc), exit_code=1) from exc
    click.echo(json.dumps(result, indent=2, default=str)[:4000])


@lab.command("managers")
@click.option("--cluster-name", default="gpuop", show_default=True)
def managers_step(cluster_name: str) -> None:
    """Run the managers step alone on a cluster left up by `gpuop lab --keep`."""
    from gpuop.lab.managers import lab_step

    _run_step("managers", 10, lab_step, 0, cluster_name)


@lab.command("down")
@click.option("--cluster-name", default="gpuop", show_default=True)
def down(cluster_name: str) -> None:
    """Stop the lab's operator and simulator, and the local control plane."""
    from gpuop.controlplane import LocalCluster as Cluster
    from gpuop.lab.runner import stop_background

    context = _context(0, cluster_name)
    with _user_errors():
        stop_background(context)
        Cluster(cluster_name).down()
    click.echo(f"lab stopped: the operator, the simulator and cluster '{cluster_name}'")
