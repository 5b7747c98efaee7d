"""Reading Kubernetes objects from text: JSON or YAML, one object or many.

:func:`load_objects` accepts what people actually paste or pipe in:

* a single object, in JSON or YAML;
* a list object, ``kind: List`` or any ``<Kind>List`` (``NodeList``,
  ``PodList``, ...) with ``items``, as ``kubectl get -o json`` and the API
  server write them; items of a typed list that lack ``kind`` or
  ``apiVersion`` (raw API list responses omit them) get them from the list;
* a YAML stream of several documents separated by ``---``; empty documents
  are skipped.

It returns a flat list of plain dicts.  Anything it cannot read raises
:class:`ManifestError`, which names the source, the document (1-based) and,
where the parser knows it, the line and column, so a command can print one
line instead of a traceback.

Nesting is bounded: a value more than :data:`MAX_NESTING` mappings and lists
deep is refused as "nested too deeply to read", whichever parser read it, so
no later step (validation, copying, printing) can run out of stack on it.
Real objects nest a few dozen levels at most.  :func:`check_nesting` is the
guard, for commands that parse documents themselves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

__all__ = ["MAX_NESTING", "NESTED_TOO_DEEPLY", "ManifestError", "check_nesting", "load_objects"]

MAX_NESTING = 100
"""The deepest nesting of mappings and lists any command reads."""

NESTED_TOO_DEEPLY = "nested too deeply to read"


class ManifestError(ValueError):
    """Text that does not hold readable Kubernetes objects.

    ``source`` names where the text came from (a path, ``<stdin>``),
    ``document`` is the 1-based YAML document (or None for the whole
    text), ``line``/``column`` are 1-based positions when known and
    ``problem`` says what is wrong.
    """

    def __init__(
        self,
        source: str,
        problem: str,
        *,
        document: int | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.source = source
        self.problem = problem
        self.document = document
        self.line = line
        self.column = column
        where = [source]
        if document is not None:
            where.append(f"document {document}")
        if line is not None:
            where.append(f"line {line}" + (f", column {column}" if column is not None else ""))
        super().__init__(f"{': '.join(where)}: {problem}")


def nesting_depth(value: Any, limit: int = MAX_NESTING) -> int:
    """How deeply mappings and lists nest in ``value`` (a scalar is 0), counted up to ``limit + 1``.

    Iterative (one level at a time), so it cannot itself run out of stack; scalars are
    left behind by their type alone, so a 60 MB dump costs a fraction of its parsing.
    """
    depth = 0
    level: list[Any] = [value]
    while level:
        below: list[Any] = []
        containers = 0
        for item in level:
            if type(item) is dict or isinstance(item, Mapping):
                values: Any = item.values()
            elif type(item) is list:
                values = item
            else:
                continue
            containers += 1
            below.extend([child for child in values if type(child) not in _SCALARS])
        if not containers:
            break
        depth += 1
        if depth > limit:
            return depth
        level = below
    return depth


_SCALARS = frozenset({str, int, float, bool, type(None)})


def check_nesting(value: Any, source: str, document: int | None = None) -> None:
    """Raise :class:`ManifestError` when ``value`` nests deeper than :data:`MAX_NESTING`."""
    if nesting_depth(value) > MAX_NESTING:
        raise ManifestError(
            source,
            f"{NESTED_TOO_DEEPLY} (more than {MAX_NESTING} levels)",
            document=document,
        )


def _kind_of(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _flatten(
    obj: Mapping[str, Any], source: str, document: int | None, path: str
) -> Iterator[dict[str, Any]]:
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ManifestError(source, f"{path} has no 'kind'", document=document)
    if not (kind.endswith("List") and "items" in obj):
        yield dict(obj)
        return
    items = obj.get("items")
    if items is None:
        return
    if not isinstance(items, list):
        raise ManifestError(
            source, f"{path} ({kind}): 'items' is {_kind_of(items)}, not a list", document=document
        )
    item_kind = kind[: -len("List")]
    api_version = obj.get("apiVersion")
    for index, item in enumerate(items):
        item_path = f"{path}.items[{index}]"
        if not isinstance(item, Mapping):
            raise ManifestError(
                source,
                f"{item_path} is {_kind_of(item)}, not a Kubernetes object",
                document=document,
            )
        filled = dict(item)
        if item_kind and not filled.get("kind"):
            filled["kind"] = item_kind
        if item_kind and not filled.get("apiVersion") and isinstance(api_version, str):
            filled["apiVersion"] = api_version
        yield from _flatten(filled, source, document, item_path)


def _top_level(value: Any, source: str, document: int | None) -> Iterator[dict[str, Any]]:
    if value is None:
        return
    check_nesting(value, source, document)
    if not isinstance(value, Mapping):
        raise ManifestError(
            source,
            f"expected a Kubernetes object (a mapping), got {_kind_of(value)}",
            document=document,
        )
    yield from _flatten(value, source, document, "object")


def _load_json(text: str, source: str) -> list[dict[str, Any]]:
    value = json.loads(text)
    return list(_top_level(value, source, None))


def _load_yaml(text: str, source: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    document = 0
    try:
        for document, value in enumerate(yaml.safe_load_all(text), start=1):
            objects.extend(_top_level(value, source, document))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "not valid YAML"
        raise ManifestError(
            source,
            f"not valid YAML: {problem}",
            document=document + 1,
            line=mark.line + 1 if mark is not None else None,
            column=mark.column + 1 if mark is not None else None,
        ) from None
    except yaml.YAMLError as exc:
        raise ManifestError(source, f"not valid YAML: {exc}", document=document + 1) from None
    except RecursionError:
        raise ManifestError(source, NESTED_TOO_DEEPLY, document=document + 1) from None
    return objects


def load_objects(text: str, source: str = "<input>") -> list[dict[str, Any]]:
    """Every Kubernetes object in ``text``, lists flattened, in order.

    JSON is tried first when the text starts with ``{`` or ``[``; if it is
    not valid JSON the text is read as YAML (a superset of JSON), and if
    that fails too the JSON error is reported, being the more precise one.
    """
    body = text.lstrip("\ufeff")
    if body.lstrip(" \t\r\n")[:1] in ("{", "["):
        try:
            return _load_json(body, source)
        except json.JSONDecodeError as json_error:
            try:
                return _load_yaml(body, source)
            except ManifestError:
                raise ManifestError(
                    source,
                    f"not valid JSON: {json_error.msg}",
                    line=json_error.lineno,
                    column=json_error.colno,
                ) from None
        except RecursionError:
            raise ManifestError(source, NESTED_TOO_DEEPLY) from None
    return _load_yaml(body, source)
