"""The `gpuop names` commands: the extended-resource names the device plugins advertise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from gpuop.catalog import gpu_catalog, vgpu_families
from gpuop.cli.common import UserError, emit_data, text_width
from gpuop.cli.inputs import PciSource, input_paths, load_pci_database, read_input_text, split_paths
from gpuop.cli.layout import Column, fit_lines, render_table
from gpuop.cli.options import filenames_option, output_option, pci_ids_option
from gpuop.naming import (
    ECHO_LIMIT,
    NamingError,
    mdev_type_name,
    passthrough_resource,
    quoted,
    resource_name_problem,
    vgpu_resource,
)
from gpuop.vgpu import vgpu_type_kind

EXIT_PROBLEM = 1
EXIT_UNPARSABLE = 2


@dataclass(frozen=True)
class NameResult:
    """One input and the resource it becomes.

    `valid`: the resource is a valid Kubernetes extended-resource name. `problem`: why the
    name is not the one you want (invalid, unknown device, unknown vGPU type), or None.
    `parsed` is false for input that is neither a PCI id nor a vGPU type.
    """

    input: str
    resource: str | None
    valid: bool
    problem: str | None
    parsed: bool = True
    pci_id: str | None = None
    pci_name: str | None = None
    mdev_type_name: str | None = None

    def to_dict(self, kind: str) -> dict[str, Any]:
        data: dict[str, Any] = {"input": self.input, "resource": self.resource}
        if kind == "pci":
            data["pci_id"] = self.pci_id
            data["pci_name"] = self.pci_name
        else:
            data["mdev_type_name"] = self.mdev_type_name
        data["valid"] = self.valid
        data["problem"] = self.problem
        return data


def _lines(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _inputs(values: Sequence[str], filenames: Sequence[str] = ()) -> list[str]:
    """The arguments and the lines of -f files; one per line from stdin for none or `-`."""
    files = input_paths(filenames, [value for value in values if value == "-"])
    found = [value for value in values if value != "-"]
    for path in files:
        found.extend(_lines(read_input_text(path)))
    if values or filenames:
        return found
    if sys.stdin.isatty():
        raise UserError("give one or more VALUE arguments, -f FILE, or pipe them in one per line")
    return _lines(read_input_text("-"))


def pci_name(value: str, source: PciSource) -> NameResult:
    try:
        name = passthrough_resource(value, source.database)
    except NamingError as exc:
        return NameResult(value, None, False, str(exc), parsed=False)
    return NameResult(
        value,
        name.resource,
        name.valid,
        name.problem,
        pci_id=name.pci_id,
        pci_name=name.pci_name,
    )


def vgpu_name(value: str) -> NameResult:
    """A full mdev type name (`NVIDIA A10-12Q`) or a vGPU type (`A10-12Q`)."""
    text = value.strip()
    if not text:
        return NameResult(value, None, False, "empty vGPU type name", parsed=False)
    tokens = text.split()
    if len(tokens) == 1:
        if vgpu_type_kind(text) is None:
            return NameResult(
                value,
                None,
                False,
                f"{quoted(text)} is neither an mdev type name (NVIDIA A10-12Q) nor a vGPU type (A10-12Q)",
                parsed=False,
            )
        mdev = mdev_type_name(text)
    else:
        mdev = " ".join(tokens)
    resource = vgpu_resource(mdev)
    problem = resource_name_problem(resource)
    valid = problem is None
    vgpu_type = tokens[-1]
    if (
        problem is None
        and gpu_catalog().model_for_vgpu_type(vgpu_type) is None
        and vgpu_families().for_type(vgpu_type) is None
    ):
        problem = f"{vgpu_type} is not a vGPU type of any GPU in gpuop's catalog"
    return NameResult(value, resource, valid, problem, mdev_type_name=mdev)


def _cell(value: str | None) -> str:
    """A table cell: `-` for nothing, long input cut as messages cut it."""
    if value is None:
        return "-"
    return value if len(value) <= ECHO_LIMIT else quoted(value)


def _report(results: list[NameResult], kind: str, output: str, source: PciSource | None) -> None:
    if output == "name":
        click.echo("".join(f"{r.resource}\n" for r in results if r.resource is not None), nl=False)
        for result in results:
            if result.problem:
                label = "error" if not result.parsed else "problem"
                line = f"{label}: {quoted(result.input)}: {result.problem}"
                click.echo(fit_lines(line, text_width("text")), err=True)
    elif output not in ("text", "wide"):
        emit_data([result.to_dict(kind) for result in results], output)
    elif len(results) == 1:
        # One name: just the resource, so `$(gpuop names pci 10de:2236)` works in scripts.
        (result,) = results
        if result.resource is not None:
            # A valid name as it is (scripts take it); an invalid one cut as messages cut it.
            shown = result.resource if result.valid else _cell(result.resource)
            click.echo(shown if result.valid else fit_lines(shown, text_width(output)))
        if result.problem:
            label = "error" if not result.parsed else "problem"
            click.echo(fit_lines(f"{label}: {result.problem}", text_width(output)), err=True)
    else:
        if kind == "pci":
            headers = ["INPUT", "RESOURCE", "PCI NAME", "PROBLEM"]
            rows = [
                [_cell(r.input), r.resource or "-", r.pci_name or "-", r.problem or ""]
                for r in results
            ]
        else:
            headers = ["INPUT", "RESOURCE", "MDEV TYPE NAME", "PROBLEM"]
            rows = [
                [_cell(r.input), r.resource or "-", r.mdev_type_name or "-", r.problem or ""]
                for r in results
            ]
        columns = [
            Column(headers[0], wrap=True, min_width=10),
            Column(headers[1], wrap=True, min_width=20),
            Column(headers[2], wrap=True, drop=1, min_width=16),
            Column(headers[3], wrap=True, min_width=20),
        ]
        click.echo(render_table(columns, rows, width=text_width(output)))
    if output in ("text", "wide") and source is not None:
        click.echo(f"pci.ids: {source.describe()}", err=True)
    if any(not r.parsed for r in results):
        sys.exit(EXIT_UNPARSABLE)
    if any(not r.valid or r.problem for r in results):
        sys.exit(EXIT_PROBLEM)


@click.group()
def names() -> None:
    """Extended-resource names, exactly as the device plugins make them.

    One input prints just its resource name; several print a table (INPUT, RESOURCE,
    the PCI or mdev type name, PROBLEM); --output json gives one object per input, and
    --output name one resource name a line.

    Exit status: 0 every name is good; 1 a name is not a valid Kubernetes resource
    name, or a device or vGPU type is unknown (the name is still printed); 2 an input
    could not be read as a PCI id or vGPU type.
    """


def _inputs_argument(func: Callable[..., Any]) -> Callable[..., Any]:
    func = filenames_option("A file of VALUEs, one a line ('-': stdin); repeatable, or A,B.")(func)
    return click.argument("values", nargs=-1, metavar="[VALUE]... | -")(func)


@names.command("pci")
@_inputs_argument
@pci_ids_option
@output_option("text", "wide", "json", "yaml", "name")
def pci(
    values: tuple[str, ...], filenames: tuple[str, ...], pci_ids: str | None, output: str
) -> None:
    """The passthrough resource for PCI device ids (KubeVirt GPU device plugin).

    The plugin looks the device up in its pci.ids, upper-cases the name, turns `/`,
    `.` and whitespace runs into `_` and drops everything else outside
    [A-Za-z0-9_.]; an unknown device is advertised under its raw id.

    \b
    Examples:
      gpuop names pci 10de:2236                  nvidia.com/GA102GL_A10
      gpuop names pci 2236 20b5 25b6             several (vendor 10de assumed)
      gpuop names pci 24fa                       a name that ends in '_' (invalid)
      gpuop names pci --pci-ids ./pci.ids 2330   named from another pci.ids
      gpuop names pci -f ids.txt                 one id a line
      lspci -nn -d 10de: | grep -o '10de:[0-9a-f]*' | gpuop names pci -

    Names come from the pci.ids gpuop ships (2025.07.11, the copy in the KubeVirt
    GPU device plugin's image) unless --pci-ids names another.
    """
    if pci_ids == "-" and (
        (list(values) in ([], ["-"]) and not filenames) or "-" in split_paths(filenames)
    ):
        raise UserError("--pci-ids - reads stdin: give the PCI ids as arguments or -f FILE")
    source = load_pci_database(pci_ids)
    results = [pci_name(value, source) for value in _inputs(values, filenames)]
    _report(results, "pci", output, source)


@names.command("vgpu")
@_inputs_argument
@output_option("text", "wide", "json", "yaml", "name")
def vgpu(values: tuple[str, ...], filenames: tuple[str, ...], output: str) -> None:
    """The vGPU resource for mdev type names, or for vGPU types.

    The plugin reads the mdev type name (`NVIDIA A10-12Q`, `GRID T4-1Q`) and turns
    whitespace runs into `_`; nothing else changes. A bare vGPU type (`A10-12Q`, as
    in vGPU device configs) is first given the name the driver shows for it.

    \b
    Examples:
      gpuop names vgpu "NVIDIA A10-12Q"     nvidia.com/NVIDIA_A10-12Q
      gpuop names vgpu A10-12Q T4-1Q        nvidia.com/NVIDIA_A10-12Q, nvidia.com/GRID_T4-1Q
      cat /sys/bus/mdev/devices/*/mdev_type/name | gpuop names vgpu -o json
    """
    results = [vgpu_name(value) for value in _inputs(values, filenames)]
    _report(results, "vgpu", output, None)
