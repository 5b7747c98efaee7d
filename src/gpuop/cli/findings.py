"""The options every checker shares to manage its findings, and the `.gpuop.yaml` they read.

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
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import click

from gpuop.api.labels import IGNORE_ANNOTATION
from gpuop.check import Report
from gpuop.check.filters import FilterError, FindingFilter, build_filter
from gpuop.check.rules import SEVERITIES
from gpuop.cli.common import UserError
from gpuop.cli.completers import complete_finding_codes
from gpuop.cli.live import LiveTarget

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


__all__ = ["CONFIG_FILE", "finding_filter", "findings_options"]


def report_data(report: Report, target: LiveTarget | None) -> dict[str, Any]:
    """The report's JSON/YAML document, naming the cluster for a live read."""
    data = report.to_dict()
    if target is None:
        return data
    head = {key: data.pop(key) for key in ("schema_version", "tool")}
    return {**head, "cluster": target.to_dict(), **data}


def finding_names(report: Report) -> str:
    """`-o name`: each object with findings once, as `Kind/name` (what `--ignore` takes)."""
    seen = dict.fromkeys(finding.subject for finding in report.findings)
    return "".join(f"{subject}\n" for subject in seen)
