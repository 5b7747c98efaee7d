"""The inventory reader never raises, and what it infers is consistent, on any node."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuop.planner.inventory import MAX_GPUS_PER_NODE, learn_inventory

RESOURCES = st.sampled_from(
    [
        "nvidia.com/gpu",
        "nvidia.com/GA102GL_A10",
        "nvidia.com/2236",
        "nvidia.com/NVIDIA_A10-12Q",
        "nvidia.com/NVIDIA_A10-4Q",
        "nvidia.com/GRID_T4-8Q",
        "nvidia.com/NVIDIA_H100XM-40C",
        "nvidia.com/pgpu",
        "nvidia.com/AD102GL_L40S",
        "nvidia.com/NOT_A_DEVICE",
        "cpu",
    ]
)
QUANTITIES = st.one_of(
    st.integers(0, 40).map(str), st.sampled_from(["", "-1", "1.5", "2k", "99999999", "٣"])
)
LABELS = st.dictionaries(
    st.sampled_from(
        [
            "nvidia.com/gpu.product",
            "nvidia.com/gpu.count",
            "nvidia.com/vgpu.config",
            "feature.node.kubernetes.io/pci-10de_2236.present",
            "feature.node.kubernetes.io/pci-0302_10de_27b8_10de_16ca.present",
        ]
    ),
    st.sampled_from(
        ["NVIDIA-A10", "NVIDIA-H200", "2", "300", "A10-12Q", "L4-12Q", "true", "", "x-MIG-1g.5gb"]
    ),
)


@settings(deadline=None)  # the count comes from the Hypothesis profile
@given(
    labels=LABELS,
    allocatable=st.dictionaries(RESOURCES, QUANTITIES, max_size=4),
    capacity=st.dictionaries(RESOURCES, QUANTITIES, max_size=4),
)
def test_any_node_gives_a_consistent_inventory(
    labels: dict[str, str], allocatable: dict[str, str], capacity: dict[str, str]
) -> None:
    inventory = learn_inventory(labels, {}, allocatable, capacity=capacity)
    assert inventory.count <= MAX_GPUS_PER_NODE * 8
    if inventory.source == "none":
        assert not inventory.cards and not inventory.count_known
    if not inventory.count_known:
        assert inventory.count <= 1
    for item in inventory.evidence:
        assert item.count is None or item.count >= 0
        assert item.signal
    assert [card.index for card in inventory.cards] == list(range(inventory.count))
    inventory.to_dict()


def test_a_passthrough_card_is_named_by_its_pci_ids_model() -> None:
    # 10de:20b0 is in no GPU table of gpuop's; NVIDIA's vGPU config files it under its
    # sibling board's family (A100X), so the model comes from pci.ids: `GA100 [A100 SXM4 40GB]`.
    for quantity in ("2", "0"):
        resources = {"nvidia.com/GA100_A100_SXM4_40GB": quantity}
        inventory = learn_inventory({}, {}, resources, capacity=resources)
        models = {item.model for item in inventory.evidence}
        assert models == {"A100 SXM4 40GB"}, inventory.evidence
