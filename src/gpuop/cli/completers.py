"""What the shell completes for the flags that take a name from gpuop's catalogues.

GPU models, vGPU types, finding codes and GPU Operator releases, each read from the data
file that defines it, only when the shell asks (`gpuop completion`), so start-up stays quick.
"""

from __future__ import annotations

from collections.abc import Iterable

import click
from click.shell_completion import CompletionItem


def _matching(values: Iterable[tuple[str, str | None]], incomplete: str) -> list[CompletionItem]:
    """The values that start with what was typed (any case), with their help."""
    wanted = incomplete.lower()
    return [
        CompletionItem(value, help=help)
        for value, help in values
        if value.lower().startswith(wanted)
    ]


def complete_gpu_models(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The GPU models of gpuop's catalogue (`--gpu A10`)."""
    from gpuop.catalog import gpu_catalog

    return _matching(((gpu.model, gpu.product) for gpu in gpu_catalog().gpus), incomplete)


def complete_vgpu_types(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Every vGPU type of NVIDIA's default vGPU config (`A10-12Q`)."""
    from gpuop.catalog import vgpu_families

    types = sorted(t for f in vgpu_families().families.values() for t in f.types)
    return _matching(((t, None) for t in types), incomplete)


def complete_finding_codes(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Every finding code, with its title (`--ignore GPU206`)."""
    from gpuop.check.rules import REGISTRY

    return _matching(((code, rule.title) for code, rule in sorted(REGISTRY.items())), incomplete)


def complete_operator_releases(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """The GPU Operator releases of gpuop's version matrix, newest first (`25.10.1`)."""
    from gpuop.catalog.versions import version_matrix

    releases = sorted(version_matrix().releases, key=lambda r: r.date, reverse=True)
    return _matching(((str(r.version), str(r.date)) for r in releases), incomplete)


def complete_release_or_file(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """An operator release when what was typed starts like one (a digit, or nothing yet),
    else the shell's file names."""
    if incomplete[:1].isdigit() or not incomplete:
        releases = complete_operator_releases(ctx, param, incomplete)
        if releases:
            return releases
    return [CompletionItem(incomplete, type="file")]


__all__ = [
    "complete_finding_codes",
    "complete_gpu_models",
    "complete_operator_releases",
    "complete_release_or_file",
    "complete_vgpu_types",
]
