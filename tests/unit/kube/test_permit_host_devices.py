"""`permit_host_devices` adds KubeVirt host devices to the KubeVirt CR without losing the
entries already there (a merge patch replaces a list whole), or makes the CR."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gpuop.kube import ops
from gpuop.kube.errors import NotFound
from kit.fake_kube import FakeKube

A100 = {"pciVendorSelector": "10DE:20F1", "resourceName": "nvidia.com/GA100_A100_PCIE_40GB"}
T4 = {"pciVendorSelector": "10DE:1EB8", "resourceName": "nvidia.com/TU104GL_Tesla_T4"}


def _cr(permitted: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "virt"},
        "spec": {
            "configuration": {
                "developerConfiguration": {"featureGates": ["HostDevices"]},
                "permittedHostDevices": permitted,
            }
        },
    }


def _permitted(fake: FakeKube, namespace: str) -> dict[str, Any]:
    cr = fake.get_object("KubeVirt", "kubevirt", namespace)
    assert cr is not None
    return dict(cr["spec"]["configuration"]["permittedHostDevices"])


def test_the_cr_is_made_where_there_is_none() -> None:
    fake = FakeKube()
    where = asyncio.run(ops.permit_host_devices(fake.client, {"pciHostDevices": [A100]}))
    assert where == "kubevirt/kubevirt"
    assert _permitted(fake, "kubevirt") == {"pciHostDevices": [A100]}


def test_entries_are_added_to_those_the_cr_has_and_none_twice() -> None:
    mdev = {"mdevNameSelector": "NVIDIA A10-12Q", "resourceName": "nvidia.com/NVIDIA_A10-12Q"}
    fake = FakeKube([_cr({"pciHostDevices": [T4], "mediatedDevices": [mdev]})])
    permitted = {"pciHostDevices": [A100, T4]}
    assert asyncio.run(ops.permit_host_devices(fake.client, permitted)) == "virt/kubevirt"
    assert _permitted(fake, "virt") == {"pciHostDevices": [T4, A100], "mediatedDevices": [mdev]}
    cr = fake.get_object("KubeVirt", "kubevirt", "virt")
    assert cr is not None
    assert cr["spec"]["configuration"]["developerConfiguration"] == {
        "featureGates": ["HostDevices"]
    }
    asyncio.run(ops.permit_host_devices(fake.client, permitted))
    assert fake.calls.get(("patch", "KubeVirt")) == 1  # nothing new the second time


def test_a_cluster_without_kubevirts_crd_refuses_it() -> None:
    fake = FakeKube()
    fake.fail("list", "KubeVirt", 404, message="the server could not find the requested resource")
    with pytest.raises(NotFound):
        asyncio.run(ops.permit_host_devices(fake.client, {"pciHostDevices": [A100]}))
