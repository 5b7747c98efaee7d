"""The `gpuop` command line.

Each command group lives in its own module, imported only when that command runs: `gpuop
--help`, `--version` and one command's run stay quick because the checker, the ClusterPolicy
models and the Kubernetes client are not loaded for a command that does not use them. This
module lists the commands with their one-line summaries and turns expected failures into one
clear line and a non-zero exit code instead of a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NamedTuple

import click

from gpuop import __version__
from gpuop.cli import exits
from gpuop.cli.exits import exit_codes_help


class LazyCommand(NamedTuple):
    """Where a command is defined, and its summary for `gpuop --help`."""

    module: str
    attribute: str
    summary: str


# The summaries are the first sentence of each command's docstring; a unit test keeps them equal.
COMMANDS: dict[str, LazyCommand] = {
    "adopt": LazyCommand(
        "gpuop.cli.adopt",
        "adopt",
        "What taking over this cluster would change: which DaemonSets roll, which nodes.",
    ),
    "audit": LazyCommand(
        "gpuop.cli.audit",
        "audit",
        "What each operand may do on a host and through the API.",
    ),
    "check": LazyCommand(
        "gpuop.cli.check",
        "check",
        "Find GPU nodes whose labels, operands and advertised resources disagree.",
    ),
    "cluster": LazyCommand(
        "gpuop.cli.cluster",
        "cluster",
        "Run a real Kubernetes control plane on this machine, on 127.0.0.1 only.",
    ),
    "collect": LazyCommand(
        "gpuop.cli.check",
        "collect",
        "Save what `gpuop check` reads from a live cluster into a bundle directory.",
    ),
    "completion": LazyCommand(
        "gpuop.cli.completion",
        "completion",
        "Print the shell completion script for bash, zsh or fish.",
    ),
    "explain": LazyCommand(
        "gpuop.cli.explain",
        "explain",
        "Why is it Pending? Replay kube-scheduler's filters for a Pod, VMI or VM.",
    ),
    "kubevirt": LazyCommand(
        "gpuop.cli.kubevirt",
        "kubevirt",
        "Wire KubeVirt to the GPU resources the nodes advertise.",
    ),
    "lab": LazyCommand(
        "gpuop.cli.lab",
        "lab",
        "Run the three-node lab on a local cluster and write a report.",
    ),
    "names": LazyCommand(
        "gpuop.cli.names",
        "names",
        "Extended-resource names, exactly as the device plugins make them.",
    ),
    "operands": LazyCommand(
        "gpuop.cli.operands",
        "operands",
        "Show every operand gpuop deploys: its DaemonSet, what switches it on, and where it runs.",
    ),
    "operator": LazyCommand(
        "gpuop.cli.operator",
        "operator",
        "Run the operator (in a cluster, or from here with a kubeconfig).",
    ),
    "plan": LazyCommand(
        "gpuop.cli.plan",
        "plan",
        "What a node would run and advertise under a ClusterPolicy or GPUCluster, and why.",
    ),
    "policy": LazyCommand(
        "gpuop.cli.policy",
        "policy",
        "The ClusterPolicy (nvidia.com/v1) and GPUCluster (v1alpha1): CRDs, checks, defaults.",
    ),
    "render": LazyCommand(
        "gpuop.cli.render",
        "render",
        "Every object the operator would create for a ClusterPolicy or GPUCluster, offline.",
    ),
    "sim": LazyCommand(
        "gpuop.cli.sim",
        "sim",
        "Simulated GPU servers: kwok nodes that behave like GPU nodes under the operator.",
    ),
    "toolkit": LazyCommand(
        "gpuop.cli.toolkit",
        "toolkit",
        "What the NVIDIA container toolkit changes on a GPU node, done reviewably.",
    ),
    "upgrade": LazyCommand(
        "gpuop.cli.versions",
        "upgrade",
        "What an operator or ClusterPolicy change will move, before it happens.",
    ),
    "versions": LazyCommand(
        "gpuop.cli.versions",
        "versions",
        "The cluster against the GPU Operator version matrix.",
    ),
}


class FittingHelpFormatter(click.HelpFormatter):
    """click's help, with the blocks it must not rewrap (examples, tables) fitted too.

    click wraps prose to the terminal but leaves `\\b` blocks as written; a long line there
    is wrapped with its hanging indent instead, so every `--help` fits 80 columns.
    """

    def getvalue(self) -> str:
        from gpuop.cli.common import text_width
        from gpuop.cli.layout import fit_lines

        return fit_lines(super().getvalue(), min((self.width or 78) + 2, text_width("text")))


# Every command's context (not only this module's group) makes its help with this formatter.
click.Context.formatter_class = FittingHelpFormatter


def _file_items(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Let the shell complete a file name (its own completion: paths, `~`, directories)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]


# What a parameter that reads files says in its metavar (`FILE`, `FILE|-`, `[FILES]...`).
_FILE_METAVARS = ("FILE", "DIR", "MANIFEST")


def _complete_files(command: click.Command) -> None:
    """Give every parameter of `command` (and its subcommands) that takes a file the shell's
    file completion: the ones whose metavar names a file and that complete nothing else."""
    for param in command.params:
        metavar = param.metavar or ""
        if (
            any(word in metavar for word in _FILE_METAVARS)
            and getattr(param, "_custom_shell_complete", None) is None
            and not isinstance(param.type, click.Choice)
        ):
            param._custom_shell_complete = _file_items
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _complete_files(sub)


class LazyGroup(click.Group):
    """A group whose commands are imported from `COMMANDS` the first time they are asked for.

    Commands added with `add_command` (or put in `commands`) take precedence, so a test can
    still swap one in.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        command = getattr(importlib.import_module(entry.module), entry.attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{entry.module}.{entry.attribute} is not a click command")
        _complete_files(command)
        self.commands[cmd_name] = command
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list as click writes it, from the table for commands not yet loaded."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows: list[tuple[str, str]] = []
        for name in names:
            # A stand-in carrying the summary shortens it exactly as the real command would.
            command = self.commands.get(name) or click.Command(name, help=COMMANDS[name].summary)
            if not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _no_color(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """`gpuop --no-color CMD`: no colour from any command (as NO_COLOR=1 does)."""
    if value:
        os.environ["NO_COLOR"] = "1"


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=exit_codes_help(),
)
@click.version_option(__version__, prog_name="gpuop")
@click.option(
    "--no-color",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_no_color,
    help="No colour in any output (the same as NO_COLOR=1; colour is off in pipes anyway).",
)
def cli() -> None:
    """gpuop: run GPU nodes from one ClusterPolicy, and see why they do what they do.

    \b
    Start here:
      gpuop lab                 run the whole three-node lab on a local cluster
      gpuop cluster up          start a local control plane (etcd, apiserver, scheduler, kwok)
      gpuop plan --gpu A10 --count 2 --workload vm-vgpu
                                what would a node run and advertise?
      gpuop operands            the operand table, per workload config
      gpuop check --live        what disagrees on the cluster kubectl points at

    Every --live command reads the cluster kubectl would: --kubeconfig, else $KUBECONFIG,
    else ~/.kube/config; --context picks the context. Colour is off in pipes, with
    NO_COLOR set, or with --no-color. Shell completion: gpuop completion bash|zsh|fish.
    """


def _closed_pipe() -> int:
    """End quietly on a closed stdout: later writes (the interpreter's last flush) go nowhere."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return exits.CLOSED_PIPE


def _one_line(message: str) -> str:
    """An error on one line (YAML parser messages span several), printable in UTF-8."""
    return " ".join(message.split()).encode("utf-8", "backslashreplace").decode("utf-8")


def error_line(message: str) -> None:
    """The `error: ...` line a failed command ends with."""
    click.echo(f"error: {_one_line(message)}", err=True)


def exit_status(exc: BaseException) -> int:
    """Say what ended a command (one line on stderr) and the exit status it ends with.

    The one place that maps errors to exit codes (the table in `gpuop.cli.common`):
    2 for what the user can fix, 3 for a gpuop bug (GPUOP_TRACEBACK=1 raises it instead,
    with its traceback), 130 for an interrupt. A :class:`SystemExit` keeps its code.
    """
    from gpuop.cli.common import UserError

    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    if isinstance(exc, BrokenPipeError):
        return _closed_pipe()
    if isinstance(exc, click.exceptions.Exit):
        return exc.exit_code
    if isinstance(exc, click.Abort):
        click.echo("aborted", err=True)
        return exits.INTERRUPTED
    if isinstance(exc, click.ClickException):
        exc.show()
        return exits.INPUT if exc.exit_code == 1 else exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        click.echo("interrupted", err=True)
        return exits.INTERRUPTED
    if isinstance(exc, UserError):
        error_line(str(exc))
        return exc.exit_code
    if isinstance(exc, RecursionError):
        error_line("the input is nested too deeply to read")
        return exits.INPUT
    if isinstance(exc, ValueError):
        # The input readers turn ManifestError into UserError; this is the backstop for any
        # path they miss (imported here: `gpuop --help` loads no YAML reader).
        from gpuop.manifests import ManifestError

        if isinstance(exc, ManifestError):
            error_line(str(exc))
            return exits.INPUT
    if os.environ.get("GPUOP_TRACEBACK") or not isinstance(exc, Exception):
        raise exc
    error_line(f"internal error (a gpuop bug): {type(exc).__name__}: {exc}")
    return exits.INTERNAL


def main() -> None:
    # A lone surrogate from a JSON escape ("\\ud800" in a name) must print, not crash.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    stdout = sys.stdout
    from gpuop.cli.common import notes_at_exit

    notes_at_exit()  # none left from an earlier run in this process
    try:
        try:
            result = cli(standalone_mode=False)
        finally:
            stdout.flush()  # here, where a closed pipe is caught, not at the exit
    except SystemExit as stop:
        # click ends a command whose stdout closed with exit 1, its streams swapped for
        # ones that swallow the error; that is a closed pipe, not a failure.
        if sys.stdout is not stdout or _stdout_closed(stdout):
            sys.stdout = stdout
            sys.exit(_closed_pipe())
        _print_notes(stop.code in (None, 0, 1))
        raise stop
    except BaseException as exc:
        status = exit_status(exc)
        _print_notes(status in (0, 1))
        sys.exit(status)
    _print_notes(not isinstance(result, int) or result in (0, 1))
    if isinstance(result, int) and result:
        sys.exit(result)


def _print_notes(ended_well: bool) -> None:
    """The notes kept for the end (what the input held that was not read), when the
    command ended well; after bad input its error line stands alone."""
    from gpuop.cli.common import notes_at_exit

    for line in notes_at_exit():
        if ended_well:
            click.echo(line, err=True)


def _stdout_closed(stdout: Any) -> bool:
    """Whether stdout's reader is gone (a flush fails with a broken pipe)."""
    try:
        stdout.flush()
    except BrokenPipeError:
        return True
    except (OSError, ValueError):
        return False
    return False
