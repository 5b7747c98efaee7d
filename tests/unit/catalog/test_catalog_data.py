"""The catalog data: the operand table (behaviour §1, §2.3) and the GPU models (naming §3.4)."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from gpuop.catalog import WORKLOAD_CONFIGS, gpu_catalog, load_data_yaml, operand_table
from gpuop.vgpu import vgpu_type_kind

# gpu-operator-behaviour.md §1: states in order (the DRA and metrics states have no DaemonSet).
STATE_ORDER = [
    "state-driver",
    "state-container-toolkit",
    "state-operator-validation",
    "state-device-plugin",
    "state-mps-control-daemon",
    "state-dcgm",
    "state-dcgm-exporter",
    "gpu-feature-discovery",
    "state-mig-manager",
    "state-node-status-exporter",
    "state-vgpu-manager",
    "state-vgpu-device-manager",
    "state-sandbox-validation",
    "state-vfio-manager",
    "state-sandbox-device-plugin",
    "state-kata-device-plugin",
    "state-kata-manager",
    "state-cc-manager",
]

# §2.3: the deploy-label keys each config sets (mig-manager is added on MIG-capable nodes).
CONTAINER = {
    "driver",
    "container-toolkit",
    "operator-validator",
    "device-plugin",
    "gpu-feature-discovery",
    "dcgm",
    "dcgm-exporter",
    "node-status-exporter",
    "client",
}
PASSTHROUGH_KUBEVIRT = {
    "sandbox-device-plugin",
    "sandbox-validator",
    "vfio-manager",
    "kata-manager",
    "cc-manager",
    "client",
}
PASSTHROUGH_KATA = PASSTHROUGH_KUBEVIRT - {"sandbox-device-plugin"} | {"kata-sandbox-device-plugin"}
VGPU = {
    "sandbox-device-plugin",
    "vgpu-manager",
    "vgpu-device-manager",
    "sandbox-validator",
    "cc-manager",
    "client",
}


def test_states_follow_the_upstream_order() -> None:
    assert [op.state for op in operand_table().operands] == STATE_ORDER


def test_names_and_daemonsets_are_unique() -> None:
    operands = operand_table().operands
    assert len({op.name for op in operands}) == len(operands)
    assert len({op.daemonset for op in operands}) == len(operands)


def test_waits_for_names_operands() -> None:
    names = {op.name for op in operand_table().operands}
    for op in operand_table().operands:
        assert set(op.waits_for) <= names - {op.name}, op.name


def test_every_image_version_key_has_a_default() -> None:
    table = operand_table()
    for op in table.operands:
        if op.image.version_key is not None:
            assert op.image.version_key in table.default_versions, op.name


@pytest.mark.parametrize(
    ("workload", "mode", "expected"),
    [
        ("container", "kubevirt", CONTAINER),
        ("container", "kata", CONTAINER),
        ("vm-passthrough", "kubevirt", PASSTHROUGH_KUBEVIRT),
        ("vm-passthrough", "kata", PASSTHROUGH_KATA),
        ("vm-vgpu", "kubevirt", VGPU),
        ("vm-vgpu", "kata", VGPU),  # kata mode changes only vm-passthrough
    ],
)
def test_deploy_keys_per_config(workload: str, mode: str, expected: set[str]) -> None:
    keys = operand_table().deploy_labels.keys_for(workload, mode)  # type: ignore[arg-type]
    assert set(keys) == expected
    assert len(keys) == len(expected)


def test_known_keys() -> None:
    labels = operand_table().deploy_labels
    assert labels.prefix == "nvidia.com/gpu.deploy."
    assert labels.known_keys == frozenset(
        CONTAINER
        | PASSTHROUGH_KATA
        | PASSTHROUGH_KUBEVIRT
        | VGPU
        | {"mig-manager", "dra-driver", "dra-validator", "dcgm-dra", "dcgm-exporter-dra"}
    )
    assert labels.opt_out_key not in labels.known_keys  # read, never written
    for op in operand_table().operands:
        assert op.deploy_label in labels.known_keys, op.name


def test_every_workload_config_is_listed() -> None:
    assert WORKLOAD_CONFIGS == ("container", "vm-passthrough", "vm-vgpu")


# --- GPU models -------------------------------------------------------------------------


def test_models_are_unique_and_consistent() -> None:
    gpus = gpu_catalog().gpus
    assert len({gpu.model for gpu in gpus}) == len(gpus)
    for gpu in gpus:
        assert gpu.default_vgpu_type in gpu.vgpu_types, gpu.model
        assert gpu.pci_id == f"10de:{gpu.pci_device_id}"
        for name, spec in gpu.vgpu_types.items():
            assert name.startswith(f"{gpu.model}-"), name
            kind = vgpu_type_kind(name)
            assert kind == ("mig-backed" if spec.mig_backed else "time-sliced"), name
            assert 1 <= spec.max_per_gpu <= 32, name
            if spec.mig_backed:
                assert gpu.mig_capable, name


# resource-naming.md §3.4, the A10 table.
A10_MAXIMA = {
    "A10-24Q": 1, "A10-12Q": 2, "A10-8Q": 3, "A10-6Q": 4, "A10-4Q": 6, "A10-3Q": 8,
    "A10-2Q": 12, "A10-1Q": 24, "A10-2B": 12, "A10-1B": 24, "A10-24A": 1, "A10-12A": 2,
    "A10-8A": 3, "A10-6A": 4, "A10-4A": 6, "A10-3A": 8, "A10-2A": 12, "A10-1A": 24,
    "A10-24C": 1, "A10-12C": 2, "A10-8C": 3, "A10-6C": 4, "A10-4C": 6,
}  # fmt: skip


def test_a10_types_and_maxima() -> None:
    a10 = gpu_catalog().by_model("A10")
    assert a10 is not None
    assert {name: spec.max_per_gpu for name, spec in a10.vgpu_types.items()} == A10_MAXIMA
    assert a10.default_vgpu_type == "A10-12Q"
    assert a10.vgpu_name_prefix == "NVIDIA"


@pytest.mark.parametrize(
    ("model", "maxima"),
    [
        ("L40S", {"L40S-1Q": 32, "L40S-48Q": 1, "L40S-4C": 12}),
        ("A40", {"A40-1Q": 32, "A40-24Q": 2}),
        ("T4", {"T4-1Q": 16, "T4-8Q": 2, "T4-4C": 4}),
        ("A30", {"A30-1-6C": 4, "A30-2-12C": 2, "A30-4-24C": 1, "A30-1-6CME": 1}),
        ("A100", {"A100-1-5C": 7, "A100-7-40C": 1, "A100-4C": 10}),
        ("H100", {"H100-4C": 20, "H100-1-10C": 7}),
    ],
)
def test_published_maxima(model: str, maxima: dict[str, int]) -> None:
    gpu = gpu_catalog().by_model(model)
    assert gpu is not None
    for name, value in maxima.items():
        assert gpu.vgpu_types[name].max_per_gpu == value, name


def test_lookups() -> None:
    catalog = gpu_catalog()
    a10 = catalog.by_model(" a10 ")
    assert a10 is not None and a10.model == "A10"
    assert catalog.by_model("B200") is None
    assert [g.model for g in catalog.by_device_id("0x25B6")] == ["A16", "A2"]
    assert catalog.by_device_id("ffff") == ()
    product = catalog.by_product("NVIDIA-A100-PCIE-40GB-SHARED")
    assert product is not None and product.model == "A100"
    t4 = catalog.by_product("Tesla-T4")
    assert t4 is not None and t4.model == "T4"
    assert catalog.by_product("NVIDIA-A10G") is None
    model = catalog.model_for_vgpu_type("T4-8Q")
    assert model is not None and model.vgpu_name_prefix == "GRID"
    assert catalog.model_for_vgpu_type("A10-99Q") is None


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in resources.files("gpuop.catalog").iterdir() if p.name.endswith(".yaml")),
)
def test_data_files_read_alike_with_libyaml_and_pure_python(name: str) -> None:
    """The catalog reads its files with libyaml's loader for speed; it must not change them."""
    text = resources.files("gpuop.catalog").joinpath(name).read_text(encoding="utf-8")
    assert load_data_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize(
    ("daemonset", "operand"),
    [
        ("nvidia-driver-daemonset", "driver"),
        ("nvidia-driver-daemonset-5.15.0-105-generic-ubuntu22.04", "driver"),
        ("nvidia-driver-daemonset-415.92.202402201450-0", "driver"),
        ("nvidia-vgpu-manager-daemonset-415.92.202402201450-0", "vgpu-manager"),
        ("nvidia-gpu-driver-ubuntu22.04-6c8f7d9b5", "driver"),
        ("nvidia-vgpu-driver-rhel9.4-5f7b9c8d6", "driver"),
        ("nvidia-vgpu-host-manager-driver-ubuntu22.04-7d6c5b4a3", "vgpu-manager"),
        ("nvidia-device-plugin-daemonset", "device-plugin"),
        ("nvidia-device-plugin-daemonset-extra", None),
        ("nvidia-driver-installer", None),
    ],
)
def test_an_operand_is_known_by_every_name_upstream_gives_its_daemonset(
    daemonset: str, operand: str | None
) -> None:
    assert operand_table().operand_for_daemonset(daemonset) == operand


# The instance counts of NVIDIA's Multi-Instance GPU User Guide ("Supported MIG Profiles"),
# which GKE's partitions follow; the catalogue reads them from mig-parted's layouts.
_MIG_GUIDE_PARTITIONS = {
    "nvidia-tesla-a100": {"1g.5gb": 7, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
    "nvidia-a100-80gb": {"1g.10gb": 7, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1, "7g.80gb": 1},
    "nvidia-h100-80gb": {
        "1g.10gb": 7,
        "1g.20gb": 4,
        "2g.20gb": 3,
        "3g.40gb": 2,
        "4g.40gb": 1,
        "7g.80gb": 1,
    },
    "nvidia-h200-141gb": {
        "1g.18gb": 7,
        "1g.35gb": 4,
        "2g.35gb": 3,
        "3g.71gb": 2,
        "4g.71gb": 1,
        "7g.141gb": 1,
    },
    "nvidia-b200": {
        "1g.23gb": 7,
        "1g.45gb": 4,
        "2g.45gb": 3,
        "3g.90gb": 2,
        "4g.90gb": 1,
        "7g.180gb": 1,
    },
    "nvidia-gb200": {
        "1g.23gb": 7,
        "1g.47gb": 4,
        "2g.47gb": 3,
        "3g.93gb": 2,
        "4g.93gb": 1,
        "7g.186gb": 1,
    },
    "nvidia-rtx-pro-6000": {"1g.24gb": 4, "2g.48gb": 2, "4g.96gb": 1},
}


@pytest.mark.parametrize("accelerator", sorted(_MIG_GUIDE_PARTITIONS))
def test_gke_partitions_are_mig_parted_layouts(accelerator: str) -> None:
    from gpuop.catalog.managers import gke_contract

    contract = gke_contract()
    expected = _MIG_GUIDE_PARTITIONS[accelerator]
    assert {profile: contract.partitions(accelerator, profile) for profile in expected} == expected


def test_a_gke_accelerator_or_profile_outside_the_table_has_no_partition_count() -> None:
    from gpuop.catalog.managers import gke_contract

    assert gke_contract().partitions("nvidia-tesla-t4", "1g.5gb") is None
    assert gke_contract().partitions("nvidia-h100-80gb", "9g.99gb") is None
