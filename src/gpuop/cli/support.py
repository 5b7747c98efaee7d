"""What the core commands share: the PCI database option, YAML input, and text helpers.

Tables and wrapping to the terminal's width are in `gpuop.cli.layout`; headings are bold
only on a terminal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from gpuop.catalog.pci_ids import SHIPPED_PCI_IDS_VERSION
from gpuop.cli.common import UserError, read_text_input
from gpuop.manifests import (
    NESTED_TOO_DEEPLY,
    ManifestError,
    check_nesting,
    load_yaml_documents,
)
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
    from gpuop.cli.inputs import read_input_bytes

    return read_input_bytes(path)


def load_yaml_document(path: str, what: str, command: str | None = None) -> Any:
    """One YAML (or JSON) document from a file or stdin; a clear error when it is not one.

    With `command` (`gpuop plan --node`), an empty input is refused in the words of every
    object reader: no objects of the kinds the command reads.
    """
    text = read_text_input(path)
    shown = "stdin" if path == "-" else path
    documents = _json_document(text, shown)
    if documents is None:
        documents = _yaml_documents(text, shown, fast=False)
    if not documents and command is not None:
        raise UserError(f"{shown}: no objects of the kinds {command} reads ({what}); it is empty")
    if not documents:
        raise UserError(f"{shown}: empty; expected a {what}")
    if len(documents) > 1:
        raise UserError(f"{shown}: {len(documents)} documents; expected one {what}")
    return documents[0]


def load_documents(path: str, what: str, *, allow_empty: bool = False) -> list[Any]:
    """Every document in a file or stdin: one JSON document, or any number of YAML ones.

    Made for large inputs (`kubectl get nodes -o json` of a whole cluster): JSON is read by
    the JSON parser and YAML by libyaml where PyYAML has it, both many times faster than
    the pure-Python YAML reader.
    """
    text = read_text_input(path)
    shown = "stdin" if path == STDIN else path
    parsed = _json_document(text, shown)
    if parsed is not None:
        return parsed
    documents = _yaml_documents(text, shown, fast=True)
    if not documents and not allow_empty:
        raise UserError(f"{shown}: empty; expected {what}")
    return documents


POLICY_LIST_KINDS = ("List", "ClusterPolicyList")


def load_policy_document(path: str, command: str) -> Any:
    """The ClusterPolicy document of a file or stdin (for `--policy FILE`).

    One document is the policy (its kind is checked by the policy parser, which names
    the field); several documents or a List (`kubectl get clusterpolicies -o yaml`) must
    hold exactly one ClusterPolicy. An empty input is no objects of the kinds read.
    """
    shown = "stdin" if path == STDIN else path
    documents = _yaml_documents(read_text_input(path), shown, fast=True)
    found: list[Any] = []
    for document in documents:
        if isinstance(document, dict) and document.get("kind") in POLICY_LIST_KINDS:
            items = document.get("items")
            found.extend(items if isinstance(items, list) else [])
        else:
            found.append(document)
    if len(documents) == 1 and len(found) == 1:
        return found[0]
    policies = [
        obj for obj in found if isinstance(obj, dict) and obj.get("kind") == "ClusterPolicy"
    ]
    if len(policies) == 1:
        return policies[0]
    if len(policies) > 1:
        raise UserError(f"{shown}: {len(policies)} ClusterPolicies; expected one")
    from gpuop.cli.inputs import require_kinds

    require_kinds(
        [obj for obj in found if isinstance(obj, dict)], ("ClusterPolicy",), command, [path]
    )
    raise UserError(f"{shown}: no ClusterPolicy in it")  # objects without a kind


def _json_document(text: str, shown: str) -> list[Any] | None:
    """`[document]` when `text` is JSON (read by the JSON parser, many times faster), else None."""
    if not text.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
        return None
    try:
        documents = [json.loads(text.lstrip("\ufeff"))]
    except ValueError:
        return None  # YAML in flow style, or broken: the YAML reader says where.
    except RecursionError:
        raise UserError(f"{shown}: {NESTED_TOO_DEEPLY}") from None
    _check_nesting(documents, shown)
    return documents


def _yaml_documents(text: str, shown: str, *, fast: bool) -> list[Any]:
    """The non-empty YAML documents of `text`, nesting and aliases bounded; one-line errors."""
    try:
        documents = load_yaml_documents(text, shown, fast=fast)
    except ManifestError as exc:
        if exc.line is not None or exc.problem.startswith("not valid YAML"):
            where = f" (line {exc.line}, column {exc.column})" if exc.line is not None else ""
            problem = exc.problem.removeprefix("not valid YAML: ")
            raise UserError(f"{shown}: not valid YAML or JSON{where}: {problem}") from None
        if exc.document is not None and not _single_document(text):
            raise UserError(str(exc)) from None
        raise UserError(f"{shown}: {exc.problem}") from None
    return documents


def _single_document(text: str) -> bool:
    return "\n---" not in text and not text.startswith("---")


def _check_nesting(documents: list[Any], shown: str) -> None:
    """The shared depth guard, as a one-line error naming the document when there are several."""
    for number, document in enumerate(documents, start=1):
        try:
            check_nesting(document, shown, number if len(documents) > 1 else None)
        except ManifestError as exc:
            raise UserError(str(exc)) from None


def heading(text: str) -> str:
    """A section heading (bold on a terminal; click strips the style elsewhere)."""
    return click.style(text, bold=True)


def summarise(items: Sequence[str], limit: int) -> str:
    """`a, b, c and 12 more` for long lists."""
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
