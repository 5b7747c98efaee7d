"""The one input layer of every command that reads Kubernetes objects.

Inputs are files, `-` (standard input, once per command line), or directories (a `gpuop
collect` bundle, else every .json/.yaml/.yml file in it); given as positional FILES or
`-f/--filename FILE` (repeatable; `a.yaml,b.yaml` as kubectl takes it). Each holds JSON
or YAML: single objects, Lists (`kind: List`, `NodeList`, ...), multi-document YAML and
JSON streams.

Every input is bounded the same way, with one clear line and exit status 2: at most
MAX_INPUT_BYTES, nesting at most MAX_NESTING levels, YAML aliases adding at most
MAX_ALIAS_EXPANSION values (`gpuop.manifests`). Input that holds none of the kinds a
command reads (empty, `null`, only ConfigMaps: a failed `kubectl get` piped in) is exit
status 2 too (:func:`require_kinds`), never a clean pass.

The inputs that are not object dumps are read here too, each by one function: a single
YAML/JSON document (:func:`load_yaml_document`, :func:`load_documents`), a ClusterPolicy
(:func:`load_policy`), a pci.ids (:func:`load_pci_database`: shipped, this host's, a file
or stdin) a vGPU device config (:func:`load_vgpu_config`) and a values file that names a
resource once (:func:`resource_from_values`, :func:`write_values`). Every one of them fails
with a :class:`UserError`.
"""

from __future__ import annotations

import codecs
import copy
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from gpuop.api.wording import value_kind
from gpuop.cli.common import UserError, note_at_exit
from gpuop.manifests import (
    NESTED_TOO_DEEPLY,
    ManifestError,
    check_nesting,
    load_json_documents,
    load_objects,
    load_yaml_documents,
)
from gpuop.manifests.posted import parse_posted
from gpuop.naming import PciDatabase

if TYPE_CHECKING:
    from gpuop.policy import ResolvedPolicy
    from gpuop.vgpu import VgpuConfigFile

STDIN: Final = "-"
BUNDLE_MANIFEST: Final = "bundle.json"
DUMP_SUFFIXES: Final = (".json", ".yaml", ".yml")
# Far above any cluster dump (10,000 nodes with their pods is about 60 MB of JSON), far
# below what would take the machine's memory to parse.
MAX_INPUT_BYTES: Final = 512 * 1024 * 1024
_MB: Final = 1024 * 1024


def shown(path: str) -> str:
    """How an input is named in messages."""
    return "stdin" if path == STDIN else path


def max_input_bytes() -> int:
    """The size limit (GPUOP_MAX_INPUT_BYTES lowers or raises it, for a test or a huge dump)."""
    raw = os.environ.get("GPUOP_MAX_INPUT_BYTES", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_INPUT_BYTES


def _too_large(path: str, limit: int) -> UserError:
    size = f"{limit / _MB:.0f} MB" if limit >= _MB else f"{limit} bytes"
    return UserError(
        f"{shown(path)}: larger than {size}, the most gpuop reads from one input"
        " (GPUOP_MAX_INPUT_BYTES raises it)"
    )


def read_input_bytes(path: str) -> bytes:
    """A file's bytes, or stdin's for `-`, refusing more than the size limit."""
    limit = max_input_bytes()
    if path == STDIN:
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise _too_large(path, limit)
        return data
    try:
        if os.path.isdir(path):
            raise UserError(f"cannot read {path}: it is a directory")
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise _too_large(path, limit)
    return data


def decode(data: bytes, path: str) -> str:
    """UTF-8 text (a leading byte-order mark is dropped by the readers), UTF-16 text that
    starts with its byte-order mark (what Windows PowerShell's `>` writes), or a clear
    error."""
    encoding = "utf-8"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise UserError(
            f"cannot read {shown(path)}: not {encoding.upper()} text (byte {exc.start}:"
            f" {exc.reason})"
        ) from None


def read_input_text(path: str) -> str:
    """A file's text, or stdin's for `-`: size-limited, UTF-8."""
    return decode(read_input_bytes(path), path)


def split_paths(values: Iterable[str]) -> tuple[str, ...]:
    """`-f a.yaml,b.yaml` as kubectl takes it (a name that exists with its comma is kept)."""
    out: list[str] = []
    for value in values:
        if "," in value and not os.path.exists(value):
            out.extend(part for part in value.split(",") if part)
        else:
            out.append(value)
    return tuple(out)


def input_paths(*groups: Iterable[str]) -> tuple[str, ...]:
    """Positional FILES and -f values together, in order; `-` at most once."""
    paths = split_paths(path for group in groups for path in group)
    if paths.count(STDIN) > 1:
        raise UserError("'-' (stdin) can be given once")
    return paths


def bundle_files(directory: Path) -> list[Path]:
    """The dump files of a directory: a bundle's manifest lists them, else *.json/*.yaml."""
    manifest = directory / BUNDLE_MANIFEST
    if manifest.is_file():
        try:
            data = json.loads(read_input_text(str(manifest)))
        except (json.JSONDecodeError, RecursionError):
            raise UserError(f"cannot read {manifest}: not JSON") from None
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            raise UserError(f"{manifest}: expected a 'files' mapping of kind to file")
        paths = []
        for kind, entry in files.items():
            name = entry.get("file") if isinstance(entry, dict) else None
            if not isinstance(name, str) or "/" in name or name.startswith("."):
                raise UserError(f"{manifest}: files.{kind} does not name a file in the bundle")
            paths.append(directory / name)
        return paths
    try:
        found = sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in DUMP_SUFFIXES)
    except OSError as exc:
        raise UserError(f"cannot read {directory}: {exc.strerror or exc}") from None
    if not found:
        raise UserError(f"{directory}: no {BUNDLE_MANIFEST} and no .json/.yaml files")
    return found


def expand(paths: Sequence[str]) -> list[str]:
    """The files to read: each path, with directories replaced by their dump files."""
    files: list[str] = []
    for path in paths:
        if path != STDIN and os.path.isdir(path):
            files.extend(str(file) for file in bundle_files(Path(path)))
        else:
            files.append(path)
    return files


def _looks_like_json(text: str) -> bool:
    """Whether `text` starts as JSON does (kubectl's human output never does)."""
    return text.lstrip("\ufeff \t\r\n")[:1] in ("{", "[")


def read_objects(paths: Sequence[str]) -> list[Any]:
    """Every object in the given files, directories (bundles) and `-` (stdin), in order."""
    objects: list[Any] = []
    for file in expand(paths):
        source = shown(file)
        text = read_input_text(file)
        posted = None if _looks_like_json(text) else parse_posted(text)
        if posted is not None:
            for note in posted.notes:
                note_at_exit(f"gpuop: {shown(source)}: {note}")
            note_at_exit(
                f"gpuop: {shown(source)}: `kubectl get nodes,pods -A -o yaml` or `gpuop"
                " collect` gives the whole picture"
            )
            objects.extend(posted.objects)
            continue
        try:
            objects.extend(load_objects(text, source))
        except ManifestError as exc:
            raise UserError(str(exc)) from None
    return objects


def require_kinds(
    objects: Sequence[Any], kinds: Sequence[str], command: str, sources: Sequence[str]
) -> None:
    """Refuse input that holds none of `kinds`: a failed `kubectl get` must not pass as clean.

    Raises :class:`UserError` (exit status 2) naming what the input did hold.
    """
    held = Counter(
        obj.get("kind") if isinstance(obj.get("kind"), str) else "object"
        for obj in objects
        if isinstance(obj, Mapping)
    )
    if any(held[kind] for kind in kinds):
        return
    names = ", ".join(shown(source) for source in sources) or "the input"
    if held:
        what = ", ".join(f"{count} {kind}" for kind, count in sorted(held.items()))
        got = f"it holds {what}"
    else:
        got = "it is empty"
    raise UserError(f"{names}: no objects of the kinds {command} reads ({', '.join(kinds)}); {got}")


def read_kinds(paths: Sequence[str], kinds: Sequence[str], command: str) -> list[dict[str, Any]]:
    """The objects of `kinds` in the inputs; exit status 2 when there is none."""
    objects = read_objects(paths)
    require_kinds(objects, kinds, command, paths)
    return [obj for obj in objects if isinstance(obj, dict) and obj.get("kind") in kinds]


def ignored_kinds_line(kinds: Mapping[str, int], command: str) -> str:
    """The one stderr line that names what a command left out of its input."""
    shown_kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    return f"gpuop: not read by {command}: {shown_kinds}"


def note_ignored(objects: Iterable[Any], reads: Iterable[str], command: str) -> None:
    """Say on stderr, in one line, which kinds of the input `command` does not read (a
    `kubectl get all -o json` dump holds many): nothing is left out silently."""
    wanted = set(reads)
    ignored = Counter(
        str(obj.get("kind"))
        for obj in objects
        if isinstance(obj, Mapping) and obj.get("kind") not in wanted
    )
    if ignored:
        note_at_exit(ignored_kinds_line(ignored, command))


def read_dump(
    paths: Sequence[str], *, needs: Sequence[str], reads: Iterable[str], command: str
) -> list[dict[str, Any]]:
    """Every object of the dumps (files, List or multi-document, bundle directories, `-`),
    for every command that reads a dump: exit status 2 when none is of the kinds `needs`,
    and one stderr line naming the kinds the command does not `reads`."""
    objects = [obj for obj in read_objects(paths) if isinstance(obj, dict)]
    require_kinds(objects, needs, command, paths)
    note_ignored(objects, [*needs, *reads], command)
    return objects


# -- Single documents: a kubeconfig, a ClusterPolicy, a --node manifest, a vGPU config. --


def load_yaml_document(path: str, what: str, command: str | None = None) -> Any:
    """One YAML (or JSON) document from a file or stdin; a clear error when it is not one.

    With `command` (`gpuop plan --node`), an empty input is refused in the words of every
    object reader: no objects of the kinds the command reads.
    """
    text = read_input_text(path)
    documents = _json_document(text, shown(path))
    if documents is None:
        documents = _yaml_documents(text, shown(path), fast=False)
    if not documents and command is not None:
        raise UserError(
            f"{shown(path)}: no objects of the kinds {command} reads ({what}); it is empty"
        )
    if not documents:
        raise UserError(f"{shown(path)}: empty; expected a {what}")
    if len(documents) > 1:
        raise UserError(f"{shown(path)}: {len(documents)} documents; expected one {what}")
    return documents[0]


def load_documents(path: str, what: str, *, allow_empty: bool = False) -> list[Any]:
    """Every document in a file or stdin: one JSON document, or any number of YAML ones.

    Made for large inputs (`kubectl get nodes -o json` of a whole cluster): JSON is read by
    the JSON parser and YAML by libyaml where PyYAML has it, both many times faster than
    the pure-Python YAML reader.
    """
    text = read_input_text(path)
    parsed = _json_document(text, shown(path))
    if parsed is not None:
        return parsed
    documents = _yaml_documents(text, shown(path), fast=True)
    if not documents and not allow_empty:
        raise UserError(f"{shown(path)}: empty; expected {what}")
    return documents


def _json_document(text: str, name: str) -> list[Any] | None:
    """The documents of `text` when it is JSON, one value or a stream of them (read by the
    JSON parser, many times faster), else None."""
    if not text.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
        return None
    try:
        documents = load_json_documents(text.lstrip("\ufeff"))
    except ValueError:
        return None  # YAML in flow style, or broken: the YAML reader says where.
    except RecursionError:
        raise UserError(f"{name}: {NESTED_TOO_DEEPLY}") from None
    for number, document in enumerate(documents, start=1):
        try:
            check_nesting(document, name, number if len(documents) > 1 else None)
        except ManifestError as exc:
            raise UserError(str(exc)) from None
    return documents


def _yaml_documents(text: str, name: str, *, fast: bool) -> list[Any]:
    """The non-empty YAML documents of `text`, nesting and aliases bounded; one-line errors."""
    try:
        documents = load_yaml_documents(text, name, fast=fast)
    except ManifestError as exc:
        if exc.line is not None or exc.problem.startswith("not valid YAML"):
            where = f" (line {exc.line}, column {exc.column})" if exc.line is not None else ""
            problem = exc.problem.removeprefix("not valid YAML: ")
            raise UserError(f"{name}: not valid YAML or JSON{where}: {problem}") from None
        single = "\n---" not in text and not text.startswith("---")
        if exc.document is not None and not single:
            raise UserError(str(exc)) from None
        raise UserError(f"{name}: {exc.problem}") from None
    return documents


POLICY_LIST_KINDS: Final = ("List", "ClusterPolicyList")
DEFAULT_POLICY_SOURCE: Final = "default ClusterPolicy"


def load_policy_document(path: str, command: str) -> Any:
    """The ClusterPolicy document of a file or stdin (for `--policy FILE`).

    One document is the policy (its kind is checked by the policy parser, which names
    the field); several documents or a List (`kubectl get clusterpolicies -o yaml`) must
    hold exactly one ClusterPolicy. An empty input is no objects of the kinds read.
    """
    documents = load_documents(path, "a ClusterPolicy", allow_empty=True)
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
        raise UserError(f"{shown(path)}: {len(policies)} ClusterPolicies; expected one")
    require_kinds(
        [obj for obj in found if isinstance(obj, dict)], ("ClusterPolicy",), command, [path]
    )
    raise UserError(f"{shown(path)}: no ClusterPolicy in it")  # objects without a kind


def parsed_policy(document: Any, source: str, *, sandbox: bool = False) -> ResolvedPolicy:
    """A ClusterPolicy document resolved, or an UserError naming every problem on one line.

    `sandbox` turns `spec.sandboxWorkloads.enabled` on (`gpuop plan --sandbox`) without
    touching the caller's document.
    """
    from gpuop.policy import PolicyError, identity_problems, parse_cluster_policy

    missing = identity_problems(document) if source != DEFAULT_POLICY_SOURCE else []
    if sandbox and isinstance(document, dict):
        document = copy.deepcopy(document)
        spec = document.setdefault("spec", {})
        if isinstance(spec, dict):
            block = spec.get("sandboxWorkloads")
            spec["sandboxWorkloads"] = {
                **(block if isinstance(block, dict) else {}),
                "enabled": True,
            }
    try:
        resolved = parse_cluster_policy(document, source)
    except PolicyError as exc:
        problems = [*missing, *exc.problems]
        raise UserError(f"{source}: not a valid ClusterPolicy: {'; '.join(problems)}") from None
    if missing:
        raise UserError(f"{source}: not a valid ClusterPolicy: {'; '.join(missing)}")
    return resolved


def load_policy(
    path: str | None, command: str, *, sandbox: bool = False
) -> tuple[ResolvedPolicy, str]:
    """The ClusterPolicy of `--policy FILE` (the default one without a file), and its name."""
    if path is None:
        from gpuop.policy import default_policy_object

        return parsed_policy(default_policy_object(), DEFAULT_POLICY_SOURCE, sandbox=sandbox), (
            DEFAULT_POLICY_SOURCE
        )
    source = shown(path)
    return parsed_policy(load_policy_document(path, command), source, sandbox=sandbox), source


# -- pci.ids: the table gpuop ships, this host's, or a file. --

SYSTEM_PCI_IDS: Final = "/usr/share/misc/pci.ids"
BUILTIN: Final = "builtin"
SYSTEM: Final = "system"
SHIPPED: Final = "shipped"


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


def load_pci_database(path: str | None) -> PciSource:
    """The database named by `--pci-ids`: the shipped table unless a file is given."""
    if path is None or path == BUILTIN:
        return PciSource(PciDatabase.builtin(), SHIPPED)
    chosen = SYSTEM_PCI_IDS if path == SYSTEM else path
    # pci.ids is UTF-8 in practice; a stray Latin-1 byte in a comment must not stop it.
    database = PciDatabase.parse(read_input_bytes(chosen).decode("utf-8", errors="replace"))
    if not database.devices:
        raise UserError(
            f"{shown(chosen)}: no NVIDIA (vendor 10de) devices found; is it a pci.ids file?"
        )
    return PciSource(database, shown(chosen))


# -- The vGPU device config: the file itself, or the ConfigMap holding it. --


def load_vgpu_config(path: str) -> VgpuConfigFile:
    """The vGPU device config of `--vgpu-config FILE` (the YAML file or its ConfigMap)."""
    from gpuop.vgpu import VgpuConfigError, parse_vgpu_config

    name = shown(path)
    try:
        documents = load_yaml_documents(read_input_text(path), name)
    except ManifestError as exc:
        raise UserError(str(exc)) from None
    if len(documents) > 1:
        raise UserError(f"{name}: {len(documents)} documents; expected one vGPU device config")
    document = documents[0] if documents else None
    if isinstance(document, dict) and document.get("kind") == "ConfigMap":
        values = [v for v in (document.get("data") or {}).values() if isinstance(v, str)]
        if not values:
            raise UserError(f"{name}: the ConfigMap has no data")
        try:
            inner = load_yaml_documents(values[0], f"{name}: its data")
        except ManifestError as exc:
            raise UserError(str(exc)) from None
        document = inner[0] if inner else None
    try:
        return parse_vgpu_config(document)
    except VgpuConfigError as exc:
        raise UserError(f"{name}: {exc}") from None


# --- values files: where manifests name a resource once


def _values_lookup(document: Any, key: str) -> Any:
    current = document
    for part in key.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def _read_values(path: str) -> Any:
    if not Path(path).exists():
        return None
    documents = load_yaml_documents(read_input_text(path), path)
    if len(documents) > 1:
        raise UserError(f"{path}: {len(documents)} documents; expected one mapping of values")
    document = documents[0] if documents else None
    if document is not None and not isinstance(document, Mapping):
        raise UserError(f"{path}: expected a YAML mapping of values")
    return document


def resource_from_values(path: str, key: str) -> str:
    """The resource name stored at `key` (dotted for nesting) in the values file."""
    if not Path(path).exists():
        raise UserError(f"{path}: no such values file")
    found = _values_lookup(_read_values(path), key)
    if not isinstance(found, str) or not found.strip():
        shown = "missing" if found is None else f"{value_kind(found)}, not a resource name"
        raise UserError(f"{path}: {key} is {shown}")
    return found.strip()


def _scalar(value: str) -> str:
    """`value` as a YAML scalar: plain where YAML reads it back as the same string."""
    plain = yaml.safe_dump(value, default_flow_style=True, width=1_000_000).strip()
    return plain.removesuffix("\n...").strip()


_KEY_LINE = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.\-/]+):(?P<rest>.*)$")


def _edited_values(text: str, parts: list[str], scalar: str) -> str | None:
    """`text` with the block-style key path `parts` set to `scalar`, every other byte kept
    (comments, quoting, order); None when the file is not plain enough to edit by line."""
    lines = text.split("\n")
    start, end, indent = 0, len(lines), -1
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        found = None
        child_indent = None
        for number in range(start, end):
            match = _KEY_LINE.match(lines[number])
            if match is None:
                continue
            width = len(match.group("indent"))
            if width <= indent:
                break
            if child_indent is None:
                child_indent = width
            if width == child_indent and match.group("key") == part:
                found = (number, match)
                break
        if found is None:
            # Add the rest of the path under what exists, at the indentation of its siblings.
            pad = " " * (
                child_indent if child_indent is not None else indent + 2 if indent >= 0 else 0
            )
            added = []
            for extra, name in enumerate(parts[depth:]):
                step = pad + "  " * extra
                added.append(f"{step}{name}: {scalar}" if name == parts[-1] else f"{step}{name}:")
            insert_at = end
            while insert_at > start and not lines[insert_at - 1].strip():
                insert_at -= 1
            return "\n".join(lines[:insert_at] + added + lines[insert_at:])
        number, match = found
        rest = match.group("rest")
        if last:
            value = re.match(r"^(?P<value>.*?)(?P<tail>\s+#.*)?$", rest)
            assert value is not None
            old = value.group("value").strip()
            if old.startswith(("{", "[", "&", "*", "|", ">", "!")):
                return None
            shown = scalar
            if old[:1] in ("'", '"') and scalar[:1] not in ("'", '"'):
                shown = f"{old[0]}{scalar}{old[0]}"  # the quoting the file used
            tail = value.group("tail") or ""
            lines[number] = f"{match.group('indent')}{part}: {shown}{tail}"
            return "\n".join(lines)
        if rest.split(" #")[0].strip():
            return None  # a value where a mapping is wanted (or a flow mapping)
        indent = len(match.group("indent"))
        start = number + 1
        end = next(
            (
                n
                for n in range(start, len(lines))
                if lines[n].strip()
                and not lines[n].lstrip().startswith("#")
                and len(lines[n]) - len(lines[n].lstrip(" ")) <= indent
            ),
            len(lines),
        )
    return None


def write_values(path: str, key: str, resource: str) -> str:
    """Set `key` (dotted for nesting) to `resource` in the values file, changing that one
    scalar in place: comments, quoting and every other value stay as written. The line
    that says what changed; an UserError naming what to set when the file is not plain
    block YAML gpuop can edit by line."""
    document = _read_values(path)
    before = _values_lookup(document, key) if document is not None else None
    parts = key.split(".")
    scalar = _scalar(resource)
    text = read_input_text(path) if Path(path).exists() else ""
    if not text.strip():
        edited: str | None = "".join(
            f"{'  ' * depth}{part}:{'' if depth < len(parts) - 1 else ' ' + scalar}\n"
            for depth, part in enumerate(parts)
        )
    else:
        edited = _edited_values(text, parts, scalar)
    if edited is not None and not edited.endswith("\n"):
        edited += "\n"
    check = load_yaml_documents(edited, path) if edited is not None else []
    expected: dict[str, Any] = (
        copy.deepcopy(dict(document)) if isinstance(document, Mapping) else {}
    )
    current = expected
    for part in parts[:-1]:
        child = current.get(part)
        current[part] = copy.deepcopy(dict(child)) if isinstance(child, Mapping) else {}
        current = current[part]
    current[parts[-1]] = resource
    if edited is None or len(check) != 1 or check[0] != expected:
        raise UserError(
            f"{path}: not changed (not plain block YAML to edit in place); set {key}: {scalar}"
        )
    if edited != text:
        try:
            Path(path).write_text(edited, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    if before == resource:
        return f"{path}: {key} is {scalar} already"
    was = "unset" if before is None else _scalar(str(before))
    return f"{path}: {key}: {was} -> {scalar}"


__all__ = [
    "BUILTIN",
    "BUNDLE_MANIFEST",
    "DEFAULT_POLICY_SOURCE",
    "MAX_INPUT_BYTES",
    "SHIPPED",
    "SYSTEM",
    "SYSTEM_PCI_IDS",
    "PciSource",
    "bundle_files",
    "decode",
    "expand",
    "ignored_kinds_line",
    "input_paths",
    "load_documents",
    "load_pci_database",
    "load_policy",
    "load_policy_document",
    "load_vgpu_config",
    "load_yaml_document",
    "max_input_bytes",
    "note_ignored",
    "parsed_policy",
    "read_dump",
    "read_input_bytes",
    "read_input_text",
    "read_kinds",
    "read_objects",
    "require_kinds",
    "resource_from_values",
    "shown",
    "split_paths",
    "write_values",
]
