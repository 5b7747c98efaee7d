"""What the core commands share: the PCI database option, YAML input, and plain-text tables.

Text output is plain aligned columns (no wrapping, no box drawing), so it reads the same in
a terminal, a pipe, a CI log and an issue comment; headings are bold only on a terminal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click
import yaml

from gpuop.cli.common import UserError, read_text_input
from gpuop.naming import PciDatabase

F = TypeVar("F", bound=Callable[..., Any])

SYSTEM_PCI_IDS = "/usr/share/misc/pci.ids"
BUILTIN = "builtin"


@dataclass(frozen=True)
class PciSource:
    """The PCI database a command uses, and where it came from (for the output)."""

    database: PciDatabase
    source: str

    def to_dict(self) -> dict[str, str | None]:
        return {"source": self.source, "version": self.database.version}

    def describe(self) -> str:
        version = self.database.version or "no version header"
        return f"{self.source} ({version})"


def pci_ids_option(func: F) -> F:
    """`--pci-ids FILE|builtin`."""
    return click.option(
        "--pci-ids",
        "pci_ids",
        metavar="FILE|builtin",
        default=None,
        help=(
            "pci.ids file to name passthrough devices from, as the KubeVirt device plugin"
            " does (it ships pci.ids 2025.07.11). 'builtin' uses the names in gpuop's GPU"
            f" catalog. Default: {SYSTEM_PCI_IDS} if present, else builtin."
        ),
    )(func)


def load_pci_database(path: str | None, system_path: str = SYSTEM_PCI_IDS) -> PciSource:
    """The database named by `--pci-ids`, or the default."""
    if path == BUILTIN or (path is None and not os.path.isfile(system_path)):
        return PciSource(PciDatabase.builtin(), "builtin catalog")
    chosen = system_path if path is None else path
    database = PciDatabase.parse(read_text_input(chosen))
    if not database.devices:
        raise UserError(f"{chosen}: no NVIDIA (vendor 10de) devices found; is it a pci.ids file?")
    return PciSource(database, "stdin" if chosen == "-" else chosen)


def load_yaml_document(path: str, what: str) -> Any:
    """One YAML (or JSON) document from a file or stdin; a clear error when it is not one."""
    text = read_text_input(path)
    shown = "stdin" if path == "-" else path
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise UserError(f"{shown}: not valid YAML or JSON{where}: {problem}") from None
    if not documents:
        raise UserError(f"{shown}: empty; expected a {what}")
    if len(documents) > 1:
        raise UserError(f"{shown}: {len(documents)} documents; expected one {what}")
    return documents[0]


def heading(text: str) -> str:
    """A section heading (bold on a terminal; click strips the style elsewhere)."""
    return click.style(text, bold=True)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: int = 0) -> str:
    """Aligned columns, two spaces apart; the last column is never padded."""
    widths = [len(h) for h in headers]
    for row in rows:
        for number, cell in enumerate(row):
            widths[number] = max(widths[number], len(cell))
    lines = []
    for row in [list(headers), *[list(r) for r in rows]]:
        cells = [cell.ljust(widths[n]) for n, cell in enumerate(row[:-1])] + [row[-1]]
        lines.append((" " * indent + "  ".join(cells)).rstrip())
    return "\n".join(lines)


def summarise(items: Sequence[str], limit: int) -> str:
    """`a, b, c and 12 more` for long lists."""
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
