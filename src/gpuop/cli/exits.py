"""The exit status of every gpuop command, in one place.

`gpuop --help`, each command's epilog and docs/cli.md show the table; `gpuop.cli.exit_status`
maps what ended a command to one of these codes; `UserError` carries `INPUT` unless a
command says otherwise.
"""

from __future__ import annotations

from typing import Final

OK: Final = 0
FOUND: Final = 1
INPUT: Final = 2
INTERNAL: Final = 3
INTERRUPTED: Final = 130
# The reader of stdout went away (`gpuop ... | head`): what a process killed by SIGPIPE
# reports, as kubectl's does; said nowhere, since nobody reads it.
CLOSED_PIPE: Final = 141

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (OK, "done; no finding at or above --fail-on (error by default)"),
    (
        FOUND,
        "findings at or above --fail-on; plan: error notices; other commands: the problem found",
    ),
    (INPUT, "bad usage, unreadable input, or input holding none of the kinds the command reads"),
    (INTERNAL, "internal error (a gpuop bug); GPUOP_TRACEBACK=1 shows the traceback"),
    (INTERRUPTED, "interrupted"),
)


def exit_codes_help() -> str:
    """The exit-status table as help text (click keeps `\\b` paragraphs as written)."""
    rows = "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES)
    return f"\b\nExit status:\n{rows}"


__all__ = [
    "CLOSED_PIPE",
    "EXIT_CODES",
    "FOUND",
    "INPUT",
    "INTERNAL",
    "INTERRUPTED",
    "OK",
    "exit_codes_help",
]
