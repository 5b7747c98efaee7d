"""The `gpuop toolkit` commands: the container toolkit's change to a node, done in the open.

Thin shell over `gpuop.toolkit`: parse options, call `configure_runtime` or `revert_runtime`,
print the result as text (with the diff on a dry run) or JSON. Library errors become one line
on standard error and exit code 2.
"""

from __future__ import annotations

import sys

import click

from gpuop.cli.common import UserError
from gpuop.cli.options import output_option
from gpuop.toolkit import (
    DEFAULT_CONFIG,
    DEFAULT_DROP_IN,
    RuntimeOptions,
    ToolkitError,
    configure_runtime,
    revert_runtime,
)


@click.group()
def toolkit() -> None:
    """What the NVIDIA container toolkit changes on a GPU node, done reviewably.

    The toolkit's lasting change to a host is the nvidia runtime handler in containerd's
    configuration. configure-runtime makes it (or --revert undoes it) so that it can be
    reviewed first (--dry-run), repeated safely, and audited afterwards (-o json, and the
    state record it keeps next to the config).
    """


@toolkit.command(
    "configure-runtime",
    short_help="Register the nvidia runtime handler with containerd (or --revert it).",
)
@click.option(
    "--root",
    default="/",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Host root: the directory that stands for / of the node (a node's filesystem "
    "mounted elsewhere, or a simulator's per-node directory).",
)
@click.option(
    "--config",
    default=DEFAULT_CONFIG,
    show_default=True,
    help="containerd's main config, as a path on the host (it is looked up under --root).",
)
@click.option(
    "--create-config",
    is_flag=True,
    help="Create --config when it does not exist. Needed only for a path other than "
    f"{DEFAULT_CONFIG}: containerd reads no other file unless started with --config.",
)
@click.option(
    "--mode",
    type=click.Choice(["drop-in", "in-place"]),
    default="drop-in",
    show_default=True,
    help="drop-in: write --drop-in and add it to 'imports' of the main config. "
    "in-place: edit the main config itself.",
)
@click.option(
    "--runtime-class",
    default="nvidia",
    show_default=True,
    help="Name of the runtime handler (what a RuntimeClass's 'handler' refers to). The name "
    "of containerd's default runtime (runc) is refused unless --set-as-default is given.",
)
@click.option(
    "--with-cdi-runtimes",
    is_flag=True,
    help="Also register nvidia-cdi and nvidia-legacy (the GPU operator does, with CDI on).",
)
@click.option(
    "--set-as-default",
    is_flag=True,
    help="Make the handler containerd's default runtime (default_runtime_name), so every "
    "pod gets it. The GPU operator does not do this when CDI is on.",
)
@click.option(
    "--enable-cdi",
    is_flag=True,
    help="Set enable_cdi = true in the CRI plugin (containerd 1.7 to 2.3; 1.6 ignores it, "
    "2.4 and later always enable CDI).",
)
@click.option(
    "--install-dir",
    default="/usr/local/nvidia",
    show_default=True,
    help="Where the toolkit is installed on the host; the handlers run "
    "<install-dir>/toolkit/nvidia-container-runtime[.cdi|.legacy].",
)
@click.option(
    "--drop-in",
    "drop_in",
    default=DEFAULT_DROP_IN,
    show_default=True,
    help="Drop-in file written in drop-in mode (host path).",
)
@click.option(
    "--import",
    "import_style",
    type=click.Choice(["file", "glob"]),
    default="file",
    show_default=True,
    help="How the main config imports the drop-in: the file itself, or '<dir>/*.toml' as "
    "the upstream toolkit does (which also loads every other .toml file there; the "
    "drop-in must then end in .toml).",
)
@click.option("--dry-run", is_flag=True, help="Print the unified diff; write nothing.")
@click.option(
    "--revert",
    is_flag=True,
    help="Undo an earlier configure-runtime: restore the original bytes when nothing else "
    "changed the file since, else remove only what gpuop added.",
)
@click.option(
    "--by-name",
    is_flag=True,
    help="With --revert on a config gpuop has no record for (configured by the upstream "
    "toolkit): remove handlers that run nvidia-container-runtime by name, as upstream does.",
)
@output_option("text", "json")
def configure_runtime_command(
    root: str,
    config: str,
    create_config: bool,
    mode: str,
    runtime_class: str,
    with_cdi_runtimes: bool,
    set_as_default: bool,
    enable_cdi: bool,
    install_dir: str,
    drop_in: str,
    import_style: str,
    dry_run: bool,
    revert: bool,
    by_name: bool,
    output: str,
) -> None:
    """Register the nvidia runtime handler in containerd's configuration.

    Adds runtime handler NAME (default nvidia) with runtime_type io.containerd.runc.v2 and
    options.BinaryName <install-dir>/toolkit/nvidia-container-runtime, copying the other
    options (SystemdCgroup, ...) from the runtime the node already uses. Supports containerd
    config versions 2 (containerd 1.x), 3 (2.0 to 2.3) and 4 (2.4 and later).

    Every other byte of the config is kept. Running it twice changes nothing the second time.
    Files are replaced atomically; the first change keeps a backup (<file>.gpuop-backup) and
    a record of what was done (<config>.gpuop-state.json), which --revert uses. containerd
    picks the change up when it restarts; this command does not restart it.

    \b
    Examples:
      # see what would change on this node, then do it
      gpuop toolkit configure-runtime --with-cdi-runtimes --enable-cdi --dry-run
      gpuop toolkit configure-runtime --with-cdi-runtimes --enable-cdi
      systemctl restart containerd
    \b
      # a node's filesystem mounted at /mnt/node1, edited in place, as JSON
      gpuop toolkit configure-runtime --root /mnt/node1 --mode in-place -o json
    \b
      # undo it
      gpuop toolkit configure-runtime --revert
    """
    options = RuntimeOptions(
        config=config,
        mode="in-place" if mode == "in-place" else "drop-in",
        runtime_class=runtime_class,
        with_cdi_runtimes=with_cdi_runtimes,
        set_as_default=set_as_default,
        enable_cdi=enable_cdi,
        install_dir=install_dir,
        drop_in=drop_in,
        import_style="glob" if import_style == "glob" else "file",
        create_config=create_config,
    )
    if by_name and not revert:
        raise UserError("--by-name only applies to --revert")
    try:
        if revert:
            result = revert_runtime(root, options, dry_run=dry_run, by_name=by_name)
        else:
            result = configure_runtime(root, options, dry_run=dry_run)
    except ToolkitError as exc:
        raise UserError(_one_line(str(exc))) from exc
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise UserError(f"{where}{exc.strerror or exc}; nothing was changed") from exc
    if output == "json":
        sys.stdout.write(result.to_json())
        return
    if dry_run:
        sys.stdout.write(result.diff())
    sys.stdout.write(result.render_text())


def _one_line(message: str) -> str:
    return " ".join(message.split())
