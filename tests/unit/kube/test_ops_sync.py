"""The synchronous reads the lab makes through `gpuop.kube.ops`: lightkube objects in, dicts out
(with the API's own field names), so nothing above `gpuop.kube` touches lightkube's models."""

from __future__ import annotations

from typing import Any

from lightkube.models.apiextensions_v1 import (
    CustomResourceDefinitionCondition,
    CustomResourceDefinitionNames,
    CustomResourceDefinitionSpec,
    CustomResourceDefinitionStatus,
    CustomResourceDefinitionVersion,
)
from lightkube.models.core_v1 import Container, ObjectReference, PodSpec, ResourceRequirements
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Event, Pod

from gpuop.kube import ops


class FakeClient:
    def __init__(self, objects: dict[Any, list[Any]]) -> None:
        self.objects = objects
        self.deleted: list[tuple[Any, str, str | None, int | None]] = []

    def list(self, kind: Any, namespace: str | None = None) -> list[Any]:
        return [o for o in self.objects.get(kind, []) if o.metadata.namespace == namespace]

    def get(self, kind: Any, name: str, namespace: str | None = None) -> Any:
        (found,) = [o for o in self.objects.get(kind, []) if o.metadata.name == name]
        return found

    def delete(
        self, kind: Any, name: str, namespace: str | None = None, grace_period: int | None = None
    ) -> None:
        self.deleted.append((kind, name, namespace, grace_period))


def _pod(name: str, limits: dict[str, str]) -> Pod:
    container = Container(name="c", resources=ResourceRequirements(limits=limits))
    return Pod(
        metadata=ObjectMeta(name=name, namespace="lab"), spec=PodSpec(containers=[container])
    )


def _crd(established: str | None) -> CustomResourceDefinition:
    spec = CustomResourceDefinitionSpec(
        group="nvidia.com",
        names=CustomResourceDefinitionNames(kind="ClusterPolicy", plural="clusterpolicies"),
        scope="Cluster",
        versions=[CustomResourceDefinitionVersion(name="v1", served=True, storage=True)],
    )
    status = None
    if established is not None:
        status = CustomResourceDefinitionStatus(
            conditions=[CustomResourceDefinitionCondition(type="Established", status=established)]
        )
    return CustomResourceDefinition(
        metadata=ObjectMeta(name="clusterpolicies.nvidia.com"), spec=spec, status=status
    )


def test_pods_come_back_as_dicts_and_are_deleted_by_name() -> None:
    client = FakeClient({Pod: [_pod("vgpu", {"nvidia.com/NVIDIA_A10-12Q": "1"})]})
    (pod,) = ops.list_pods_sync(client, "lab")  # type: ignore[arg-type]
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/NVIDIA_A10-12Q": "1"}
    assert ops.get_pod_sync(client, "vgpu", "lab")["metadata"]["name"] == "vgpu"  # type: ignore[arg-type]
    ops.delete_pod_sync(client, "lab", "vgpu", grace_period=0)  # type: ignore[arg-type]
    assert client.deleted == [(Pod, "vgpu", "lab", 0)]


def test_events_keep_the_api_field_names() -> None:
    event = Event(
        metadata=ObjectMeta(name="n.1", namespace="default"),
        involvedObject=ObjectReference(kind="Node", name="a10-vgpu"),
        reason="WorkloadLabelIgnored",
        type="Warning",
        message="ignored",
    )
    (found,) = ops.list_events_sync(FakeClient({Event: [event]}), "default")  # type: ignore[arg-type]
    assert found["involvedObject"]["name"] == "a10-vgpu"
    assert (found["reason"], found["type"], found["message"]) == (
        "WorkloadLabelIgnored",
        "Warning",
        "ignored",
    )


def test_a_crd_is_established_only_with_the_condition_true() -> None:
    name = "clusterpolicies.nvidia.com"
    for status, expected in ((None, False), ("False", False), ("True", True)):
        client = FakeClient({CustomResourceDefinition: [_crd(status)]})
        assert ops.crd_established_sync(client, name) is expected  # type: ignore[arg-type]
