"""The JSON of `plan`, `check` and `explain` follows the schemas in docs/schemas/.

Validated with `jsonschema` (a dev dependency) when it is installed, else with a small
validator of the keywords these schemas use, so the test runs in every environment.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import REPO_ROOT, RunCli

from gpuop.check.docs import REPORT_SCHEMA

SCHEMAS = REPO_ROOT / "docs" / "schemas"
sys.path.insert(0, str(REPO_ROOT / "scripts"))
import json_schemas  # noqa: E402

CHECK_CORPUS = REPO_ROOT / "tests" / "corpus" / "check"


def _schema(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    return data


def _mini(value: Any, schema: dict[str, Any], path: str = "$") -> None:
    if "const" in schema:
        assert value == schema["const"], path
    if "enum" in schema:
        assert value in schema["enum"], path
    if "pattern" in schema and isinstance(value, str):
        assert re.search(schema["pattern"], value), path
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        checks = {
            "object": lambda v: isinstance(v, dict),
            "array": lambda v: isinstance(v, list),
            "string": lambda v: isinstance(v, str),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
        }
        assert any(checks[name](value) for name in names), f"{path}: {value!r} is not {names}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            assert key in value, f"{path}.{key} missing"
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                _mini(item, properties[key], f"{path}.{key}")
            elif extra is False:
                raise AssertionError(f"{path}.{key} not allowed")
            elif isinstance(extra, dict):
                _mini(item, extra, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            _mini(item, schema["items"], f"{path}[{index}]")


def validate(value: Any, schema: dict[str, Any]) -> None:
    try:
        import jsonschema
    except ImportError:
        _mini(value, schema)
        return
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(value, schema, cls=jsonschema.Draft202012Validator)


def test_check_schema_file_is_the_documented_schema() -> None:
    assert _schema("check") == REPORT_SCHEMA, (
        "docs/schemas/check.schema.json is stale: write json.dumps(REPORT_SCHEMA, indent=2)"
    )


@pytest.mark.parametrize(
    "name",
    sorted(path.name for path in CHECK_CORPUS.glob("*.json") if path.name != "expected.json"),
)
def test_check_json_follows_the_schema(gpuop: RunCli, name: str) -> None:
    result = gpuop("check", str(CHECK_CORPUS / name), "-o", "json")
    assert result.code in (0, 1), result.stderr
    validate(json.loads(result.stdout), _schema("check"))


def test_kubevirt_check_json_follows_the_check_schema(gpuop: RunCli) -> None:
    result = gpuop(
        "kubevirt", "check", str(CHECK_CORPUS / "kubevirt-not-permitted.json"), "-o", "json"
    )
    validate(json.loads(result.stdout), _schema("check"))


@pytest.mark.parametrize("args", json_schemas.PLAN_ARGS, ids=" ".join)
def test_plan_json_follows_the_schema(args: list[str]) -> None:
    validate(json_schemas.run_json(args), _schema("plan"))


@pytest.mark.parametrize(
    "path",
    sorted((REPO_ROOT / "tests" / "golden" / "cli").glob("plan-*.json")),
    ids=lambda p: p.name,
)
def test_plan_golden_json_follows_the_schema(path: Path) -> None:
    validate(json.loads(path.read_text()), _schema("plan"))


@pytest.mark.parametrize("args", json_schemas.EXPLAIN_ARGS, ids=lambda a: Path(a[1]).name)
def test_explain_json_follows_the_schema(args: list[str]) -> None:
    document = json_schemas.run_json(args)
    for item in document if isinstance(document, list) else [document]:
        validate(item, _schema("explain"))
