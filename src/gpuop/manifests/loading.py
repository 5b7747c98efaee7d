"""Reading Kubernetes objects from text: JSON or YAML, one object or many.

:func:`load_objects` accepts what people actually paste or pipe in:

* a single object, in JSON or YAML;
* a list object, ``kind: List`` or any ``<Kind>List`` (``NodeList``,
  ``PodList``, ...) with ``items``, as ``kubectl get -o json`` and the API
  server write them; items of a typed list that lack ``kind`` or
  ``apiVersion`` (raw API list responses omit them) get them from the list;
* a YAML stream of several documents separated by ``---``; empty documents
  are skipped;
* a JSON stream: JSON values one after another, as ``kubectl get node a -o json``
  run once per node or ``jq '.items[]'`` print them (kubectl reads such a stream too);
* ``kubectl describe node`` output, one node or many (`gpuop.manifests.describe`): each
  node as a Node, each pod it lists as a Pod known by name.

It returns a flat list of plain dicts.  Anything it cannot read raises
:class:`ManifestError`, which names the source, the document (1-based) and,
where the parser knows it, the line and column, so a command can print one
line instead of a traceback.

Nesting is bounded: a value more than :data:`MAX_NESTING` mappings and lists
deep is refused as "nested too deeply to read", whichever parser read it, so
no later step (validation, copying, printing) can run out of stack on it.
Real objects nest a few dozen levels at most.  :func:`check_nesting` is the
guard, for commands that parse documents themselves.

YAML aliases are bounded too: PyYAML builds an alias as a second reference to the
anchored value, so a "billion laughs" document loads in milliseconds but holds
billions of values to anything that walks it.  A document whose aliases add more
than :data:`MAX_ALIAS_EXPANSION` values is refused (:func:`check_aliases`), before
any walk.  :func:`load_yaml_documents` is the one YAML reader with both guards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from itertools import accumulate
from typing import Any, Final

import yaml

from gpuop.api.wording import value_kind
from gpuop.manifests.dra_versions import as_v1
from gpuop.manifests.posted import parse_posted

__all__ = [
    "ALIAS_BOMB",
    "MAX_ALIAS_EXPANSION",
    "MAX_NESTING",
    "NESTED_TOO_DEEPLY",
    "ManifestError",
    "alias_growth",
    "check_aliases",
    "check_nesting",
    "load_json_documents",
    "load_objects",
    "load_yaml_documents",
]

MAX_NESTING = 100
"""The deepest nesting of mappings and lists any command reads."""

NESTED_TOO_DEEPLY = "nested too deeply to read"

MAX_ALIAS_EXPANSION = 100_000
"""The most values YAML aliases may add to a document (anchors reused a few times add tens)."""

ALIAS_BOMB = "its YAML aliases expand it past"


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


def _children(value: Any) -> Any:
    """The values of a mapping or list (None for a scalar)."""
    if type(value) is dict or isinstance(value, Mapping):
        return value.values()
    if type(value) is list:
        return value
    return None


def alias_growth(value: Any, limit: int = MAX_ALIAS_EXPANSION) -> int:
    """How many values YAML aliases add to ``value``, counted up to ``limit + 1``.

    An alias is a second reference to a mapping or list already met; it adds as many
    values as that one holds, expanded. Each distinct container is walked once (so a
    bomb costs what its text does), iteratively; a value that contains itself counts
    as past the limit.
    """
    sizes: dict[int, int] = {}  # container -> its values, aliases expanded
    entered: set[int] = set()
    growth = 0
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, leaving = stack.pop()
        key = id(item)
        children = _children(item)
        if children is None:
            continue  # a scalar document
        if leaving:
            size = 1
            for child in children:
                size += 1 if _children(child) is None else sizes[id(child)]
            sizes[key] = min(size, limit + 1)
            continue
        if key in sizes:
            growth += sizes[key]
            if growth > limit:
                return limit + 1
            continue
        if key in entered:
            return limit + 1  # an alias of one of its own ancestors: endless
        entered.add(key)
        stack.append((item, True))
        stack.extend((child, False) for child in children if _children(child) is not None)
    return growth


def check_aliases(value: Any, source: str, document: int | None = None) -> None:
    """Raise :class:`ManifestError` when YAML aliases add more than MAX_ALIAS_EXPANSION values."""
    if alias_growth(value) > MAX_ALIAS_EXPANSION:
        raise ManifestError(
            source,
            f"{ALIAS_BOMB} {MAX_ALIAS_EXPANSION:,} values (a billion-laughs alias bomb?)",
            document=document,
        )


_NOT_BRACKETS: Final = bytes(byte for byte in range(256) if byte not in b"[]{}")
# Below this size, counting brackets first often settles it; above, it is a wasted pass.
_COUNT_FIRST_BELOW: Final = 1 << 20
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def flow_nesting_exceeds(text: str, limit: int = MAX_NESTING) -> bool:
    """Whether `[` and `{` open more than `limit` levels somewhere in `text`.

    libyaml parses flow collections by recursion in C, where a few tens of thousands of
    levels end the process with a segmentation fault before any Python check can run; this
    bound is taken first. For JSON it is the nesting itself, found without walking the
    parsed objects. Brackets inside quoted strings are counted too, so the bound errs on
    the refusing side only for strings that open more than `limit` brackets unclosed.

    Everything runs in C, fast enough for a dump of a whole fleet: the brackets are cut
    out of the encoded text, then innermost pairs removed pass after pass (a balanced text
    of depth d is empty after at most d passes); only text left unbalanced by brackets in
    strings is counted level by level.
    """
    if len(text) <= limit or (
        len(text) < _COUNT_FIRST_BELOW and text.count("[") + text.count("{") <= limit
    ):
        return False
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        encoded = text.encode("utf-8", "surrogatepass")
    brackets = encoded.translate(None, _NOT_BRACKETS)
    pairs = brackets.replace(b"{", b"[").replace(b"}", b"]")
    for _ in range(limit):
        inner = pairs.replace(b"[]", b"")
        if not inner:
            return False
        if len(inner) == len(pairs):
            break
        pairs = inner
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


_MERGE_TAG: Final = "tag:yaml.org,2002:merge"


def _refuse_duplicate_keys(node: yaml.MappingNode) -> None:
    """A ConstructorError at the second of two equal keys of one mapping. YAML readers keep
    the last value, which loses the first silently: two `kubectl get -o yaml` outputs
    joined without a `---` line become one mapping whose `items` is the second's alone."""
    seen: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        key = (key_node.tag, key_node.value)
        first = seen.setdefault(key, key_node.start_mark.line)
        if first != key_node.start_mark.line:
            joined = (
                "; two documents joined without a '---' line between them?"
                if key_node.start_mark.column == 0
                else ""
            )
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"{key_node.value!r} is given twice in one mapping (first on line {first + 1})"
                + joined,
                key_node.start_mark,
            )


def _strict(loader: Any) -> Any:
    """`loader` refusing a mapping with a key given twice (`_refuse_duplicate_keys`)."""

    class Strict(loader):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                _refuse_duplicate_keys(node)
            return super().construct_mapping(node, deep=deep)

    Strict.__name__ = f"Strict{loader.__name__}"
    return Strict


_SAFE_LOADER: Final = _strict(yaml.SafeLoader)
_FAST_LOADER: Final = _strict(getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _yaml_loader(fast: bool) -> Any:
    return _FAST_LOADER if fast else _SAFE_LOADER


def load_yaml_documents(
    text: str, source: str, *, keep_empty: bool = False, fast: bool = False
) -> list[Any]:
    """Every YAML document of ``text`` (JSON is YAML too), aliases and nesting bounded.

    Empty documents are left out unless ``keep_empty``; ``fast`` reads with libyaml where
    PyYAML has it. Raises :class:`ManifestError` with the document and line for text that
    is not YAML, nests too deeply or is an alias bomb.
    """
    documents: list[Any] = []
    number = 0
    if fast and flow_nesting_exceeds(text):
        raise ManifestError(source, NESTED_TOO_DEEPLY)
    try:
        for number, value in enumerate(yaml.load_all(text, Loader=_yaml_loader(fast)), start=1):
            if value is None and not keep_empty:
                continue
            if "*" in text:
                check_aliases(value, source, number)
            check_nesting(value, source, number)
            documents.append(value)
    except (yaml.YAMLError, RecursionError) as exc:
        raise _yaml_failure(exc, source, number + 1) from None
    return documents


def _yaml_failure(exc: BaseException, source: str, document: int) -> ManifestError:
    """The one-line error for YAML that does not parse (with its position when known)."""
    if isinstance(exc, RecursionError):
        return ManifestError(source, NESTED_TOO_DEEPLY, document=document)
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "not valid YAML"
        return ManifestError(
            source,
            f"not valid YAML: {problem}",
            document=document,
            line=mark.line + 1 if mark is not None else None,
            column=mark.column + 1 if mark is not None else None,
        )
    return ManifestError(source, f"not valid YAML: {exc}", document=document)


def _flatten(
    obj: Mapping[str, Any], source: str, document: int | None, path: str
) -> Iterator[dict[str, Any]]:
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ManifestError(source, f"{path} has no 'kind'", document=document)
    if not (kind.endswith("List") and "items" in obj):
        # DRA objects of older resource.k8s.io versions are read as v1 (`dra_versions`).
        yield as_v1(dict(obj))
        return
    items = obj.get("items")
    if items is None:
        return
    if not isinstance(items, list):
        raise ManifestError(
            source,
            f"{path} ({kind}): 'items' is {value_kind(items)}, not a list",
            document=document,
        )
    item_kind = kind[: -len("List")]
    api_version = obj.get("apiVersion")
    for index, item in enumerate(items):
        item_path = f"{path}.items[{index}]"
        if not isinstance(item, Mapping):
            raise ManifestError(
                source,
                f"{item_path} is {value_kind(item)}, not a Kubernetes object",
                document=document,
            )
        filled = dict(item)
        if item_kind and not filled.get("kind"):
            filled["kind"] = item_kind
        if item_kind and not filled.get("apiVersion") and isinstance(api_version, str):
            filled["apiVersion"] = api_version
        yield from _flatten(filled, source, document, item_path)


def _top_level(
    value: Any,
    source: str,
    document: int | None,
    aliases: bool = False,
    nesting_checked: bool = False,
) -> Iterator[dict[str, Any]]:
    if value is None:
        return
    if aliases:
        check_aliases(value, source, document)
    if not nesting_checked:
        check_nesting(value, source, document)
    if not isinstance(value, Mapping):
        hint = ""
        if isinstance(value, str) and _KUBECTL_TABLE.search(value[:4096]):
            hint = (
                "; it is a `kubectl get` table, of which gpuop reads `get nodes --show-labels`,"
                " `get pods -o wide` (the NODE column) and `get daemonsets`: give those, or"
                " `-o yaml`"
            )
        raise ManifestError(
            source,
            f"expected a Kubernetes object (a mapping), got {value_kind(value)}{hint}",
            document=document,
        )
    yield from _flatten(value, source, document, "object")


# A table as `kubectl get` prints it, its lines folded into one string by YAML: the NAME
# column and one of the columns kubectl prints after it.
_KUBECTL_TABLE: Final = re.compile(r"\bNAME\s+(?:READY|STATUS|ROLES|AGE|TYPE|DATA|DESIRED|CLASS)\b")


def load_json_documents(text: str) -> list[Any]:
    """The JSON values of `text`: one, or several one after another (a JSON stream, JSON
    Lines), separated by whitespace or nothing. Raises `json.JSONDecodeError` (with the line
    and column) where `text` is not that."""
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position] in " \t\r\n":
            position += 1  # raw_decode takes no whitespace before a value
        if position == len(text):
            return values
        value, position = decoder.raw_decode(text, position)
        values.append(value)


def _load_json(text: str, source: str) -> list[dict[str, Any]]:
    if flow_nesting_exceeds(text):
        raise ManifestError(source, f"{NESTED_TOO_DEEPLY} (more than {MAX_NESTING} levels)")
    values = load_json_documents(text)
    objects: list[dict[str, Any]] = []
    for number, value in enumerate(values, start=1):
        document = number if len(values) > 1 else None
        objects.extend(_top_level(value, source, document, nesting_checked=True))
    return objects


def _load_yaml(text: str, source: str) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    document = 0
    try:
        aliases = "*" in text
        for document, value in enumerate(yaml.load_all(text, Loader=_SAFE_LOADER), start=1):
            objects.extend(_top_level(value, source, document, aliases))
    except (yaml.YAMLError, RecursionError) as exc:
        raise _yaml_failure(exc, source, document + 1) from None
    return objects


def load_objects(text: str, source: str = "<input>") -> list[dict[str, Any]]:
    """Every Kubernetes object in ``text``, lists flattened, in order.

    JSON is tried first when the text starts with ``{`` or ``[``; if it is
    not valid JSON the text is read as YAML (a superset of JSON), and if
    that fails too the JSON error is reported, being the more precise one.
    """
    body = text.lstrip("\ufeff")
    if body.lstrip(" \t\r\n")[:1] not in ("{", "[") and (posted := parse_posted(body)):
        return posted.objects
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
