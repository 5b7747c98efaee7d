"""The ClusterPolicy CustomResourceDefinition, generated from the typed models.

The API server validates what users apply against this schema, so invalid ClusterPolicies
are rejected at admission with the field named, before the operator ever sees them. The
schema is derived from `gpuop.policy.models` (pydantic's JSON schema, rewritten into a
structural OpenAPI v3 schema: references inlined, nullable unions flattened, enums and
bounds kept), so the models and the CRD cannot drift apart. `deploy/crd.yaml` is the
rendered file; a test fails when it is stale (`gpuop policy crd > deploy/crd.yaml`).
"""

from __future__ import annotations

from typing import Any

from gpuop.api.labels import APP_PART_OF_LABEL
from gpuop.policy.models import ClusterPolicySpec, ClusterPolicyStatus

GROUP = "nvidia.com"
VERSION = "v1"
KIND = "ClusterPolicy"
PLURAL = "clusterpolicies"
SINGULAR = "clusterpolicy"

_KEEP_KEYS = {
    "type",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
    "description",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
}


def _resolve_ref(ref: str, defs: dict[str, Any]) -> dict[str, Any]:
    name = ref.rsplit("/", 1)[-1]
    target = defs[name]
    assert isinstance(target, dict)
    return target


def _structural(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Rewrite one pydantic JSON-schema node into a structural schema node."""
    if "$ref" in node:
        merged = {
            **_resolve_ref(node["$ref"], defs),
            **{k: v for k, v in node.items() if k != "$ref"},
        }
        return _structural(merged, defs)
    if "anyOf" in node:
        options = [opt for opt in node["anyOf"] if opt.get("type") != "null"]
        extra = {k: v for k, v in node.items() if k not in ("anyOf", "title")}
        if node.get("x-kubernetes-int-or-string") or (
            {opt.get("type") for opt in options} == {"integer", "string"}
        ):
            return {"x-kubernetes-int-or-string": True, **_keep(extra)}
        if len(options) == 1:
            return _structural({**options[0], **extra}, defs)
        if all(opt.get("type") == "string" for opt in options) or any(
            opt.get("type") == "array" for opt in options
        ):
            # `string | list[string]` style unions: keep them open.
            return {"x-kubernetes-preserve-unknown-fields": True, **_keep(extra)}
        return _structural({**options[0], **extra}, defs)
    if "const" in node:
        return {"type": "string", "enum": [node["const"]]}
    result = _keep(node)
    node_type = node.get("type")
    if node_type == "object":
        properties = node.get("properties", {})
        if properties:
            result["properties"] = {
                name: _structural(child, defs) for name, child in properties.items()
            }
        additional = node.get("additionalProperties")
        if isinstance(additional, dict):
            result["additionalProperties"] = _structural(additional, defs)
        required = node.get("required")
        if required:
            result["required"] = list(required)
        if not properties and not isinstance(additional, dict):
            result["x-kubernetes-preserve-unknown-fields"] = True
    elif node_type == "array":
        result["items"] = _structural(node.get("items", {}), defs)
    return result


def _keep(node: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in node.items() if k in _KEEP_KEYS}
    if kept.get("default") is None:
        kept.pop("default", None)
    return kept


def _schema_for(model: type[ClusterPolicySpec] | type[ClusterPolicyStatus]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True)
    defs = raw.get("$defs", {})
    return _structural(raw, defs)


def crd_manifest() -> dict[str, Any]:
    """The full CustomResourceDefinition object."""
    spec_schema = _schema_for(ClusterPolicySpec)
    spec_schema["description"] = "ClusterPolicy defines the desired state of GPU nodes."
    status_schema = _schema_for(ClusterPolicyStatus)
    status_schema["description"] = "Observed state, written by the operator."
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{PLURAL}.{GROUP}",
            "labels": {APP_PART_OF_LABEL: "gpuop"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
            },
            "scope": "Cluster",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Status", "type": "string", "jsonPath": ".status.state"},
                        {
                            "name": "Age",
                            "type": "date",
                            "jsonPath": ".metadata.creationTimestamp",
                        },
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "ClusterPolicy is the Schema for the clusterpolicies API.",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema,
                                "status": status_schema,
                            },
                        }
                    },
                }
            ],
        },
    }
