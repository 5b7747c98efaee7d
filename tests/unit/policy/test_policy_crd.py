"""The generated ClusterPolicy CRD: in sync with deploy/crd.yaml, structural, complete."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuop.policy.crd import crd_manifest
from gpuop.policy.models import ClusterPolicySpec

FORBIDDEN_KEYS = {"$ref", "$defs", "anyOf", "oneOf", "allOf", "not", "title", "const"}


def schema() -> dict[str, Any]:
    root = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert isinstance(root, dict)
    return root


def spec_schema() -> dict[str, Any]:
    spec = schema()["properties"]["spec"]
    assert isinstance(spec, dict)
    return spec


def nodes(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from nodes(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from nodes(node["additionalProperties"], f"{path}{{}}")


def test_deploy_crd_yaml_is_the_generated_manifest(repo_root: Path) -> None:
    path = repo_root / "deploy" / "crd.yaml"
    expected = yaml.safe_dump(crd_manifest(), sort_keys=False)
    assert path.read_text(encoding="utf-8") == expected, (
        "deploy/crd.yaml is stale: run `gpuop policy crd > deploy/crd.yaml`"
    )


def test_identity() -> None:
    crd = crd_manifest()
    assert crd["metadata"]["name"] == "clusterpolicies.nvidia.com"
    assert crd["spec"]["group"] == "nvidia.com"
    assert crd["spec"]["scope"] == "Cluster"
    assert crd["spec"]["names"]["kind"] == "ClusterPolicy"
    assert crd["spec"]["names"]["plural"] == "clusterpolicies"
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}


def test_schema_is_structural() -> None:
    for path, node in nodes(schema()):
        assert not FORBIDDEN_KEYS & node.keys(), path
        if "properties" in node or "additionalProperties" in node:
            assert node.get("type") == "object", path
        if node.get("type") == "array":
            assert isinstance(node.get("items"), dict), path
        if path.count(".") > 1:  # below spec/status: every node says what it holds
            assert (
                "type" in node
                or node.get("x-kubernetes-int-or-string")
                or node.get("x-kubernetes-preserve-unknown-fields")
            ), path


def test_every_spec_field_is_in_the_schema() -> None:
    assert set(spec_schema()["properties"]) == set(ClusterPolicySpec.model_fields)


@pytest.mark.parametrize(
    ("path", "enum", "default"),
    [
        (
            "sandboxWorkloads.defaultWorkload",
            ["container", "vm-passthrough", "vm-vgpu"],
            "container",
        ),
        ("sandboxWorkloads.mode", ["kubevirt", "kata"], "kubevirt"),
        ("mig.strategy", ["none", "single", "mixed"], None),
        ("driver.imagePullPolicy", ["Always", "Never", "IfNotPresent"], None),
        ("driver.kernelModuleType", ["auto", "open", "proprietary"], None),
        ("daemonsets.updateStrategy", ["RollingUpdate", "OnDelete"], None),
        ("ccManager.defaultMode", ["on", "off", "devtools"], None),
        ("dcgmExporter.service.type", ["ClusterIP", "NodePort", "LoadBalancer"], None),
    ],
)
def test_enums_and_defaults(path: str, enum: list[str], default: str | None) -> None:
    node = spec_schema()
    for part in path.split("."):
        node = node["properties"][part]
    assert node["type"] == "string"
    assert node["enum"] == enum
    assert node.get("default") == default


def test_bounds_and_special_types() -> None:
    props = spec_schema()["properties"]
    assert props["dcgm"]["properties"]["hostPort"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 65535,
    }
    assert props["daemonsets"]["properties"]["rollingUpdate"]["properties"]["maxUnavailable"] == {
        "x-kubernetes-int-or-string": True,
        "minimum": 0,
        "pattern": "^[0-9]+%?$",
    }
    toleration = props["daemonsets"]["properties"]["tolerations"]["items"]
    assert toleration["properties"]["effect"]["enum"] == [
        "NoSchedule",
        "PreferNoSchedule",
        "NoExecute",
    ]
    upgrade_policy = props["driver"]["properties"]["upgradePolicy"]
    assert set(upgrade_policy["properties"]) == {
        "autoUpgrade",
        "maxParallelUpgrades",
        "maxUnavailable",
        "podDeletion",
        "waitForCompletion",
        "drain",
    }
    assert upgrade_policy["properties"]["maxUnavailable"]["x-kubernetes-int-or-string"] is True
    env = props["driver"]["properties"]["env"]["items"]
    assert env["required"] == ["name"]
    assert env["properties"]["name"]["minLength"] == 1


def test_status_has_the_state_enum() -> None:
    status = schema()["properties"]["status"]
    assert status["properties"]["state"]["enum"] == ["ignored", "ready", "notReady"]


def test_mig_manager_config_default_is_upstreams() -> None:
    """As upstream's CRD: `config.default` defaults to `all-disabled`, `config` itself not."""
    mig_manager = spec_schema()["properties"]["migManager"]
    config = mig_manager["properties"]["config"]
    assert "default" not in config
    assert config["properties"]["default"]["default"] == "all-disabled"
    assert "default" not in config["properties"]["name"]
