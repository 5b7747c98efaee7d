"""One wording for long lists: the first few, and how many more."""

from __future__ import annotations

from gpuop.api.wording import listed


def test_the_first_few_and_how_many_more() -> None:
    assert listed([], 3) == ""
    assert listed(["a", "b"], 3) == "a, b"
    assert listed(["a", "b", "c"], 3) == "a, b, c"
    assert listed(["a", "b", "c", "d", "e"], 3) == "a, b, c and 2 more"
    # Only the first few at hand, out of a larger total.
    assert listed(["a", "b"], 2, total=10) == "a, b and 8 more"
