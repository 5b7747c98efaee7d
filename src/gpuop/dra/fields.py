"""Typed reads of API dict fields, each failure a :class:`DraInputError` naming where."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuop.api.wording import value_kind
from gpuop.manifests.quantity import QuantityError, parse_quantity, value

__all__ = ["DraInputError", "boolean", "integer", "listing", "mapping", "quantity", "string"]


class DraInputError(ValueError):
    """A DRA object that cannot be read; the text is "where: what"."""


def mapping(obj: object, where: str) -> Mapping[str, Any]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise DraInputError(f"{where}: expected an object, got {value_kind(obj)}")
    return obj


def listing(obj: object, where: str) -> Sequence[Any]:
    if obj is None:
        return ()
    if not isinstance(obj, list | tuple):
        raise DraInputError(f"{where}: expected a list, got {value_kind(obj)}")
    return obj


def string(obj: object, where: str, *, required: bool = True) -> str:
    if obj is None and not required:
        return ""
    if not isinstance(obj, str) or (required and not obj):
        raise DraInputError(f"{where}: expected a non-empty string, got {obj!r}")
    return obj


def integer(obj: object, where: str, default: int) -> int:
    if obj is None:
        return default
    if isinstance(obj, bool) or not isinstance(obj, int):
        raise DraInputError(f"{where}: expected an integer, got {obj!r}")
    return obj


def boolean(obj: object, where: str) -> bool:
    if obj is None:
        return False
    if not isinstance(obj, bool):
        raise DraInputError(f"{where}: expected true or false, got {obj!r}")
    return obj


def quantity(obj: object, where: str) -> int:
    if isinstance(obj, bool) or not isinstance(obj, str | int | float):
        raise DraInputError(f"{where}: expected a quantity, got {obj!r}")
    try:
        return value(parse_quantity(str(obj)))
    except QuantityError as error:
        raise DraInputError(f"{where}: {error}") from None
