"""Register the NVIDIA runtime with containerd on one host root, or take it away again.

Why this module exists: it is the one entry point the CLI and the simulator call
(`configure_runtime`; `revert_runtime`, in `toolkit.reverting`, undoes it). It reads the files under the host root, asks
`containerd` for the edits, lets `tomledit` apply them without disturbing anything else, and only
then writes, through `hostfs.commit`, all or nothing. The order of work is what makes it safe:

1. everything is read, parsed and planned in memory; any error stops here, nothing written;
2. an unchanged plan writes nothing at all (configure twice, and the second run is a no-op);
3. a dry run stops after planning and returns the unified diff;
4. otherwise the backup of each original (once), the state record, and the files are
   committed together.

Two modes, as the upstream toolkit has:

* ``drop-in`` (default): write `/etc/containerd/conf.d/99-nvidia.toml` and add it to the
  `imports` of the main config; the main config gains one array entry and nothing else;
* ``in-place``: edit the main config itself.

Paths written into configuration files are host paths; the host root only says where on this
machine those files live.
"""

from __future__ import annotations

import os
import posixpath
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpuop import __version__
from gpuop.toolkit import containerd, imports
from gpuop.toolkit.diffs import unified_diff
from gpuop.toolkit.errors import (
    ConfigParseError,
    ConfigPathError,
    ConfigShapeError,
    StateError,
    parse_error,
)
from gpuop.toolkit.hostfs import FileWrite, HostPath, HostRoot, commit, sha256
from gpuop.toolkit.options import (
    DEFAULT_CONFIG,
    RuntimeOptions,
    check_not_the_default_runtime,
    check_options,
)
from gpuop.toolkit.results import (
    Change,
    FileAction,
    FileOutcome,
    Mode,
    Operation,
    RuntimeHandler,
    RuntimeResult,
)
from gpuop.toolkit.state import (
    BACKUP_SUFFIX,
    DROP_IN_MARKER,
    STATE_SUFFIX,
    FileRecord,
    StateRecord,
)
from gpuop.toolkit.tomledit import (
    AppendItem,
    Edit,
    EditError,
    LayoutError,
    SetValue,
    apply_to_data,
    dotted,
    dump,
    edit_text,
    lookup,
    parse,
)

RESTART_HINT = (
    "containerd reads its configuration at start: restart it (systemctl restart containerd)"
)


@dataclass(frozen=True, slots=True)
class Paths:
    root: HostRoot
    config: HostPath
    state: HostPath
    drop_in: HostPath


@dataclass(slots=True)
class Planned:
    path: HostPath
    before: bytes | None
    after: bytes | None
    like: HostPath | None = None
    action: FileAction | None = None
    backup: str | None = None
    diff: bool = True

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def outcome(self) -> FileOutcome:
        if not self.changed:
            action: FileAction = "unchanged"
        elif self.action is not None:
            action = self.action
        elif self.before is None:
            action = "created"
        elif self.after is None:
            action = "deleted"
        else:
            action = "modified"
        return FileOutcome(
            path=self.path.host,
            action=action,
            sha256_before=sha256(self.before),
            sha256_after=sha256(self.after),
            backup=self.backup,
            diff=unified_diff(self.path.host, self.before, self.after) if self.diff else "",
        )


@dataclass(slots=True)
class Work:
    planned: list[Planned] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def result(
        self,
        operation: Operation,
        paths: Paths,
        mode: Mode,
        dry_run: bool,
        *,
        config_version: int | None = None,
        runtimes: tuple[RuntimeHandler, ...] = (),
        state_file: str | None = None,
        notes: tuple[str, ...] = (),
    ) -> RuntimeResult:
        """The account of this work under `paths`: each planned file, each change, each warning."""
        return RuntimeResult(
            operation=operation,
            root=str(paths.root.root),
            config=paths.config.host,
            mode=mode,
            dry_run=dry_run,
            config_version=config_version,
            runtimes=runtimes,
            files=tuple(p.outcome() for p in self.planned),
            changes=tuple(self.changes),
            warnings=tuple(self.warnings),
            state_file=state_file,
            notes=notes,
        )


# ----------------------------------------------------------------------------------------------
# configure


def configure_runtime(
    root: str | os.PathLike[str] = "/",
    options: RuntimeOptions | None = None,
    *,
    dry_run: bool = False,
) -> RuntimeResult:
    """Register the NVIDIA runtime handlers in the containerd config under `root`.

    Returns what was (or, with `dry_run`, would be) changed. Raises a `ToolkitError` subclass,
    with nothing on disk changed, when the config cannot be edited safely.
    """
    options = options or RuntimeOptions()
    check_options(options)
    handlers = options.handlers()
    paths = host_paths(root, options)
    state = load_state(paths)
    if state is not None and state.mode != options.mode:
        raise StateError(
            f"{paths.config.host} was configured by gpuop in {state.mode} mode "
            f"(see {paths.state.host}); revert that first with --revert --mode {state.mode}"
        )

    before = paths.root.read(paths.config)
    if before is None and options.config != DEFAULT_CONFIG and not options.create_config:
        raise ConfigPathError(
            f"{paths.config.host} does not exist; containerd reads {DEFAULT_CONFIG} unless"
            " started with --config, so a new file here is likely never read (a typo?);"
            " pass --create-config to create it; nothing was changed"
        )
    text = decode_text(before, paths.config)
    data = parse_toml(text, paths.config.host)
    found_version = containerd.config_version(data, paths.config.host)
    version = found_version if found_version is not None else options.new_config_version
    containerd.check_shape(data, version, paths.config.host)
    check_not_the_default_runtime(data, version, handlers, options, paths.config.host)
    loaded = imports.load_order(paths.root, paths.config, data)

    work = Work()
    config_edits: list[Edit] = []
    config_changes: list[Change] = []
    if found_version is None:
        config_edits.append(SetValue(("version",), version))
        config_changes.append(Change(paths.config.host, "added", ("version",), version))

    def plan(target: Mapping[str, Any], file: str) -> containerd.RuntimePlan:
        return containerd.plan_runtimes(
            target,
            file=file,
            version=version,
            handlers=handlers,
            set_as_default=options.set_as_default,
            enable_cdi=options.enable_cdi,
            runtime_type=options.runtime_type,
        )

    if options.enable_cdi and version >= 4:
        work.notes.append(
            "containerd 2.4 and later (config version 4) always enable CDI; enable_cdi is not set"
        )
    if options.mode == "in-place":
        runtime_plan = plan(data, paths.config.host)
        config_edits += runtime_plan.edits
        config_changes += runtime_plan.changes
        work.warnings += _shadowing_in_place(loaded, version, paths)
    else:
        needed = _plan_drop_in(work, paths, data, version, loaded, state, plan)
        entry = paths.drop_in.host
        if options.import_style == "glob":
            entry = posixpath.dirname(entry) + "/*.toml"
        existing = data.get("imports")
        if needed and not imports.covers(existing or [], paths.config.host, paths.drop_in.host):
            if existing is None:
                config_edits.append(SetValue(("imports",), [entry]))
                config_changes.append(Change(paths.config.host, "added", ("imports",), [entry]))
            else:
                config_edits.append(AppendItem(("imports",), entry))
                config_changes.append(Change(paths.config.host, "appended", ("imports",), entry))

    after = apply_edits(text, config_edits, paths.config.host).encode() if config_edits else before
    work.planned.append(Planned(paths.config, before, after))
    work.changes += config_changes

    # Nothing is written when nothing changes (no record of a change is planned then either).
    changed = any(p.changed for p in work.planned)
    written = changed and not dry_run
    if written:
        commit(_configure_writes(paths, options, state, work.planned, work.changes), paths.root)
    return work.result(
        "configure",
        paths,
        options.mode,
        dry_run,
        config_version=version,
        runtimes=handlers,
        state_file=paths.state.host if written or state is not None else None,
        notes=(*work.notes, RESTART_HINT) if changed else tuple(work.notes),
    )


def _plan_drop_in(
    work: Work,
    paths: Paths,
    data: Mapping[str, Any],
    version: int,
    loaded: Sequence[imports.LoadedFile],
    state: StateRecord | None,
    plan: Callable[[Mapping[str, Any], str], containerd.RuntimePlan],
) -> bool:
    """Plan the drop-in file; False when it is not needed (see below)."""
    plugin = containerd.plugin_path(version)
    drop = paths.drop_in
    if drop.host == paths.config.host:
        raise ConfigPathError("the drop-in file and the main config must be different files")
    sections: list[tuple[str, Mapping[str, Any]]] = []
    for path, source in [(paths.config.host, data)] + [
        (f.path, f.data) for f in loaded if f.path != drop.host and f.data is not None
    ]:
        section = lookup(source, plugin)
        if isinstance(section, Mapping):
            sections.append((path, section))
    effective = containerd.merge_plugin_sections([s for _, s in sections], version)
    sources = [p for p, _ in sections]
    if version == 2 and sources:
        sources = sources[-1:]

    loaded_data: dict[str, Any] = {"version": version}
    if effective is not None:
        loaded_data["plugins"] = {plugin[1]: effective}
    runtime_plan = plan(loaded_data, drop.host)
    drop_before = paths.root.read(drop)
    owned = state is not None and state.file(drop.host) is not None
    if not runtime_plan.edits and not owned:
        # The files containerd loads already register every handler as asked (configured in
        # place earlier, by gpuop or by hand): a drop-in would only duplicate them.
        work.notes.append("already configured by the files containerd loads; no drop-in needed")
        return False
    # containerd 1.x lets the drop-in's CRI section replace the whole section, so it repeats
    # it; containerd 2.x merges key by key, so the drop-in holds only what is added.
    copied = version == 2 and effective is not None
    final = apply_to_data(loaded_data if copied else {"version": version}, runtime_plan.edits)
    body = dump(final, indented=True, literal_strings=version >= 3)
    text = _drop_in_header(sources if copied else []) + body

    if (
        drop_before is not None
        and not owned
        and not drop_before.startswith(DROP_IN_MARKER.encode())
    ):
        work.warnings.append(
            f"{drop.host} existed and was not written by gpuop; it is replaced, and its "
            "original is kept as a backup that --revert restores"
        )
    like = paths.config if paths.root.exists(paths.config) else None
    work.planned.append(Planned(drop, drop_before, text.encode(), like=like))
    if drop_before != text.encode():
        if copied:
            work.changes.append(
                Change(drop.host, "copied", plugin, note=f"copied from {', '.join(sources)}")
            )
        work.changes += runtime_plan.changes

    later = _loaded_after(loaded, drop.host)
    for f in later:
        if f.data is not None and isinstance(lookup(f.data, plugin), Mapping):
            work.warnings.append(
                f"{f.path} is loaded after {drop.host} and also defines {dotted(plugin)}"
                + (
                    "; containerd 1.x then uses that file's section and ignores the drop-in's"
                    if version == 2
                    else "; where keys overlap, that file wins"
                )
            )
    for f in loaded:
        if f.data is None:
            work.warnings.append(f"{f.path} is listed in imports but does not exist")
    return True


def _loaded_after(loaded: Sequence[imports.LoadedFile], drop: str) -> list[imports.LoadedFile]:
    paths = [f.path for f in loaded]
    if drop in paths:
        return list(loaded[paths.index(drop) + 1 :])
    directory = posixpath.dirname(drop)
    return [f for f in loaded if posixpath.dirname(f.path) == directory and f.path > drop]


def _drop_in_header(sources: Sequence[str]) -> str:
    lines = [
        f"{DROP_IN_MARKER} (gpuop toolkit configure-runtime); gpuop rewrites or removes this file.",
        "# It registers the NVIDIA container runtime handlers with containerd.",
    ]
    if sources:
        lines += [
            f"# It repeats the CRI runtime section of {', '.join(sources)},",
            "# because containerd 1.x lets the last file that defines a plugin section",
            "# replace it whole. Change those settings there, then run",
            "# `gpuop toolkit configure-runtime` again.",
        ]
    else:
        lines.append("# containerd merges it into the main configuration key by key.")
    return "\n".join(lines) + "\n"


def _shadowing_in_place(
    loaded: Sequence[imports.LoadedFile], version: int, paths: Paths
) -> list[str]:
    plugin = containerd.plugin_path(version)
    warnings = []
    for f in loaded:
        if f.data is None:
            warnings.append(f"{f.path} is listed in imports but does not exist")
        elif isinstance(lookup(f.data, plugin), Mapping):
            if version == 2:
                warnings.append(
                    f"{f.path} (imported) also defines {dotted(plugin)}; containerd 1.x then "
                    f"ignores that section of {paths.config.host}, so the handlers added there "
                    "have no effect: use --mode drop-in"
                )
            else:
                warnings.append(
                    f"{f.path} (imported) also sets keys of {dotted(plugin)}; where they overlap "
                    f"with {paths.config.host}, that file wins"
                )
    return warnings


def _configure_writes(
    paths: Paths,
    options: RuntimeOptions,
    state: StateRecord | None,
    planned: Sequence[Planned],
    changes: Sequence[Change],
) -> list[FileWrite]:
    new_state = state or StateRecord(
        mode=options.mode,
        config=paths.config.host,
        drop_in=paths.drop_in.host if options.mode == "drop-in" else None,
        files=(),
        changes=(),
    )
    backups: list[FileWrite] = []
    files: list[FileWrite] = []
    created_dirs = list(new_state.created_dirs)
    for item in planned:
        if not item.changed:
            continue
        assert item.after is not None
        record = new_state.file(item.path.host)
        if record is None:
            backup = None
            if item.before is not None:
                backup_path = _free_backup(paths.root, item.path)
                backups.append(FileWrite(backup_path, item.before, like=item.path))
                backup = backup_path.host
            record = FileRecord(
                path=item.path.host,
                existed=item.before is not None,
                original_sha256=sha256(item.before),
                written_sha256=sha256(item.after) or "",
                backup=backup,
            )
        else:
            record = replace(record, written_sha256=sha256(item.after) or "")
        item.backup = record.backup
        new_state = new_state.with_file(record)
        for directory in _missing_dirs(paths.root, item.path):
            if directory not in created_dirs:
                created_dirs.append(directory)
        files.append(FileWrite(item.path, item.after, like=item.like))
    names = list(new_state.runtimes)
    names += [h.name for h in options.handlers() if h.name not in names]
    # The drop-in is rewritten whole from the current options each time, so its records are
    # replaced; edits to the main config accumulate, and a revert undoes them all.
    rewritten = {paths.drop_in.host} if options.mode == "drop-in" else set()
    rewritten &= {item.path.host for item in planned if item.changed}
    kept = tuple(c for c in new_state.changes if c.file not in rewritten)
    new_state = replace(
        new_state,
        changes=kept + tuple(changes),
        created_dirs=tuple(created_dirs),
        runtimes=tuple(names),
        tool_version=__version__,
    )
    state_write = FileWrite(paths.state, new_state.to_json().encode(), default_mode=0o600)
    return [*backups, state_write, *files]


def _free_backup(root: HostRoot, path: HostPath) -> HostPath:
    candidate = root.path(path.host + BACKUP_SUFFIX)
    n = 1
    while root.exists(candidate):
        candidate = root.path(f"{path.host}{BACKUP_SUFFIX}.{n}")
        n += 1
    return candidate


def _missing_dirs(root: HostRoot, path: HostPath) -> list[str]:
    missing: list[str] = []
    directory = posixpath.dirname(path.host)
    while directory != "/" and not root.path(directory).real.exists():
        missing.append(directory)
        directory = posixpath.dirname(directory)
    return missing


# ----------------------------------------------------------------------------------------------
# revert


# ----------------------------------------------------------------------------------------------
# shared helpers


def host_paths(root: str | os.PathLike[str], options: RuntimeOptions) -> Paths:
    host = HostRoot(root)
    if not host.root.is_dir():
        raise ConfigPathError(f"host root {host.root} is not a directory")
    config = host.resolve(host.path(options.config))
    return Paths(
        root=host,
        config=config,
        state=host.path(config.host + STATE_SUFFIX),
        drop_in=host.path(options.drop_in),
    )


def load_state(paths: Paths) -> StateRecord | None:
    raw = paths.root.read(paths.state)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateError(
            f"cannot use the gpuop state record {paths.state.host}: not UTF-8"
        ) from exc
    return StateRecord.from_json(text, paths.state.host)


def decode_text(raw: bytes | None, path: HostPath) -> str:
    if raw is None:
        return ""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigParseError(
            path.host, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from exc


def parse_toml(text: str, path: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = parse(text).unwrap()
    except tomllib.TOMLDecodeError as exc:
        raise parse_error(path, exc) from exc
    except LayoutError as exc:
        raise ConfigShapeError(
            f"cannot edit {path} without rewriting it: the format-preserving TOML parser "
            f"cannot handle this arrangement of tables ({exc}); put each table's header "
            "before the headers of its sub-tables and try again; nothing was changed"
        ) from exc
    return data


def apply_edits(text: str, edits: Sequence[Edit], path: str) -> str:
    try:
        return edit_text(text, edits)
    except EditError as exc:
        raise ConfigShapeError(f"{path}: cannot edit safely: {exc}; nothing was changed") from exc
