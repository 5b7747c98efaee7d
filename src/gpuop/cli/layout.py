"""Text that fits the terminal, the same way in every command.

Tables are plain aligned columns, two spaces apart (no box drawing), so they read the same
in a terminal, a pipe, a CI log and an issue comment. When a table is wider than the text
width (`text_width()`: at a terminal `$COLUMNS` or its width; in a pipe none), the columns
marked `wrap` wrap inside their cells; when even that cannot fit, the columns with the
highest `drop` rank are left out, and the caller names them (`-o wide adds ...`).
Other long lines wrap with a hanging indent. `-o wide` is the width `UNLIMITED_WIDTH`:
nothing wraps and no column is left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import click

from gpuop.cli.common import UNLIMITED_WIDTH

GAP = 2
# A wrapped column is never made narrower than this unless nothing else fits.
DEFAULT_MIN_WIDTH = 12
# Words longer than this may be cut even when a column could have been left out instead.
WORD_LIMIT = 24


@dataclass(frozen=True)
class Column:
    """A table column: its header, whether its cells may wrap, and when it may be left out.

    `drop` 0 is never left out; among the others the highest is left out first.
    `min_width` is the narrowest a wrapped column is made before a column is dropped.
    """

    header: str
    wrap: bool = False
    drop: int = 0
    min_width: int = DEFAULT_MIN_WIDTH


@dataclass(frozen=True)
class Table:
    """A table laid out for a width: its text, and the headers of the columns left out."""

    text: str
    dropped: tuple[str, ...] = ()

    def wide_note(self, indent: int = 0) -> str | None:
        """`(-o wide adds DAEMONSET, ADVERTISES)` when columns were left out, else None."""
        if not self.dropped:
            return None
        return " " * indent + f"(-o wide adds {', '.join(self.dropped)})"


def _as_columns(columns: Sequence[Column | str]) -> list[Column]:
    return [c if isinstance(c, Column) else Column(c) for c in columns]


def _break_at(word: str, start: int, room: int) -> int:
    """Where to cut `word[start:]`, longer than `room`: after `/`, `-`, `_`, `.`, `,` or `=`,
    or between a lower- and an upper-case letter (`kataSandbox|DevicePlugin`), else at
    `room`. Returns the index in `word` the next piece starts at."""
    room = max(room, 1)
    for cut in range(start + room, start + max(room // 3, 1) - 1, -1):
        before, after = word[cut - 1], word[cut] if cut < len(word) else ""
        if before in "/-_.,=" or (before.islower() and after.isupper()):
            return cut
    return start + room


def wrap_words(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """`text` filled into lines of `width` columns: `first` starts the first line and `rest`
    the others; spaces inside a line are kept as written, words too long are cut (`_break_at`).
    Linear in the text's length, however long its words.
    """
    lines: list[str] = []
    line, started = first, False
    tokens = re.split(r"( +)", text.strip(" "))
    gap = ""
    for number, word in enumerate(tokens):
        if number % 2:
            gap = word
            continue
        position = 0
        while position < len(word):
            left = len(word) - position
            if started:
                if len(line) + len(gap) + left <= width:
                    line += gap + word[position:]
                    break
                lines.append(line)
                line, started = rest, False
                continue
            if len(line) + left <= width:
                line, started = line + word[position:], True
                break
            cut = _break_at(word, position, width - len(line))
            lines.append(line + word[position:cut])
            line, position = rest, cut
        gap = ""
    if started or not lines:
        lines.append(line)
    return [item.rstrip() for item in lines]


def _wrap_cell(cell: str, width: int) -> list[str]:
    if len(cell) <= width:
        return [cell]
    return wrap_words(cell, width)


def _longest_word(cells: Sequence[str]) -> int:
    return max((len(word) for cell in cells for word in cell.split()), default=0)


def _widths(columns: Sequence[Column], cells: Sequence[Sequence[str]], available: int) -> list[int]:
    """Column widths summing to at most `available` where that is possible at all."""
    natural = [
        max([len(column.header), *(len(row[n]) for row in cells)])
        for n, column in enumerate(columns)
    ]
    if sum(natural) <= available:
        return natural
    least = [
        min(natural[n], max(column.min_width, len(column.header))) if column.wrap else natural[n]
        for n, column in enumerate(columns)
    ]
    if sum(least) > available:
        return _levelled(natural, available)
    widths = list(least)
    # The room left goes to the wrapped columns, first to let whole words fit, then evenly.
    for n, column in enumerate(columns):
        if column.wrap:
            word = min(_longest_word([row[n] for row in cells]), natural[n], WORD_LIMIT)
            grow = min(max(word - widths[n], 0), available - sum(widths))
            widths[n] += grow
    growing = [n for n, column in enumerate(columns) if column.wrap]
    text = [sum(len(row[n]) for row in cells) for n in range(len(columns))]
    while sum(widths) < available:
        wanting = [n for n in growing if widths[n] < natural[n]]
        if not wanting:
            break
        # The column with the most text still wrapped gets the next character.
        best = max(wanting, key=lambda n: (text[n] / max(widths[n], 1), -n))
        widths[best] += 1
    return widths


def _levelled(natural: Sequence[int], available: int) -> list[int]:
    """Every column at most one level wide, the highest level that fits (at least 1)."""
    low, high = 1, max(natural)
    while low < high:
        level = (low + high + 1) // 2
        if sum(min(width, level) for width in natural) <= available:
            low = level
        else:
            high = level - 1
    widths = [min(width, low) for width in natural]
    for n, width in enumerate(natural):
        if sum(widths) < available and width > widths[n]:
            widths[n] += 1
    return widths


def fit_table(
    columns: Sequence[Column | str],
    rows: Sequence[Sequence[str]],
    *,
    width: int = UNLIMITED_WIDTH,
    indent: int = 0,
) -> Table:
    """The rows under their headers, fitted to `width` (wrapping, then leaving columns out)."""
    chosen = _as_columns(columns)
    kept = list(range(len(chosen)))

    def room(keep: Sequence[int]) -> int:
        return width - indent - GAP * (len(keep) - 1)

    def least(keep: Sequence[int]) -> int:
        total = 0
        for n in keep:
            column = chosen[n]
            natural = max([len(column.header), *(len(row[n]) for row in rows)])
            if column.wrap:
                # Kept only with room for its longest word (up to WORD_LIMIT) on one line.
                word = min(_longest_word([row[n] for row in rows]), WORD_LIMIT)
                total += min(natural, max(column.min_width, len(column.header), word))
            else:
                total += natural
        return total

    while least(kept) > room(kept):
        droppable = [n for n in kept if chosen[n].drop > 0]
        if not droppable:
            break
        kept.remove(max(droppable, key=lambda n: (chosen[n].drop, n)))
    shown = [chosen[n] for n in kept]
    cells = [[row[n] for n in kept] for row in rows]
    widths = _widths(shown, cells, room(kept))
    lines: list[str] = []
    for row in [[c.header for c in shown], *cells]:
        wrapped = [_wrap_cell(cell, widths[n]) for n, cell in enumerate(row)]
        for number in range(max(len(parts) for parts in wrapped)):
            parts = [p[number] if number < len(p) else "" for p in wrapped]
            padded = [part.ljust(widths[n]) for n, part in enumerate(parts[:-1])] + [parts[-1]]
            lines.append((" " * indent + (" " * GAP).join(padded)).rstrip())
    dropped = tuple(chosen[n].header for n in range(len(chosen)) if n not in kept)
    return Table("\n".join(lines), dropped)


def render_table(
    headers: Sequence[Column | str],
    rows: Sequence[Sequence[str]],
    indent: int = 0,
    width: int = UNLIMITED_WIDTH,
) -> str:
    """A fitted table's text, with the `-o wide adds ...` line when columns were left out."""
    table = fit_table(headers, rows, width=width, indent=indent)
    note = table.wide_note(indent)
    return table.text if note is None else f"{table.text}\n{note}"


# A label and a gap of two or more spaces before the value: `  policy     default ...`.
_ALIGNED = re.compile(r"^( *)(\S(?:\S| (?! ))*? {2,})(?=\S)")


def hang_of(line: str) -> int:
    """Where a wrapped line continues: under the value of `label  value`, else indented by 2."""
    match = _ALIGNED.match(line[:64])
    if match is not None and len(match.group(0)) < 48:
        return len(match.group(0))
    return len(line) - len(line.lstrip(" ")) + 2


def wrap_line(line: str, width: int, hang: int | None = None) -> list[str]:
    """`line` as lines of at most `width` columns, continued at `hang` (see `hang_of`)."""
    if width >= UNLIMITED_WIDTH:
        return [line]
    plain = click.unstyle(line) if "\x1b" in line else line
    if len(plain) <= width:
        return [line]
    lead = len(plain) - len(plain.lstrip(" "))
    hang = hang_of(plain) if hang is None else hang
    # An indent of half the width or more leaves too little room: it is shortened.
    lead, hang = min(lead, width // 2), min(hang, width // 2)
    return wrap_words(plain[lead:], width, " " * lead, " " * hang)


def fit_lines(text: str, width: int) -> str:
    """Every line of `text` wrapped to `width` with its hanging indent; a trailing newline kept."""
    if width >= UNLIMITED_WIDTH:
        return text
    ending = "\n" if text.endswith("\n") else ""
    lines = text[: len(text) - len(ending)].split("\n")
    return "\n".join(part for line in lines for part in wrap_line(line, width)) + ending


def note(message: str) -> None:
    """A `gpuop: ...` note on stderr, wrapped to the terminal like the reports."""
    from gpuop.cli.common import text_width

    click.echo(fit_lines(f"gpuop: {message}", text_width("text")), err=True)
