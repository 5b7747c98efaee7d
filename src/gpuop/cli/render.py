"""The `gpuop render` command: every object the operator would create, offline.

Like `helm template`: a ClusterPolicy (and optionally the cluster's nodes, whose NFD OS
labels decide the driver image's tag) in, the RuntimeClasses, ConfigMaps and operand
DaemonSets out, from the same rendering code the operator applies.
"""

from __future__ import annotations

from typing import Any

import click

from gpuop.cli.common import UserError, emit_data, output_option
from gpuop.cli.support import load_documents, load_yaml_document
from gpuop.policy import PolicyError, parse_cluster_policy


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


@click.command("render")
@click.option("--policy", "policy_path", required=True, help="ClusterPolicy file (- for stdin).")
@click.option("--nodes", "nodes_path", help="Nodes (a Node, NodeList or list) for per-OS tags.")
@click.option("--namespace", default="gpu-operator", show_default=True, help="Operator namespace.")
@output_option("yaml", "json", "name")
def render(policy_path: str, nodes_path: str | None, namespace: str, output: str) -> None:
    """Every object the operator would create for a ClusterPolicy, rendered offline.

    RuntimeClasses, ConfigMaps and operand DaemonSets, from the code the operator applies.
    With --nodes, the driver image's tag gets the OS suffix of the first GPU node
    (NFD's system-os_release labels), as in a cluster.

    \b
    Examples:
      gpuop render --policy cp.yaml
      kubectl get nodes -o json | gpuop render --policy cp.yaml --nodes - -o json
      gpuop render --policy cp.yaml -o name     Kind/namespace/name of each object
    """
    from gpuop.render import render_all

    document = load_yaml_document(policy_path, "ClusterPolicy")
    nodes = _nodes(nodes_path) if nodes_path else []
    try:
        policy = parse_cluster_policy(document, source=policy_path)
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
