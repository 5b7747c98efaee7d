"""The `gpuop plan` command: what one node would run and advertise, under which stack."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import click

from gpuop.api.labels import (
    GPU_STACK_LABEL,
    INVENTORY_ANNOTATION,
    NFD_GPU_LABELS,
    VGPU_CONFIG_LABEL,
    WORKLOAD_LABEL,
)
from gpuop.api.notices import NoticeCode
from gpuop.api.wording import listed, value_kind
from gpuop.catalog import WORKLOAD_CONFIGS, gpu_catalog
from gpuop.cli.common import (
    UNLIMITED_WIDTH,
    UserError,
    emit_data,
    kubectl_name,
    note_at_exit,
    text_width,
)
from gpuop.cli.completers import complete_gpu_models, complete_vgpu_types
from gpuop.cli.inputs import (
    PciSource,
    expand,
    ignored_kinds_line,
    input_paths,
    load_documents,
    load_pci_database,
    load_policy,
    load_yaml_document,
    require_kinds,
)
from gpuop.cli.layout import Column, fit_lines, render_table
from gpuop.cli.options import labels_option, output_option, parse_labels, pci_ids_option
from gpuop.cli.plan.stacks import Stacks, load_stacks
from gpuop.cli.plan.support import heading
from gpuop.cli.progress import progress
from gpuop.planner import (
    NodeFacts,
    NodePlan,
    planning_key,
)
from gpuop.planner import (
    plan as plan_node,
)
from gpuop.planner.inventory import MAX_GPUS_PER_NODE, GpuCard, encode_inventory
from gpuop.policy import ResolvedPolicy

DEFAULT_NODE_NAME = "gpu-node"
_POLICY_COMMAND = "gpuop plan --policy"
EXIT_PLAN_ERRORS = 1
# Notices the text output already states in their own section (workload, vGPU config).
_SAID_ABOVE = frozenset({NoticeCode.WORKLOAD_LABEL_IGNORED, NoticeCode.VGPU_CONFIG_INFEASIBLE})
MUST_NOT_SHOWN = 6
_INVENTORY_SOURCES = {
    "annotation": f"the {INVENTORY_ANNOTATION} annotation",
    "gfd-labels": "GPU feature discovery labels",
    "advertised": "the resources the node advertises",
    "vgpu-config-label": "the vGPU type in nvidia.com/vgpu.config (count unknown)",
    "nfd-device-label": "an NFD PCI device label (count unknown)",
    "none": "nowhere (unknown)",
}


def node_from_flags(name: str, model_name: str, count: int) -> dict[str, Any]:
    """A Node as NFD first labels it, with gpuop's inventory annotation for its cards."""
    model = gpu_catalog().by_model(model_name)
    if model is None:
        known = ", ".join(gpu.model for gpu in gpu_catalog().gpus)
        raise UserError(f"unknown GPU model {model_name!r} (known: {known})")
    if count < 1:
        raise UserError(f"--count {count}: a GPU node has at least 1 GPU")
    if count > MAX_GPUS_PER_NODE:
        raise UserError(
            f"--count {count}: more GPUs than a node holds (at most {MAX_GPUS_PER_NODE})"
        )
    cards = [
        GpuCard(index, model.pci_device_id, model=model.model, memory_mib=model.memory_mib)
        for index in range(count)
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {NFD_GPU_LABELS[0]: "true"},
            "annotations": {INVENTORY_ANNOTATION: encode_inventory(cards)},
        },
    }


def node_from_file(path: str) -> dict[str, Any]:
    node = load_yaml_document(path, "Node", "gpuop plan --node")
    return _checked_node(node, "stdin" if path == "-" else path)


def _checked_node(node: Any, where: str, kind_implied: bool = False) -> dict[str, Any]:
    """`node` if it is a Node whose metadata and labels are mappings; else a clear error."""
    kind = node.get("kind", "Node" if kind_implied else None) if isinstance(node, dict) else None
    if not isinstance(node, dict) or kind != "Node":
        if not isinstance(node, dict):
            got = value_kind(node)
        else:
            got = repr(kind) if kind is not None else "an object with no kind"
        raise UserError(f"{where}: expected a Node manifest (kind: Node), got {got}")
    metadata = node.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise UserError(f"{where}: metadata is not a mapping")
    labels = (metadata or {}).get("labels")
    if labels is not None and not isinstance(labels, dict):
        raise UserError(f"{where}: metadata.labels is not a mapping")
    return node


def _overlay_labels(node: dict[str, Any], extra: dict[str, str]) -> None:
    """Set the labels the flags give on a node (a `metadata: null` node gets a metadata)."""
    if extra:
        metadata = node.get("metadata") or {}
        node["metadata"] = {**metadata, "labels": {**(metadata.get("labels") or {}), **extra}}


NODE_LIST_KINDS = ("List", "NodeList")


def nodes_from_file(path: str) -> list[dict[str, Any]]:
    """The nodes in a Node, a List of Nodes (`kubectl get nodes -o json`) or multi-doc YAML."""
    return nodes_from_files((path,))


def nodes_from_files(paths: Sequence[str]) -> list[dict[str, Any]]:
    """The nodes of every input (files, directories, `-`): Nodes, Lists of Nodes, multi-doc YAML."""
    nodes: list[dict[str, Any]] = []
    # A dump holds more than Nodes (`kubectl get nodes,clusterpolicies,pods`): the other
    # kinds are left out, and said so; something with no kind is still an error.
    ignored: Counter[str] = Counter()

    def take(item: Any, where: str, implied: bool = False) -> None:
        kind = item.get("kind") if isinstance(item, dict) else None
        if isinstance(kind, str) and kind and kind != "Node":
            ignored[kind] += 1
            return
        nodes.append(_checked_node(item, where, implied))

    for path in expand(paths):
        shown = "stdin" if path == "-" else path
        documents = load_documents(path, "a Node or a List of Nodes", allow_empty=True)
        for number, document in enumerate(documents, start=1):
            where = f"{shown}: document {number}" if len(documents) > 1 else shown
            if isinstance(document, dict) and document.get("kind") in NODE_LIST_KINDS:
                items = document.get("items")
                if items is None:
                    items = []
                if not isinstance(items, list):
                    raise UserError(f"{where}: items is not a list")
                # The API server leaves `kind` out of a NodeList's items; kubectl's List keeps it.
                implied = document["kind"] == "NodeList"
                for index, item in enumerate(items):
                    take(item, f"{where}: items[{index}]", implied)
            else:
                take(document, where)
    if not nodes:
        held = [{"kind": kind} for kind, count in ignored.items() for _ in range(count)]
        require_kinds(held, ("Node",), "gpuop plan -f", paths)
    if ignored:
        note_at_exit(ignored_kinds_line(ignored, "gpuop plan -f"))
    return nodes


def _load_plan_policy(path: str | None, sandbox: bool) -> tuple[ResolvedPolicy, str]:
    return load_policy(path, _POLICY_COMMAND, sandbox=sandbox)


def _describe_inventory(result: NodePlan) -> str:
    inventory = result.inventory
    models = Counter(f"{card.model or 'unknown model'} ({card.pci})" for card in inventory.cards)
    if inventory.count_known:
        cards = ", ".join(f"{count} x {model}" for model, count in models.items())
    else:
        cards = ", ".join(f"{model}, count unknown" for model in models)
    return f"{cards or 'no cards'}, from {_INVENTORY_SOURCES[inventory.source]}"


def render_text(
    result: NodePlan,
    policy: ResolvedPolicy,
    source: str,
    pci: PciSource,
    width: int = UNLIMITED_WIDTH,
) -> str:
    """The plan as text, fitted to `width` (tables wrap, long lines wrap with a hanging indent)."""
    out: list[str] = []
    name = result.node or "(unnamed)"
    if result.gpu_node:
        out.append(heading(f"Node {name}: GPU node") + f" ({result.gpu_detection}=true)")
    else:
        out.append(heading(f"Node {name}: not a GPU node") + f" ({result.gpu_detection})")
    sandbox = (
        f"sandbox workloads on, mode {policy.sandbox_mode},"
        f" default workload {policy.default_workload}"
        if policy.sandbox_enabled
        else "sandbox workloads off"
    )
    if source == "none":
        out.append("  policy     none (a GPUCluster alone)")
    else:
        out.append(f"  policy     {source} ({sandbox})")
    if result.stack is not None:
        shown = result.stack.stack or "none"
        out.append(f"  stack      {shown} ({result.stack.reason}): {result.stack.message}")
    if result.gpu_node:
        out.append(f"  inventory  {_describe_inventory(result)}")
        for item in result.inventory.evidence:
            out.append(f"    - {item.signal}: {item.implies()}")
        out.append(f"  pci.ids    {pci.describe()}")

    workload = result.workload
    out.append("")
    out.append(heading(f"Workload config: {workload.config or 'none'}") + f" ({workload.reason})")
    ignored = [n for n in result.notices if n.code == NoticeCode.WORKLOAD_LABEL_IGNORED]
    # The notice repeats the workload message: said here once, with its severity.
    out.append(
        f"  {ignored[0].severity}: {workload.message}" if ignored else f"  {workload.message}"
    )
    if ignored:
        out.append("  hint: --sandbox plans with sandboxWorkloads.enabled=true")

    out.append("")
    changes = result.label_changes
    out.append(heading(f"Label changes ({len(changes)}):" if changes else "Label changes: none"))
    for key, value in changes.items():
        out.append(f"  remove  {key}" if value is None else f"  set     {key}={value}")

    if result.gpu_node:
        out.append("")
        running = sorted(result.running_operands(), key=lambda op: op.stage or 0)
        out.append(heading(f"Operands ({len(running)} run, in bring-up stages):"))
        if running:
            rows = [
                [str(op.stage), op.name, op.daemonset, ", ".join(op.waits_for) or "-"]
                for op in running
            ]
            columns = [
                Column("STAGE"),
                Column("OPERAND"),
                Column("DAEMONSET", drop=1),
                Column("WAITS FOR", wrap=True),
            ]
            out.append(render_table(columns, rows, 2, width))
        for op in result.operands:
            if op.status == "held":
                out.append(f"  held: {op.name} ({op.detail})")
        disabled = [op.name for op in result.operands if op.status == "disabled"]
        elsewhere = [op.name for op in result.operands if op.status == "not-for-workload"]
        if disabled:
            owner = "GPUCluster" if result.workload.reason == "dra-stack" else "ClusterPolicy"
            out.append(f"  disabled by the {owner}: {', '.join(disabled)}")
        if elsewhere:
            out.append(f"  not on this node: {', '.join(elsewhere)}")

    out.append("")
    out.append(heading("Advertises:"))
    if result.advertises:
        rows = [[resource, str(count)] for resource, count in result.advertises.items()]
        out.append(render_table(["RESOURCE", "COUNT"], rows, 2, width))
    elif result.workload.reason == "dra-stack":
        out.append(
            "  no extended resources: the cards are DRA devices (ResourceSlices of the"
            " gpu.nvidia.com driver), claimed through device classes"
        )
    elif result.gpu_node and not result.inventory.count_known:
        out.append("  unknown: the node's GPUs are not described (see the notices)")
    else:
        out.append("  nothing")
    must_not = list(result.must_not_advertise)
    out.append(
        heading(f"Must not advertise ({len(must_not)}):") + f" {listed(must_not, MUST_NOT_SHOWN)}"
    )

    if result.vgpu is not None:
        vgpu = result.vgpu
        origin = f"the {VGPU_CONFIG_LABEL} label" if vgpu.source == "label" else "the default"
        out.append("")
        out.append(
            heading(f"vGPU config: {vgpu.config_name}") + f" (from {origin}) -> {vgpu.result.state}"
        )
        for card in vgpu.result.cards:
            devices = ", ".join(f"{count} x {kind}" for kind, count in card.devices.items())
            if card.index in vgpu.result.untouched:
                devices = "untouched (no entry lists it)"
            out.append(f"  GPU {card.index} ({card.model or 'unknown'}): {devices or 'no vGPUs'}")
        for error in vgpu.result.errors:
            out.append(f"  error: {error}")

    remaining = [n for n in result.notices if n.code not in _SAID_ABOVE]
    if remaining:
        out.append("")
        out.append(heading("Notices:"))
        rows = [[n.severity, n.code, n.message] for n in remaining]
        columns = [Column("SEVERITY"), Column("CODE"), Column("MESSAGE", wrap=True, min_width=30)]
        out.append(render_table(columns, rows, 2, width))
    return fit_lines("\n".join(out), width)


def has_errors(result: NodePlan) -> bool:
    """Whether the plan holds an error-level notice (exit status 1)."""
    return any(notice.severity == "error" for notice in result.notices)


def _plan_one(stacks: Stacks, facts: NodeFacts, pci: PciSource) -> NodePlan:
    if stacks.involved(facts):
        return stacks.plan(facts, pci)
    return plan_node(stacks.policy, facts, pci_db=pci.database)


def plan_nodes(
    stacks: Stacks, nodes: list[dict[str, Any]], pci: PciSource
) -> Iterator[tuple[NodePlan, tuple[Any, ...]]]:
    """Each node's plan, with its planning key: nodes that read alike are planned once."""
    planned: dict[tuple[Any, ...], NodePlan] = {}
    with progress("planning", total=len(nodes), streaming=True) as line:
        for done, node in enumerate(nodes, 1):
            line.advance(done)
            facts = NodeFacts.from_object(node)
            key = planning_key(facts)
            shared = planned.get(key)
            if shared is None:
                shared = planned[key] = _plan_one(stacks, facts, pci)
                yield shared, key
            else:
                yield replace(shared, node=facts.name), key


def _emit_batch(nodes: list[dict[str, Any]], stacks: Stacks, pci: PciSource, output: str) -> bool:
    """Print every node's plan; whether any plan holds an error-level notice."""
    policy, source = stacks.policy, stacks.source
    inputs = stacks.inputs(pci)
    documents: dict[tuple[Any, ...], dict[str, Any]] = {}
    if output == "yaml":
        import yaml

        plans = [result for result, _ in plan_nodes(stacks, nodes, pci)]
        data = [{**result.to_dict(), "inputs": inputs} for result in plans]
        sys.stdout.write(yaml.safe_dump_all(data, sort_keys=False, explicit_start=True))
        return any(has_errors(result) for result in plans)
    errors = False
    for number, (result, key) in enumerate(plan_nodes(stacks, nodes, pci)):
        errors = errors or has_errors(result)
        if output == "json":
            document = documents.get(key)
            if document is None:
                document = documents[key] = {**result.to_dict(), "inputs": inputs}
            # JSON Lines: one plan a line; only the node's name differs between equal keys.
            sys.stdout.write(json.dumps({**document, "node": result.node}) + "\n")
        elif output == "name":
            if result.node:
                click.echo(kubectl_name("Node", result.node))
        else:
            if number:
                click.echo("")
            click.echo(render_text(result, policy, source, pci, text_width(output)))
    return errors


@click.command()
@click.option("--node", "node_file", metavar="FILE|-", help="A Node manifest (YAML or JSON).")
@click.option(
    "-f",
    "--filename",
    "--nodes",
    "nodes_files",
    multiple=True,
    metavar="FILE|-",
    help="Many nodes: a Node, a List of Nodes (as `kubectl get nodes -o json` prints),"
    " multi-document YAML or a directory; repeatable, or A,B; one plan per node (-o json:"
    " one JSON document a line).",
)
@click.option(
    "--gpu",
    "gpu_model",
    metavar="MODEL",
    shell_complete=complete_gpu_models,
    help="Build a node with this GPU model: "
    + ", ".join(gpu.model for gpu in gpu_catalog().gpus)
    + ".",
)
@click.option(
    "--count",
    type=int,
    default=1,
    show_default=True,
    help=f"GPUs on the built node (1 to {MAX_GPUS_PER_NODE}).",
)
@click.option("--name", default=DEFAULT_NODE_NAME, show_default=True, help="Built node's name.")
@click.option(
    "--workload",
    type=click.Choice(list(WORKLOAD_CONFIGS)),
    help=f"Set {WORKLOAD_LABEL} on the node.",
)
@click.option(
    "--vgpu-config",
    metavar="NAME",
    shell_complete=complete_vgpu_types,
    help=f"Set {VGPU_CONFIG_LABEL} on the node.",
)
@labels_option("Set a node label (repeatable).")
@click.option(
    "--policy",
    "policy_file",
    metavar="FILE|-",
    help="The ClusterPolicy (default: gpuop's default, as a plain Helm install).",
)
@click.option("--sandbox", is_flag=True, help="Enable sandboxWorkloads on the policy.")
@click.option(
    "--gpu-cluster",
    "gpu_cluster_file",
    metavar="FILE|-|default",
    help="A GPUCluster (nvidia.com/v1alpha1) beside the ClusterPolicy ('default': gpuop's"
    f" default one): nodes labelled {GPU_STACK_LABEL}=dra run the DRA stack.",
)
@click.option(
    "--no-cluster-policy",
    is_flag=True,
    help="Plan with the GPUCluster alone (every node runs the DRA stack, as upstream).",
)
@pci_ids_option
@output_option("text", "wide", "json", "yaml", "name")
def plan(
    node_file: str | None,
    nodes_files: tuple[str, ...],
    gpu_model: str | None,
    count: int,
    name: str,
    workload: str | None,
    vgpu_config: str | None,
    labels: tuple[str, ...],
    policy_file: str | None,
    sandbox: bool,
    gpu_cluster_file: str | None,
    no_cluster_policy: bool,
    pci_ids: str | None,
    output: str,
) -> None:
    """What a node would run and advertise under a ClusterPolicy or GPUCluster, and why.

    Give the node as a manifest (--node, e.g. from `kubectl get node X -o yaml`) or
    build one (--gpu, --count): a node as NFD first labels it
    (feature.node.kubernetes.io/pci-10de.present=true) with gpuop's
    gpuop.io/gpu-inventory annotation describing its cards. --workload, --vgpu-config
    and --label set labels on either.

    Plan a whole cluster with -f/--nodes (`kubectl get nodes -o json | gpuop plan -f -`):
    one plan per node, in input order; with -o json one JSON document a line (JSON Lines),
    with -o yaml one YAML document per node, with -o name one Node/NAME a line. The
    overlay flags apply to every node.

    The plan: the workload config and why, the label changes the operator makes, the
    operands that run (in bring-up stages), the resources the node should advertise
    and those it must not, the vGPU config result, and notices.

    With --gpu-cluster the plan also says which stack the node runs and why: the
    device-plugin stack (ClusterPolicy) or the DRA stack (GPUCluster). With both, the
    node's nvidia.com/gpu.stack label decides (dra or device-plugin; unlabelled nodes keep
    the ClusterPolicy's), gpuop's extension to upstream, which allows only one of them.

    Exit status: 0 planned, 1 a plan has error-level notices (such as a vGPU config
    the node's cards cannot take), 2 bad input or usage.

    \b
    Examples:
      gpuop plan --gpu A10 --count 2
      gpuop plan --gpu A10 --count 2 --workload vm-vgpu --sandbox
      gpuop plan --gpu A10 --count 2 --workload vm-vgpu --vgpu-config A10-4Q --sandbox
      gpuop plan --gpu A100 --label nvidia.com/mig.capable=true
      kubectl get node gpu-1 -o yaml | gpuop plan --node - --policy cp.yaml -o json
      kubectl get nodes -o json | gpuop plan -f - -o json
      gpuop plan --gpu A10 --gpu-cluster default --label nvidia.com/gpu.stack=dra
      gpuop plan --gpu H100 --gpu-cluster default --no-cluster-policy -o json
    """
    nodes_paths = input_paths(nodes_files)
    if nodes_paths and (node_file is not None or gpu_model is not None):
        raise UserError("give -f/--nodes FILE alone, not with --node or --gpu")
    if node_file is not None and gpu_model is not None:
        raise UserError("give either --node FILE or --gpu MODEL, not both")
    if node_file == "-" and policy_file == "-":
        raise UserError("--node and --policy cannot both read stdin")
    if "-" in nodes_paths and policy_file == "-":
        raise UserError("--nodes and --policy cannot both read stdin")
    stdin_readers = [node_file, policy_file, gpu_cluster_file, *nodes_paths].count("-")
    if gpu_cluster_file == "-" and stdin_readers > 1:
        raise UserError("--gpu-cluster and another input cannot both read stdin")
    if no_cluster_policy and gpu_cluster_file is None:
        raise UserError("--no-cluster-policy needs --gpu-cluster FILE (or default)")
    if node_file is None and gpu_model is None and not nodes_paths:
        raise UserError(
            "give --node FILE (a Node manifest) or --gpu MODEL (e.g. --gpu A10),"
            " or -f FILE for many nodes"
        )
    extra = parse_labels(labels)
    if workload is not None:
        extra[WORKLOAD_LABEL] = workload
    if vgpu_config is not None:
        extra[VGPU_CONFIG_LABEL] = vgpu_config
    if nodes_paths:
        with progress(f"reading {', '.join(nodes_paths)}"):
            nodes = nodes_from_files(nodes_paths)
        for node in nodes:
            _overlay_labels(node, extra)
        stacks = load_stacks(
            policy_file, sandbox, gpu_cluster_file, no_cluster_policy, _load_plan_policy
        )
        if _emit_batch(nodes, stacks, load_pci_database(pci_ids), output):
            sys.exit(EXIT_PLAN_ERRORS)
        return
    if node_file is not None:
        node = node_from_file(node_file)
    else:
        assert gpu_model is not None
        node = node_from_flags(name, gpu_model, count)
    _overlay_labels(node, extra)
    stacks = load_stacks(
        policy_file, sandbox, gpu_cluster_file, no_cluster_policy, _load_plan_policy
    )
    resolved, source = stacks.policy, stacks.source
    pci = load_pci_database(pci_ids)
    result = _plan_one(stacks, NodeFacts.from_object(node), pci)
    if output in ("text", "wide"):
        click.echo(render_text(result, resolved, source, pci, text_width(output)))
    elif output == "name":
        if result.node:
            click.echo(kubectl_name("Node", result.node))
    else:
        emit_data({**result.to_dict(), "inputs": stacks.inputs(pci)}, output)
    if has_errors(result):
        sys.stdout.flush()
        sys.exit(EXIT_PLAN_ERRORS)
