"""What the fuzz tests share: example counts sized by the Hypothesis profile, and a cheap
mutator of JSON-like objects for the checker's and the explainer's fuzz counts (replace the
value at random paths with odd values, empty ones, or a value of the right shape moved to
the wrong place)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import settings


def scaled(count: int) -> int:
    """`count`, the number of inputs a test was sized for under the `ci` profile, under the
    loaded one: a tenth under `dev`, ten times under `deep` (see tests/conftest.py)."""
    ci = settings.get_profile("ci").max_examples
    return max(1, count * settings.default.max_examples // ci)


ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**70,
    1.5,
    float("nan"),
    float("inf"),
    "",
    "true",
    "-1",
    "1e999",
    "2Ki",
    "x" * 70_000,
    "é" * 300,
    "\x00\n",
    [],
    {},
    [1, "a"],
    {"a": {"b": [1]}},
]


def value_paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into `obj` (keys and list indexes), the empty path first."""
    found = [prefix]
    if isinstance(obj, dict):
        for key, value in obj.items():
            found.extend(value_paths(value, (*prefix, key)))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            found.extend(value_paths(value, (*prefix, index)))
    return found


def replaced(obj: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of `obj` with `new` at `path` (the containers on the way copied, not shared)."""
    if not path:
        return new
    head, *rest = path
    copy = list(obj) if isinstance(obj, list) else dict(obj)
    copy[head] = replaced(obj[head], tuple(rest), new)
    return copy


def value_at(obj: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def mutate(objects: list[Any], rng: random.Random, steps: int) -> list[Any]:
    """Replace (or drop) the value at ``steps`` random paths of ``objects``."""
    objects = list(objects)
    for _ in range(steps):
        index = rng.randrange(len(objects))
        paths = value_paths(objects[index])
        path = paths[rng.randrange(len(paths))]
        if path and rng.random() < 0.2:
            value: Any = rng.choice(["", None, {}])
        elif rng.random() < 0.3 and path:
            # Move a value of the right shape to the wrong place.
            other = rng.choice(paths)
            value = value_at(objects[index], other)
        else:
            value = rng.choice(ODD_VALUES)
        objects[index] = replaced(objects[index], path, value)
    return objects
