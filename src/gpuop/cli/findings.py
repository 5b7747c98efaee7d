"""How every checker command runs: its findings options, the `.gpuop.yaml` they read, what it
reads, and how it prints what it found.

`gpuop check`, `gpuop kubevirt check` and `gpuop versions check` take the same
`--severity`, `--fail-on`, `--ignore` and `--config`, and read the same config file, so a
repository holds one `.gpuop.yaml` for all of them:

    # .gpuop.yaml
    severity: warning          # the lowest severity shown (error, warning, info)
    fail-on: error             # the lowest severity that makes the exit status 1
    ignore:                    # CODE or CODE:KIND/NAME, shell globs allowed
      - GPU305
      - GPU201:Node/legacy-*
    annotations: true          # honour gpuop.io/ignore on objects (the default)

Flags win over the file; `--ignore` adds to the file's list.

The three commands also read alike (FILES or `--live`, `-` once) and print alike (text,
wide, json, yaml, name, sarif): `checker_options`, `CheckerArgs` and `print_verdict` are
that flow, and each command adds only what it judges and how its report is headed.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from gpuop.api.labels import IGNORE_ANNOTATION
from gpuop.check import Report
from gpuop.check.filters import FilterError, FindingFilter, build_filter
from gpuop.check.rules import SEVERITIES
from gpuop.cli.common import UserError, color_enabled, emit_data, text_width
from gpuop.cli.completers import complete_finding_codes
from gpuop.cli.layout import fit_lines
from gpuop.cli.live import LiveTarget, live_target, require_files_or_live, with_cluster_line
from gpuop.cli.options import color_option, filename_option, live_options, output_option

F = TypeVar("F", bound=Callable[..., Any])

CONFIG_FILE = ".gpuop.yaml"
_CONFIG_KEYS = ("severity", "fail-on", "ignore", "annotations")


def findings_options(func: F) -> F:
    """`--severity`, `--fail-on`, `--ignore` (repeatable) and `--config`."""
    options = [
        click.option(
            "--severity",
            type=click.Choice(SEVERITIES, case_sensitive=False),
            default=None,
            help="The lowest severity shown (default: info, or the config file's).",
        ),
        click.option(
            "--fail-on",
            "fail_on",
            type=click.Choice(("error", "warning"), case_sensitive=False),
            default=None,
            help="The lowest severity that makes the exit status 1 (default: error).",
        ),
        click.option(
            "--ignore",
            "ignores",
            multiple=True,
            metavar="CODE[:KIND/NAME]",
            shell_complete=complete_finding_codes,
            help="Hide a finding code, on every object or on one (globs: GPU2*, Node/gpu-*);"
            f" repeatable. An object's {IGNORE_ANNOTATION}: CODE,... annotation does the same.",
        ),
        click.option(
            "--config",
            "config_file",
            metavar="FILE",
            default=None,
            help=f"Findings config (default: ./{CONFIG_FILE} when it exists).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _config_document(path: str | None) -> tuple[Mapping[str, Any], str]:
    from gpuop.cli.inputs import load_documents

    if path is None:
        if not os.path.isfile(CONFIG_FILE):
            return {}, ""
        path = CONFIG_FILE
    elif path != "-" and not os.path.isfile(path):
        raise UserError(f"--config {path}: no such file")
    documents = load_documents(path, "a gpuop config mapping", allow_empty=True)
    if not documents:
        return {}, path  # an empty file (or only comments) configures nothing
    if len(documents) > 1:
        raise UserError(f"{path}: {len(documents)} documents; expected one gpuop config mapping")
    document = documents[0]
    if not isinstance(document, Mapping):
        raise UserError(f"{path}: expected a mapping with {', '.join(_CONFIG_KEYS)}")
    unknown = sorted(str(key) for key in document if key not in _CONFIG_KEYS)
    if unknown:
        raise UserError(
            f"{path}: unknown key {', '.join(map(repr, unknown))}"
            f" (known: {', '.join(_CONFIG_KEYS)})"
        )
    return document, path


def _text(document: Mapping[str, Any], key: str, path: str) -> str | None:
    value = document.get(key)
    if value is None or isinstance(value, str):
        return value
    raise UserError(f"{path}: {key} must be one of {', '.join(SEVERITIES)}")


def _ignores(document: Mapping[str, Any], path: str) -> list[str]:
    value = document.get("ignore")
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UserError(f"{path}: ignore must be a list of CODE or CODE:KIND/NAME strings")
    return list(value)


def finding_filter(
    severity: str | None,
    fail_on: str | None,
    ignores: Iterable[str],
    config_file: str | None,
) -> FindingFilter:
    """The filter the flags and the config file ask for; exit status 2 when they conflict."""
    document, path = _config_document(config_file)
    annotations = document.get("annotations", True)
    if not isinstance(annotations, bool):
        raise UserError(f"{path}: annotations must be true or false")
    try:
        return build_filter(
            severity=severity or _text(document, "severity", path),
            fail_on=fail_on or _text(document, "fail-on", path),
            ignores=[*_ignores(document, path), *ignores],
            use_annotations=annotations,
        )
    except FilterError as exc:
        where = f"{path}: " if path and not (severity or fail_on or ignores) else ""
        raise UserError(f"{where}{exc}") from None


@dataclass(frozen=True)
class CheckerInput:
    """What a checker command reads (dump paths, or the live cluster) and the filter its
    findings pass through."""

    paths: tuple[str, ...]
    target: LiveTarget | None
    chosen: FindingFilter


@dataclass(frozen=True)
class CheckerArgs:
    """The arguments every checker command takes: what to read, which findings to show,
    and how to print them."""

    files: tuple[str, ...]
    filenames: tuple[str, ...]
    live: bool
    kubeconfig: str | None
    context_name: str | None
    severity: str | None
    fail_on: str | None
    ignores: tuple[str, ...]
    config_file: str | None
    output: str
    color: bool | None

    def read(self, stdin_options: Sequence[str | None] = ()) -> CheckerInput:
        """FILES or `--live` (one of them), `-` once among FILES, `--config` and the
        command's other file options in `stdin_options`, and the findings filter."""
        from gpuop.cli.inputs import input_paths

        paths = input_paths(self.files, self.filenames)
        require_files_or_live(paths, self.live)
        stdin_uses = paths.count("-") + sum(
            value == "-" for value in (*stdin_options, self.config_file)
        )
        if stdin_uses > 1:
            raise UserError("'-' (stdin) can be given once")
        target = live_target(self.live, self.kubeconfig, self.context_name)
        chosen = finding_filter(self.severity, self.fail_on, self.ignores, self.config_file)
        return CheckerInput(paths, target, chosen)

    def print(self, verdict: Verdict, target: LiveTarget | None) -> int:
        """Print the verdict as `-o` asks; the exit status it ends with."""
        return print_verdict(verdict, self.output, self.color, target)


_CHECKER_ARGS = tuple(field.name for field in dataclasses.fields(CheckerArgs))


def checker_options(
    *outputs: str, output_help: str = "Output format."
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """FILES, `-f`, `--live`, the findings options, `-o` (with `outputs`) and `--color`,
    handed to the command as one `CheckerArgs` before its own options."""

    def decorate(func: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(func)
        def command(**kwargs: Any) -> None:
            args = CheckerArgs(**{name: kwargs.pop(name) for name in _CHECKER_ARGS})
            func(args, **kwargs)

        decorators = (
            click.argument("files", nargs=-1, metavar="[FILES]..."),
            filename_option,
            live_options,
            findings_options,
            output_option(*outputs, help=output_help),
            color_option,
        )
        wrapped: Callable[..., None] = command
        for decorator in reversed(decorators):
            wrapped = decorator(wrapped)
        return wrapped

    return decorate


@dataclass(frozen=True)
class Verdict:
    """What a checker found, and how it says so: `document` for json and yaml (without the
    cluster, which `print_verdict` adds), `text` for a width (color first), `sarif` where the
    command has it."""

    report: Report
    document: Callable[[], dict[str, Any]]
    text: Callable[[bool, int], str]
    sarif: Callable[[], dict[str, Any]] | None = None


def print_verdict(
    verdict: Verdict, output: str, color: bool | None, target: LiveTarget | None
) -> int:
    """Print the verdict in the `-o` format asked for; the exit status it ends with."""
    if output in ("json", "yaml"):
        data = with_cluster(verdict.document(), target)
        if output == "json":
            sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        else:
            emit_data(data, "yaml")
    elif output == "sarif" and verdict.sarif is not None:
        sys.stdout.write(json.dumps(verdict.sarif(), indent=2) + "\n")
    elif output == "name":
        sys.stdout.write(finding_names(verdict.report))
    else:
        width = text_width(output)
        text = verdict.text(color_enabled(color), width)
        sys.stdout.write(fit_lines(with_cluster_line(text, target), width))
    return verdict.report.exit_code


__all__ = [
    "CONFIG_FILE",
    "CheckerArgs",
    "CheckerInput",
    "Verdict",
    "checker_options",
    "finding_filter",
    "findings_options",
    "print_verdict",
]


def with_cluster(data: dict[str, Any], target: LiveTarget | None) -> dict[str, Any]:
    """A report document naming the cluster it read (after its schema and tool) for a live
    read."""
    if target is None:
        return data
    head = {key: data.pop(key) for key in ("schema_version", "tool")}
    return {**head, "cluster": target.to_dict(), **data}


def finding_names(report: Report) -> str:
    """`-o name`: each object with findings once, as `Kind/name` (what `--ignore` takes)."""
    seen = dict.fromkeys(finding.subject for finding in report.findings)
    return "".join(f"{subject}\n" for subject in seen)
