"""One wording for long lists (the first few, and how many more) and for a value's type."""

from __future__ import annotations

import pytest

from gpuop.api.wording import listed, value_kind


def test_the_first_few_and_how_many_more() -> None:
    assert listed([], 3) == ""
    assert listed(["a", "b"], 3) == "a, b"
    assert listed(["a", "b", "c"], 3) == "a, b, c"
    assert listed(["a", "b", "c", "d", "e"], 3) == "a, b, c and 2 more"
    # Only the first few at hand, out of a larger total.
    assert listed(["a", "b"], 2, total=10) == "a, b and 8 more"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (None, "null"),
        (True, "a boolean"),
        (3, "a number"),
        (1.5, "a number"),
        ("x", "a string"),
        ([1], "a list"),
        ({"a": 1}, "a mapping"),
        (object(), "an object"),
    ],
)
def test_a_value_is_named_in_yaml_words(value: object, words: str) -> None:
    assert value_kind(value) == words
