"""What the core commands share: the PCI database option, YAML input, and text helpers.

Tables and wrapping to the terminal's width are in `gpuop.cli.layout`; headings are bold
only on a terminal.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click
import yaml

from gpuop.catalog.pci_ids import SHIPPED_PCI_IDS_VERSION
from gpuop.cli.common import UserError, read_text_input
from gpuop.manifests import NESTED_TOO_DEEPLY, ManifestError, check_nesting
from gpuop.naming import PciDatabase

F = TypeVar("F", bound=Callable[..., Any])

SYSTEM_PCI_IDS = "/usr/share/misc/pci.ids"
BUILTIN = "builtin"
SYSTEM = "system"
SHIPPED = "shipped"
STDIN = "-"


@dataclass(frozen=True)
class PciSource:
    """The PCI database a command uses, and where it came from (for the output)."""

    database: PciDatabase
    source: str

    def to_dict(self) -> dict[str, str | None]:
        return {"source": self.source, "version": self.database.version}

    def describe(self) -> str:
        """`2025.07.11 (shipped)`, `2023.04.10 (/usr/share/misc/pci.ids)`."""
        version = self.database.version or "no version header"
        return f"{version} ({self.source})"


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


def load_pci_database(path: str | None) -> PciSource:
    """The database named by `--pci-ids`: the shipped table unless a file is given."""
    if path is None or path == BUILTIN:
        return PciSource(PciDatabase.builtin(), SHIPPED)
    chosen = SYSTEM_PCI_IDS if path == SYSTEM else path
    shown = "stdin" if chosen == STDIN else chosen
    # pci.ids is UTF-8 in practice; a stray Latin-1 byte in a comment must not stop it.
    database = PciDatabase.parse(_read_bytes(chosen).decode("utf-8", errors="replace"))
    if not database.devices:
        raise UserError(f"{shown}: no NVIDIA (vendor 10de) devices found; is it a pci.ids file?")
    return PciSource(database, shown)


def _read_bytes(path: str) -> bytes:
    if path == STDIN:
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None


def load_yaml_document(path: str, what: str) -> Any:
    """One YAML (or JSON) document from a file or stdin; a clear error when it is not one."""
    text = read_text_input(path)
    shown = "stdin" if path == "-" else path
    documents = _yaml_documents(text, shown, yaml.SafeLoader)
    if not documents:
        raise UserError(f"{shown}: empty; expected a {what}")
    if len(documents) > 1:
        raise UserError(f"{shown}: {len(documents)} documents; expected one {what}")
    return documents[0]


def load_documents(path: str, what: str) -> list[Any]:
    """Every document in a file or stdin: one JSON document, or any number of YAML ones.

    Made for large inputs (`kubectl get nodes -o json` of a whole cluster): JSON is read by
    the JSON parser and YAML by libyaml where PyYAML has it, both many times faster than
    the pure-Python YAML reader.
    """
    text = read_text_input(path)
    shown = "stdin" if path == STDIN else path
    if text.lstrip().startswith(("{", "[")):
        try:
            documents = [json.loads(text)]
        except ValueError:
            pass  # YAML in flow style, or broken: the YAML reader says where.
        except RecursionError:
            raise UserError(f"{shown}: {NESTED_TOO_DEEPLY}") from None
        else:
            _check_nesting(documents, shown)
            return documents
    documents = _yaml_documents(text, shown, getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not documents:
        raise UserError(f"{shown}: empty; expected {what}")
    return documents


def _yaml_documents(text: str, shown: str, loader: Any) -> list[Any]:
    """The non-empty YAML documents of `text`, depth-checked; one-line errors naming `shown`."""
    try:
        documents = [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]
    except yaml.YAMLError as exc:
        raise _yaml_error(shown, exc) from None
    except RecursionError:
        raise UserError(f"{shown}: {NESTED_TOO_DEEPLY}") from None
    _check_nesting(documents, shown)
    return documents


def _check_nesting(documents: list[Any], shown: str) -> None:
    """The shared depth guard, as a one-line error naming the document when there are several."""
    for number, document in enumerate(documents, start=1):
        try:
            check_nesting(document, shown, number if len(documents) > 1 else None)
        except ManifestError as exc:
            raise UserError(str(exc)) from None


def _yaml_error(shown: str, exc: yaml.YAMLError) -> UserError:
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    problem = getattr(exc, "problem", None) or "not valid YAML"
    return UserError(f"{shown}: not valid YAML or JSON{where}: {problem}")


def heading(text: str) -> str:
    """A section heading (bold on a terminal; click strips the style elsewhere)."""
    return click.style(text, bold=True)


def summarise(items: Sequence[str], limit: int) -> str:
    """`a, b, c and 12 more` for long lists."""
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
