"""Kubernetes resource quantities (``resource.Quantity``), parsed exactly.

:func:`parse_quantity` is a port of apimachinery's ``ParseQuantity`` (and
its scanner ``parseQuantityString``), quirks included, so that a request
such as ``"1.5Gi"``, ``"250m"``, ``"1e3"`` or ``"0.5"`` means here exactly
what it means to the API server and to kube-scheduler:

* an optional sign, digits, an optional ``.`` and fraction digits, then an
  optional suffix: decimal SI (``n u m k M G T P E``), binary SI
  (``Ki Mi Gi Ti Pi Ei``) or a decimal exponent (``e3``, ``E-2``, ``e+6``);
* non-zero values are rounded *up* (away from zero) to a multiple of
  ``1n``, and magnitudes are capped at ``2**63 - 1``, as upstream does;
* the scanner's leniencies are kept: ``"+"``, ``"-"`` and ``"."`` read as
  zero, and ``"1."`` reads as one.

The result is a :class:`decimal.Decimal` holding the exact value.  The
scheduler's integer views of a quantity are :func:`milli_value` (cpu) and
:func:`value` (everything else); both round up, like ``MilliValue()`` and
``Value()``.  :func:`format_quantity` writes a value back in a canonical
form that :func:`parse_quantity` reads to the same number.
"""

from __future__ import annotations

import functools
import math
from decimal import ROUND_UP, Context, Decimal, InvalidOperation, localcontext
from typing import Any, Final

from gpuop.api.wording import value_kind

__all__ = [
    "MAX_QUANTITY",
    "QuantityError",
    "format_quantity",
    "milli_value",
    "parse_quantity",
    "quantity_problem",
    "value",
]

#: The largest magnitude a quantity can hold (apimachinery caps at int64).
MAX_QUANTITY: Final = Decimal(2**63 - 1)

_NANO: Final = Decimal("1e-9")
_DIGITS: Final = frozenset("0123456789")
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_DECIMAL_SUFFIXES: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_FORMAT_PROBLEM: Final = (
    "quantities must match the regular expression "
    r"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity.

    ``value`` is what was given; ``problem`` says what is wrong with it, in
    the API server's terms where it has them.
    """

    def __init__(self, value: object, problem: str) -> None:
        self.value = value
        self.problem = problem
        super().__init__(f"invalid quantity {value!r}: {problem}")


def _scan(text: str) -> tuple[bool, str, str, str]:
    """Split ``text`` into sign, integer digits, fraction digits and suffix.

    A line-for-line port of apimachinery's ``parseQuantityString``.
    """
    positive = True
    pos = 0
    end = len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1

    # Leading zeros; a string of nothing but zeros (or nothing) is zero.
    while True:
        if pos >= end:
            return positive, "0", "", ""
        if text[pos] != "0":
            break
        pos += 1

    i = pos
    while True:
        if i >= end:
            return positive, text[pos:end], "", ""
        if text[i] not in _DIGITS:
            break
        i += 1
    num = text[pos:i] or "0"
    pos = i

    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        i = pos
        while True:
            if i >= end:
                return positive, num, text[pos:end], ""
            if text[i] not in _DIGITS:
                break
            i += 1
        denom = text[pos:i]
        pos = i

    suffix_start = pos
    i = pos
    while True:
        if i >= end:
            return positive, num, denom, text[suffix_start:end]
        if text[i] not in _SUFFIX_CHARS:
            pos = i
            break
        i += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    i = pos
    while True:
        if i >= end:
            return positive, num, denom, text[suffix_start:end]
        if text[i] not in _DIGITS:
            break
        i += 1
    raise QuantityError(text, _FORMAT_PROBLEM)


def _go_parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: the integer, or None on error."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or any(ch not in _DIGITS for ch in body):
        return None
    number = int(text)
    if not _INT64_MIN <= number <= _INT64_MAX:
        return None
    return number


def _interpret(suffix: str) -> tuple[int, int] | None:
    """(base, exponent) for a suffix, or None when it is not one."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        parsed = _go_parse_int64(suffix[1:])
        if parsed is None:
            return None
        # Upstream converts with int32(parsed), which wraps.
        return 10, ((parsed + 2**31) % 2**32) - 2**31
    return None


def _context(size: int) -> Context:
    ctx = Context(prec=max(64, size + 48), rounding=ROUND_UP)
    ctx.Emax = 999_999_999_999_999_999
    ctx.Emin = -999_999_999_999_999_999
    return ctx


def _canonical(number: Decimal) -> Decimal:
    """An equal Decimal without trailing zeros (``Decimal(0)`` for zero)."""
    if number == 0:
        return Decimal(0)
    if number == number.to_integral_value():
        return Decimal(int(number))
    return number.normalize(_context(len(str(number))))


def parse_quantity(raw: str | int | float | Decimal) -> Decimal:
    """The exact value of a Kubernetes quantity.

    Strings are read as the API server reads them.  Numbers (what an
    unquoted YAML or JSON value becomes) are read through their decimal
    spelling, as the API server reads a JSON number.  Anything else, and
    any malformed string, raises :class:`QuantityError`.
    """
    if type(raw) is str:
        # A fleet spells its requests and capacities with a few strings, read again and again.
        return _parse_text(raw)
    return _parse(raw)


def _parse(raw: str | int | float | Decimal) -> Decimal:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float | Decimal):
        raise QuantityError(raw, f"expected a string or a number, got {value_kind(raw)}")
    if isinstance(raw, float) and not math.isfinite(raw):
        raise QuantityError(raw, "not a finite number")
    if isinstance(raw, Decimal) and not raw.is_finite():
        raise QuantityError(raw, "not a finite number")
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, float):
        text = repr(raw)
    else:
        text = str(raw)
    if not text:
        raise QuantityError(raw, _FORMAT_PROBLEM)
    try:
        positive, num, denom, suffix = _scan(text)
    except QuantityError as exc:
        raise QuantityError(raw, exc.problem) from None
    interpreted = _interpret(suffix)
    if interpreted is None:
        raise QuantityError(raw, f"unable to parse quantity's suffix {suffix!r}")
    base, exponent = interpreted

    with localcontext(_context(len(text))):
        try:
            number = Decimal(f"{num}.{denom}" if denom else num)
            number = number.scaleb(exponent) if base == 10 else number * (2**exponent)
            if number > MAX_QUANTITY:
                number = MAX_QUANTITY
            if number != 0:
                number = number.quantize(_NANO, rounding=ROUND_UP)
        except InvalidOperation as exc:  # pragma: no cover - guarded by the context size
            raise QuantityError(raw, f"cannot be represented ({exc})") from None
        if not positive:
            number = -number
    return _canonical(number)


_parse_text: Final = functools.lru_cache(maxsize=4096)(_parse)


def _ceil_away(number: Decimal) -> int:
    """Round away from zero to an integer (apimachinery's scaled rounding)."""
    with localcontext(_context(len(str(number)))):
        return int(number.to_integral_value(rounding=ROUND_UP))


def milli_value(quantity: Decimal) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded away from zero."""
    return _ceil_away(quantity.scaleb(3, _context(len(str(quantity)))))


def value(quantity: Decimal) -> int:
    """``Quantity.Value()``: units, rounded away from zero."""
    return _ceil_away(quantity)


_DECIMAL_BY_EXPONENT: Final = sorted(
    ((exp, suffix) for suffix, exp in _DECIMAL_SUFFIXES.items()), reverse=True
)
_BINARY_BY_EXPONENT: Final = sorted(
    ((exp, suffix) for suffix, exp in _BINARY_SUFFIXES.items()), reverse=True
)


def format_quantity(number: Decimal | int, *, binary: bool = False) -> str:
    """A canonical spelling of ``number`` that :func:`parse_quantity` reads back.

    Decimal form uses the largest SI suffix that leaves an integer mantissa
    (``1500m``, ``2k``, ``12``).  With ``binary=True``, integers of at least
    1024 that are multiples of a power of 1024 use the largest such binary
    suffix (``16Gi``); everything else falls back to the decimal form.  The
    value should already be on the ``1n`` grid, as parsed values are.
    """
    amount = Decimal(number)
    if amount == 0:
        return "0"
    ctx = _context(len(str(amount)))
    if binary and amount == amount.to_integral_value() and abs(amount) >= 1024:
        whole = int(amount)
        for exponent, suffix in _BINARY_BY_EXPONENT:
            if whole % (1 << exponent) == 0:
                return f"{whole >> exponent}{suffix}"
    for exponent, suffix in _DECIMAL_BY_EXPONENT:
        mantissa = amount.scaleb(-exponent, ctx)
        if mantissa == mantissa.to_integral_value():
            return f"{int(mantissa)}{suffix}"
    # Finer than 1n: not something parse_quantity produces; spell it plainly.
    return format(amount.normalize(ctx), "f")


def quantity_problem(raw: Any) -> str | None:
    """Why the API server would refuse `raw` as a resource quantity, or None."""
    try:
        parse_quantity(raw)
    except QuantityError as exc:
        shown = repr(raw)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return f"{shown} is not a quantity ({exc.problem})"
    return None
