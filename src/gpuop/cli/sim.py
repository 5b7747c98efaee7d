"""The `gpuop sim` commands: simulated GPU nodes on a kwok cluster."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import click

from gpuop.api.labels import SIM_LABEL, WORKLOAD_LABEL
from gpuop.catalog.managers import GPU_OPERATOR
from gpuop.cli.common import (
    UserError,
    emit_data,
    kubectl_name,
    read_text_input,
    resolve_kubeconfig,
    text_width,
)
from gpuop.cli.completers import complete_gpu_models
from gpuop.cli.inputs import load_pci_database
from gpuop.cli.layout import Column, render_table
from gpuop.cli.options import (
    kubeconfig_option,
    labels_option,
    output_option,
    parse_labels,
    pci_ids_option,
)
from gpuop.kube.client import SyncKubeClient
from gpuop.manifests import ManifestError, load_yaml_documents
from gpuop.sim.hardware import NodeSpec, SimError, node_manifest, parse_cluster_spec
from gpuop.sim.managers import managers

_namespace_option = click.option(
    "--namespace",
    envvar="OPERATOR_NAMESPACE",
    default="gpu-operator",
    show_default=True,
    help="Where the operand pods run and the simulator keeps its hardware ConfigMap.",
)


def _client(kubeconfig: str | None):  # type: ignore[no-untyped-def]
    from gpuop.kube import KubeError, sync_client

    try:
        return sync_client(resolve_kubeconfig(kubeconfig))
    except KubeError as exc:
        raise UserError(str(exc)) from exc


@click.group()
def sim() -> None:
    """Simulated GPU servers: kwok nodes that behave like GPU nodes under the operator.

    \b
    Typical session on the local cluster:
      gpuop sim node add gpu-a --gpu A10 --count 2 --workload vm-vgpu
      gpuop sim run &            # the node side: device plugins, vGPU manager, ...
      gpuop operator run &
      kubectl get node gpu-a -o jsonpath='{.status.allocatable}'
    """


@sim.group()
def node() -> None:
    """Add, remove and list simulated GPU nodes."""


@node.command("add")
@click.argument("name")
@click.option(
    "--gpu",
    required=True,
    shell_complete=complete_gpu_models,
    help="GPU model, e.g. A10, L40S, H100 (see `gpuop sim models`).",
)
@click.option("--count", type=int, default=1, show_default=True, help="GPUs in the node.")
@click.option(
    "--workload",
    type=click.Choice(["container", "vm-passthrough", "vm-vgpu"]),
    help=f"Set {WORKLOAD_LABEL}.",
)
@click.option(
    "--managed-by",
    "managed_by",
    type=click.Choice(managers()),
    metavar="MANAGER",
    default=GPU_OPERATOR,
    show_default=True,
    help="What manages its GPUs: the GPU Operator (the simulator plays the node side), or"
    " another manager, whose node is made as that manager leaves it (labels, resources,"
    f" its plugin's pod) and left as made. One of: {', '.join(managers())}.",
)
@labels_option("Extra label KEY=VALUE (repeatable).")
@_namespace_option
@kubeconfig_option
def node_add(
    name: str,
    gpu: str,
    count: int,
    workload: str | None,
    managed_by: str,
    labels: tuple[str, ...],
    namespace: str,
    kubeconfig: str | None,
) -> None:
    """Create a simulated GPU node NAME.

    Its cards are recorded in the simulator's hardware ConfigMap (gpuop-sim-hardware in
    NAMESPACE), not on the Node: the Node carries only what NFD would write.

    With --managed-by another manager, the node is made as that manager leaves one
    (catalog/managed-shapes.yaml), for `gpuop check` to be tried on:

    \b
      gpuop sim node add gke-l4 --gpu L4 --managed-by gke
      gpuop sim node add eks-p5 --gpu H100 --count 8 --managed-by eks-auto-mode
      gpuop check --live
    """
    extra = parse_labels(labels)
    if workload:
        extra[WORKLOAD_LABEL] = workload
    spec = NodeSpec(name=name, gpu=gpu, count=count, labels=extra, managed_by=managed_by)
    try:
        node_manifest(spec)
    except SimError as exc:
        raise UserError(str(exc)) from exc
    from gpuop.kube import ops
    from gpuop.sim.registry import add_nodes

    client = _client(kubeconfig)
    if ops.get_node(client, name) is not None:
        raise UserError(
            f"node {name} already exists; remove it first with `gpuop sim node rm {name}`"
        )
    try:
        add_nodes(client, [spec], namespace)
    except SimError as exc:
        raise UserError(str(exc)) from exc
    managed = f", managed by {managed_by}" if managed_by != GPU_OPERATOR else ""
    click.echo(f"node/{name} created ({count}x {gpu}{managed})")


@node.command("rm")
@click.argument("names", nargs=-1, required=True)
@_namespace_option
@kubeconfig_option
def node_rm(names: tuple[str, ...], namespace: str, kubeconfig: str | None) -> None:
    """Delete simulated nodes (and their hardware record)."""
    from gpuop.kube import ops
    from gpuop.sim.registry import forget_hardware

    client = _client(kubeconfig)
    missing = []
    for name in names:
        found = ops.get_node(client, name)
        if found is None:
            missing.append(name)
            continue
        if SIM_LABEL not in (found.get("metadata", {}).get("labels") or {}):
            raise UserError(f"node {name} is not a simulated node; not deleting it")
        ops.delete_node_sync(client, name)
        forget_hardware(client, [name], namespace)
        click.echo(f"node/{name} deleted")
    if missing:
        raise UserError(f"no such node: {', '.join(missing)}", exit_code=1)


@node.command("list")
@output_option("text", "wide", "json", "yaml", "name")
@kubeconfig_option
def node_list(output: str, kubeconfig: str | None) -> None:
    """List simulated nodes with their workload config and GPU resources."""
    from gpuop.kube import ops
    from gpuop.naming import is_gpu_resource

    rows = []
    for item in ops.list_nodes_sync(_client(kubeconfig)):
        meta = item.get("metadata", {})
        if SIM_LABEL not in (meta.get("labels") or {}):
            continue
        allocatable = (item.get("status") or {}).get("allocatable") or {}
        rows.append(
            {
                "name": meta.get("name"),
                "workload": (meta.get("labels") or {}).get(WORKLOAD_LABEL, ""),
                "resources": {k: v for k, v in allocatable.items() if is_gpu_resource(k)},
            }
        )
    if output in ("json", "yaml"):
        emit_data(rows, output)
        return
    if output == "name":
        click.echo("".join(f"{kubectl_name('Node', row['name'])}\n" for row in rows), nl=False)
        return
    table = [
        [
            str(row["name"]),
            row["workload"] or "(no label)",
            ", ".join(f"{k}={v}" for k, v in row["resources"].items()) or "-",
        ]
        for row in rows
    ]
    columns = [Column("NAME"), Column("WORKLOAD"), Column("GPU RESOURCES", wrap=True)]
    click.echo(render_table(columns, table, width=text_width(output)))


@sim.command("apply")
@click.argument("file", metavar="FILE|-")
@_namespace_option
@kubeconfig_option
def apply(file: str, namespace: str, kubeconfig: str | None) -> None:
    """Create every node of a cluster spec FILE (`-` for stdin) that does not exist yet.

    \b
    nodes:
      - {name: gpu-vgpu, gpu: A10, count: 2, labels: {nvidia.com/gpu.workload.config: vm-vgpu}}
      - {namePrefix: pool-, replicas: 1000, gpu: L40S, count: 4}
    """
    try:
        documents = load_yaml_documents(read_text_input(file), "stdin" if file == "-" else file)
        specs = parse_cluster_spec(documents[0] if documents else None)
    except ManifestError as exc:
        raise UserError(str(exc)) from exc
    except SimError as exc:
        raise UserError(f"{file}: {exc}") from exc
    from gpuop.kube import ops
    from gpuop.sim.registry import add_nodes

    client = _client(kubeconfig)
    existing = {n["metadata"]["name"] for n in ops.list_nodes_sync(client)}
    todo = [s for s in specs if s.name not in existing]

    def progress(done: int) -> None:
        if done % 100 == 0 or done == len(todo):
            click.echo(f"created {done}/{len(todo)} nodes", err=True)

    try:
        add_nodes(client, todo, namespace, progress)
    except SimError as exc:
        raise UserError(f"{file}: {exc}") from exc
    click.echo(f"{len(todo)} created, {len(specs) - len(todo)} already there")


@sim.command("run")
@_namespace_option
@click.option(
    "--hosts-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Per-node host roots (default: the cluster state dir).",
)
@click.option(
    "--dra-publication",
    type=click.Choice(["race-free", "two-faced"]),
    default="race-free",
    show_default=True,
    help="What the DRA driver publishes: gpuop's counter sets, or NVIDIA's two faces.",
)
@pci_ids_option
@kubeconfig_option
def run(
    namespace: str,
    hosts_dir: str | None,
    dra_publication: str,
    pci_ids: str | None,
    kubeconfig: str | None,
) -> None:
    """Play the node side of every simulated node until interrupted."""
    import logging

    from gpuop.sim.controller import SimConfig, run_simulator

    database = load_pci_database(pci_ids).database
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for noisy in ("httpx", "httpx2", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    resolved = resolve_kubeconfig(kubeconfig)
    _client(kubeconfig)  # an unusable kubeconfig is bad input, said before anything starts
    if hosts_dir is None:
        base = Path(resolved[0]).parent
        hosts = base / "sim-hosts"
    else:
        hosts = Path(hosts_dir)
    run_simulator(
        SimConfig(
            namespace=namespace,
            hosts_dir=hosts,
            kubeconfig=resolved,
            pci_db=database,
            dra_shared_counters=dra_publication == "race-free",
        )
    )


@sim.command("drift")
@click.argument("node_name", required=False)
@click.argument("kind", required=False)
@click.option(
    "--list", "list_kinds", is_flag=True, help="List the drift kinds and what each imitates."
)
@click.option("--seed", type=int, default=None, help="Seed for kinds that pick a value.")
@_namespace_option
@kubeconfig_option
def drift(
    node_name: str | None,
    kind: str | None,
    list_kinds: bool,
    seed: int | None,
    namespace: str,
    kubeconfig: str | None,
) -> None:
    """Put NODE_NAME into drift KIND (stop the operator and simulator first, or they repair it)."""
    from gpuop.sim.dra import DRA_DRIFT_KINDS
    from gpuop.sim.drift import DRIFT_KINDS, drift_patch

    if list_kinds or not node_name:
        for each in DRIFT_KINDS.values():
            click.echo(f"{each.name:<22} ({', '.join(each.applies_to)})\n    {each.imitates}")
        for dra in DRA_DRIFT_KINDS.values():
            click.echo(f"{dra.name:<22} (DRA nodes)\n    {dra.imitates}")
        return
    if not kind:
        raise UserError("give a drift KIND (see `gpuop sim drift --list`)")
    from gpuop.kube import ops
    from gpuop.sim.registry import hardware_of

    client = _client(kubeconfig)
    found = ops.get_node(client, node_name)
    if found is None:
        raise UserError(f"no such node: {node_name}")
    cards = hardware_of(client, namespace).get(node_name, ())
    if kind in DRA_DRIFT_KINDS:
        _dra_drift(client, namespace, kind, found, cards)
        return
    try:
        patch = drift_patch(kind, found, cards, rng=random.Random(seed))
    except SimError as exc:
        raise UserError(str(exc)) from exc
    ops.patch_node_sync(
        client, node_name, labels=patch.labels or None, resources=patch.resources or None
    )
    click.echo(f"node/{node_name} drifted: {kind}", file=sys.stdout)


def _dra_drift(client: SyncKubeClient, namespace: str, kind: str, node: Any, cards: Any) -> None:
    from gpuop.kube import ops
    from gpuop.sim.dra import dra_drift, slice_view
    from gpuop.sim.registry import hardware_configmap

    slices = [v for v in map(slice_view, ops.list_dra_sync(client, "ResourceSlice")) if v]
    try:
        drift = dra_drift(kind, node, cards, slices)
    except SimError as exc:
        raise UserError(str(exc)) from exc
    if drift.hardware is not None:
        ops.merge_configmap_data_sync(
            client, hardware_configmap(drift.node), namespace, {drift.node: drift.hardware}
        )
    if drift.resources:
        ops.patch_node_sync(client, drift.node, resources=drift.resources)
    click.echo(f"node/{drift.node} drifted: {kind}", file=sys.stdout)


@sim.command("models")
def models() -> None:
    """List the GPU models the simulator knows."""
    from gpuop.catalog import gpu_catalog

    for gpu in gpu_catalog().gpus:
        click.echo(
            f"{gpu.model:<6} 10de:{gpu.pci_device_id}  {gpu.pci_name:<28} {gpu.memory_mib} MiB  default vGPU {gpu.default_vgpu_type}"
        )
