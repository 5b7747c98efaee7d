"""How the commands that read objects run: one-line errors, `--cluster A B`, live reads.

Why this module exists: `gpuop explain` and the `gpuop kubevirt` commands read the same
inputs the same way (files, bundle directories, stdin, or the cluster kubectl would read),
turn every failure into one `error:` line with the documented exit status, and take the
older `--cluster A B` form; keeping that here means no command imports another.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

import click

from gpuop.cli.common import UserError
from gpuop.cli.inputs import read_objects
from gpuop.cli.live import LiveTarget, live_target

T = TypeVar("T")


def printable(message: str) -> str:
    """`message` with anything UTF-8 cannot encode (lone surrogates from JSON) escaped."""
    return message.encode("utf-8", "backslashreplace").decode("utf-8")


def finish(code: int) -> NoReturn:
    """End the command with `code`.

    `SystemExit`, not `click.exceptions.Exit`: click's non-standalone mode (which
    `gpuop.cli.main` uses) turns an `Exit` into a return value and the status is lost.
    """
    sys.stdout.flush()
    sys.exit(code)


def guarded(
    body: Callable[[], int],
    input_errors: tuple[type[Exception], ...] = (),
    *,
    reads_whole_dumps: bool = False,
) -> int:
    """Run a command's body, ending it as `gpuop.cli.main` would when it fails.

    `gpuop.cli.exit_status` maps the error (a command run on its own, as the tests and
    click's runner do, ends the same way as under `main`); `input_errors` are a domain's
    errors that are bad input (exit status 2), such as a version that cannot be read.
    `reads_whole_dumps`: the body reads a dump once and drops it at exit, so the cyclic
    collector is off while it runs (it would only rescan the millions of objects a
    fleet's dump holds: a third of a 10,000-node check).
    """
    from gpuop.cli import exit_status

    if reads_whole_dumps:
        gc.disable()
    try:
        return body()
    except (click.exceptions.Exit, SystemExit):
        raise
    except input_errors as exc:
        sys.exit(exit_status(UserError(str(exc))))
    except Exception as exc:
        sys.exit(exit_status(exc))
    finally:
        if reads_whole_dumps:
            gc.enable()


def spread_greedy(args: Sequence[str], option: str) -> list[str]:
    """Let `option` take several values: `--cluster a b -o json` -> `--cluster a --cluster b ...`.

    Every argument after the option's first value that does not start with `-` (or is
    exactly `-`) is another value, up to the next option or `--`.
    """
    out: list[str] = []
    greedy = False
    expecting = False
    items = list(args)
    for index, arg in enumerate(items):
        if expecting:
            out.append(arg)
            expecting, greedy = False, True
            continue
        if arg == "--":
            out.extend(items[index:])
            return out
        if greedy and (arg == "-" or not arg.startswith("-")):
            out.extend([option, arg])
            continue
        greedy = False
        out.append(arg)
        if arg == option:
            expecting = True
        elif arg.startswith(option + "="):
            greedy = True
    return out


def _takes_value(command: click.Command) -> dict[str, bool]:
    """Each option name of `command` and whether it takes a value."""
    names: dict[str, bool] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                names[name] = not (param.is_flag or param.count)
    return names


def positional_before(args: Sequence[str], option: str, takes_value: Mapping[str, bool]) -> bool:
    """Whether a positional argument comes before the first `option` in `args`."""
    expecting = False
    for arg in args:
        if expecting:
            expecting = False
            continue
        if arg == option or arg.startswith(option + "=") or arg == "--":
            return False
        if arg == "-" or not arg.startswith("-"):
            return True
        expecting = "=" not in arg and takes_value.get(arg, False)
    return False


class GreedyClusterCommand(click.Command):
    """A command whose `--cluster FILE` is repeatable and takes `A,B`.

    The older `--cluster A B` form still reads B as a cluster file where B cannot be what
    the command is about: when a positional argument came before `--cluster`, or an option
    in `subject_options` names the subject. Elsewhere (`explain --cluster dump.json
    pod.yaml`) the argument after the file is the command's own positional argument.
    """

    subject_options: tuple[str, ...] = ("--pod", "--vmi", "--vm", "--all-pending")

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = _takes_value(self)
        old_form = positional_before(args, "--cluster", takes_value) or any(
            arg == name or arg.startswith(name + "=")
            for arg in args
            for name in self.subject_options
        )
        return super().parse_args(ctx, spread_greedy(args, "--cluster") if old_form else args)


def read_live_with(target: LiveTarget, read: Callable[[Any], T]) -> T:
    """`read(client)` on the target's cluster; any failure to read it is an UserError."""
    from gpuop.kube import API_ERRORS, KubeError, sync_client
    from gpuop.kube.errors import failure
    from gpuop.kube.reading import ReadError

    failures: tuple[type[Exception], ...] = (*API_ERRORS, OSError)
    try:
        return read(sync_client(target.files, target.context))
    except (KubeError, ReadError) as exc:
        raise UserError(str(exc)) from None
    except failures as exc:
        raise UserError(failure(exc)) from None


def read_live(target: LiveTarget, kinds: Sequence[str]) -> list[Any]:
    """The objects of `kinds` from the target's cluster (Nodes and Pods required)."""
    from gpuop.kube.reads import read_cluster

    return list(read_live_with(target, lambda client: read_cluster(client, kinds)).objects)


def read_live_target(
    kubeconfig: str | None, context: str | None, kinds: Sequence[str]
) -> tuple[list[Any], LiveTarget]:
    """Objects of `kinds` from the cluster kubectl would read, and that cluster."""
    target = live_target(True, kubeconfig, context)
    assert target is not None
    return read_live(target, kinds), target


def objects_from_files(files: Sequence[str]) -> list[dict[str, Any]]:
    """Every object in the files, bundle directories and `-` (stdin), in order."""
    found = read_objects(tuple(files))
    return [obj for obj in found if isinstance(obj, dict)]
