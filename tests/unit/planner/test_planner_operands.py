"""Operands per workload config, bring-up stages, advertised resources, notices."""

from __future__ import annotations

import json

import pytest
from planner_builders import (
    MIG_CAPABLE,
    NFD,
    VGPU_CONFIG,
    WORKLOAD,
    deploy,
    gpu_node,
    make_policy,
    running,
    sandbox_policy,
    status_of,
)

from gpuop.api.labels import INVENTORY_ANNOTATION
from gpuop.naming import PciDatabase
from gpuop.planner import NodeFacts, NodePlan, plan
from gpuop.planner.inventory import GpuCard, encode_inventory
from gpuop.policy import default_policy
from gpuop.vgpu import parse_vgpu_config

CONTAINER_RUNS = {
    "driver",
    "container-toolkit",
    "operator-validator",
    "device-plugin",
    "dcgm-exporter",
    "gpu-feature-discovery",
}


def codes(result: NodePlan) -> list[str]:
    return [n.code for n in result.notices]


# --- which operands run -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("workload", "mode", "expected"),
    [
        ("container", None, CONTAINER_RUNS),
        ("vm-passthrough", None, {"sandbox-validator", "vfio-manager", "sandbox-device-plugin"}),
        (
            "vm-passthrough",
            "kata",
            # The chart turns ccManager on; upstream runs it in Kata mode only.
            {"sandbox-validator", "vfio-manager", "kata-sandbox-device-plugin", "cc-manager"},
        ),
        ("vm-vgpu", None, {"vgpu-device-manager", "sandbox-validator", "sandbox-device-plugin"}),
        ("vm-vgpu", "kata", {"vgpu-device-manager", "sandbox-validator", "cc-manager"}),
    ],
)
def test_operands_per_workload_under_the_default_policy(
    workload: str, mode: str | None, expected: set[str]
) -> None:
    result = plan(sandbox_policy(mode=mode), gpu_node({WORKLOAD: workload}))
    assert running(result) == expected


def test_every_operand_is_listed_once_in_state_order() -> None:
    result = plan(default_policy(), gpu_node())
    names = [op.name for op in result.operands]
    assert names[0] == "driver" and names[-1] == "cc-manager"
    assert len(names) == len(set(names)) == 18


def test_operand_statuses_and_details() -> None:
    labels = {deploy("gpu-feature-discovery"): "false"}
    result = plan(default_policy(), gpu_node(labels))
    by_name = {op.name: op for op in result.operands}
    assert by_name["driver"].status == "runs"
    assert by_name["driver"].detail == f"{deploy('driver')}=true"
    assert by_name["dcgm"].status == "disabled"  # the Helm default turns it off
    assert by_name["dcgm"].detail == "not deployed by this ClusterPolicy"
    assert by_name["gpu-feature-discovery"].status == "held"
    assert by_name["gpu-feature-discovery"].label_value == "false"
    assert by_name["mig-manager"].status == "not-for-workload"
    assert by_name["mps-control-daemon"].status == "not-for-workload"
    assert by_name["mps-control-daemon"].detail == "also needs nvidia.com/mps.capable=true"
    assert by_name["vfio-manager"].status == "disabled"  # sandbox workloads are off


def test_mps_control_daemon_runs_on_mps_capable_nodes() -> None:
    result = plan(default_policy(), gpu_node({"nvidia.com/mps.capable": "true"}))
    assert "mps-control-daemon" in running(result)


def test_all_blocks_enabled_container_node() -> None:
    policy = make_policy(dcgm={"enabled": True}, nodeStatusExporter={"enabled": True})
    result = plan(policy, gpu_node({MIG_CAPABLE: "true"}))
    assert running(result) == CONTAINER_RUNS | {"dcgm", "node-status-exporter", "mig-manager"}


def test_bring_up_stages_follow_waits_for() -> None:
    policy = make_policy(dcgm={"enabled": True}, nodeStatusExporter={"enabled": True})
    result = plan(policy, gpu_node({MIG_CAPABLE: "true"}))
    stages = {op.name: op.stage for op in result.running_operands()}
    assert stages == {
        "driver": 0,
        "container-toolkit": 1,
        "operator-validator": 2,
        "device-plugin": 2,
        "dcgm": 2,
        "dcgm-exporter": 2,
        "gpu-feature-discovery": 2,
        "mig-manager": 2,
        "node-status-exporter": 1,
    }
    assert all(op.stage is None for op in result.operands if not op.runs)


def test_waits_for_keeps_only_operands_that_run_here() -> None:
    result = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-passthrough"}))
    plugin = next(op for op in result.operands if op.name == "sandbox-device-plugin")
    assert plugin.waits_for == ("vfio-manager",)  # vgpu-device-manager does not run here
    assert plugin.stage == 1


def test_driver_crd_mode_skips_the_driver() -> None:
    result = plan(make_policy(driver={"useNvidiaDriverCRD": True}), gpu_node())
    assert status_of(result, "driver") == "disabled"
    toolkit = next(op for op in result.operands if op.name == "container-toolkit")
    assert toolkit.stage == 0 and toolkit.waits_for == ()


# --- the seed's numbers -----------------------------------------------------------------


def test_two_a10s_vm_vgpu_default_config() -> None:
    result = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-vgpu"}))
    assert result.advertises == {"nvidia.com/NVIDIA_A10-12Q": 4}
    assert result.vgpu is not None
    assert (result.vgpu.config_name, result.vgpu.source) == ("default", "default")
    assert [c.devices for c in result.vgpu.result.cards] == [{"A10-12Q": 2}, {"A10-12Q": 2}]


def test_two_a10s_vm_vgpu_a10_4q() -> None:
    result = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-vgpu", VGPU_CONFIG: "A10-4Q"}))
    assert result.advertises == {"nvidia.com/NVIDIA_A10-4Q": 12}
    assert result.vgpu is not None and result.vgpu.source == "label"


def test_two_a10s_passthrough() -> None:
    result = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-passthrough"}))
    assert result.advertises == {"nvidia.com/GA102GL_A10": 2}


def test_two_a10s_container() -> None:
    assert plan(default_policy(), gpu_node()).advertises == {"nvidia.com/gpu": 2}


def test_two_a10s_kata_passthrough() -> None:
    result = plan(sandbox_policy(mode="kata"), gpu_node({WORKLOAD: "vm-passthrough"}))
    assert result.advertises == {"nvidia.com/pgpu": 2}


def _kata_alias(value: str | None) -> dict[str, object]:
    env = [] if value is None else [{"name": "P_GPU_ALIAS", "value": value}]
    return {"env": env}


def test_kata_with_an_empty_alias_names_gpus_by_model() -> None:
    """`P_GPU_ALIAS=""`: the Kata plugin names each device id by model, keeping `-`."""
    policy = sandbox_policy(mode="kata", kataSandboxDevicePlugin=_kata_alias(""))
    assert policy.kata_gpu_alias == ""
    result = plan(policy, gpu_node({WORKLOAD: "vm-passthrough"}))
    assert result.advertises == {"nvidia.com/GA102GL_A10": 2}
    assert "nvidia.com/pgpu" in result.must_not_advertise
    database = PciDatabase.parse("10de  NVIDIA Corporation\n\t20b3  GA100 [A100-SXM-64GB]\n")
    cards = [GpuCard(0, "20b3"), GpuCard(1, "20b3"), GpuCard(2, "abcd")]
    facts = NodeFacts(
        "n",
        {NFD: "true", WORKLOAD: "vm-passthrough"},
        {INVENTORY_ANNOTATION: encode_inventory(cards)},
    )
    assert plan(policy, facts, pci_db=database).advertises == {
        "nvidia.com/GA100_A100-SXM-64GB": 2,
        "nvidia.com/UNKNOWN_DEVICE": 1,
    }


@pytest.mark.parametrize(
    ("value", "resource"), [(None, "pgpu"), ("pgpu", "pgpu"), ("gpu-x", "gpu-x")]
)
def test_kata_alias_names_every_gpu(value: str | None, resource: str) -> None:
    policy = sandbox_policy(mode="kata", kataSandboxDevicePlugin=_kata_alias(value))
    result = plan(policy, gpu_node({WORKLOAD: "vm-passthrough"}))
    assert result.advertises == {f"nvidia.com/{resource}": 2}


def test_policy_default_vgpu_config() -> None:
    policy = sandbox_policy(vgpuDeviceManager={"config": {"default": "A10-4Q"}})
    result = plan(policy, gpu_node({WORKLOAD: "vm-vgpu"}))
    assert result.advertises == {"nvidia.com/NVIDIA_A10-4Q": 12}
    assert result.vgpu is not None and result.vgpu.source == "default"


def test_custom_vgpu_config_file() -> None:
    config = parse_vgpu_config(
        {
            "version": "v1",
            "vgpu-configs": {
                "default": [{"devices": [0], "vgpu-devices": {"A10-24Q": 1}}],
            },
        }
    )
    result = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-vgpu"}), vgpu_config=config)
    assert result.advertises == {"nvidia.com/NVIDIA_A10-24Q": 1}


def test_cards_a_vgpu_config_does_not_list_are_left_untouched() -> None:
    """Upstream's device manager leaves GPUs no entry reaches as they are; not emptied."""
    config = parse_vgpu_config(
        {
            "version": "v1",
            "vgpu-configs": {"custom": [{"devices": [0], "vgpu-devices": {"A10-24Q": 1}}]},
        }
    )
    node_obj = gpu_node({WORKLOAD: "vm-vgpu", VGPU_CONFIG: "custom"})
    result = plan(sandbox_policy(), node_obj, vgpu_config=config)
    assert result.vgpu is not None
    assert result.vgpu.result.untouched == (1,)
    assert result.vgpu.result.ok
    assert result.to_dict()["vgpu"]["untouched_cards"] == [1]
    assert "nvidia.com/NVIDIA_A10-12Q" not in result.must_not_advertise
    assert any(n.code == "VgpuCardsUntouched" for n in result.notices)


# --- must not advertise -----------------------------------------------------------------


def test_must_not_advertise_per_config() -> None:
    container = plan(default_policy(), gpu_node())
    assert "nvidia.com/gpu" not in container.must_not_advertise
    assert {"nvidia.com/GA102GL_A10", "nvidia.com/NVIDIA_A10-12Q", "nvidia.com/pgpu"} <= set(
        container.must_not_advertise
    )
    vgpu = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-vgpu"}))
    assert "nvidia.com/NVIDIA_A10-12Q" not in vgpu.must_not_advertise
    assert {"nvidia.com/gpu", "nvidia.com/GA102GL_A10", "nvidia.com/NVIDIA_A10-4Q"} <= set(
        vgpu.must_not_advertise
    )
    passthrough = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-passthrough"}))
    assert "nvidia.com/GA102GL_A10" not in passthrough.must_not_advertise
    assert "nvidia.com/gpu" in passthrough.must_not_advertise
    for result in (container, vgpu, passthrough):
        assert not set(result.advertises) & set(result.must_not_advertise)
        assert list(result.must_not_advertise) == sorted(result.must_not_advertise)


def test_unknown_count_never_forbids_what_the_node_advertises() -> None:
    """Fixed: a container node with undescribed GPUs had nvidia.com/gpu in must-not."""
    container = plan(default_policy(), gpu_node(gpus=None))
    assert container.inventory.source == "none"
    assert container.advertises == {}
    assert "nvidia.com/gpu" not in container.must_not_advertise
    assert "UnknownInventory" in codes(container)
    nfd_device = {
        WORKLOAD: "vm-passthrough",
        "feature.node.kubernetes.io/pci-0302_10de_2236.present": "true",
    }
    passthrough = plan(sandbox_policy(), gpu_node(nfd_device, gpus=None))
    assert passthrough.inventory.source == "nfd-device-label"
    assert passthrough.advertises == {}
    assert "nvidia.com/GA102GL_A10" not in passthrough.must_not_advertise


# --- inventory sources --------------------------------------------------------------------


def test_inventory_from_gfd_labels() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "4"}
    result = plan(default_policy(), gpu_node(labels, gpus=None))
    assert result.inventory.source == "gfd-labels"
    assert result.advertises == {"nvidia.com/gpu": 4}


def test_inventory_from_advertised_passthrough_resources() -> None:
    result = plan(
        sandbox_policy(),
        gpu_node(
            {WORKLOAD: "vm-passthrough"}, gpus=None, allocatable={"nvidia.com/AD102GL_L40S": "3"}
        ),
    )
    assert result.inventory.source == "advertised"
    assert result.advertises == {"nvidia.com/AD102GL_L40S": 3}


@pytest.mark.parametrize(
    ("annotation", "problem"),
    [
        ("not json", "not JSON"),
        ('{"pci": "10de:2236"}', "expected a JSON list"),
        ('[{"pci": "2236"}]', "[0].pci: not VVVV:DDDD"),
        ("[3]", "[0]: expected"),
        ("1" * 5000, "not usable JSON"),  # beyond Python's int digit limit
        ("[" * 100_000, "not usable JSON"),  # deeper than the recursion limit
    ],
)
def test_bad_inventory_is_a_notice_not_an_error(annotation: str, problem: str) -> None:
    result = plan(
        default_policy(), gpu_node(annotations={INVENTORY_ANNOTATION: annotation}, gpus=None)
    )
    assert result.inventory.source == "none"
    bad = [n for n in result.notices if n.code == "BadInventory"]
    assert len(bad) == 1 and problem in bad[0].message


@pytest.mark.parametrize("count", ["²", "٣", "99999", "1" * 5000, "-1", "2.0", ""])
def test_implausible_gpu_counts_are_ignored(count: str) -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-A10", "nvidia.com/gpu.count": count}
    result = plan(
        default_policy(), gpu_node(labels, gpus=None, allocatable={"nvidia.com/GA102GL_A10": count})
    )
    # The product still names the model; no count is taken from the garbage.
    assert not result.inventory.count_known
    assert [card.model for card in result.inventory.cards] == ["A10"]
    assert "nvidia.com/gpu" not in result.advertises


def test_annotation_cards_keep_their_indices_and_ignore_booleans() -> None:
    annotation = json.dumps(
        [{"pci": "10de:2236", "index": 3}, {"pci": "10de:2236", "index": True, "memory_mib": True}]
    )
    result = plan(
        default_policy(), gpu_node(annotations={INVENTORY_ANNOTATION: annotation}, gpus=None)
    )
    assert [card.index for card in result.inventory.cards] == [1, 3]
    assert result.inventory.cards[0].memory_mib is None


# --- names and notices --------------------------------------------------------------------


def test_passthrough_names_come_from_the_given_pci_ids(pci_ids_excerpt: str) -> None:
    db = PciDatabase.parse(pci_ids_excerpt)
    annotation = encode_inventory(
        [GpuCard(0, "24fa"), GpuCard(1, "ffff"), GpuCard(2, "2236"), GpuCard(3, "ffff")]
    )
    result = plan(
        sandbox_policy(),
        gpu_node({WORKLOAD: "vm-passthrough"}, annotations={INVENTORY_ANNOTATION: annotation}),
        pci_db=db,
    )
    assert result.advertises == {
        "nvidia.com/GA104_RTX_A4500_EMBEDDED_GPU_": 1,
        "nvidia.com/ffff": 2,
        "nvidia.com/GA102GL_A10": 1,
    }
    notices = [(n.code, n.severity) for n in result.notices]
    assert notices.count(("InvalidResourceName", "warning")) == 1
    assert notices.count(("UnknownPciDevice", "warning")) == 1  # once, not per card


def test_builtin_names_without_a_pci_ids() -> None:
    result = plan(sandbox_policy(), NodeFacts.from_object(gpu_node({WORKLOAD: "vm-passthrough"})))
    assert result.advertises == {"nvidia.com/GA102GL_A10": 2}


def test_a2_and_a16_share_an_id_but_not_vgpu_types() -> None:
    a2 = plan(
        sandbox_policy(), gpu_node({WORKLOAD: "vm-vgpu", VGPU_CONFIG: "A2-8Q"}, gpus=("A2", 1))
    )
    assert a2.advertises == {"nvidia.com/NVIDIA_A2-8Q": 2}
    a16 = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-vgpu"}, gpus=("A16", 4)))
    assert a16.advertises == {"nvidia.com/NVIDIA_A16-8Q": 8}
    assert plan(
        sandbox_policy(), gpu_node({WORKLOAD: "vm-passthrough"}, gpus=("A2", 1))
    ).advertises == {"nvidia.com/GA107GL_A2___A16": 1}


@pytest.mark.parametrize(
    ("vgpu_config", "error"),
    [
        ("T4-8Q", "vGPU type T4-8Q is not supported on GPU 0 (A10)"),
        ("nope", "unknown vGPU config 'nope'"),
    ],
)
def test_infeasible_vgpu_config(vgpu_config: str, error: str) -> None:
    result = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-vgpu", VGPU_CONFIG: vgpu_config}))
    assert result.advertises == {}
    assert result.vgpu is not None and result.vgpu.result.state == "failed"
    infeasible = [n for n in result.notices if n.code == "VgpuConfigInfeasible"]
    assert infeasible and infeasible[0].severity == "error"
    assert error in infeasible[0].message


def test_manager_notices() -> None:
    vgpu = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-vgpu"}))
    assert "VgpuManagerNotRunning" in codes(vgpu)
    with_manager = sandbox_policy(vgpuManager={"enabled": True})
    assert "VgpuManagerNotRunning" not in codes(plan(with_manager, gpu_node({WORKLOAD: "vm-vgpu"})))
    no_vfio = sandbox_policy(vfioManager={"enabled": False})
    passthrough = plan(no_vfio, gpu_node({WORKLOAD: "vm-passthrough"}))
    assert "VfioManagerNotRunning" in codes(passthrough)
    assert passthrough.advertises == {"nvidia.com/GA102GL_A10": 2}


def test_plan_serialises_to_json() -> None:
    result = plan(sandbox_policy(), gpu_node({WORKLOAD: "vm-vgpu", NFD: "true"}))
    data = json.loads(json.dumps(result.to_dict()))
    assert data["workload"]["config"] == "vm-vgpu"
    assert data["advertises"] == {"nvidia.com/NVIDIA_A10-12Q": 4}
    assert data["vgpu"]["per_card"][0] == {"index": 0, "model": "A10", "devices": {"A10-12Q": 2}}
    assert data["inventory"]["count"] == 2
