"""`gpuop kubevirt`: wire KubeVirt to the GPU resources the nodes advertise.

* `permitted-devices`: the KubeVirt CR's `permittedHostDevices` for what the nodes
  advertise, as a merge patch (with the feature gates the KubeVirt release needs:
  `kubevirt.permitted.needed_gates`) or as the YAML block to paste;
* `check`: an existing KubeVirt CR and its VMIs against the nodes, with `gpuop check`'s
  own KubeVirt rules (GPU5xx) and finding codes;
* on OpenShift, the HyperConverged CR's `spec.permittedHostDevices` is the one that counts
  (HCO overwrites the KubeVirt CR's): both commands read it, and `permitted-devices`
  patches it instead when it is in the input;
* `vmi-example`: a VirtualMachineInstance asking for a node's sandbox resource, with a
  values file as the one place that names the resource (`--values`, `--key`,
  `--resource-from-values`).

Exit status: 0 fine, 1 problems found (check findings of error severity, resources that
could not be permitted), 2 unusable input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

import click
import yaml

from gpuop.check import render_text, run_checks
from gpuop.check.kubevirt import kubevirt_check_header, kubevirt_report
from gpuop.check.state import KNOWN_KINDS
from gpuop.cli.common import (
    UserError,
    kubectl_name,
    text_width,
)
from gpuop.cli.exits import exit_codes_help
from gpuop.cli.findings import CheckerArgs, Verdict, checker_options
from gpuop.cli.inputs import (
    input_paths,
    load_pci_database,
    note_ignored,
    read_dump,
    read_objects,
    resource_from_values,
    write_values,
)
from gpuop.cli.layout import Column, fit_lines, note, render_table
from gpuop.cli.live import LiveTarget, live_target, require_files_or_live
from gpuop.cli.options import (
    filename_option,
    filenames_option,
    live_options,
    output_option,
    pci_ids_option,
)
from gpuop.cli.running import (
    GreedyClusterCommand,
    finish,
    guarded,
    read_live,
    read_live_target,
)
from gpuop.kubevirt.claims import DRA_GATE, VFIO_DEVICE_CLASS, claim_vmi_example
from gpuop.kubevirt.permitted import (
    SECTIONS,
    ExampleError,
    PermittedPlan,
    advertised_sandbox,
    as_kubevirt_shape,
    build_permitted,
    dns_label_problem,
    hyperconverged_cr,
    kubevirt_cr,
    node_resource,
    permitted_patch,
    permitted_snippet,
    resource_warnings,
    vmi_example,
)
from gpuop.manifests import quantity_problem
from gpuop.manifests.fields import text
from gpuop.naming import PciDatabase, quoted

__all__ = ["check", "kubevirt", "permitted_devices", "vmi_example_command"]

DEFAULT_VALUES_KEY: Final = "gpuResource"


def _load_pci_ids(path: str | None, files: Sequence[str]) -> PciDatabase:
    if path == "-" and "-" in files:
        raise UserError("'-' (stdin) can be given once")
    return load_pci_database(path).database


def _live_objects(target: LiveTarget, kinds: Sequence[str]) -> list[dict[str, Any]]:
    return [obj for obj in read_live(target, kinds) if isinstance(obj, dict)]


def _inputs(
    files: Sequence[str],
    filenames: Sequence[str],
    pci_ids: str | None,
    live: bool,
    kubeconfig: str | None,
    context: str | None,
    kinds: Sequence[str],
    command: str,
    reads: Sequence[str] = (),
) -> tuple[list[dict[str, Any]], LiveTarget | None, PciDatabase]:
    """The objects of the dumps or the live cluster, the cluster read (None: dumps), and
    the pci.ids to name passthrough resources with."""
    paths = input_paths(files, filenames)
    database = _load_pci_ids(pci_ids, paths)
    require_files_or_live(paths, live)
    if (kubeconfig or context) and not live:
        raise UserError("--kubeconfig and --context need --live")
    if live:
        target = live_target(True, kubeconfig, context)
        assert target is not None
        return _live_objects(target, kinds), target, database
    objects = read_dump(paths, needs=kinds, reads=reads, command=f"gpuop kubevirt {command}")
    return objects, None, database


# --------------------------------------------------------------------------- permitted-devices


def _permitted_rows(built: PermittedPlan) -> list[tuple[str, str, str]]:
    """(section, resourceName, selector) of each permitted entry, in the patch's order."""
    rows = []
    for section in SECTIONS:
        for entry in built.permitted.get(section, []):
            if isinstance(entry, Mapping):
                selector = text(entry, "pciVendorSelector") or text(entry, "mdevNameSelector")
                rows.append((section, text(entry, "resourceName"), selector))
    return rows


def _permitted_text(built: PermittedPlan, kind: str, width: int) -> str:
    """The permitted devices as a table, with the feature gates the patch sets."""
    rows = [[resource, section, selector] for section, resource, selector in _permitted_rows(built)]
    if not rows:
        return "no devices to permit\n"
    columns = [Column("RESOURCE"), Column("SECTION", drop=1), Column("SELECTOR", wrap=True)]
    out = [render_table(columns, rows, width=width)]
    if kind != "HyperConverged":
        out += ["", f"feature gates: {', '.join(built.gates or []) or 'none'}"]
    out += ["", f"(--format patch prints the merge patch for the {kind} CR)"]
    return fit_lines("\n".join(out), width) + "\n"


@click.group("kubevirt")
def kubevirt() -> None:
    """Wire KubeVirt to the GPU resources the nodes advertise.

    \b
      gpuop kubevirt permitted-devices --live --format patch > patch.json
      kubectl patch kubevirt kubevirt -n kubevirt --type merge --patch-file patch.json
      gpuop kubevirt check --live
      gpuop kubevirt vmi-example a10-passthrough --cluster nodes.json
    """


@kubevirt.command("permitted-devices")
@click.argument("files", nargs=-1, metavar="[FILES]...")
@filename_option
@live_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["patch", "snippet"]),
    default="patch",
    show_default=True,
    help="patch: a JSON merge patch for the KubeVirt CR; snippet: the YAML block.",
)
@pci_ids_option
@output_option(
    "text",
    "wide",
    "json",
    "yaml",
    "name",
    default=None,
    help="json, yaml: the merge patch (json is --format patch); text, wide: a table of the"
    " permitted devices; name: each permitted resource name, one a line.",
)
def permitted_devices(
    files: tuple[str, ...],
    filenames: tuple[str, ...],
    live: bool,
    kubeconfig: str | None,
    context_name: str | None,
    fmt: str,
    pci_ids: str | None,
    output: str | None,
) -> None:
    """The KubeVirt CR's permittedHostDevices for what the nodes advertise.

    One entry per passthrough resource (pciHostDevices, with the card's VENDOR:DEVICE)
    and per vGPU resource (mediatedDevices, with the mdev type name), each with
    externalResourceProvider: true. With a KubeVirt CR in the input (or --live), the patch
    keeps its other feature gates and entries: a merge patch replaces lists whole.

    Feature gates only where the KubeVirt release needs them (status.observedKubeVirtVersion
    of the CR): GPU before v1.4 (GA since), DisableMDEVConfiguration for vGPU nodes before
    v1.8, and from v1.8 mediatedDevicesConfiguration.enabled: false instead. Without a
    KubeVirt CR the patch is for v1.4 and later (a note on stderr says so).

    \b
      gpuop kubevirt permitted-devices -f nodes.json
      gpuop kubevirt permitted-devices nodes.json --format snippet

    Exit status: 0 done, 1 an advertised resource could not be permitted, 2 bad input.
    """

    def body() -> int:
        if output is not None and fmt == "snippet":
            raise UserError(
                f"-o {output} is the patch; --format snippet is YAML to paste: pick one"
            )
        objects, target, database = _inputs(
            files, filenames, pci_ids, live, kubeconfig, context_name,
            ("Node", "KubeVirt", "HyperConverged"), "permitted-devices",
        )  # fmt: skip
        if target is not None:
            note(f"read {target.describe()}")
        nodes = [obj for obj in objects if obj.get("kind") == "Node"]
        if not nodes:
            raise UserError("no Nodes in the input")
        cr = kubevirt_cr(objects)
        hco = hyperconverged_cr(objects)
        kind = "KubeVirt" if hco is None else "HyperConverged"
        built = build_permitted(
            nodes,
            cr if hco is None else as_kubevirt_shape(hco),
            database,
            hyperconverged=hco is not None,
        )
        patch = permitted_patch(built.permitted, built.gates, kind, built.disable_mdev)
        if output == "yaml":
            sys.stdout.write(yaml.safe_dump(patch, sort_keys=False))
        elif output == "name":
            sys.stdout.write("".join(f"{resource}\n" for _, resource, _ in _permitted_rows(built)))
        elif output in ("text", "wide"):
            sys.stdout.write(_permitted_text(built, kind, text_width(output)))
        elif fmt == "patch":
            sys.stdout.write(json.dumps(patch, indent=2) + "\n")
        else:
            sys.stdout.write(permitted_snippet(built.permitted, kind))
            if built.gates is not None and hco is None:
                note(
                    "the CR also needs spec.configuration.developerConfiguration.featureGates: "
                    + ", ".join(built.gates)
                )
            if built.disable_mdev and hco is None:
                note(
                    "the CR also needs spec.configuration.mediatedDevicesConfiguration"
                    ".enabled: false"
                )
        if hco is not None:
            note(
                f"HyperConverged {text(hco, 'metadata', 'name')} owns KubeVirt's settings:"
                " patch it (kubectl patch hyperconverged ... --type merge), not the KubeVirt CR"
            )
        for advice in built.notes:
            note(advice)
        if not advertised_sandbox(nodes):
            note("no node advertises a passthrough or vGPU resource")
        for problem in built.problems:
            note(f"problem: {problem}")
        return 1 if built.problems else 0

    finish(guarded(body))


# --------------------------------------------------------------------------- check


@kubevirt.command("check", epilog=exit_codes_help())
@checker_options(
    "text",
    "wide",
    "json",
    "yaml",
    "name",
    output_help="Output format (json, yaml: gpuop check's schema; name: objects with findings).",
)
@pci_ids_option
def check(args: CheckerArgs, pci_ids: str | None) -> None:
    """Check a KubeVirt CR and its VMIs against what the nodes advertise.

    The KubeVirt rules of `gpuop check` (same code path, same finding codes): advertised
    resources missing from permittedHostDevices (GPU501), names differing only by case or
    form (GPU502), externalResourceProvider not true (GPU503), missing feature gates
    (GPU504, GPU505), VMIs asking for devices KubeVirt refuses (GPU506), no
    permittedHostDevices (GPU507), selectors naming another device (GPU508), several
    KubeVirt CRs (GPU509), and VMIs asking for resources no node advertises (GPU601).

    Exit status: 0 no errors, 1 errors found, 2 unreadable input or input holding no
    Node, KubeVirt, HyperConverged or VirtualMachineInstance.
    """

    def body() -> int:
        run = args.read(stdin_options=(pci_ids,))
        database = load_pci_database(pci_ids).database
        kinds = ("Node", "KubeVirt", "HyperConverged", "VirtualMachineInstance")
        if run.target is not None:
            objects = _live_objects(run.target, kinds)
        else:
            objects = read_dump(
                run.paths, needs=kinds, reads=KNOWN_KINDS, command="gpuop kubevirt check"
            )
        report = run.chosen.apply(kubevirt_report(run_checks(objects, pci_db=database)), objects)

        def text(color: bool, width: int) -> str:
            findings = render_text(report, color=color, width=width).split("\n", 1)[1]
            return kubevirt_check_header(objects) + findings

        verdict = Verdict(report, document=report.to_dict, text=text)
        return args.print(verdict, run.target)

    finish(guarded(body))


# --------------------------------------------------------------------------- vmi-example


def _check_vmi_fields(memory: str, name: str, namespace: str | None) -> None:
    """The VMI's memory is a quantity, its name and namespace DNS labels."""
    problem = quantity_problem(memory)
    if problem is not None:
        raise UserError(f"--memory: {problem}")
    for option, value in (("--name", name), ("--namespace", namespace)):
        if value is not None and (label_problem := dns_label_problem(value)) is not None:
            raise UserError(f"{option} {quoted(value)}: {label_problem}")


class _VmiExampleCommand(GreedyClusterCommand):
    subject_options = ("--resource-from-values",)


@kubevirt.command("vmi-example", cls=_VmiExampleCommand)
@click.argument("target", required=False, metavar="[NODE|RESOURCE]")
@click.option(
    "--cluster",
    "cluster_files",
    multiple=True,
    metavar="FILE",
    help="A node dump to look NODE up in (file, directory or '-'); repeatable, or A,B.",
)
@filenames_option("The same as --cluster.")
@live_options
@click.option(
    "--count",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="How many of the resource the VMI asks for (one gpus[] entry each).",
)
@click.option("--name", default="gpu-vm", show_default=True, help="The VMI's name.")
@click.option("-n", "--namespace", metavar="NS", help="The VMI's namespace.")
@click.option("--memory", default="8Gi", show_default=True, help="The guest's memory request.")
@click.option(
    "--values",
    "values_file",
    metavar="FILE",
    help="A values file (YAML mapping) that names the resource in one place.",
)
@click.option(
    "--key",
    metavar="KEY",
    help=f"With NODE|RESOURCE: write the resource to this key of --values"
    f" (default {DEFAULT_VALUES_KEY}; dots for nesting).",
)
@click.option(
    "--resource-from-values",
    "from_values",
    metavar="KEY",
    help="Read the resource from this key of --values instead of NODE|RESOURCE.",
)
@click.option(
    "--dra",
    is_flag=True,
    help=f"Take the GPUs through a ResourceClaimTemplate ({VFIO_DEVICE_CLASS}, KubeVirt's"
    f" {DRA_GATE}) instead of a resource: prints the template and the VMI.",
)
@output_option(
    "yaml",
    "json",
    "name",
    help="Output format (name: VirtualMachineInstance/NAMESPACE/NAME).",
)
def vmi_example_command(
    target: str | None,
    cluster_files: tuple[str, ...],
    filenames: tuple[str, ...],
    live: bool,
    kubeconfig: str | None,
    context_name: str | None,
    count: int,
    name: str,
    namespace: str | None,
    memory: str,
    values_file: str | None,
    key: str | None,
    from_values: str | None,
    dra: bool,
    output: str,
) -> None:
    """A VirtualMachineInstance asking for a node's sandbox GPU resource.

    NODE (looked up with --cluster FILES or --live) gives the passthrough or vGPU resource
    that node advertises; RESOURCE (has a '/') is used as is. The VMI asks for --count of
    it through spec.domain.devices.gpus.

    \b
    Values indirection, so that manifests name the resource in one place:
      gpuop kubevirt vmi-example a10-vgpu --live --values values.yaml --key gpuResource
        (also writes gpuResource: nvidia.com/NVIDIA_A10-12Q into values.yaml)
      gpuop kubevirt vmi-example --values values.yaml --resource-from-values gpuResource
        (the VMI with the resource read from values.yaml)

    --dra: the VMI's gpus name requests of a claim instead (no permittedHostDevices, no
    device plugin), made from a ResourceClaimTemplate printed before it:

    \b
      gpuop kubevirt vmi-example --dra --count 2 | kubectl apply -f -
    """

    def body() -> int:
        if dra:
            return _dra_example(
                target,
                values_file,
                from_values,
                cluster_files + filenames,
                live,
                count,
                name,
                namespace,
                memory,
                output,
            )
        if from_values is not None and target is not None:
            raise UserError("give NODE|RESOURCE or --resource-from-values, not both")
        if from_values is not None and values_file is None:
            raise UserError("--resource-from-values needs --values FILE")
        if from_values is not None and key is not None:
            raise UserError(
                "--key names the key to write (with NODE|RESOURCE); --resource-from-values"
                " names the key to read"
            )
        if key is not None and values_file is None:
            raise UserError("--key needs --values FILE")
        if target is None and from_values is None:
            raise UserError("give NODE|RESOURCE, or --values FILE --resource-from-values KEY")
        paths = input_paths(cluster_files, filenames)
        if live and paths:
            raise UserError("give --cluster FILES or --live, not both")
        if (kubeconfig or context_name) and not live:
            raise UserError("--kubeconfig and --context need --live")
        _check_vmi_fields(memory, name, namespace)
        nodes: list[dict[str, Any]] | None = None
        if live:
            objects, read_from = read_live_target(kubeconfig, context_name, ("Node",))
            note(f"read {read_from.describe()}")
            nodes = [o for o in objects if isinstance(o, dict) and o.get("kind") == "Node"]
        elif paths:
            found = read_objects(paths)
            note_ignored(found, ("Node",), "gpuop kubevirt vmi-example --cluster")
            nodes = [o for o in found if isinstance(o, dict) and o.get("kind") == "Node"]
        source = ""
        if from_values is not None:
            assert values_file is not None
            resource = resource_from_values(values_file, from_values)
            source = f"{values_file} ({from_values})"
        else:
            assert target is not None
            if "/" in target:
                resource = target
            elif nodes is None:
                raise UserError(
                    f"{target!r} is a node name (a resource has a '/'): give --cluster FILES"
                    " or --live to look it up"
                )
            else:
                resource = node_resource(nodes, target)
            if values_file is not None:
                write_key = key or DEFAULT_VALUES_KEY
                note(write_values(values_file, write_key, resource))
        for warning in resource_warnings(resource, count, nodes):
            note(f"warning: {warning}")
        vmi = vmi_example(name, resource, count=count, memory=memory)
        if namespace:
            vmi["metadata"]["namespace"] = namespace
        if output == "json":
            sys.stdout.write(json.dumps(vmi, indent=2) + "\n")
        elif output == "name":
            sys.stdout.write(kubectl_name("VirtualMachineInstance", name) + "\n")
        else:
            if source:
                sys.stdout.write(f"# deviceName {resource} read from {source}\n")
            sys.stdout.write(yaml.safe_dump(vmi, sort_keys=False, default_flow_style=False))
        return 0

    finish(guarded(body, input_errors=(ExampleError,)))


def _dra_example(
    target: str | None,
    values_file: str | None,
    from_values: str | None,
    cluster: tuple[str, ...],
    live: bool,
    count: int,
    name: str,
    namespace: str | None,
    memory: str,
    output: str,
) -> int:
    """`vmi-example --dra`: the ResourceClaimTemplate, then the VMI that uses it."""
    if target is not None or values_file is not None or from_values is not None:
        raise UserError(
            f"--dra takes no NODE|RESOURCE or --values: the GPUs are {VFIO_DEVICE_CLASS}"
            " devices of a claim, not a resource"
        )
    if cluster or live:
        raise UserError("--dra reads no cluster: leave out --cluster and --live")
    _check_vmi_fields(memory, name, namespace)
    template, vmi = claim_vmi_example(name, count=count, memory=memory, namespace=namespace)
    note(f"KubeVirt before v1.9 needs the {DRA_GATE} feature gate for these gpus")
    if output == "json":
        listed = {"apiVersion": "v1", "kind": "List", "items": [template, vmi]}
        sys.stdout.write(json.dumps(listed, indent=2) + "\n")
    elif output == "name":
        template_name = template["metadata"]["name"]
        sys.stdout.write(
            f"{kubectl_name('ResourceClaimTemplate', template_name)}\n"
            f"{kubectl_name('VirtualMachineInstance', name)}\n"
        )
    else:
        sys.stdout.write(
            yaml.safe_dump_all([template, vmi], sort_keys=False, default_flow_style=False)
        )
    return 0
