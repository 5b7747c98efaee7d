"""The record gpuop keeps next to a containerd config, so a revert undoes exactly what it did.

Why this module exists: the upstream toolkit reverts by deleting runtime handlers *by name*,
which also deletes a handler the administrator wrote, leaves `enable_cdi` flipped, and cannot
tell its own drop-in from someone else's. gpuop instead writes `<config>.gpuop-state.json`
beside the config it changed, listing

* each file it wrote: whether it existed before, the SHA-256 of the original and of what gpuop
  last wrote, and the backup of the original (`<file>.gpuop-backup`, never overwritten);
* each key it added or changed (`Change` records, with previous values);
* directories it created.

On revert, a file whose hash still equals what gpuop wrote gets its original bytes back from
the backup; a file edited since then gets only gpuop's keys removed. The record is JSON so that
people and the audit command can read it; `STATE_SCHEMA` versions it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpuop.toolkit.errors import StateError
from gpuop.toolkit.results import MODES, Change, Mode

STATE_SCHEMA = 1
STATE_SUFFIX = ".gpuop-state.json"
BACKUP_SUFFIX = ".gpuop-backup"
DROP_IN_MARKER = "# Written by gpuop"


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One file gpuop wrote. Paths are host paths."""

    path: str
    existed: bool
    original_sha256: str | None
    written_sha256: str
    backup: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "existed": self.existed,
            "originalSha256": self.original_sha256,
            "writtenSha256": self.written_sha256,
            "backup": self.backup,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FileRecord:
        return cls(
            path=str(data["path"]),
            existed=bool(data["existed"]),
            original_sha256=_opt_str(data.get("originalSha256")),
            written_sha256=str(data["writtenSha256"]),
            backup=_opt_str(data.get("backup")),
        )


@dataclass(frozen=True, slots=True)
class StateRecord:
    """Everything gpuop changed for one containerd config, across configure runs."""

    mode: Mode
    config: str
    drop_in: str | None
    files: tuple[FileRecord, ...]
    changes: tuple[Change, ...]
    created_dirs: tuple[str, ...] = ()
    runtimes: tuple[str, ...] = ()
    tool_version: str = ""

    def file(self, path: str) -> FileRecord | None:
        return next((f for f in self.files if f.path == path), None)

    def with_file(self, record: FileRecord) -> StateRecord:
        files = [f for f in self.files if f.path != record.path]
        position = next((i for i, f in enumerate(self.files) if f.path == record.path), None)
        if position is None:
            files.append(record)
        else:
            files.insert(position, record)
        return replace(self, files=tuple(files))

    def to_json(self) -> str:
        data = {
            "schema": STATE_SCHEMA,
            "tool": "gpuop toolkit configure-runtime",
            "toolVersion": self.tool_version,
            "mode": self.mode,
            "config": self.config,
            "dropIn": self.drop_in,
            "runtimes": list(self.runtimes),
            "files": [f.to_dict() for f in self.files],
            "createdDirs": list(self.created_dirs),
            "changes": [c.to_dict() for c in self.changes],
        }
        return json.dumps(data, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, path: str) -> StateRecord:
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            if data.get("schema") != STATE_SCHEMA:
                raise ValueError(f"unknown schema {data.get('schema')!r}")
            mode = data["mode"]
            if mode not in MODES:
                raise ValueError(f"unknown mode {mode!r}")
            return cls(
                mode=mode,
                config=str(data["config"]),
                drop_in=_opt_str(data.get("dropIn")),
                files=tuple(FileRecord.from_dict(f) for f in data["files"]),
                changes=tuple(Change.from_dict(c) for c in data["changes"]),
                created_dirs=tuple(str(d) for d in data.get("createdDirs", [])),
                runtimes=tuple(str(r) for r in data.get("runtimes", [])),
                tool_version=str(data.get("toolVersion", "")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise StateError(
                f"cannot use the gpuop state record {path}: {exc}; "
                "move it away to let gpuop treat the config as never configured by it"
            ) from exc


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
