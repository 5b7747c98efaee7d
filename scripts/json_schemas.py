"""Write docs/schemas/{plan,explain}.schema.json from the commands' JSON on sample inputs.

The check report's schema is written by hand (`gpuop.check.docs.REPORT_SCHEMA`); plan and
explain have many nested records, so their schemas are derived from real output: every key
seen in every sample is required, a key seen in some is optional, records refuse unknown
keys, and the mappings named in MAPS (labels, resources) take any key. Rerun after a change
to either command's JSON, and review the diff:

    PYTHONPATH=src .venv/bin/python scripts/json_schemas.py
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout, suppress
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXPLAIN = ROOT / "tests" / "corpus" / "explain"
PLAN_GOLDEN = ROOT / "tests" / "golden" / "cli"

# Objects keyed by data (label names, resource names, card models), not by field name.
MAPS = {
    "label_changes",
    "desired_labels",
    "advertises",
    "totals",
    "devices",
    "requests",
    "allocatable",
    "requested",
    "free",
    "advertised_by",
    "near_misses",
    "labels",
    "node_selector",
    "resources",
    "capacity",
    "missing",
    "remaining",
    "used",
    "allocation",
}

PLAN_ARGS = [
    ["plan", "--gpu", "A10", "--count", "2"],
    ["plan", "--gpu", "A10", "--count", "2", "--workload", "vm-vgpu"],
    ["plan", "--gpu", "A10", "--count", "2", "--workload", "vm-passthrough"],
    ["plan", "--gpu", "T4", "--workload", "vm-vgpu"],
    ["plan", "--gpu", "H100", "--count", "8"],
    ["plan", "--gpu", "L40S", "--count", "4", "--workload", "vm-passthrough"],
]

EXPLAIN_ARGS = [
    [
        "explain",
        str(EXPLAIN / name),
        "--cluster",
        str(EXPLAIN / "nodes.json"),
        str(EXPLAIN / "pods.json"),
        str(EXPLAIN / "kubevirt.json"),
    ]
    for name in (
        "pod-gpu.yaml",
        "pod-vgpu-24q.yaml",
        "pod-wrong-case.yaml",
        "vmi-passthrough.yaml",
        "vmi-vgpu.yaml",
        "vm-passthrough-two.yaml",
        "deployment.yaml",
    )
] + [
    [
        "explain",
        str(EXPLAIN / "dra" / name),
        "--cluster",
        str(EXPLAIN / "dra" / "cluster.json"),
    ]
    for name in (
        "pod-big-gpu.yaml",
        "pod-two-vfio.yaml",
        "claim-unknown-class.yaml",
        "claim-missing-attribute.yaml",
    )
]


def run_json(args: list[str]) -> Any:
    """`gpuop ARGS -o json` in this process."""
    from gpuop.cli import cli

    buffer = io.StringIO()
    with redirect_stdout(buffer), suppress(SystemExit):
        cli.main([*args, "-o", "json"], prog_name="gpuop", standalone_mode=False)
    return json.loads(buffer.getvalue())


def _type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def infer(samples: list[Any], key: str | None = None) -> dict[str, Any]:
    """A schema every sample satisfies."""
    types = sorted({_type(sample) for sample in samples})
    schema: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
    if "integer" in types and "number" in types:
        types.remove("integer")
    objects = [sample for sample in samples if isinstance(sample, dict)]
    arrays = [sample for sample in samples if isinstance(sample, list)]
    if objects:
        if key in MAPS:
            values = [value for obj in objects for value in obj.values()]
            schema["additionalProperties"] = infer(values) if values else {}
        else:
            keys = sorted({name for obj in objects for name in obj}, key=str)
            schema["required"] = [k for k in keys if all(k in obj for obj in objects)]
            schema["additionalProperties"] = False
            schema["properties"] = {
                k: infer([obj[k] for obj in objects if k in obj], k) for k in keys
            }
    if arrays:
        items = [item for array in arrays for item in array]
        schema["items"] = infer(items, key) if items else {}
    return schema


def schema_for(title: str, documents: list[Any]) -> dict[str, Any]:
    flat: list[Any] = []
    for document in documents:
        flat.extend(document if isinstance(document, list) else [document])
    body = infer(flat)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": "Derived from sample output by scripts/json_schemas.py.",
        **body,
    }


def main() -> int:
    plans = [run_json(args) for args in PLAN_ARGS]
    plans += [json.loads(path.read_text()) for path in sorted(PLAN_GOLDEN.glob("plan-*.json"))]
    explains = [run_json(args) for args in EXPLAIN_ARGS]
    out = ROOT / "docs" / "schemas"
    out.mkdir(parents=True, exist_ok=True)
    for name, title, docs in (
        ("plan", "gpuop plan -o json (one node)", plans),
        ("explain", "gpuop explain -o json (one workload)", explains),
    ):
        schema = schema_for(title, docs)
        if name == "explain":
            # A --live run names the cluster it read, as check does (not in offline samples).
            check = json.loads((out / "check.schema.json").read_text())
            schema["properties"]["cluster"] = check["properties"]["cluster"]
        path = out / f"{name}.schema.json"
        path.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
