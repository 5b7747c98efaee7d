"""Which release a ClusterPolicy runs, from its pinned operand versions."""

from __future__ import annotations

from typing import Any

import pytest

from gpuop.catalog.versions import version_matrix
from gpuop.check.release import describe_releases, pinned_versions, release_in_use
from gpuop.check.release import detect_release as detect_operator_release
from gpuop.check.state import ClusterState
from gpuop.policy import ResolvedPolicy, parse_cluster_policy
from kit.versions_support import cluster_policy

MATRIX = version_matrix()


def _policy(obj: dict[str, Any]) -> ResolvedPolicy:
    return parse_cluster_policy(obj, "test")


@pytest.mark.parametrize("release", MATRIX.release_names)
def test_a_helm_rendered_policy_names_exactly_its_release(release: str) -> None:
    detection = release_in_use(MATRIX, _policy(cluster_policy(release)))
    assert detection.names == (release,)
    assert detection.source == "policy" and not detection.mixed and not detection.unknown


def test_the_driver_is_not_evidence() -> None:
    policy = _policy(cluster_policy("26.7.0", versions={"driver": "580.173.02"}))
    detection = release_in_use(MATRIX, policy)
    assert detection.names == ("26.7.0",) and not detection.mixed
    assert detection.driver is not None and detection.driver.version == "580.173.02"


def test_no_pinned_versions_means_gpuops_defaults() -> None:
    detection = release_in_use(MATRIX, _policy(cluster_policy()))
    assert detection.source == "default"
    assert detection.names == ("26.7.0",)


def test_no_policy_means_unknown() -> None:
    detection = release_in_use(MATRIX, None)
    assert not detection.known and detection.source == "none"
    assert detection.describe(MATRIX) == "unknown"


def test_a_shared_version_leaves_every_release_that_ships_it() -> None:
    detection = release_in_use(MATRIX, _policy(cluster_policy(versions={"dcgm": "4.5.2-1"})))
    assert detection.names == ("26.3.0", "26.3.1", "26.3.2", "26.3.3")
    assert detection.describe(MATRIX) == "one of 26.3.0–26.3.3"
    assert not detection.mixed


def test_mixed_releases_are_named_operand_by_operand() -> None:
    obj = cluster_policy("26.7.0", versions={"devicePlugin": "v0.19.3", "gfd": "v0.19.3"})
    detection = release_in_use(MATRIX, _policy(obj))
    assert detection.mixed
    assert detection.names == ("26.7.0",)  # most pinned versions come from it
    shipping = {p.block: detection.shipping(p) for p in detection.pinned}
    assert shipping["devicePlugin"] == ("26.3.3",)
    assert shipping["toolkit"] == ("26.7.0",)
    assert {p.block for p in detection.mismatched()} == {"devicePlugin", "gfd"}


def test_tags_compare_without_v_and_distro_suffix() -> None:
    obj = cluster_policy("26.7.0", versions={"toolkit": "1.20.0-ubuntu22.04"})
    assert release_in_use(MATRIX, _policy(obj)).names == ("26.7.0",)


def test_an_image_reference_with_a_tag_counts_as_pinned() -> None:
    obj = cluster_policy(
        spec={"toolkit": {"image": "nvcr.io/nvidia/k8s/container-toolkit:v1.19.1"}}
    )
    pinned = pinned_versions(_policy(obj))
    assert [(p.block, p.version) for p in pinned] == [("toolkit", "v1.19.1")]
    assert release_in_use(MATRIX, _policy(obj)).names == ("26.3.2", "26.3.3")


def test_unknown_versions_and_digests_are_not_evidence() -> None:
    obj = cluster_policy(versions={"toolkit": "v9.9.9", "devicePlugin": "sha256:" + "0" * 64})
    detection = release_in_use(MATRIX, _policy(obj))
    assert not detection.known and detection.source == "none"
    assert {p.block for p in detection.unknown} == {"toolkit", "devicePlugin"}
    mixed = cluster_policy("26.7.0", versions={"toolkit": "v9.9.9"})
    found = release_in_use(MATRIX, _policy(mixed))
    assert found.names == ("26.7.0",) and not found.mixed
    assert [p.block for p in found.unknown] == ["toolkit"]


def test_operands_the_policy_does_not_deploy_are_ignored() -> None:
    obj = cluster_policy(
        "26.7.0", versions={"vfioManager": "13.0.1-base-ubi9"}, spec={"dcgm": {"enabled": False}}
    )
    pinned = {p.block for p in pinned_versions(_policy(obj))}
    assert "vfioManager" not in pinned  # sandbox workloads are off
    assert "dcgm" not in pinned
    assert release_in_use(MATRIX, _policy(obj)).names == ("26.7.0",)


def test_a_requested_release_wins_and_mismatches_are_kept() -> None:
    policy = _policy(cluster_policy("26.7.0"))
    detection = release_in_use(MATRIX, policy, "26.3.3")
    assert detection.names == ("26.3.3",) and detection.source == "option"
    assert detection.mixed
    unknown = release_in_use(MATRIX, policy, "27.1.0")
    assert not unknown.known and unknown.requested == "27.1.0"


def _operator(image: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-operator", "namespace": "gpu-operator", "labels": labels or {}},
        "spec": {"template": {"spec": {"containers": [{"name": "op", "image": image}]}}},
    }


def test_the_operator_naming_itself_wins_over_the_policys_versions() -> None:
    objects = [cluster_policy("26.7.0"), _operator("nvcr.io/nvidia/gpu-operator:v26.3.3")]
    observed = detect_operator_release(ClusterState.from_objects(objects))
    detection = release_in_use(MATRIX, _policy(cluster_policy("26.7.0")), None, observed)
    assert detection.names == ("26.3.3",) and detection.source == "operator"
    assert detection.mixed  # its ClusterPolicy pins another release's operands
    assert "gpu-operator:v26.3.3" in detection.basis()
    # Without a ClusterPolicy at all the operator still names the release.
    assert release_in_use(MATRIX, None, None, observed).names == ("26.3.3",)


def test_only_the_operator_itself_names_the_release() -> None:
    validator = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-operator-validator", "namespace": "gpu-operator"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "v", "image": "nvcr.io/nvidia/gpu-operator-validator:v26.3.3"}
                    ]
                }
            }
        },
    }
    policy = cluster_policy("26.7.0")
    observed = detect_operator_release(ClusterState.from_objects([policy, validator]))
    assert observed.version == "26.3.3" and not observed.from_operator
    detection = release_in_use(MATRIX, _policy(policy), None, observed)
    assert detection.names == ("26.7.0",) and detection.source == "policy"
    helm = _operator(
        "nvcr.io/nvidia/gpu-operator@sha256:0123", {"helm.sh/chart": "gpu-operator-v26.3.1"}
    )
    observed = detect_operator_release(ClusterState.from_objects([policy, helm]))
    assert release_in_use(MATRIX, _policy(policy), None, observed).names == ("26.3.1",)


def test_describe_releases_joins_runs() -> None:
    assert describe_releases(MATRIX, ["26.3.3", "26.3.1", "26.3.2"]) == "26.3.1–26.3.3"
    assert describe_releases(MATRIX, ["24.9.2", "25.3.0", "26.7.0"]) == "24.9.2–25.3.0, 26.7.0"
    assert describe_releases(MATRIX, ["26.7.0"]) == "26.7.0"
    assert describe_releases(MATRIX, []) == ""
