"""The typed record of what configuring (or reverting) the container runtime did to a host.

Why this module exists: an operator component that edits files on every GPU node owes the
administrator an exact account of it. `RuntimeResult` lists each file touched (with hashes,
backup and diff) and each key added, changed or appended, and renders as text for people and as
JSON for the audit command and the simulator. The same `Change` records are stored in the state
file so that a later revert removes exactly what was added. Pure data: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any, Literal, TypeAlias

from gpuop.toolkit.tomledit import KeyPath, dotted

Mode: TypeAlias = Literal["drop-in", "in-place"]
Operation: TypeAlias = Literal["configure", "revert"]
ChangeKind: TypeAlias = Literal["added", "changed", "appended", "copied", "removed", "restored"]
FileAction: TypeAlias = Literal["created", "modified", "deleted", "restored", "unchanged"]

MODES: tuple[Mode, ...] = ("drop-in", "in-place")


@dataclass(frozen=True, slots=True)
class RuntimeHandler:
    """A containerd runtime handler: the name a RuntimeClass refers to and the binary it runs."""

    name: str
    binary: str


@dataclass(frozen=True, slots=True)
class Change:
    """One key touched in one file.

    * ``added``: `key` did not exist and now holds `value`. `created_parents` lists tables that
      did not exist either (deepest first); a revert removes them again when they are empty.
    * ``changed``: `key` held `previous` and now holds `value`.
    * ``appended``: `value` was appended to the array at `key`.
    * ``copied``: `key` was copied from another file (drop-in mode); `note` says from where.
    * ``removed`` / ``restored``: the revert counterparts, only in revert results.
    """

    file: str
    kind: ChangeKind
    key: KeyPath
    value: Any = None
    previous: Any = None
    created_parents: tuple[KeyPath, ...] = ()
    note: str = ""

    @property
    def key_text(self) -> str:
        return dotted(self.key)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "kind": self.kind,
            "key": list(self.key),
            "keyText": self.key_text,
        }
        if self.value is not None:
            out["value"] = jsonable(self.value)
        if self.previous is not None:
            out["previous"] = jsonable(self.previous)
        if self.created_parents:
            out["createdParents"] = [list(p) for p in self.created_parents]
        if self.note:
            out["note"] = self.note
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Change:
        kind = data["kind"]
        if kind not in ("added", "changed", "appended", "copied", "removed", "restored"):
            raise ValueError(f"unknown change kind {kind!r}")
        return cls(
            file=str(data["file"]),
            kind=kind,
            key=tuple(str(k) for k in data["key"]),
            value=data.get("value"),
            previous=data.get("previous"),
            created_parents=tuple(tuple(str(k) for k in p) for p in data.get("createdParents", [])),
            note=str(data.get("note", "")),
        )

    def render(self) -> str:
        if self.kind == "changed":
            text = f"~ {self.key_text}: {_short(self.previous)} -> {_short(self.value)}"
        elif self.kind == "appended":
            text = f"+ {self.key_text} += {_short(self.value)}"
        elif (
            self.kind == "removed"
            and self.value is not None
            and not isinstance(self.value, Mapping)
        ):
            text = f"- {self.key_text}: {_short(self.value)}"
        elif self.kind == "removed":
            text = f"- {self.key_text}"
        elif self.kind == "restored":
            text = f"~ {self.key_text}: {_short(self.value)} -> {_short(self.previous)}"
        elif self.kind == "copied":
            text = f"= {self.key_text}"
        elif isinstance(self.value, Mapping):
            text = f"+ {self.key_text}"
        else:
            text = f"+ {self.key_text} = {_short(self.value)}"
        return f"{text}  ({self.note})" if self.note else text


@dataclass(frozen=True, slots=True)
class FileOutcome:
    """What happened (or, in a dry run, would happen) to one file. Paths are host paths."""

    path: str
    action: FileAction
    sha256_before: str | None = None
    sha256_after: str | None = None
    backup: str | None = None
    diff: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "action": self.action,
            "sha256Before": self.sha256_before,
            "sha256After": self.sha256_after,
            "backup": self.backup,
            "diff": self.diff,
        }


@dataclass(frozen=True, slots=True)
class RuntimeResult:
    """The outcome of `configure_runtime` or `revert_runtime` for one host root."""

    operation: Operation
    root: str
    config: str
    mode: Mode
    dry_run: bool
    config_version: int | None = None
    runtimes: tuple[RuntimeHandler, ...] = ()
    files: tuple[FileOutcome, ...] = ()
    changes: tuple[Change, ...] = ()
    warnings: tuple[str, ...] = ()
    state_file: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        """True when a file was (or, in a dry run, would be) written or removed."""
        return any(f.action != "unchanged" for f in self.files)

    def diff(self) -> str:
        """All file diffs, in the order the files are written."""
        return "".join(f.diff for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "root": self.root,
            "config": self.config,
            "mode": self.mode,
            "dryRun": self.dry_run,
            "changed": self.changed,
            "configVersion": self.config_version,
            "runtimes": [{"name": r.name, "binary": r.binary} for r in self.runtimes],
            "files": [f.to_dict() for f in self.files],
            "changes": [c.to_dict() for c in self.changes],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "stateFile": self.state_file,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def render_text(self) -> str:
        lines: list[str] = []
        version = (
            f", containerd config version {self.config_version}" if self.config_version else ""
        )
        if self.operation == "configure":
            if self.changed:
                verb = "would configure" if self.dry_run else "configured"
                lines.append(f"{verb} runtime handlers for {self.config} ({self.mode}{version})")
            else:
                lines.append(
                    f"nothing to change: {self.config} already registers the runtime handlers "
                    f"({self.mode}{version})"
                )
            for runtime in self.runtimes:
                lines.append(f"  {runtime.name:<14} {runtime.binary}")
        else:
            verb = "would revert" if self.dry_run else "reverted"
            if not self.changed:
                verb = "nothing to revert in"
            lines.append(f"{verb} {self.config} ({self.mode})")
        touched = [f for f in self.files if f.action != "unchanged"]
        if touched:
            lines.append("files:")
            for outcome in touched:
                backup = f"  (backup: {outcome.backup})" if outcome.backup else ""
                lines.append(f"  {outcome.action:<9} {outcome.path}{backup}")
        if self.changes:
            lines.append("changes:")
            current = None
            for change in self.changes:
                if change.file != current:
                    current = change.file
                    lines.append(f"  {current}")
                lines.append(f"    {change.render()}")
        for warning in self.warnings:
            lines.append(f"warning: {warning}")
        for note in self.notes:
            lines.append(note)
        if self.operation == "configure" and self.state_file and self.changed and not self.dry_run:
            lines.append(f"state: {self.state_file}")
        if self.dry_run and self.changed:
            lines.append("dry run: nothing was written")
        return "\n".join(lines) + "\n"


def jsonable(value: Any) -> Any:
    """`value` with TOML-only types (dates and times) turned into their TOML text."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return value


def _short(value: Any) -> str:
    text = json.dumps(jsonable(value))
    return text if len(text) <= 60 else text[:57] + "..."
