"""The command-line options several commands share, each defined once.

`--live/--kubeconfig/--context` (kubectl's rule for which cluster is read, in
`gpuop.cli.live`), `-o/--output`, `--color/--no-color`, `-f/--filename`, `--pci-ids` and
`--label KEY=VALUE`: the same spelling, help and parsing wherever they appear. The
long-running commands that drive the local lab cluster (`gpuop sim`) take
:func:`kubeconfig_option`, whose default is that cluster's kubeconfig.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from gpuop.catalog.pci_ids import SHIPPED_PCI_IDS_VERSION
from gpuop.cli.common import UserError
from gpuop.cli.inputs import BUILTIN, SYSTEM, SYSTEM_PCI_IDS

F = TypeVar("F", bound=Callable[..., Any])

_KUBECTL_DEFAULT = "default, as kubectl: $KUBECONFIG, else ~/.kube/config"


def _apply(func: F, options: Sequence[Callable[[F], F]]) -> F:
    for option in reversed(options):
        func = option(func)
    return func


def cluster_options(func: F) -> F:
    """`--kubeconfig FILE` and `--context NAME` for a command that always reads a cluster."""
    return _apply(
        func,
        [
            click.option(
                "--kubeconfig",
                metavar="FILE",
                default=None,
                help=f"Kubeconfig ({_KUBECTL_DEFAULT}).",
            ),
            click.option(
                "--context",
                "context_name",
                metavar="NAME",
                default=None,
                help="Kubeconfig context (default: its current context).",
            ),
        ],
    )


def live_options(func: F) -> F:
    """`--live`, `--kubeconfig FILE` and `--context NAME`, the same on every command."""
    return _apply(
        func,
        [
            click.option("--live", is_flag=True, help="Read the cluster through the API."),
            click.option(
                "--kubeconfig",
                metavar="FILE",
                default=None,
                help=f"Kubeconfig for --live ({_KUBECTL_DEFAULT}).",
            ),
            click.option(
                "--context",
                "context_name",
                metavar="NAME",
                default=None,
                help="Kubeconfig context for --live (default: its current context).",
            ),
        ],
    )


def kubeconfig_option(func: F) -> F:
    """`--kubeconfig` (default: $KUBECONFIG, then the local cluster made by `gpuop cluster up`)."""
    return click.option(
        "--kubeconfig",
        default=None,
        metavar="FILE",
        help="Kubeconfig file (default: $KUBECONFIG, else the local `gpuop cluster up` cluster).",
    )(func)


def output_option(
    *choices: str, default: str | None = "", help: str = "Output format."
) -> Callable[[F], F]:
    """`-o/--output` with the given formats; the default is the first unless given."""
    chosen = choices[0] if default == "" else default
    return click.option(
        "--output",
        "-o",
        type=click.Choice(list(choices)),
        default=chosen,
        show_default=chosen is not None,
        help=help,
    )


def color_option(func: F) -> F:
    """`--color/--no-color` (default: on a terminal, off with NO_COLOR)."""
    return click.option(
        "--color/--no-color",
        default=None,
        help="Colour the text output (default: on a terminal, unless NO_COLOR is set).",
    )(func)


def filenames_option(
    help_text: str = "A dump file, bundle directory or '-' (as FILES); repeatable, or A,B.",
    *aliases: str,
) -> Callable[[F], F]:
    """`-f/--filename FILE`, repeatable, for every command that reads objects (cli.inputs).

    `aliases` are a command's older names for the same option (`--nodes`, `--policy`).
    """
    return click.option(
        "-f",
        "--filename",
        *aliases,
        "filenames",
        multiple=True,
        metavar="FILE",
        help=help_text,
    )


def filename_option(func: F) -> F:
    """`-f/--filename FILE`, repeatable: input files beside the positional FILES."""
    return filenames_option()(func)


def policy_override_option(func: F) -> F:
    """`--policy FILE`: the checkers' ClusterPolicy in place of the one in their input."""
    return click.option(
        "--policy",
        "policy_file",
        metavar="FILE",
        help="Check against this ClusterPolicy instead of the one in the input.",
    )(func)


def pci_ids_option(func: F) -> F:
    """`--pci-ids FILE|-|builtin|system`, the same for every command that names devices."""
    return click.option(
        "--pci-ids",
        "pci_ids",
        metavar="FILE|-|system",
        default=None,
        help=(
            "The pci.ids the sandbox device plugin names passthrough devices from. Default"
            f" ('{BUILTIN}'): the NVIDIA section of pci.ids {SHIPPED_PCI_IDS_VERSION} shipped with"
            " gpuop, the copy the KubeVirt GPU device plugin's image carries."
            f" '{SYSTEM}': this host's {SYSTEM_PCI_IDS}. '-': standard input."
        ),
    )(func)


def labels_option(help: str) -> Callable[[F], F]:
    """`--label KEY=VALUE`, repeatable (read with :func:`parse_labels`)."""
    return click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help=help)


def parse_labels(items: Sequence[str]) -> dict[str, str]:
    """`KEY=VALUE` pairs from repeated `--label` options (the value may be empty)."""
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--label {item!r}: expected KEY=VALUE (the value may be empty)")
        labels[key] = value
    return labels
