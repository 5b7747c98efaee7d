"""`gpuop plan`'s text helpers: headings, bold only on a terminal.

Inputs (pci.ids, ClusterPolicy, YAML documents) are read by `gpuop.cli.inputs`; tables
and wrapping to the terminal's width are in `gpuop.cli.layout`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from gpuop.cli.common import color_enabled

F = TypeVar("F", bound=Callable[..., Any])


def heading(text: str) -> str:
    """A section heading: bold only where colour is on (a terminal, no NO_COLOR, no
    `gpuop --no-color`)."""
    return click.style(text, bold=True) if color_enabled(None) else text
