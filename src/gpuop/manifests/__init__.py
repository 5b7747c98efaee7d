"""Kubernetes objects as text: loading manifests and reading quantities.

This package is pure (no I/O beyond the string it is handed) and imports
nothing from the rest of gpuop, so every layer can use it:

* :func:`load_objects` turns JSON or YAML text (single objects, ``List``
  kinds, multi-document streams) into a flat list of dicts, raising
  :class:`ManifestError` with the source, document and line on bad input;
  :func:`check_nesting` bounds nesting for documents parsed elsewhere, and
  :func:`load_yaml_documents` reads any YAML with nesting and aliases bounded;
* :func:`parse_quantity` reads a ``resource.Quantity`` exactly as the API
  server does, raising :class:`QuantityError` on bad input;
* :mod:`gpuop.manifests.fields` reads fields from those dicts without
  tripping over missing or mistyped values.
"""

from gpuop.manifests.loading import (
    ALIAS_BOMB,
    MAX_ALIAS_EXPANSION,
    MAX_NESTING,
    NESTED_TOO_DEEPLY,
    ManifestError,
    alias_growth,
    check_aliases,
    check_nesting,
    load_json_documents,
    load_objects,
    load_yaml_documents,
)
from gpuop.manifests.quantity import (
    MAX_QUANTITY,
    QuantityError,
    format_quantity,
    milli_value,
    parse_quantity,
    quantity_problem,
    value,
)

__all__ = [
    "ALIAS_BOMB",
    "MAX_ALIAS_EXPANSION",
    "MAX_NESTING",
    "MAX_QUANTITY",
    "NESTED_TOO_DEEPLY",
    "ManifestError",
    "QuantityError",
    "alias_growth",
    "check_aliases",
    "check_nesting",
    "format_quantity",
    "load_json_documents",
    "load_objects",
    "load_yaml_documents",
    "milli_value",
    "parse_quantity",
    "quantity_problem",
    "value",
]
