"""Device selectors in CEL, evaluated as the API server's DRA environment does.

Kubernetes compiles a selector against one variable, ``device``, with ``driver``,
``allowMultipleAllocations``, ``attributes[domain][name]`` and ``capacity[domain][name]``
(quantities), plus its CEL libraries: quantities (``quantity()``, ``compareTo``,
``isGreaterThan``...), semantic versions (``semver()``, version attributes), the string
extensions (``lowerAscii``...), regular expressions. cel-python evaluates it here; what differs
from cel-go is aligned where selectors can see it:

* ``device.attributes["some.domain"]`` of a domain the device lacks is an empty map, so
  ``device.attributes["d"].x`` of a missing attribute is a runtime error ("no such key"), as
  cel-go's ``newStringInterfaceMapWithDefault`` makes it, and ``has()`` is false;
* ``==`` and ``!=`` across types are false and true (cel-go's heterogeneous equality);
* a result that is not a bool is an error.

The structured allocator treats a runtime error as fatal for the whole allocation attempt on a
node (``CEL runtime error`` from ``Allocate``), and the scheduler turns it into an Error status
that aborts the pod's scheduling cycle: the pod stays Pending, whatever other nodes offer.
:mod:`gpuop.dra.allocate` replays that; here :class:`CelError` carries it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

import celpy
import celpy.celtypes as ct
from celpy.evaluation import CELEvalError

from gpuop.dra.model import Device, Version
from gpuop.manifests.quantity import QuantityError, format_quantity, parse_quantity

__all__ = ["CelError", "Quantity", "Selector", "Semver", "compile_selector"]


class CelError(ValueError):
    """A selector that does not compile, or fails on a device; one line, with the expression."""

    def __init__(self, expression: str, problem: str, *, compile_time: bool) -> None:
        self.expression = expression
        self.problem = problem
        self.compile_time = compile_time
        kind = "CEL compile error" if compile_time else "CEL runtime error"
        super().__init__(f"{kind} in {expression!r}: {problem}")


class _DefaultMap(ct.MapType):
    """A map whose missing keys read as an empty map (cel-go's map with a default)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return ct.MapType({})


@functools.total_ordering
class Quantity:
    """A Kubernetes quantity as a CEL value (k8s.io/apiserver/pkg/cel/library/quantity.go)."""

    def __init__(self, number: Decimal) -> None:
        self.number = number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.number == other.number

    def __lt__(self, other: Quantity) -> bool:
        return self.number < other.number

    def __hash__(self) -> int:
        return hash(self.number)

    def __repr__(self) -> str:
        return f"quantity({format_quantity(self.number)!r})"


@functools.total_ordering
class Semver:
    """A semantic version as a CEL value (k8s.io/apiserver/pkg/cel/library/semverlib.go)."""

    _PATTERN: Final = re.compile(
        r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
        r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
        r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
    )

    def __init__(self, text: str) -> None:
        match = self._PATTERN.match(text)
        if match is None:
            raise ValueError(f"invalid semantic version {text!r}")
        self.text = text
        self.major, self.minor, self.patch = (int(match.group(i)) for i in (1, 2, 3))
        self.pre = tuple(match.group(4).split(".")) if match.group(4) else ()

    def _order(self) -> tuple[Any, ...]:
        # A release sorts after its pre-releases; numeric identifiers before alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, not self.pre, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self._order() == other._order()

    def __lt__(self, other: Semver) -> bool:
        return self._order() < other._order()

    def __hash__(self) -> int:
        return hash(self._order())

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


def _err(message: str, kind: type[Exception] = TypeError) -> CELEvalError:
    return CELEvalError(message, kind, None)


def _to_quantity(value: Any, fn: str) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, ct.IntType) and not isinstance(value, ct.BoolType):
        return Quantity(Decimal(int(value)))
    raise TypeError(f"{fn}: no such overload for {type(value).__name__}")


def _quantity(text: Any) -> Any:
    if not isinstance(text, str):
        return _err("quantity: expected a string")
    try:
        return Quantity(parse_quantity(str(text)))
    except QuantityError as error:
        return _err(f"quantity: {error}", ValueError)


def _is_quantity(text: Any) -> Any:
    try:
        parse_quantity(str(text))
    except QuantityError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _normalized(raw: str) -> str:
    """``semver(s, true)``: a leading "v" dropped, missing minor/patch as 0, leading zeros gone."""
    raw = raw.removeprefix("v")
    core, rest = re.match(r"^([0-9.]*)(.*)$", raw).groups()  # type: ignore[union-attr]
    parts = core.split(".") if core else []
    if not parts or not all(p.isdigit() for p in parts) or len(parts) > 3:
        return raw
    parts += ["0"] * (3 - len(parts))
    return ".".join(str(int(p)) for p in parts) + rest


def _semver(text: Any, normalize: Any = None) -> Any:
    raw = _normalized(str(text)) if normalize else str(text)
    try:
        return Semver(raw)
    except ValueError as error:
        return _err(f"semver: {error}", ValueError)


def _is_semver(text: Any, normalize: Any = None) -> Any:
    return ct.BoolType(isinstance(_semver(text, normalize), Semver))


def _compare(a: Any, b: Any) -> Any:
    if isinstance(a, Semver) and isinstance(b, Semver):
        return ct.IntType((a > b) - (a < b))
    qa, qb = _to_quantity(a, "compareTo"), _to_quantity(b, "compareTo")
    return ct.IntType((qa > qb) - (qa < qb))


def _greater(a: Any, b: Any) -> Any:
    return ct.BoolType(int(_compare(a, b)) > 0)


def _less(a: Any, b: Any) -> Any:
    return ct.BoolType(int(_compare(a, b)) < 0)


def _as_integer(q: Any) -> Any:
    number = _to_quantity(q, "asInteger").number
    if number != number.to_integral_value() or abs(number) >= 2**63:
        return _err("cannot convert value to integer", ValueError)
    return ct.IntType(int(number))


def _is_integer(q: Any) -> Any:
    number = _to_quantity(q, "isInteger").number
    return ct.BoolType(number == number.to_integral_value() and abs(number) < 2**63)


def _field(name: str) -> Callable[[Any], Any]:
    def get(value: Any) -> Any:
        if isinstance(value, Semver):
            return ct.IntType(getattr(value, name))
        raise TypeError(f"{name}: no such overload")

    return get


def _string_method(fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(s: Any, *args: Any) -> Any:
        if not isinstance(s, str):
            raise TypeError("no such overload")
        return fn(str(s), *args)

    return method


def _numeric(value: Any) -> bool:
    return isinstance(value, ct.IntType | ct.UintType | ct.DoubleType) and not isinstance(
        value, ct.BoolType
    )


def _equal(a: Any, b: Any) -> Any:
    if isinstance(a, CELEvalError):
        return a
    if isinstance(b, CELEvalError):
        return b
    if _numeric(a) and _numeric(b):
        return ct.BoolType(
            float(a) == float(b)
            if isinstance(a, ct.DoubleType) or isinstance(b, ct.DoubleType)
            else int(a) == int(b)
        )
    if type(a) is not type(b) and not (isinstance(a, ct.MapType) and isinstance(b, ct.MapType)):
        return ct.BoolType(False)
    return ct.BoolType(bool(a == b))


def _not_equal(a: Any, b: Any) -> Any:
    result = _equal(a, b)
    return result if isinstance(result, CELEvalError) else ct.BoolType(not result)


def _lower(s: str) -> Any:
    return ct.StringType("".join(c.lower() if c.isascii() else c for c in s))


def _upper(s: str) -> Any:
    return ct.StringType("".join(c.upper() if c.isascii() else c for c in s))


_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    "_==_": _equal,
    "_!=_": _not_equal,
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": _compare,
    "isGreaterThan": _greater,
    "isLessThan": _less,
    "asInteger": _as_integer,
    "isInteger": _is_integer,
    "asApproximateFloat": lambda q: ct.DoubleType(
        float(_to_quantity(q, "asApproximateFloat").number)
    ),
    "sign": lambda q: ct.IntType(_to_quantity(q, "sign").number.compare(Decimal(0))),
    "add": lambda a, b: Quantity(_to_quantity(a, "add").number + _to_quantity(b, "add").number),
    "sub": lambda a, b: Quantity(_to_quantity(a, "sub").number - _to_quantity(b, "sub").number),
    "major": _field("major"),
    "minor": _field("minor"),
    "patch": _field("patch"),
    "lowerAscii": _string_method(_lower),
    "upperAscii": _string_method(_upper),
    "trim": _string_method(lambda s: ct.StringType(s.strip())),
    "replace": _string_method(
        lambda s, old, new, n=-1: ct.StringType(s.replace(str(old), str(new), int(n)))
    ),
    "split": _string_method(
        lambda s, sep, n=-1: ct.ListType(
            [ct.StringType(p) for p in s.split(str(sep), int(n) - 1 if int(n) > 0 else -1)]
        )
    ),
    "indexOf": _string_method(lambda s, sub, start=0: ct.IntType(s.find(str(sub), int(start)))),
    "lastIndexOf": _string_method(lambda s, sub: ct.IntType(s.rfind(str(sub)))),
    "substring": _string_method(
        lambda s, a, b=None: ct.StringType(s[int(a) : None if b is None else int(b)])
    ),
    "charAt": _string_method(lambda s, i: ct.StringType(s[int(i) : int(i) + 1])),
    "join": lambda items, sep="": ct.StringType(str(sep).join(str(i) for i in items)),
}

#: Functions and methods the DRA environment knows (besides operators and macros).
_KNOWN: Final = (
    frozenset(_FUNCTIONS)
    | frozenset(celpy.evaluation.base_functions)
    | {
        "has",
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
    }
)


def _attr_value(value: Any) -> Any:
    if isinstance(value, bool):
        return ct.BoolType(value)
    if isinstance(value, int):
        return ct.IntType(value)
    if isinstance(value, Version):
        try:
            return Semver(value.text)
        except ValueError:
            return _err(f"parse semantic version: {value.text!r}", ValueError)
    return ct.StringType(value)


def _split(name: str) -> tuple[str, str]:
    domain, _, ident = name.rpartition("/")
    return domain, ident


def device_value(device: Device) -> ct.MapType:
    """``device`` as the DRA environment binds it."""
    attributes: dict[str, dict[Any, Any]] = {}
    for name, value in device.attributes.items():
        domain, ident = _split(name)
        attributes.setdefault(domain, {})[ct.StringType(ident)] = _attr_value(value)
    capacity: dict[str, dict[Any, Any]] = {}
    for name, amount in device.capacity.items():
        domain, ident = _split(name)
        capacity.setdefault(domain, {})[ct.StringType(ident)] = Quantity(Decimal(amount))
    return ct.MapType(
        {
            ct.StringType("driver"): ct.StringType(device.driver),
            ct.StringType("allowMultipleAllocations"): ct.BoolType(device.allow_multiple),
            ct.StringType("attributes"): _DefaultMap(
                {ct.StringType(d): ct.MapType(v) for d, v in attributes.items()}
            ),
            ct.StringType("capacity"): _DefaultMap(
                {ct.StringType(d): ct.MapType(v) for d, v in capacity.items()}
            ),
        }
    )


def _called_names(tree: Any) -> set[str]:
    """The function and method names an expression calls."""
    names: set[str] = set()
    for node in tree.iter_subtrees():
        if node.data in ("member_dot_arg", "ident_arg"):
            for child in node.children:
                if getattr(child, "type", None) == "IDENT":
                    names.add(str(child))
                    break
    return names


@dataclass(frozen=True)
class Selector:
    """A compiled device selector."""

    expression: str
    program: Any

    def evaluate(self, device: Device) -> bool:
        """Whether ``device`` matches; :class:`CelError` for a runtime error."""
        try:
            result = self.program.evaluate({"device": device_value(device)})
        except CELEvalError as error:
            raise CelError(self.expression, _message(error), compile_time=False) from None
        except (TypeError, ValueError, KeyError, ZeroDivisionError, RecursionError) as error:
            raise CelError(
                self.expression, str(error) or type(error).__name__, compile_time=False
            ) from None
        if isinstance(result, CELEvalError):
            raise CelError(self.expression, _message(result), compile_time=False)
        if not isinstance(result, ct.BoolType):
            raise CelError(
                self.expression,
                f"must evaluate to bool, got {type(result).__name__}",
                compile_time=False,
            )
        return bool(result)


def _message(error: CELEvalError) -> str:
    text = str(error.args[0]) if error.args else str(error)
    if text.startswith("no such member in mapping") or text == "no such key":
        detail = error.args[2] if len(error.args) > 2 and error.args[2] else ()
        key = text.partition(": ")[2] or (repr(str(detail[0])) if detail else "")
        return f"no such key: {key}".rstrip(": ")
    return text.split(" (in activation")[0]


_ENV: Final = celpy.Environment()


@functools.lru_cache(maxsize=1024)
def compile_selector(expression: str) -> Selector:
    """Compile a selector; :class:`CelError` (compile time) for a syntax error or an unknown function."""
    if not expression.strip():
        raise CelError(expression, "empty expression", compile_time=True)
    try:
        tree = _ENV.compile(expression)
    except Exception as error:  # celpy's parse errors have no common base beyond Exception
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CelError(expression, f"syntax error: {first}", compile_time=True) from None
    unknown = sorted(_called_names(tree) - _KNOWN)
    if unknown:
        raise CelError(expression, f"undeclared reference to {unknown[0]!r}", compile_time=True)
    return Selector(expression, _ENV.program(tree, functions=_FUNCTIONS))
