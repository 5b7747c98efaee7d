"""What the core commands share: the PCI database option and text helpers.

Inputs (pci.ids, ClusterPolicy, YAML documents) are read by `gpuop.cli.inputs`; tables
and wrapping to the terminal's width are in `gpuop.cli.layout`; headings are bold only
on a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from gpuop.catalog.pci_ids import SHIPPED_PCI_IDS_VERSION
from gpuop.cli.inputs import BUILTIN, SYSTEM, SYSTEM_PCI_IDS

F = TypeVar("F", bound=Callable[..., Any])


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


def heading(text: str) -> str:
    """A section heading (bold on a terminal; click strips the style elsewhere)."""
    return click.style(text, bold=True)


def summarise(items: Sequence[str], limit: int) -> str:
    """`a, b, c and 12 more` for long lists."""
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
