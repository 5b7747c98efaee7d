"""resource.Quantity parsing, rounding and formatting."""

from __future__ import annotations

from decimal import Decimal, localcontext

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuop.manifests import (
    MAX_QUANTITY,
    QuantityError,
    format_quantity,
    milli_value,
    parse_quantity,
    value,
)

D = Decimal


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", D(0)),
        ("1", D(1)),
        ("-1", D(-1)),
        ("+1", D(1)),
        ("250m", D("0.25")),
        ("1.5", D("1.5")),
        ("0.5", D("0.5")),
        (".5", D("0.5")),
        ("1.", D(1)),
        ("007", D(7)),
        ("1n", D("1e-9")),
        ("1u", D("1e-6")),
        ("1k", D(1000)),
        ("1M", D(10**6)),
        ("1G", D(10**9)),
        ("1T", D(10**12)),
        ("1P", D(10**15)),
        ("1E", D(10**18)),
        ("1Ki", D(1024)),
        ("1.5Gi", D(1610612736)),
        ("16Gi", D(16 * 2**30)),
        ("1Ti", D(2**40)),
        ("1Pi", D(2**50)),
        ("1Ei", D(2**60)),
        ("1e3", D(1000)),
        ("1E3", D(1000)),
        ("1e+3", D(1000)),
        ("1e-3", D("0.001")),
        ("12e-1", D("1.2")),
        ("0.1n", D("1e-9")),  # rounded up to 1n
        ("-0.1n", D("-1e-9")),  # away from zero
        ("1e-20", D("1e-9")),
        ("1e100", MAX_QUANTITY),
        ("-1e100", -MAX_QUANTITY),
        ("9223372036854775808", MAX_QUANTITY),
        ("+", D(0)),  # the scanner's leniency, kept
        ("-", D(0)),
        (".", D(0)),
        ("-0", D(0)),
        (2, D(2)),
        (0.5, D("0.5")),
        (1e20, MAX_QUANTITY),
        (D("1E+3"), D(1000)),
    ],
)
def test_parse(text: str | int | float | Decimal, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "regular expression"),
        ("abc", "regular expression"),
        ("1.5.5", "regular expression"),
        (" 1", "regular expression"),
        ("1 ", "regular expression"),
        ("1K", "suffix 'K'"),
        ("1mi", "suffix 'mi'"),
        ("1e", "suffix 'e'"),
        ("1e+", "suffix 'e+'"),
        ("1Ki5", "suffix 'Ki5'"),
        ("1e99999999999999999999", "suffix"),
        ("1µ", "regular expression"),
        (True, "got a boolean"),
        (None, "got null"),
        ([1], "got a list"),
        (float("nan"), "not a finite number"),
        (float("inf"), "not a finite number"),
        (D("NaN"), "not a finite number"),
    ],
)
def test_parse_errors(text: object, problem: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)  # type: ignore[arg-type]
    assert problem in caught.value.problem
    assert caught.value.value == text or text != text


def test_scheduler_units_round_up() -> None:
    assert milli_value(parse_quantity("0.5m")) == 1
    assert milli_value(parse_quantity("1.0001")) == 1001
    assert value(parse_quantity("1.2")) == 2
    assert value(parse_quantity("-1.2")) == -2  # away from zero, as upstream
    assert value(parse_quantity("2Gi")) == 2 * 2**30


@pytest.mark.parametrize(
    ("number", "binary", "text"),
    [
        (D(0), False, "0"),
        (D("1.5"), False, "1500m"),
        (D(1000), False, "1k"),
        (D(1500000), False, "1500k"),
        (D("1e-9"), False, "1n"),
        (D(16 * 2**30), True, "16Gi"),
        (D(1536), True, "1536"),
        (D(1000), True, "1k"),
        (D(-2048), True, "-2Ki"),
    ],
)
def test_format(number: Decimal, binary: bool, text: str) -> None:
    assert format_quantity(number, binary=binary) == text


# Values on the 1n grid within the representable range.
nano_grid = st.integers(min_value=-(2**63 - 1) * 10**9, max_value=(2**63 - 1) * 10**9).map(
    lambda n: D(n).scaleb(-9)
)
SUFFIXES = {
    "n": D("1e-9"),
    "u": D("1e-6"),
    "m": D("1e-3"),
    "": D(1),
    "k": D(10**3),
    "M": D(10**6),
    "G": D(10**9),
    "T": D(10**12),
    "P": D(10**15),
    "E": D(10**18),
    "Ki": D(2**10),
    "Mi": D(2**20),
    "Gi": D(2**30),
    "Ti": D(2**40),
    "Pi": D(2**50),
    "Ei": D(2**60),
}


@settings(max_examples=300, deadline=None)
@given(nano_grid, st.booleans())
def test_format_round_trips(number: Decimal, binary: bool) -> None:
    assert parse_quantity(format_quantity(number, binary=binary)) == number


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**12),
    st.text(alphabet="0123456789", max_size=12),
    st.sampled_from(sorted(SUFFIXES)),
    st.booleans(),
)
def test_parse_matches_exact_arithmetic(
    whole: int, fraction: str, suffix: str, negative: bool
) -> None:
    text = f"{'-' if negative else ''}{whole}{'.' + fraction if fraction else ''}{suffix}"
    with localcontext(prec=100):
        exact = D(f"{whole}.{fraction or '0'}") * SUFFIXES[suffix]
        expected = min(exact, MAX_QUANTITY)
        if expected != 0:
            expected = expected.quantize(D("1e-9"), rounding="ROUND_UP")
        if negative:
            expected = -expected
    assert parse_quantity(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=-(10**30), max_value=10**30), st.integers(min_value=-40, max_value=40))
def test_exponent_form(mantissa: int, exponent: int) -> None:
    with localcontext(prec=100):
        exact = D(mantissa).scaleb(exponent)
        expected = max(min(exact, MAX_QUANTITY), -MAX_QUANTITY)
        if expected != 0:
            expected = expected.quantize(D("1e-9"), rounding="ROUND_UP")
    assert parse_quantity(f"{mantissa}e{exponent}") == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789.+-eEinumkKMGTP ", max_size=12) | st.text(max_size=8))
def test_any_text_parses_or_raises_quantity_error(text: str) -> None:
    try:
        result = parse_quantity(text)
    except QuantityError:
        return
    assert abs(result) <= MAX_QUANTITY
    assert result == result.quantize(D("1e-9"))
