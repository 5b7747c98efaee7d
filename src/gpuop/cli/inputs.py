"""The one input layer of every command that reads Kubernetes objects.

Inputs are files, `-` (standard input, once per command line), or directories (a `gpuop
collect` bundle, else every .json/.yaml/.yml file in it); given as positional FILES or
`-f/--filename FILE` (repeatable; `a.yaml,b.yaml` as kubectl takes it). Each holds JSON
or YAML: single objects, Lists (`kind: List`, `NodeList`, ...) and multi-document YAML.

Every input is bounded the same way, with one clear line and exit status 2: at most
MAX_INPUT_BYTES, nesting at most MAX_NESTING levels, YAML aliases adding at most
MAX_ALIAS_EXPANSION values (`gpuop.manifests`). Input that holds none of the kinds a
command reads (empty, `null`, only ConfigMaps: a failed `kubectl get` piped in) is exit
status 2 too (:func:`require_kinds`), never a clean pass.

Workload controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob) stand
for the Pod they create wherever a command takes a Pod (:func:`pod_from_template`).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from gpuop.cli.common import UserError
from gpuop.manifests import ManifestError, load_objects

STDIN: Final = "-"
BUNDLE_MANIFEST: Final = "bundle.json"
DUMP_SUFFIXES: Final = (".json", ".yaml", ".yml")
# Far above any cluster dump (10,000 nodes with their pods is about 60 MB of JSON), far
# below what would take the machine's memory to parse.
MAX_INPUT_BYTES: Final = 512 * 1024 * 1024
_MB: Final = 1024 * 1024

# Workload controllers and where their pod template is.
POD_TEMPLATES: Final = {
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


class InputError(UserError):
    """Input that cannot be read or used: one line on stderr, exit status 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 2)


def shown(path: str) -> str:
    """How an input is named in messages."""
    return "stdin" if path == STDIN else path


def max_input_bytes() -> int:
    """The size limit (GPUOP_MAX_INPUT_BYTES lowers or raises it, for a test or a huge dump)."""
    raw = os.environ.get("GPUOP_MAX_INPUT_BYTES", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_INPUT_BYTES


def _too_large(path: str, limit: int) -> InputError:
    size = f"{limit / _MB:.0f} MB" if limit >= _MB else f"{limit} bytes"
    return InputError(
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
            raise InputError(f"cannot read {path}: it is a directory")
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise _too_large(path, limit)
    return data


def decode(data: bytes, path: str) -> str:
    """UTF-8 text (a leading byte-order mark is dropped by the readers), or a clear error."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"cannot read {shown(path)}: not UTF-8 text (byte {exc.start}: {exc.reason})"
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
        raise InputError("'-' (stdin) can be given once")
    return paths


def bundle_files(directory: Path) -> list[Path]:
    """The dump files of a directory: a bundle's manifest lists them, else *.json/*.yaml."""
    manifest = directory / BUNDLE_MANIFEST
    if manifest.is_file():
        try:
            data = json.loads(read_input_text(str(manifest)))
        except (json.JSONDecodeError, RecursionError):
            raise InputError(f"cannot read {manifest}: not JSON") from None
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            raise InputError(f"{manifest}: expected a 'files' mapping of kind to file")
        paths = []
        for kind, entry in files.items():
            name = entry.get("file") if isinstance(entry, dict) else None
            if not isinstance(name, str) or "/" in name or name.startswith("."):
                raise InputError(f"{manifest}: files.{kind} does not name a file in the bundle")
            paths.append(directory / name)
        return paths
    try:
        found = sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in DUMP_SUFFIXES)
    except OSError as exc:
        raise InputError(f"cannot read {directory}: {exc.strerror or exc}") from None
    if not found:
        raise InputError(f"{directory}: no {BUNDLE_MANIFEST} and no .json/.yaml files")
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


def read_objects(paths: Sequence[str]) -> list[Any]:
    """Every object in the given files, directories (bundles) and `-` (stdin), in order."""
    objects: list[Any] = []
    for file in expand(paths):
        source = "<stdin>" if file == STDIN else file
        try:
            objects.extend(load_objects(read_input_text(file), source))
        except ManifestError as exc:
            raise InputError(str(exc)) from None
    return objects


def require_kinds(
    objects: Sequence[Any], kinds: Sequence[str], command: str, sources: Sequence[str]
) -> None:
    """Refuse input that holds none of `kinds`: a failed `kubectl get` must not pass as clean.

    Raises :class:`InputError` (exit status 2) naming what the input did hold.
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
    raise InputError(
        f"{names}: no objects of the kinds {command} reads ({', '.join(kinds)}); {got}"
    )


def read_kinds(paths: Sequence[str], kinds: Sequence[str], command: str) -> list[dict[str, Any]]:
    """The objects of `kinds` in the inputs; exit status 2 when there is none."""
    objects = read_objects(paths)
    require_kinds(objects, kinds, command, paths)
    return [obj for obj in objects if isinstance(obj, dict) and obj.get("kind") in kinds]


def _describe(obj: Mapping[str, Any]) -> str:
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "an object without a kind"
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return f"{kind} {name!r}" if isinstance(name, str) and name else str(kind)


def pod_from_template(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Pod a workload controller (Deployment, Job, CronJob, ...) would create."""
    kind = obj.get("kind")
    assert isinstance(kind, str) and kind in POD_TEMPLATES
    path = POD_TEMPLATES[kind]
    template: Any = obj
    for part in path:
        template = template.get(part) if isinstance(template, Mapping) else None
    where = ".".join(path)
    if not isinstance(template, Mapping):
        raise InputError(f"{_describe(obj)}: {where} is missing")
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        raise InputError(f"{_describe(obj)}: {where}.spec is missing")
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    template_metadata = template.get("metadata")
    labels = template_metadata.get("labels") if isinstance(template_metadata, Mapping) else None
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else None
    namespace = metadata.get("namespace") if isinstance(metadata.get("namespace"), str) else None
    pod_metadata: dict[str, Any] = {
        "name": f"{name or kind.lower()}-pod",
        "namespace": namespace or "default",
    }
    if isinstance(labels, Mapping):
        pod_metadata["labels"] = copy.deepcopy(dict(labels))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_metadata,
        "spec": copy.deepcopy(dict(spec)),
    }


__all__ = [
    "BUNDLE_MANIFEST",
    "MAX_INPUT_BYTES",
    "POD_TEMPLATES",
    "InputError",
    "bundle_files",
    "decode",
    "expand",
    "input_paths",
    "max_input_bytes",
    "pod_from_template",
    "read_input_bytes",
    "read_input_text",
    "read_kinds",
    "read_objects",
    "require_kinds",
    "shown",
    "split_paths",
]
