"""A Node's facts: the API's string maps are shared, anything else is read as the API would."""

from __future__ import annotations

from gpuop.planner.model import NodeFacts


def test_labels_that_are_already_strings_are_shared_not_copied() -> None:
    labels = {"nvidia.com/gpu.present": "true", "kubernetes.io/hostname": "gpu-1"}
    allocatable = {"nvidia.com/gpu": "2"}
    facts = NodeFacts.from_object(
        {"metadata": {"name": "gpu-1", "labels": labels}, "status": {"allocatable": allocatable}}
    )
    assert facts.labels is labels
    assert facts.allocatable is allocatable


def test_a_yaml_dumps_unquoted_scalars_are_read_as_the_api_spells_them() -> None:
    labels = {"feature.node.kubernetes.io/pci-10de.present": True, "count": 2}
    facts = NodeFacts.from_object({"metadata": {"name": "gpu-1", "labels": labels}})
    assert facts.labels == {"feature.node.kubernetes.io/pci-10de.present": "true", "count": "2"}
    assert facts.labels is not labels
