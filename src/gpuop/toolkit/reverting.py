"""Take the NVIDIA runtime away from containerd again: `revert_runtime`.

With the state record `configure_runtime` wrote, every change is inverted exactly (the
main config's `imports` entry, the drop-in, an in-place edit), restoring the bytes that
were there; without it (`by_name`), the nvidia runtime handlers are removed by name and
nothing else is touched. The same order of work as configuring: read, plan in memory,
then commit all or nothing.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpuop.toolkit import containerd
from gpuop.toolkit.configuring import (
    RESTART_HINT,
    Paths,
    Planned,
    Work,
    apply_edits,
    decode_text,
    host_paths,
    load_state,
    parse_toml,
)
from gpuop.toolkit.hostfs import FileWrite, commit, remove_empty_dirs, sha256
from gpuop.toolkit.options import RuntimeOptions, check_options
from gpuop.toolkit.results import (
    Change,
    RuntimeResult,
)
from gpuop.toolkit.state import (
    DROP_IN_MARKER,
)
from gpuop.toolkit.tomledit import (
    DeleteKey,
    Edit,
    RemoveItem,
    SetValue,
    apply_to_data,
    lookup,
)


def has_state_record(root: str, options: RuntimeOptions | None = None) -> bool:
    """Whether gpuop configured the host under `root` (and so has something to revert)."""
    options = options or RuntimeOptions()
    check_options(options)
    paths = host_paths(root, options)
    return paths.root.read(paths.state) is not None


def revert_runtime(
    root: str | os.PathLike[str] = "/",
    options: RuntimeOptions | None = None,
    *,
    dry_run: bool = False,
    by_name: bool = False,
) -> RuntimeResult:
    """Undo what `configure_runtime` did under `root`, using its state record.

    A file unchanged since gpuop wrote it gets its original bytes back (or is removed, when
    gpuop created it); a file edited since loses only the keys gpuop added, and keys gpuop
    changed get their previous values back when nobody changed them again.

    Without a state record gpuop added nothing, so nothing is reverted: the result only says
    which NVIDIA handlers are present. With `by_name` (for hosts configured by the upstream
    toolkit), handlers whose binary is an `nvidia-container-runtime` are removed by name, as
    upstream does, together with gpuop's own drop-in and its import; the result says what was
    left alone.
    """
    options = options or RuntimeOptions()
    check_options(options)
    paths = host_paths(root, options)
    state = load_state(paths)
    if state is None:
        return _revert_without_state(paths, options, dry_run, by_name=by_name)

    work = Work()
    for record in reversed(state.files):
        path = paths.root.path(record.path)
        current = paths.root.read(path)
        if current is None:
            if record.existed:
                work.warnings.append(f"{record.path} no longer exists; left absent")
            continue
        file_changes = [c for c in state.changes if c.file == record.path]
        if sha256(current) == record.written_sha256:
            if not record.existed:
                work.planned.append(Planned(path, current, None))
                continue
            original = paths.root.read(paths.root.path(record.backup)) if record.backup else None
            if original is not None and sha256(original) == record.original_sha256:
                work.planned.append(Planned(path, current, original, action="restored"))
                work.changes += _inverse_records(file_changes)
                continue
            work.warnings.append(
                f"the backup of {record.path} is missing or changed; removing gpuop's keys instead"
            )
        elif not record.existed and record.path == state.drop_in:
            work.warnings.append(
                f"{record.path} was edited after gpuop wrote it; removed anyway, gpuop owns it"
            )
            work.planned.append(Planned(path, current, None))
            continue
        else:
            work.warnings.append(
                f"{record.path} was edited after gpuop wrote it; removing only gpuop's keys"
            )
        text = decode_text(current, path)
        now = parse_toml(text, record.path)
        edits, records, skipped = _inverse(file_changes, now)
        work.warnings += skipped
        work.changes += records
        after = apply_edits(text, edits, record.path).encode()
        work.planned.append(Planned(path, current, after))

    for record in state.files:
        if record.backup and paths.root.exists(paths.root.path(record.backup)):
            backup = paths.root.path(record.backup)
            work.planned.append(
                Planned(backup, paths.root.read(backup), None, action="deleted", diff=False)
            )
    work.planned.append(
        Planned(paths.state, paths.root.read(paths.state), None, action="deleted", diff=False)
    )
    result = work.result(
        "revert", paths, state.mode, dry_run, state_file=paths.state.host, notes=(RESTART_HINT,)
    )
    if dry_run:
        return result
    commit([FileWrite(p.path, p.after) for p in work.planned if p.changed], paths.root)
    remove_empty_dirs(paths.root, state.created_dirs)
    return result


def _inverse(
    changes: Sequence[Change], data: Mapping[str, Any]
) -> tuple[list[Edit], list[Change], list[str]]:
    edits: list[Edit] = []
    records: list[Change] = []
    skipped: list[str] = []
    now: dict[str, Any] = dict(data)

    def add(edit: Edit) -> None:
        nonlocal now
        edits.append(edit)
        now = apply_to_data(now, [edit])

    for change in reversed(changes):
        current = lookup(now, change.key)
        if change.kind == "added":
            if isinstance(change.value, list) and isinstance(current, list):
                for element in change.value:
                    add(RemoveItem(change.key, element))
                add(DeleteKey(change.key, only_if_empty=True))
                records.append(replace(change, kind="removed"))
            elif current is not None:
                add(DeleteKey(change.key))
                records.append(replace(change, kind="removed", value=current))
            for parent in change.created_parents:
                add(DeleteKey(parent, only_if_empty=True))
        elif change.kind == "changed":
            if current == change.value:
                add(SetValue(change.key, change.previous))
                records.append(replace(change, kind="restored"))
            elif current is not None:
                skipped.append(
                    f"{change.file}: {change.key_text} was changed again after gpuop set it; "
                    "left as it is"
                )
        elif change.kind == "appended" and isinstance(current, list) and change.value in current:
            add(RemoveItem(change.key, change.value))
            records.append(replace(change, kind="removed"))
    return edits, records, skipped


def _inverse_records(changes: Sequence[Change]) -> list[Change]:
    out: list[Change] = []
    for change in reversed(changes):
        if change.kind in ("added", "appended"):
            out.append(replace(change, kind="removed"))
        elif change.kind == "changed":
            out.append(replace(change, kind="restored"))
    return out


def _revert_without_state(
    paths: Paths, options: RuntimeOptions, dry_run: bool, *, by_name: bool
) -> RuntimeResult:
    work = Work()
    if by_name:
        work.warnings.append(
            f"no gpuop state record ({paths.state.host}); removing NVIDIA runtime handlers by "
            "name as the upstream toolkit does (enable_cdi and import globs are left as they are)"
        )
    names = {h.name for h in options.handlers()} | {"nvidia", "nvidia-cdi", "nvidia-legacy"}
    before = paths.root.read(paths.config)
    version: int | None = None
    if before is not None:
        text = decode_text(before, paths.config)
        data = parse_toml(text, paths.config.host)
        version = containerd.config_version(data, paths.config.host)
        edits: list[Edit] = []
        if version is not None:
            containerd.check_shape(data, version, paths.config.host)
            edits, records = _remove_handlers(data, version, names, paths.config.host)
            if not by_name:
                if records:
                    present = ", ".join(c.key[-1] for c in records if c.key[-1] in names)
                    work.notes.append(
                        f"no gpuop state record ({paths.state.host}): gpuop did not configure "
                        f"this config, so nothing is reverted. NVIDIA handlers present: {present}; "
                        "add --by-name to remove them as the upstream toolkit does"
                    )
                edits, records = [], []
            work.changes += records
            entries = data.get("imports") or []
            if by_name and options.mode == "drop-in" and paths.drop_in.host in entries:
                edits.append(RemoveItem(("imports",), paths.drop_in.host))
                work.changes.append(
                    Change(paths.config.host, "removed", ("imports",), paths.drop_in.host)
                )
        after = apply_edits(text, edits, paths.config.host).encode() if edits else before
        work.planned.append(Planned(paths.config, before, after))
    drop_before = paths.root.read(paths.drop_in)
    if drop_before is not None and by_name:
        if drop_before.startswith(DROP_IN_MARKER.encode()):
            work.planned.append(Planned(paths.drop_in, drop_before, None))
        else:
            work.warnings.append(f"{paths.drop_in.host} was not written by gpuop; left as it is")
    result = work.result(
        "revert",
        paths,
        options.mode,
        dry_run,
        config_version=version,
        notes=tuple(work.notes) + ((RESTART_HINT,) if any(p.changed for p in work.planned) else ()),
    )
    if dry_run or not result.changed:
        return result
    commit([FileWrite(p.path, p.after) for p in work.planned if p.changed], paths.root)
    return result


def _remove_handlers(
    data: Mapping[str, Any], version: int, names: set[str], file: str
) -> tuple[list[Edit], list[Change]]:
    edits: list[Edit] = []
    records: list[Change] = []
    base = containerd.runtimes_path(version)
    runtimes = lookup(data, base) or {}
    for name in sorted(names):
        runtime = runtimes.get(name)
        binary = (
            lookup(runtime, ("options", "BinaryName")) if isinstance(runtime, Mapping) else None
        )
        if isinstance(binary, str) and posixpath.basename(binary).startswith(
            "nvidia-container-runtime"
        ):
            edits.append(DeleteKey((*base, name)))
            records.append(Change(file, "removed", (*base, name), runtime))
    default_key = (*containerd.plugin_path(version), "containerd", "default_runtime_name")
    default = lookup(data, default_key)
    if default in names and edits:
        edits.append(DeleteKey(default_key))
        records.append(Change(file, "removed", default_key, default))
    return edits, records
