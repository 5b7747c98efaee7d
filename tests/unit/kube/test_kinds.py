"""The one kind table: each kind's resource names that kind, and scopes are the API's."""

from __future__ import annotations

import pytest

from gpuop.kube import kinds, ops


@pytest.mark.parametrize("kind", sorted(kinds.RESOURCES))
def test_each_kind_maps_to_a_resource_of_that_kind(kind: str) -> None:
    assert kinds.kind_of(kinds.resource(kind)) == kind


def test_scopes_are_read_from_the_resources() -> None:
    cluster_wide = {kind for kind in kinds.RESOURCES if not kinds.namespaced(kind)}
    assert cluster_wide == {
        "Node",
        "Namespace",
        "PersistentVolume",
        "RuntimeClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "ResourceSlice",
        "DeviceClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "CustomResourceDefinition",
        "ClusterPolicy",
        "GPUCluster",
    }


def test_every_kind_the_operator_manages_is_in_the_table() -> None:
    assert set(ops.MANAGED_KINDS) <= set(kinds.RESOURCES)
