"""`gpuop check` and `gpuop collect`.

`check` reads dumps (files, stdin, a bundle directory) or a live cluster and reports nodes
whose labels, operands and advertised resources disagree. Exit status: 0 without
error-level findings, 1 with errors, 2 when the input cannot be read or the command line
is wrong (one line on stderr, never a traceback).

`collect` writes a bundle directory: one JSON list per kind plus `bundle.json`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from gpuop.check import render_text, run_checks, to_sarif
from gpuop.check.release import ReleaseError, parse_operator_version
from gpuop.check.state import KNOWN_KINDS
from gpuop.cli.common import UserError
from gpuop.cli.completers import complete_operator_releases
from gpuop.cli.exits import exit_codes_help
from gpuop.cli.findings import CheckerArgs, Verdict, checker_options
from gpuop.cli.inputs import (
    BUNDLE_MANIFEST,
    load_pci_database,
    load_policy,
    load_vgpu_config,
    read_dump,
    read_objects,
)
from gpuop.cli.layout import note
from gpuop.cli.live import LiveTarget, live_target
from gpuop.cli.options import cluster_options, pci_ids_option, policy_override_option
from gpuop.cli.progress import progress
from gpuop.cli.running import guarded, read_live_with

BUNDLE_SCHEMA_VERSION = 1
# The kinds `gpuop check` reports on; Events and ConfigMaps only add to what these say.
CHECK_KINDS = tuple(kind for kind in KNOWN_KINDS if kind not in ("Event", "ConfigMap"))


def _collect_live(target: LiveTarget, progress: Callable[[str], None] | None) -> Any:
    from gpuop.kube.collect import collect

    if progress is not None:
        progress(f"reading {target.describe()}")
    return read_live_with(target, lambda client: collect(client, progress=progress))


@click.command("check", epilog=exit_codes_help())
@checker_options("text", "wide", "json", "yaml", "name", "sarif")
@policy_override_option
@pci_ids_option
@click.option(
    "--vgpu-config",
    "vgpu_config_file",
    metavar="FILE",
    help="The vGPU device config (file or ConfigMap) the cluster uses.",
)
@click.option(
    "--operator-release",
    "--operator-version",
    "operator_version",
    metavar="VERSION",
    shell_complete=complete_operator_releases,
    help="The GPU Operator release that labels the nodes (v25.10.0, or a line: 25.10);"
    " default: read from the input. --operator-version is the same option.",
)
@click.option(
    "--all-nodes",
    is_flag=True,
    help="List every node with what manages its GPUs and why (-o json/yaml: in `nodes`;"
    " text: a table after the findings), not only the nodes findings are about.",
)
def check(
    args: CheckerArgs,
    policy_file: str | None,
    pci_ids: str | None,
    vgpu_config_file: str | None,
    operator_version: str | None,
    all_nodes: bool,
) -> None:
    """Find GPU nodes whose labels, operands and advertised resources disagree.

    FILES are `kubectl get ... -o json|yaml` output (single objects, Lists,
    multi-document YAML, JSON streams), `kubectl describe node`, `describe pod`,
    `describe clusterpolicy` and `describe kubevirt` output, `kubectl get nodes --show-labels`, `kubectl get pods -o wide` and `kubectl
    get daemonsets` tables, `-` for stdin, or a directory written by `gpuop collect`.

    \b
      kubectl get nodes,clusterpolicies,kubevirts -A -o json | gpuop check -
      gpuop check ./bundle -o sarif > gpuop.sarif
      gpuop check --live --context lab
      gpuop check dump.json --severity warning --fail-on warning --ignore GPU305
      gpuop check dump.json --ignore 'GPU201:Node/legacy-*' -o name
      gpuop check dump.json --all-nodes -o yaml

    Findings can be managed: --severity hides those below it, --fail-on sets the severity
    that fails the run, --ignore hides a code (on one object with CODE:KIND/NAME), a
    .gpuop.yaml in the current directory (or --config FILE) holds the same settings, and an
    object annotated gpuop.io/ignore: GPU201,GPU305 hides those codes for itself. Identical
    findings on several objects are printed once, with a count.
    """

    def body() -> int:
        run = args.read(stdin_options=(pci_ids,))
        policy = load_policy(policy_file, "gpuop check --policy")[0] if policy_file else None
        database = load_pci_database(pci_ids).database
        vgpu = load_vgpu_config(vgpu_config_file) if vgpu_config_file else None
        try:
            release = parse_operator_version(operator_version) if operator_version else None
        except ReleaseError as exc:
            raise UserError(str(exc)) from None
        if run.target is not None:
            quiet = args.output not in ("text", "wide")
            collected = _collect_live(run.target, None if quiet else note)
            objects: list[Any] = collected.all_objects()
        else:
            with progress(f"reading {', '.join(run.paths)}"):
                objects = read_dump(
                    run.paths, needs=CHECK_KINDS, reads=KNOWN_KINDS, command="gpuop check"
                )
        with progress(f"checking {len(objects)} objects"):
            report = run_checks(
                objects,
                policy=policy,
                policy_source=f"--policy {policy_file}",
                pci_db=database,
                vgpu_config=vgpu,
                operator_release=release,
            )
        report = run.chosen.apply(report, objects)
        verdict = Verdict(
            report,
            document=lambda: report.to_dict(all_nodes=all_nodes),
            text=lambda color, width: render_text(
                report, color=color, width=width, all_nodes=all_nodes
            ),
            sarif=lambda: to_sarif(report),
        )
        return args.print(verdict, run.target)

    sys.exit(guarded(body, reads_whole_dumps=True))


def write_bundle(collected: Any, directory: Path, context: str | None) -> list[Path]:
    """One `<kind>s.json` List per kind and a `bundle.json` manifest."""
    from gpuop.kube.collect import BUNDLE_FILES

    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    files: dict[str, dict[str, Any]] = {}
    for kind, (file_name, api_version) in BUNDLE_FILES.items():
        items = collected.objects.get(kind)
        if items is None:
            continue
        path = directory / file_name
        document = {"apiVersion": api_version, "kind": f"{kind}List", "items": items}
        # Written as it is encoded: a fleet's pods are never one string in memory.
        with path.open("w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1)
            handle.write("\n")
        files[kind] = {"file": file_name, "count": len(items)}
        written.append(path)
    manifest = {
        "schema_version": BUNDLE_SCHEMA_VERSION,
        "kind": "gpuop-bundle",
        "collected_at": collected.collected_at,
        "context": context,
        "files": files,
        "skipped": [{"kind": kind, "reason": reason} for kind, reason in collected.skipped],
    }
    path = directory / BUNDLE_MANIFEST
    path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    written.append(path)
    return written


@click.command("collect")
@click.option(
    "--output-dir",
    "-d",
    "output_dir",
    required=True,
    metavar="DIR",
    help="Directory for the bundle (created if missing).",
)
@cluster_options
def collect(output_dir: str, kubeconfig: str | None, context_name: str | None) -> None:
    """Save what `gpuop check` reads from a live cluster into a bundle directory.

    Nodes, ClusterPolicies, KubeVirt CRs, pods and VMIs that use NVIDIA resources, operand
    DaemonSets and their pods, the vGPU config ConfigMap and recent events; one JSON file
    per kind and a bundle.json manifest. Check it later with `gpuop check DIR`.
    """

    def body() -> int:
        target = live_target(True, kubeconfig, context_name)
        assert target is not None
        collected = _collect_live(target, note)
        try:
            written = write_bundle(collected, Path(output_dir), target.context)
        except OSError as exc:
            raise UserError(f"cannot write {output_dir}: {exc.strerror or exc}") from None
        counts = ", ".join(
            f"{len(items)} {kind}" for kind, items in collected.objects.items() if items
        )
        note(f"wrote {len(written)} files to {output_dir} ({counts or 'nothing found'})")
        for kind, reason in collected.skipped:
            note(f"skipped {kind}: {reason}")
        click.echo(output_dir)
        return 0

    sys.exit(guarded(body, reads_whole_dumps=True))


__all__ = ["check", "collect", "read_objects", "write_bundle"]
