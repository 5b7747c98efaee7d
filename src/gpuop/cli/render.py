"""The `gpuop render` command: every object the operator would create, offline.

Like `helm template`: a ClusterPolicy (and optionally the cluster's nodes, whose NFD OS
labels decide the driver image's tag) in, the RuntimeClasses, ConfigMaps and operand
DaemonSets out, from the same rendering code the operator applies.
"""

from __future__ import annotations

from typing import Any

import click

from gpuop.cli.common import UserError, emit_data, kubectl_name
from gpuop.cli.inputs import (
    input_paths,
    load_documents,
    load_policy_document,
    parsed_policy,
    read_dump,
)
from gpuop.cli.layout import note
from gpuop.cli.options import filenames_option, output_option
from gpuop.cli.progress import progress
from gpuop.policy import PolicyError
from gpuop.policy.gpucluster import parse_gpu_cluster


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


def _from_objects(
    paths: tuple[str, ...],
) -> tuple[
    dict[str, Any] | None, list[dict[str, Any]], dict[str, Any] | None, list[dict[str, Any]]
]:
    """The ClusterPolicy (None: none), the Nodes, the GPUCluster and the ConfigMaps of -f
    inputs."""
    objects = read_dump(
        paths,
        needs=("ClusterPolicy", "Node", "GPUCluster"),
        reads=("ConfigMap",),
        command="gpuop render -f",
    )
    policies = [obj for obj in objects if obj.get("kind") == "ClusterPolicy"]
    if len(policies) > 1:
        raise UserError(f"{', '.join(paths)}: {len(policies)} ClusterPolicies; expected one")
    clusters = [obj for obj in objects if obj.get("kind") == "GPUCluster"]
    if len(clusters) > 1:
        raise UserError(f"{', '.join(paths)}: {len(clusters)} GPUClusters; expected one")
    nodes = [obj for obj in objects if obj.get("kind") == "Node"]
    for node in nodes:
        if not isinstance(node.get("metadata"), dict):
            raise UserError(f"{', '.join(paths)}: a Node without metadata")
    configmaps = [obj for obj in objects if obj.get("kind") == "ConfigMap"]
    return (
        (policies[0] if policies else None),
        nodes,
        (clusters[0] if clusters else None),
        configmaps,
    )


@click.command("render")
@click.option(
    "--policy",
    "policy_path",
    metavar="FILE",
    help="ClusterPolicy (or GPUCluster) file (- for stdin).",
)
@click.option(
    "--nodes",
    "nodes_path",
    metavar="FILE",
    help="Nodes (a Node, NodeList or list) for per-OS tags.",
)
@filenames_option(
    "Objects to render from: a ClusterPolicy, a GPUCluster and Nodes (file, directory or '-');"
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
    """Every object the operator would create for a ClusterPolicy or GPUCluster, offline.

    RuntimeClasses, ConfigMaps and operand DaemonSets, from the code the operator applies.
    With --nodes, the driver image's tag gets the OS suffix of the first GPU node
    (NFD's system-os_release labels), as in a cluster. -f takes both at once: the
    ClusterPolicy and the Nodes of `kubectl get clusterpolicies,nodes -o yaml`, and the
    ConfigMaps the driver mounts key by key (driver.kernelModuleConfig, repoConfig,
    certConfig) when the policy names any.

    A GPUCluster (nvidia.com/v1alpha1) renders the DRA stack as NVIDIA's operator does:
    the DRA driver's kubelet plugin (and the compute-domain controller when
    computeDomains is on), its RBAC and ResourceSlice admission policy, the DeviceClasses
    gpu.nvidia.com, mig.nvidia.com and vfio.gpu.nvidia.com, the DRA validator, DCGM and
    DCGM exporter. With both in -f, both stacks are rendered.

    \b
    Examples:
      gpuop render --policy cp.yaml
      gpuop render -f cp.yaml -f nodes.json -o json
      kubectl get nodes -o json | gpuop render --policy cp.yaml --nodes - -o json
      gpuop render --policy cp.yaml -o name     kind.group/name, as kubectl prints it
      gpuop policy defaults --kind GPUCluster | gpuop render --policy -
    """
    from gpuop.render import (
        kept_on_openshift,
        named_configmap_keys,
        named_configmaps,
        render_all,
    )
    from gpuop.render.nodes import on_openshift

    paths = input_paths(filenames, [p for p in (policy_path, nodes_path) if p])
    document: Any = None
    gpu_cluster: Any = None
    nodes: list[dict[str, Any]] = []
    configmaps: list[dict[str, Any]] = []
    source = policy_path or ", ".join(filenames)
    if filenames:
        with progress(f"reading {', '.join(filenames)}"):
            document, nodes, gpu_cluster, configmaps = _from_objects(input_paths(filenames))
    if policy_path is not None:
        if document is not None:
            raise UserError("give the ClusterPolicy with --policy or in -f, not both")
        document = load_policy_document(policy_path, "gpuop render --policy")
        if isinstance(document, dict) and document.get("kind") == "GPUCluster":
            if gpu_cluster is not None:
                raise UserError("give the GPUCluster with --policy or in -f, not both")
            document, gpu_cluster = None, document
    if document is None and gpu_cluster is None:
        raise UserError(
            "give --policy FILE, or -f FILE holding a ClusterPolicy"
            + (f" ({', '.join(paths)} holds none)" if filenames else "")
        )
    nodes += _nodes(nodes_path) if nodes_path else []
    try:
        objects: list[dict[str, Any]] = []
        if document is not None:
            policy = parsed_policy(document, source)
            with progress(f"rendering for {len(nodes)} nodes"):
                keys = named_configmap_keys(policy, configmaps, namespace)
                for name in named_configmaps(policy):
                    if name not in keys:
                        note(
                            f"ConfigMap {name}, which the ClusterPolicy hands the driver, is not"
                            " in -f: the driver DaemonSet is rendered without its files (add"
                            f" `kubectl get configmap -n {namespace} {name} -o yaml` to -f)"
                        )
                kept = kept_on_openshift(on_openshift(nodes), policy.enabled_operands())
                if kept:
                    note(
                        f"the nodes are OpenShift's: the {' and '.join(kept)} DaemonSets are not"
                        " rendered (NVIDIA's operator makes them with the Driver Toolkit, one per"
                        " RHCOS version; gpuop keeps the live ones as they are)"
                    )
                objects += render_all(policy, namespace, nodes=nodes, configmaps=keys)
        if gpu_cluster is not None:
            from gpuop.render.gpucluster import render_gpu_cluster

            objects += render_gpu_cluster(parse_gpu_cluster(gpu_cluster, source), namespace)
    except PolicyError as exc:
        raise UserError(str(exc)) from exc
    if output == "name":
        for obj in objects:
            metadata = obj.get("metadata") or {}
            name = str(metadata.get("name", ""))
            click.echo(kubectl_name(str(obj.get("kind")), name, obj.get("apiVersion")))
    elif output == "json":
        emit_data({"apiVersion": "v1", "kind": "List", "items": objects}, "json")
    else:
        import yaml

        click.echo(yaml.safe_dump_all(objects, sort_keys=False), nl=False)
