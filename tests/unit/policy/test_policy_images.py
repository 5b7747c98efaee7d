"""Operand image resolution (gpu-operator-behaviour.md §1, `imagePath`)."""

from __future__ import annotations

from typing import Any

import pytest

from gpuop.catalog import operand_table
from gpuop.policy import PolicyError, ResolvedPolicy, parse_cluster_policy

DIGEST = "sha256:" + "ab" * 32


def policy(spec: dict[str, Any]) -> ResolvedPolicy:
    return parse_cluster_policy({"spec": spec})


def image(spec: dict[str, Any], operand: str = "driver", env: dict[str, str] | None = None) -> str:
    return policy(spec).image_for(operand_table().operand(operand), env)


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (
            {"repository": "r.example/nv", "image": "driver", "version": "595.91.07"},
            "r.example/nv/driver:595.91.07",
        ),
        (
            {"repository": "r.example/nv", "image": "driver", "version": DIGEST},
            f"r.example/nv/driver@{DIGEST}",
        ),
        ({"image": f"r.example/nv/driver@{DIGEST}"}, f"r.example/nv/driver@{DIGEST}"),
        ({"image": "driver:latest"}, "driver:latest"),
    ],
)
def test_spec_fields(block: dict[str, str], expected: str) -> None:
    assert image({"driver": block}) == expected
    # the spec wins over the operator's environment
    assert image({"driver": block}, env={"DRIVER_IMAGE": "env/driver:1"}) == expected


def test_env_var_when_the_spec_has_no_image() -> None:
    env = {"DRIVER_IMAGE": "env.example/driver:1", "VALIDATOR_IMAGE": "env.example/v:2"}
    assert image({}, env=env) == "env.example/driver:1"
    assert image({"driver": {"enabled": True}}, env=env) == "env.example/driver:1"
    assert image({}, "operator-validator", env) == "env.example/v:2"
    assert image({}, "node-status-exporter", env) == "env.example/v:2"


def test_catalog_default_when_nothing_is_set() -> None:
    assert image({}) == "nvcr.io/nvidia/driver:595.91.07"
    assert image({}, "container-toolkit") == "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0"
    assert image({}, "sandbox-validator") == (
        "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.7.0"
    )


@pytest.mark.parametrize(
    ("block", "missing"),
    [
        ({"repository": "r.example/nv"}, "image, version"),
        ({"repository": "r.example/nv", "image": "driver"}, "version"),
        ({"image": "driver", "version": "1"}, "repository"),
        ({"version": "1"}, "repository, image"),
        ({"repository": "r.example/nv", "version": "1"}, "image"),
    ],
)
def test_partial_image_fields_are_an_error(block: dict[str, str], missing: str) -> None:
    with pytest.raises(PolicyError) as caught:
        image({"driver": block}, env={"DRIVER_IMAGE": "ignored:1"})
    assert caught.value.problems == [
        f"spec.driver: {missing} must be set with the other image fields"
    ]


def test_validators_read_the_validator_block() -> None:
    spec = {"validator": {"repository": "r.example", "image": "v", "version": "9"}}
    assert image(spec, "operator-validator") == "r.example/v:9"
    assert image(spec, "sandbox-validator") == "r.example/v:9"


def test_vgpu_manager_has_no_public_image() -> None:
    with pytest.raises(PolicyError, match="no public image exists for vgpu-manager"):
        image({}, "vgpu-manager")
    assert image({}, "vgpu-manager", {"VGPU_MANAGER_IMAGE": "private/vgpu:1"}) == "private/vgpu:1"


def test_every_operand_has_a_default_image_but_the_vgpu_and_kata_managers() -> None:
    resolved = policy({})
    without = set()
    for operand in operand_table().operands:
        try:
            resolved.image_for(operand)
        except PolicyError:
            without.add(operand.name)
    assert without == {"vgpu-manager", "kata-manager"}  # no public image / deprecated
