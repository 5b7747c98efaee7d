"""`gpuop explain`: why is it Pending?  kube-scheduler's verdict, node by node.

The command takes the workloads to explain (Pod, VirtualMachineInstance or VirtualMachine
manifests from files or `-`, `--pod`/`--vmi`/`--vm NAME -n NS` from the cluster, or
`--all-pending`) and a cluster (`--live`, or dumps with `--cluster FILE`), and runs
:func:`gpuop.explain.explain_pod` on each: per node, fits or not and the scheduler's reason,
then the scheduler's own `FailedScheduling` sentence.  VMIs and VMs are explained through
the virt-launcher pod KubeVirt would create (:mod:`gpuop.kubevirt.launcher`); when the
input holds a KubeVirt CR, devices missing from its `permittedHostDevices` are reported in
KubeVirt's own words, since no launcher pod is created at all then.

Exit status: 0 when every explained workload fits somewhere, 1 when one does not, 2 when
the input cannot be used (one line on stderr, never a traceback).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

import click

from gpuop.api.wording import listed
from gpuop.cli.common import UserError, emit_data, text_width
from gpuop.cli.inputs import (
    BUNDLE_MANIFEST,
    input_paths,
    note_ignored,
    require_kinds,
    shown,
    split_paths,
)
from gpuop.cli.layout import fit_lines
from gpuop.cli.live import LiveTarget, with_cluster_line
from gpuop.cli.options import filenames_option, live_options, output_option
from gpuop.cli.progress import progress
from gpuop.cli.running import (
    GreedyClusterCommand,
    finish,
    guarded,
    objects_from_files,
    printable,
    read_live_target,
)
from gpuop.explain.claims import DRA_KINDS
from gpuop.explain.subjects import (
    EXPLAINABLE,
    POD,
    POD_TEMPLATES,
    VM,
    VMI,
    Explained,
    Subject,
    SubjectError,
    explain_objects,
    explain_subjects,
    pending_objects,
    select_object,
    subjects_from_objects,
    validate_cluster,
)
from gpuop.explain.text import render_text
from gpuop.explain.volumes import STORAGE_KINDS
from gpuop.manifests import quantity_problem
from gpuop.manifests.fields import get, text

# What explain reads of a cluster (dump or live): the nodes, and what takes their room.
_CLUSTER_KINDS: Final = (
    "Node",
    POD,
    "KubeVirt",
    VMI,
    *DRA_KINDS,
    "PodDisruptionBudget",
    *STORAGE_KINDS,
    VM,
)

__all__ = [
    "EXIT_FITS",
    "EXIT_UNSCHEDULABLE",
    "Explained",
    "Subject",
    "explain",
    "explain_objects",
    "explain_subjects",
    "render_text",
    "subjects_from_objects",
    "validate_cluster",
]

EXIT_FITS: Final = 0
EXIT_UNSCHEDULABLE: Final = 1


# --------------------------------------------------------------------------- the command


def run_explain(
    manifests: Sequence[str],
    *,
    pod_name: str | None = None,
    vmi_name: str | None = None,
    vm_name: str | None = None,
    namespace: str | None = None,
    all_pending: bool = False,
    live: bool = False,
    kubeconfig: str | None = None,
    context: str | None = None,
    cluster_files: Sequence[str] = (),
    memory_overhead: str | None = None,
    target_out: list[LiveTarget] | None = None,
) -> tuple[list[Explained], bool]:
    """Everything `gpuop explain` does but printing: (results, whether JSON is a list).

    With --live, the cluster read is appended to `target_out` (for the header).
    """
    cluster_files = split_paths(cluster_files)
    named = [n for n in (pod_name, vmi_name, vm_name) if n]
    if not manifests and not named and not all_pending:
        raise UserError(
            "nothing to explain: give a MANIFEST file or '-' (or -f FILE),"
            " --pod/--vmi/--vm NAME, or --all-pending"
        )
    if live and cluster_files:
        raise UserError("give --cluster FILES or --live, not both")
    if not live and not cluster_files:
        raise UserError(
            "no cluster to explain against: give --cluster FILES (kubectl get nodes,pods -A"
            " -o json, a gpuop collect bundle) or --live"
        )
    if (kubeconfig or context) and not live:
        raise UserError("--kubeconfig and --context need --live")
    input_paths(manifests, cluster_files)  # '-' (stdin) at most once
    if namespace is not None and not named and not all_pending:
        raise UserError("-n/--namespace goes with --pod, --vmi, --vm or --all-pending")
    if memory_overhead is not None and quantity_problem(memory_overhead) is not None:
        raise UserError(f"--memory-overhead: {quantity_problem(memory_overhead)}")

    if live:
        kinds = [*_CLUSTER_KINDS] if vm_name else [k for k in _CLUSTER_KINDS if k != VM]
        cluster, target = read_live_target(kubeconfig, context, kinds)
        if target_out is not None:
            target_out.append(target)
    else:
        with progress(f"reading {', '.join(cluster_files)}"):
            cluster = objects_from_files(cluster_files)
        # Without a Node every workload is "unschedulable": say the dump is wrong instead.
        require_kinds(cluster, ("Node",), "gpuop explain --cluster", cluster_files)
        _require_allocatable(cluster)
        validate_cluster(cluster)
        if any(os.path.isfile(os.path.join(f, BUNDLE_MANIFEST)) for f in cluster_files):
            click.echo(
                "gpuop: note: a gpuop collect bundle holds only the pods that use NVIDIA"
                " resources: cpu and memory other pods take are not counted (add a"
                " `kubectl get pods -A -o json` dump for those)",
                err=True,
            )
    sourced: list[tuple[str, Mapping[str, Any]]] = []
    for path in manifests:
        source = shown(path)
        found = objects_from_files([path])
        if not found:  # an object of another kind is named below, with what explain takes
            require_kinds(found, (*EXPLAINABLE, *POD_TEMPLATES), "gpuop explain", [path])
        sourced.extend((source, obj) for obj in found)
    wanted_ns = namespace or "default"
    for kind, name in ((POD, pod_name), (VMI, vmi_name), (VM, vm_name)):
        if name:
            sourced.append(("the cluster", select_object(cluster, kind, name, wanted_ns)))
    if all_pending:
        for obj in pending_objects(cluster):
            if namespace is None or (text(obj, "metadata", "namespace") or "default") == namespace:
                sourced.append(("the cluster", obj))
    with progress("explaining", total=len(sourced)) as line:
        results = explain_objects(
            sourced, cluster, memory_overhead=memory_overhead, on_each=line.advance
        )
    if not live:  # said once every input is read: bad input is one error line alone
        note_ignored(cluster, _CLUSTER_KINDS, "gpuop explain --cluster")
    return results, all_pending or len(results) != 1


def _require_allocatable(cluster: Sequence[Any]) -> None:
    """Refuse Nodes whose capacity the input does not show (`kubectl get nodes
    --show-labels`, a trimmed dump): the scheduler's verdict on them would be made up."""
    bare = sorted(
        str(get(obj, "metadata", "name") or "(unnamed)")
        for obj in cluster
        if isinstance(obj, Mapping)
        and obj.get("kind") == "Node"
        and not isinstance(get(obj, "status", "allocatable"), Mapping)
        and not isinstance(get(obj, "status", "capacity"), Mapping)
    )
    if bare:
        raise UserError(
            f"--cluster: {listed(bare, 3)}: no status.allocatable or capacity in the input, so"
            " whether a pod fits cannot be told (`kubectl get nodes --show-labels` shows labels"
            " only); give `kubectl get nodes,pods -A -o json` or a gpuop collect bundle"
        )


@click.command("explain", cls=GreedyClusterCommand)
@click.argument("manifests", nargs=-1, metavar="[MANIFEST]...")
@filenames_option(
    "A workload to explain, as MANIFEST (file, directory or '-'); repeatable, or A,B."
)
@click.option("--pod", "pod_name", metavar="NAME", help="Explain this Pod of the cluster.")
@click.option("--vmi", "vmi_name", metavar="NAME", help="Explain this VMI of the cluster.")
@click.option("--vm", "vm_name", metavar="NAME", help="Explain this VirtualMachine of the cluster.")
@click.option(
    "-n", "--namespace", metavar="NS", help="Namespace for --pod/--vmi/--vm (default: default)."
)
@click.option(
    "--all-pending",
    is_flag=True,
    help="Explain every Pending pod (and waiting VMI) of the cluster.",
)
@live_options
@click.option(
    "--cluster",
    "cluster_files",
    multiple=True,
    metavar="FILE",
    help="A cluster dump: Node/Pod lists, `kubectl get nodes,pods -A -o json`, a `gpuop"
    " collect` bundle directory, or '-'. Repeatable, or A,B.",
)
@click.option(
    "--memory-overhead",
    metavar="QUANTITY",
    help="Add this to a rendered launcher pod's memory request (virt-launcher's overhead).",
)
@click.option("--all-nodes", is_flag=True, help="List every node even in large clusters.")
@output_option(
    "text",
    "wide",
    "json",
    "yaml",
    "name",
    help="Output format (json, yaml: the explainer's schema, a list when several pods;"
    " name: Kind/namespace/name of each workload that does not fit; wide: every node,"
    " lines not wrapped).",
)
def explain(
    manifests: tuple[str, ...],
    filenames: tuple[str, ...],
    pod_name: str | None,
    vmi_name: str | None,
    vm_name: str | None,
    namespace: str | None,
    all_pending: bool,
    live: bool,
    kubeconfig: str | None,
    context_name: str | None,
    cluster_files: tuple[str, ...],
    memory_overhead: str | None,
    all_nodes: bool,
    output: str,
) -> None:
    """Why is it Pending? Replay kube-scheduler's filters for a Pod, VMI or VM.

    Per node: fits, or the scheduler's reason (and the numbers behind it); then the
    scheduler's own FailedScheduling message. VMIs and VMs are explained through the
    virt-launcher pod KubeVirt creates for them; with a KubeVirt CR in the input, devices
    it does not permit are reported in KubeVirt's words. Deployments, ReplicaSets,
    StatefulSets, DaemonSets, Jobs and CronJobs are explained through their pod template.
    ResourceClaims (DRA) are explained too: a pod's claims, or a ResourceClaim given alone,
    are allocated against the ResourceSlices and DeviceClasses in the input as the
    scheduler's DynamicResources plugin allocates them, with the reason per node.

    \b
      gpuop explain pod.yaml --cluster nodes.json --cluster pods.json
      kubectl get nodes,pods,kubevirts -A -o json > dump.json
      gpuop explain vmi.yaml --cluster dump.json -o json
      gpuop explain --cluster nodes.json,pods.json -f pod.yaml
      gpuop explain --pod trainer -n ml --live
      gpuop explain --all-pending --cluster ./bundle

    --cluster is repeatable and takes A,B; the older `MANIFEST --cluster A B` form still
    reads B as a cluster file when a MANIFEST (or --pod, --vmi, --vm, --all-pending) came
    first. With --live the text report names the cluster under its first line.

    Exit status: 0 every workload fits somewhere, 1 one does not, 2 unusable input.
    """

    def body() -> int:
        targets: list[LiveTarget] = []
        results, as_list = run_explain(
            input_paths(manifests, filenames),
            pod_name=pod_name,
            vmi_name=vmi_name,
            vm_name=vm_name,
            namespace=namespace,
            all_pending=all_pending,
            live=live,
            kubeconfig=kubeconfig,
            context=context_name,
            cluster_files=cluster_files,
            memory_overhead=memory_overhead,
            target_out=targets,
        )
        target = targets[0] if targets else None
        if output in ("json", "yaml"):
            named = {"cluster": target.to_dict()} if target is not None else {}
            documents = [{**r.to_dict(), **named} for r in results]
            data: Any = documents if as_list else documents[0]
            emit_data(data, output)
        elif output == "name":
            for result in results:
                if not result.fits:
                    sys.stdout.write(f"{result.subject.kind}/{result.subject.key}\n")
        elif not results:
            sys.stdout.write(with_cluster_line("no Pending pods or waiting VMIs\n", target))
        else:
            every = all_nodes or output == "wide"
            body_text = render_text(results, all_nodes=every)
            text_out = fit_lines(with_cluster_line(body_text, target), text_width(output))
            sys.stdout.write(printable(text_out))
        return EXIT_FITS if all(r.fits for r in results) else EXIT_UNSCHEDULABLE

    finish(guarded(body, input_errors=(SubjectError,)))
