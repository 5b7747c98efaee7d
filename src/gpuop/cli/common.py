"""Helpers every command shares: the one error type that ends a command cleanly (with its
exit status from `gpuop.cli.exits`), and output formats."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from gpuop.cli import exits

F = TypeVar("F", bound=Callable[..., Any])


class UserError(Exception):
    """A failure the user can fix: printed as one line, never as a traceback."""

    def __init__(self, message: str, exit_code: int = exits.INPUT) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def emit_data(data: Any, fmt: str) -> None:
    """Print `data` as JSON or YAML to stdout."""
    if fmt == "json":
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    elif fmt == "yaml":
        import yaml

        sys.stdout.write(yaml.safe_dump(data, sort_keys=False))
    else:
        raise ValueError(f"unknown data format {fmt}")


# Text width at a terminal whose width cannot be read and COLUMNS is not set.
PIPE_WIDTH = 110
# `-o wide`: no wrapping at all.
UNLIMITED_WIDTH = 1_000_000


def color_enabled(flag: bool | None) -> bool:
    """`--color/--no-color` when given, else off with NO_COLOR set or when stdout is no terminal."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


# The API group of each kind gpuop prints by name (the core group is "").
_GROUPS = {
    "DaemonSet": "apps",
    "Deployment": "apps",
    "Role": "rbac.authorization.k8s.io",
    "RoleBinding": "rbac.authorization.k8s.io",
    "ClusterRole": "rbac.authorization.k8s.io",
    "ClusterRoleBinding": "rbac.authorization.k8s.io",
    "RuntimeClass": "node.k8s.io",
    "ClusterPolicy": "nvidia.com",
    "GPUCluster": "nvidia.com",
    "NVIDIADriver": "nvidia.com",
    "CustomResourceDefinition": "apiextensions.k8s.io",
    "ServiceMonitor": "monitoring.coreos.com",
    "DeviceClass": "resource.k8s.io",
    "ResourceClaim": "resource.k8s.io",
    "ResourceClaimTemplate": "resource.k8s.io",
    "ResourceSlice": "resource.k8s.io",
    "ValidatingAdmissionPolicy": "admissionregistration.k8s.io",
    "ValidatingAdmissionPolicyBinding": "admissionregistration.k8s.io",
    "VirtualMachineInstance": "kubevirt.io",
    "VirtualMachine": "kubevirt.io",
    "PodDisruptionBudget": "policy",
}


def kubectl_name(kind: str, name: str, api_version: str | None = None) -> str:
    """An object as `kubectl get -o name` prints it and takes it back: `kind.group/name`
    (`daemonset.apps/nvidia-driver-daemonset`), `kind/name` in the core group (`node/gpu-1`).
    The namespace is not part of it: give `-n` to kubectl, as with its own output."""
    group = api_version.rpartition("/")[0] if api_version else _GROUPS.get(kind, "")
    resource = kind.lower()
    return f"{resource}.{group}/{name}" if group else f"{resource}/{name}"


def stdout_is_terminal() -> bool:
    """Whether a person reads stdout (a terminal), not a pipe or a file."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def text_width(output: str = "text", minimum: int = 60) -> int:
    """The width text output fits, kubectl's rule: at a terminal its width (`$COLUMNS`, else
    the terminal's); in a pipe or a file no limit, so a script reads every value whole and
    the same columns whatever the shell's width; `-o wide`: no limit either."""
    if output == "wide" or not stdout_is_terminal():
        return UNLIMITED_WIDTH
    import shutil

    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        width = int(columns)
    else:
        width = shutil.get_terminal_size((PIPE_WIDTH, 24)).columns
    return max(width, minimum)


def read_text_input(path: str) -> str:
    """Read a file, or standard input when `path` is `-` (size-limited, UTF-8: cli.inputs)."""
    from gpuop.cli.inputs import read_input_text

    return read_input_text(path)


def resolve_kubeconfig(value: str | None) -> tuple[str, ...]:
    """The kubeconfig files of the commands that drive gpuop's own cluster (`sim`): the
    option, else the files of $KUBECONFIG as kubectl merges them, else the local gpuop
    cluster's; never ~/.kube/config, so a simulator never lands on another cluster unasked."""
    import os

    if value or os.environ.get("KUBECONFIG"):
        from gpuop.cli.live import kubeconfig_files

        return kubeconfig_files(value)
    from gpuop.controlplane.paths import cluster_dir

    local = cluster_dir("gpuop") / "kubeconfig"
    if not local.exists():
        raise UserError(
            "no kubeconfig: give --kubeconfig, set $KUBECONFIG, or start the local cluster"
            " with `gpuop cluster up`"
        )
    return (str(local),)


# Notes about the input that wait for the command to end well (`gpuop.cli.main` prints them
# then): a command that ends on bad input says so in its one error line alone.
_NOTES_AT_EXIT: list[str] = []


def note_at_exit(line: str) -> None:
    """Print `line` on stderr when the command ends with exit status 0 or 1."""
    _NOTES_AT_EXIT.append(line)


def notes_at_exit() -> list[str]:
    """The waiting notes, handed over once."""
    notes = list(_NOTES_AT_EXIT)
    _NOTES_AT_EXIT.clear()
    return notes
