"""How a TOML file is written, so what gpuop adds looks as if its author had written it.

The style of a document (indentation of nested tables and their keys, quoting, blank
lines between tables) is detected once (`detect_style`); every new key, value and table
is built in that style (`make_value`, `make_key`, `build_table`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import tomlkit
from tomlkit.container import Container
from tomlkit.items import (
    AoT,
    Array,
    Comment,
    InlineTable,
    Item,
    Key,
    KeyType,
    Null,
    SingleKey,
    String,
    StringType,
    Table,
    Whitespace,
)
from tomlkit.toml_document import TOMLDocument


@dataclass(frozen=True, slots=True)
class Style:
    unit: str = "  "
    indent_headers: bool = False
    indent_body: bool = False
    literal_strings: bool = False
    flip_implicit: bool = True
    """Give an implicit table a header where it is first used (else: a new header at its end)."""

    def header(self, depth: int) -> str:
        return self.unit * (depth - 1) if self.indent_headers and depth > 1 else ""

    def body(self, depth: int) -> str:
        if depth == 0:
            return ""
        return self.header(depth) + (self.unit if self.indent_body else "")


def _walk_tables(container: Container, depth: int) -> Iterator[tuple[int, Table]]:
    for _, item in container.body:
        if isinstance(item, Table):
            yield depth + 1, item
            yield from _walk_tables(item.value, depth + 1)
        elif isinstance(item, AoT):
            for element in item.body:
                yield depth + 1, element
                yield from _walk_tables(element.value, depth + 1)


def line_indent(indent: str) -> str:
    return indent.rsplit("\n", 1)[-1]


def is_plain_value(key: Key | None, item: Item) -> bool:
    return key is not None and not isinstance(item, Table | AoT | Whitespace | Comment | Null)


def detect_style(doc: TOMLDocument) -> Style:
    units: Counter[str] = Counter()
    indent_headers = indent_body = False
    for depth, table in _walk_tables(doc, 0):
        header = line_indent(table.trivia.indent)
        if not table.is_super_table() and depth > 1 and header:
            indent_headers = True
            step = len(header) // (depth - 1)
            if step and len(header) == step * (depth - 1):
                units[header[:step]] += 1
        if table.is_super_table():
            continue
        for key, item in table.value.body:
            if is_plain_value(key, item):
                body = line_indent(item.trivia.indent)
                if len(body) > len(header) and body.startswith(header):
                    indent_body = True
                    units[body[len(header) :]] += 1
                break
    unit = units.most_common(1)[0][0] if units else "  "
    if unit.strip():
        unit = "  "
    quotes = _quote_counts(doc)
    return Style(
        unit=unit,
        indent_headers=indent_headers,
        indent_body=indent_body,
        literal_strings=quotes[True] > quotes[False],
    )


def _quote_counts(doc: TOMLDocument) -> Counter[bool]:
    """How many strings (and quoted keys) use literal quotes (True) or basic quotes (False)."""
    counts: Counter[bool] = Counter()

    def visit(item: Item | Container) -> None:
        if isinstance(item, String):
            if item.type in (StringType.SLL, StringType.SLB):
                counts[item.type == StringType.SLL] += 1
        elif isinstance(item, Array):
            for element in item:
                if isinstance(element, Item):
                    visit(element)
        elif isinstance(item, Container | Table | InlineTable):
            container = item if isinstance(item, Container) else item.value
            for key, child in container.body:
                if key is not None:
                    for single in key:
                        if single.t in (KeyType.Literal, KeyType.Basic):
                            counts[single.t == KeyType.Literal] += 1
                visit(child)
        elif isinstance(item, AoT):
            for element in item.body:
                visit(element)

    visit(doc)
    return counts


_LITERAL_SAFE = re.compile(r"[^'\x00-\x08\x0a-\x1f\x7f]*")


def make_value(value: Any, style: Style) -> Item:
    if isinstance(value, str):
        if style.literal_strings and _LITERAL_SAFE.fullmatch(value):
            return tomlkit.string(value, literal=True)
        return tomlkit.string(value)
    if isinstance(value, Mapping):
        inline = tomlkit.inline_table()
        for k, v in value.items():
            inline.append(make_key(k, style), make_value(v, style))
        return inline
    if isinstance(value, list | tuple):
        array = tomlkit.array()
        for element in value:
            array.append(make_value(element, style))
        return array
    item: Item = tomlkit.item(value)
    return item


def make_key(key: str, style: Style) -> SingleKey:
    if re.fullmatch(r"[A-Za-z0-9_-]+", key):
        return SingleKey(key, KeyType.Bare)
    if style.literal_strings and _LITERAL_SAFE.fullmatch(key):
        return SingleKey(key, KeyType.Literal)
    return SingleKey(key, KeyType.Basic)


def build_table(value: Mapping[str, Any], depth: int, style: Style) -> Table:
    scalars = [(k, v) for k, v in value.items() if not isinstance(v, Mapping)]
    tables = [(k, v) for k, v in value.items() if isinstance(v, Mapping)]
    table = tomlkit.table(is_super_table=bool(tables) and not scalars)
    table.trivia.indent = style.header(depth)
    for k, v in scalars:
        item = make_value(v, style)
        item.trivia.indent = style.body(depth)
        raw_append(table, make_key(k, style), item)
    for k, v in tables:
        raw_append(table, make_key(k, style), build_table(v, depth + 1, style))
    return table


def separate_headers(container: Container, *, skip_first: bool) -> None:
    """Put a blank line before every table header (but the first, with `skip_first`)."""
    first = True
    for _, table in _walk_tables(container, 0):
        if table.is_super_table():
            continue
        if not (first and skip_first):
            table.trivia.indent = "\n" + line_indent(table.trivia.indent)
        first = False


def raw_append(owner: Container | Table, key: Key | None, item: Item) -> None:
    """Append at the end of `owner` without tomlkit's cosmetic re-indentation."""
    container = owner if isinstance(owner, Container) else owner.value
    container._raw_append(key, item)
    if isinstance(owner, Table) and key is not None:
        dict.__setitem__(owner, key.key, item.value)
