"""The `gpuop render` command: every object the operator would create, offline.

Like `helm template`: a ClusterPolicy (and optionally the cluster's nodes, whose NFD OS
labels decide the driver image's tag) in, the RuntimeClasses, ConfigMaps and operand
DaemonSets out, from the same rendering code the operator applies.
"""

from __future__ import annotations

from typing import Any

import click

from gpuop.cli.common import UserError, emit_data
from gpuop.cli.inputs import (
    input_paths,
    load_documents,
    load_policy_document,
    parsed_policy,
    read_objects,
    require_kinds,
)
from gpuop.cli.options import filenames_option, output_option
from gpuop.policy import PolicyError


def _nodes(path: str) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    for document in load_documents(path, "Node list"):
        items = document if isinstance(document, list) else [document]
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("items"), list):
                items_in_list = item["items"]
            else:
                items_in_list = [item]
            for node in items_in_list:
                if not isinstance(node, dict) or node.get("kind", "Node") != "Node":
                    raise UserError(
                        f"{path}: expected Nodes (a Node, a NodeList or a list of Nodes)"
                    )
                if not isinstance(node.get("metadata"), dict):
                    raise UserError(f"{path}: a Node without metadata")
                nodes.append(node)
    return nodes


def _from_objects(paths: tuple[str, ...]) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The ClusterPolicy (None: none) and the Nodes of -f inputs."""
    objects = read_objects(paths)
    require_kinds(objects, ("ClusterPolicy", "Node"), "gpuop render -f", paths)
    policies = [obj for obj in objects if obj.get("kind") == "ClusterPolicy"]
    if len(policies) > 1:
        raise UserError(f"{', '.join(paths)}: {len(policies)} ClusterPolicies; expected one")
    nodes = [obj for obj in objects if obj.get("kind") == "Node"]
    for node in nodes:
        if not isinstance(node.get("metadata"), dict):
            raise UserError(f"{', '.join(paths)}: a Node without metadata")
    return (policies[0] if policies else None), nodes


@click.command("render")
@click.option("--policy", "policy_path", help="ClusterPolicy file (- for stdin).")
@click.option("--nodes", "nodes_path", help="Nodes (a Node, NodeList or list) for per-OS tags.")
@filenames_option(
    "Objects to render from: a ClusterPolicy and Nodes (file, directory or '-');"
    " repeatable, or A,B."
)
@click.option("--namespace", default="gpu-operator", show_default=True, help="Operator namespace.")
@output_option("yaml", "json", "name")
def render(
    policy_path: str | None,
    nodes_path: str | None,
    filenames: tuple[str, ...],
    namespace: str,
    output: str,
) -> None:
    """Every object the operator would create for a ClusterPolicy, rendered offline.

    RuntimeClasses, ConfigMaps and operand DaemonSets, from the code the operator applies.
    With --nodes, the driver image's tag gets the OS suffix of the first GPU node
    (NFD's system-os_release labels), as in a cluster. -f takes both at once: the
    ClusterPolicy and the Nodes of `kubectl get clusterpolicies,nodes -o yaml`.

    \b
    Examples:
      gpuop render --policy cp.yaml
      gpuop render -f cp.yaml -f nodes.json -o json
      kubectl get nodes -o json | gpuop render --policy cp.yaml --nodes - -o json
      gpuop render --policy cp.yaml -o name     Kind/namespace/name of each object
    """
    from gpuop.render import render_all

    paths = input_paths(filenames, [p for p in (policy_path, nodes_path) if p])
    document: Any = None
    nodes: list[dict[str, Any]] = []
    source = policy_path or ", ".join(filenames)
    if filenames:
        document, nodes = _from_objects(input_paths(filenames))
    if policy_path is not None:
        if document is not None:
            raise UserError("give the ClusterPolicy with --policy or in -f, not both")
        document = load_policy_document(policy_path, "gpuop render --policy")
    if document is None:
        raise UserError(
            "give --policy FILE, or -f FILE holding a ClusterPolicy"
            + (f" ({', '.join(paths)} holds none)" if filenames else "")
        )
    nodes += _nodes(nodes_path) if nodes_path else []
    try:
        policy = parsed_policy(document, source)
        objects = render_all(policy, namespace, nodes=nodes)
    except PolicyError as exc:
        raise UserError(str(exc)) from exc
    if output == "name":
        for obj in objects:
            metadata = obj.get("metadata") or {}
            where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
            click.echo(f"{obj.get('kind')}/{where}{metadata.get('name', '')}")
    elif output == "json":
        emit_data({"apiVersion": "v1", "kind": "List", "items": objects}, "json")
    else:
        import yaml

        click.echo(yaml.safe_dump_all(objects, sort_keys=False), nl=False)
