"""The one kind table: each kind's resource names that kind, and scopes are the API's."""

from __future__ import annotations

import subprocess
import sys

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


def test_the_lean_kinds_load_after_lightkube_read_such_an_object_first() -> None:
    # lightkube registers its typed Node when its codecs first read a Node; importing the
    # kinds after that must still give lean classes, not fail on a second registration.
    script = (
        "from lightkube.codecs import from_dict\n"
        "from lightkube.generic_resource import GenericGlobalResource as G\n"
        "from lightkube.generic_resource import GenericNamespacedResource as N\n"
        "from_dict({'apiVersion': 'v1', 'kind': 'Node', 'metadata': {'name': 'a'}})\n"
        "from_dict({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'p'}})\n"
        "from gpuop.kube import kinds\n"
        "assert issubclass(kinds.lean('Node'), G) and issubclass(kinds.lean('Pod'), N)\n"
        "assert kinds.lean('Node')._api_info.plural == 'nodes'\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
