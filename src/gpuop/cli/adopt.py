"""`gpuop adopt`: what taking over a running cluster would change, before anything is written.

Read-only: it reads the cluster (or a dump) and compares what runs with what gpuop would
apply (`gpuop.versions.adopt`). Exit status: 0 when gpuop would take over without
restarting, starting or stopping a pod or relabelling a node, 1 when something would
change (listed), 2 when the input cannot be read or the command line is wrong.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from gpuop.cli.common import emit_data
from gpuop.cli.exits import exit_codes_help
from gpuop.cli.inputs import input_paths, read_dump
from gpuop.cli.layout import note
from gpuop.cli.live import live_target, require_files_or_live, with_cluster_line
from gpuop.cli.options import filename_option, live_options, output_option
from gpuop.cli.running import guarded, read_live_with
from gpuop.kube.client import SyncKubeClient

# What an operator makes beside its DaemonSets: `adopt` lists the ones that are missing.
_SUPPORT_KINDS = (
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "Service",
    "RuntimeClass",
)

# Everything `adopt` compares or reads: the operator's objects, its nodes, pods and policies.
_ADOPT_KINDS = (
    *_SUPPORT_KINDS,
    "ServiceMonitor",
    "DaemonSet",
    "Deployment",
    "Pod",
    "Node",
    "ClusterPolicy",
)


def _read_live(client: SyncKubeClient) -> list[Any]:
    """What `check` collects (nodes, policies, operand DaemonSets and pods, GPU pods), and
    the objects an operator makes beside its DaemonSets."""
    from gpuop.kube.collect import collect
    from gpuop.kube.reading import read_kinds

    objects = [o for o in collect(client).all_objects() if o.get("kind") != "ConfigMap"]
    return objects + read_kinds(client, _SUPPORT_KINDS).objects


@click.command("adopt", epilog=exit_codes_help())
@click.argument("files", nargs=-1, metavar="[FILES]...")
@filename_option
@live_options
@click.option(
    "--namespace",
    default="gpu-operator",
    show_default=True,
    help="The operator namespace (where the operand DaemonSets run).",
)
@output_option("text", "json", "yaml")
def adopt(
    files: tuple[str, ...],
    filenames: tuple[str, ...],
    live: bool,
    kubeconfig: str | None,
    context_name: str | None,
    namespace: str,
    output: str,
) -> None:
    """What taking over this cluster would change: which DaemonSets roll, which nodes.

    Compares each operand DaemonSet's pod template with the one gpuop renders for the
    active ClusterPolicy (a template that differs is a rollout: its pods restart) and
    names every field that differs; lists DaemonSets gpuop would create or delete, node
    labels it would change, and the GPU pods a driver rollout would drain. It names what
    manages the cluster now and the release it runs. Nothing is written. The same answers
    a move from one gpuop release to another. Operand images the operator would take
    from its environment (`DRIVER_IMAGE`, ...) are read from this one's.

    FILES are `kubectl get nodes,clusterpolicies,daemonsets,pods -A -o json` output, `-`
    for stdin, or a directory written by `gpuop collect`.

    \b
      gpuop adopt --live
      gpuop adopt --live -o json | jq '.daemonsets[] | select(.action == "roll")'
      gpuop collect -d bundle/ && gpuop adopt bundle/
    """

    def body() -> int:
        from gpuop.versions.adopt import preview_adoption, render_adoption_text

        paths = input_paths(files, filenames)
        require_files_or_live(paths, live)
        target = live_target(live, kubeconfig, context_name)
        objects: list[Any]
        if target is not None:
            if output == "text":
                note(f"reading {target.describe()}")
            objects = read_live_with(target, _read_live)
        else:
            objects = read_dump(
                paths, needs=("ClusterPolicy",), reads=_ADOPT_KINDS, command="gpuop adopt"
            )
        image_env = {k: v for k, v in os.environ.items() if k.endswith("_IMAGE")}
        preview = preview_adoption(objects, namespace, image_env)
        if output == "json":
            data = preview.to_dict()
            if target is not None:
                data["cluster"] = target.to_dict()
            sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        elif output == "yaml":
            emit_data(preview.to_dict(), "yaml")
        else:
            sys.stdout.write(with_cluster_line(render_adoption_text(preview), target))
        return 0 if preview.clean else 1

    sys.exit(guarded(body))


__all__ = ["adopt"]
