"""The `gpuop policy` commands: the ClusterPolicy and GPUCluster CRDs, validation, defaults."""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

import click

from gpuop.cli.common import UserError, emit_data, kubectl_name, note_at_exit, text_width
from gpuop.cli.inputs import (
    expand,
    ignored_kinds_line,
    input_paths,
    load_documents,
    require_kinds,
)
from gpuop.cli.layout import Column, fit_lines, render_table
from gpuop.cli.options import filenames_option, output_option
from gpuop.policy import (
    PolicyError,
    ResolvedPolicy,
    default_policy_object,
    identity_problems,
    parse_cluster_policy,
)
from gpuop.policy.crd import crd_manifest
from gpuop.policy.gpucluster import (
    KIND as GPU_CLUSTER_KIND,
)
from gpuop.policy.gpucluster import (
    default_gpu_cluster_object,
    gpu_cluster_crd_manifest,
    parse_gpu_cluster,
)

EXIT_INVALID = 2
KINDS = ("ClusterPolicy", GPU_CLUSTER_KIND)
kind_option = click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="ClusterPolicy",
    show_default=True,
    help="ClusterPolicy (nvidia.com/v1) or GPUCluster (nvidia.com/v1alpha1, the DRA stack).",
)


@click.group()
def policy() -> None:
    """The ClusterPolicy (nvidia.com/v1) and GPUCluster (v1alpha1): CRDs, checks, defaults.

    gpuop reads the upstream GPU Operator's ClusterPolicy and GPUCluster field for field,
    so existing ones work unchanged.

    \b
    Examples:
      gpuop policy crd | kubectl apply -f -
      gpuop policy validate my-policy.yaml
      kubectl get clusterpolicy cluster-policy -o yaml | gpuop policy validate -
      gpuop policy defaults > cluster-policy.yaml
      gpuop policy defaults --kind GPUCluster > gpu-cluster.yaml
      gpuop policy crd --kind GPUCluster | kubectl apply -f -
    """


@policy.command()
@kind_option
@output_option("yaml", "json", "name")
def crd(kind: str, output: str) -> None:
    """Print the ClusterPolicy (or GPUCluster) CustomResourceDefinition.

    The ClusterPolicy schema is generated from gpuop's ClusterPolicy models, so the API
    server rejects what `gpuop policy validate` rejects (wrong types, unknown fields, bad
    enum values), naming the field. deploy/crd.yaml is this output. The GPUCluster CRD is
    upstream's own, unchanged (gpuop's models are tested against it).
    """
    manifest = crd_manifest() if kind == "ClusterPolicy" else gpu_cluster_crd_manifest()
    if output == "name":
        click.echo(kubectl_name("CustomResourceDefinition", manifest["metadata"]["name"]))
        return
    emit_data(manifest, output)


def image_problems(resolved: ResolvedPolicy) -> list[str]:
    """Image settings the operator could not turn into an image, per enabled operand."""
    problems: list[str] = []
    for operand in resolved.enabled_operands():
        try:
            resolved.image_for(operand)
        except PolicyError as exc:
            problems.extend(p for p in exc.problems if p not in problems)
    return problems


def _raw_name(obj: Any) -> str | None:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else None


def check_policy(obj: Any, source: str) -> dict[str, Any]:
    """{valid, name, problems, warnings} for a parsed YAML/JSON document.

    `name` is there only when the policy names itself (`metadata.name`).
    """
    name = _raw_name(obj)
    named: dict[str, Any] = {"name": name} if name else {}
    if isinstance(obj, dict) and obj.get("kind") == GPU_CLUSTER_KIND:
        try:
            parse_gpu_cluster(obj, source)
        except PolicyError as exc:
            problems = list(exc.problems)
            return {
                "valid": False,
                "kind": GPU_CLUSTER_KIND,
                **named,
                "problems": problems,
                "warnings": [],
            }
        return {"valid": True, "kind": GPU_CLUSTER_KIND, **named, "problems": [], "warnings": []}
    try:
        resolved = parse_cluster_policy(obj, source)
    except PolicyError as exc:
        problems = [*identity_problems(obj), *exc.problems]
        return {"valid": False, **named, "problems": problems, "warnings": []}
    if missing := identity_problems(obj):
        return {"valid": False, **named, "problems": missing, "warnings": []}
    problems = image_problems(resolved)
    return {
        "valid": not problems,
        **named,
        "problems": problems,
        "warnings": list(resolved.warnings),
    }


LIST_KINDS = ("List", "ClusterPolicyList", "GPUClusterList")


def _policies(document: Any, source: str) -> list[tuple[str, Any]] | None:
    """(where, object) for each item of a List; None when the document is not a List."""
    if not (isinstance(document, dict) and document.get("kind") in LIST_KINDS):
        return None
    items = document.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise UserError(f"{source}: items is not a list")
    # A typed list's items may leave out what the list says (as the API server's lists do).
    kind = str(document["kind"])
    implied: dict[str, Any] = {}
    if kind != "List":
        implied = {"apiVersion": document.get("apiVersion"), "kind": kind.removesuffix("List")}
    return [
        (f"{source} items[{index}]", {**implied, **item} if isinstance(item, dict) else item)
        for index, item in enumerate(items)
    ]


def _print_result(result: dict[str, Any], where: str, width: int) -> None:
    lines: list[str] = []
    kind = result.get("kind", "ClusterPolicy")
    if result["valid"]:
        name = f" {kind} {result['name']}" if result.get("name") else ""
        lines.append(f"{where}: valid{name}")
        lines += [f"  warning: {warning}" for warning in result["warnings"]]
    else:
        count = len(result["problems"])
        name = f" {result['name']}" if result.get("name") else ""
        lines.append(f"{where}: invalid {kind}{name} ({count} problem{'s' * (count != 1)})")
        lines += [f"  {problem}" for problem in result["problems"]]
    click.echo(fit_lines("\n".join(lines), width))


def _print_results(results: list[tuple[str, dict[str, Any]]], output: str) -> None:
    """Text, wide or name (ClusterPolicy/NAME of each named invalid one) of the results."""
    if output == "name":
        for where, result in results:
            if result["valid"]:
                continue
            kind = result.get("kind", "ClusterPolicy")
            if result.get("name"):
                click.echo(f"{kind}/{result['name']}")
            count = len(result["problems"])
            click.echo(f"{where}: invalid {kind} ({count} problem{'s' * (count != 1)})", err=True)
    elif output in ("text", "wide"):
        for where, result in results:
            _print_result(result, where, text_width(output))
    else:
        emit_data([result for _, result in results], output)


def _documents(paths: tuple[str, ...]) -> tuple[list[tuple[str, Any]], bool]:
    """(where, document) for every document of every input, Lists item by item; any List?"""
    found: list[tuple[str, Any]] = []
    lists = False
    for path in expand(paths):
        source = "stdin" if path == "-" else path
        documents = load_documents(path, "a ClusterPolicy", allow_empty=True)
        for number, document in enumerate(documents, start=1):
            where = f"{source} document {number}" if len(documents) > 1 else source
            listed = _policies(document, where)
            lists = lists or listed is not None
            found.extend(listed if listed is not None else [(where, document)])
    if not found:
        require_kinds([], ("ClusterPolicy",), "gpuop policy validate", paths)
    return found, lists


@policy.command()
@click.argument("files", nargs=-1, metavar="[FILE|-]...")
@filenames_option("A ClusterPolicy file, directory or '-' (as FILE); repeatable, or A,B.")
@output_option("text", "wide", "json", "yaml", "name")
def validate(files: tuple[str, ...], filenames: tuple[str, ...], output: str) -> None:
    """Check a ClusterPolicy or a GPUCluster: every problem with its field path.

    Checks what the API server checks with gpuop's CRD (types, enums, bounds, unknown
    fields) and what the operator needs to deploy the enabled operands (complete image
    settings). Warnings name fields that are accepted but ignored. A List (what
    `kubectl get clusterpolicies -o yaml` prints), multi-document YAML, several files and
    directories are checked document by document; -o json then prints one result per
    ClusterPolicy (a single one: just its result). -o name prints ClusterPolicy/NAME of
    each invalid one. A document of kind GPUCluster is checked against upstream's
    GPUCluster schema (and its singleton name, gpu-cluster).

    Exit status: 0 valid, 2 invalid or unreadable (several: any invalid).

    \b
    Examples:
      gpuop policy validate cluster-policy.yaml
      gpuop policy validate -f cluster-policy.yaml -f my-policy.yaml
      kubectl get clusterpolicies -o yaml | gpuop policy validate -
      kubectl get clusterpolicy -o json | jq '.items[0]' | gpuop policy validate - -o json
      kubectl get gpucluster gpu-cluster -o yaml | gpuop policy validate -
    """
    paths = input_paths(files, filenames)
    if not paths:
        raise UserError("give a ClusterPolicy FILE, -f FILE, or '-' for stdin")
    documents, lists = _documents(paths)
    # A dump holds Nodes and more beside the policies: those are not checked, and said so.
    other = Counter(
        str(item["kind"])
        for _, item in documents
        if isinstance(item, dict)
        and isinstance(item.get("kind"), str)
        and item["kind"] not in ("ClusterPolicy", GPU_CLUSTER_KIND)
    )
    if other:
        held = [item for _, item in documents if isinstance(item, dict)]
        documents = [
            (where, item)
            for where, item in documents
            if not (isinstance(item, dict) and isinstance(item.get("kind"), str))
            or item["kind"] in ("ClusterPolicy", GPU_CLUSTER_KIND)
        ]
        note_at_exit(ignored_kinds_line(other, "gpuop policy validate"))
        if not documents:
            require_kinds(held, ("ClusterPolicy",), "gpuop policy validate", paths)
    single = len(documents) == 1 and not lists
    results = [(where, check_policy(item, where)) for where, item in documents]
    if output in ("json", "yaml"):
        emit_data(results[0][1] if single else [result for _, result in results], output)
    else:
        _print_results(results, output)
    if not all(result["valid"] for _, result in results):
        sys.exit(EXIT_INVALID)


def _setting(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _defaults_text(document: dict[str, Any], width: int) -> str:
    """The default ClusterPolicy's blocks: whether each is enabled, and its other settings."""
    rows = []
    for block, settings in document.get("spec", {}).items():
        values = settings if isinstance(settings, dict) else {}
        enabled = values.get("enabled")
        shown = "-" if enabled is None else str(enabled).lower()
        other = ", ".join(f"{key}={_setting(v)}" for key, v in values.items() if key != "enabled")
        rows.append([block, shown, other or "-"])
    columns = [Column("BLOCK"), Column("ENABLED"), Column("SETTINGS", wrap=True, min_width=20)]
    name = document.get("metadata", {}).get("name", "")
    kind = document.get("kind", "ClusterPolicy")
    lines = [
        f"{kind} {name} (spec; `gpuop policy defaults` prints it as YAML)",
        render_table(columns, rows, width=width),
    ]
    return fit_lines("\n".join(lines), width)


@policy.command()
@kind_option
@output_option("yaml", "json", "text", "wide", "name")
def defaults(kind: str, output: str) -> None:
    """Print the default ClusterPolicy (the Helm chart's values for release 26.7.0).

    Sandbox workloads are off, so every GPU node is a container node until
    `spec.sandboxWorkloads.enabled` is true. -o text is a table of its blocks, -o name
    ClusterPolicy/NAME. --kind GPUCluster prints the GPUCluster the chart creates with
    gpuCluster.deployCR=true (DRA driver v0.5.0, dcgm off, dcgm-exporter on).
    """
    gpu_cluster = kind == GPU_CLUSTER_KIND
    document = default_gpu_cluster_object() if gpu_cluster else default_policy_object()
    if output == "name":
        click.echo(kubectl_name(kind, document["metadata"]["name"]))
    elif output in ("text", "wide"):
        click.echo(_defaults_text(document, text_width(output)))
    else:
        emit_data(document, output)
