"""Node labelling: GPU detection, the workload config, deploy labels, the MIG default.

One table per rule of gpu-operator-behaviour.md §2.1–§2.3 and §7, then the Appendix of
observed upstream edge cases, each item as its own test.
"""

from __future__ import annotations

import pytest
from planner_builders import (
    MIG_CAPABLE,
    MIG_CONFIG,
    NFD,
    NFD_0300,
    NFD_0302,
    OPERANDS_OFF,
    PRESENT,
    WORKLOAD,
    applied,
    deploy,
    deploy_labels,
    gpu_node,
    make_policy,
    node,
    plan_labels,
    running,
    sandbox_policy,
    status_of,
)

from gpuop.planner import decide_workload, gpu_detection, mig_capable, plan
from gpuop.policy import default_policy, parse_cluster_policy

CONTAINER_KEYS = {
    "driver", "container-toolkit", "operator-validator", "device-plugin",
    "gpu-feature-discovery", "dcgm", "dcgm-exporter", "node-status-exporter", "client",
}  # fmt: skip
PASSTHROUGH_KEYS = {
    "sandbox-device-plugin", "sandbox-validator", "vfio-manager", "kata-manager", "cc-manager",
    "client",
}  # fmt: skip
KATA_KEYS = PASSTHROUGH_KEYS - {"sandbox-device-plugin"} | {"kata-sandbox-device-plugin"}
VGPU_KEYS = {
    "sandbox-device-plugin", "vgpu-manager", "vgpu-device-manager", "sandbox-validator",
    "cc-manager", "client",
}  # fmt: skip
DRA_KEYS = ("dra-driver", "dra-validator", "dcgm-dra", "dcgm-exporter-dra")


# --- §2.1 GPU detection -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "detected"),
    [
        ({NFD: "true"}, NFD),
        ({NFD_0302: "true"}, NFD_0302),
        ({NFD_0300: "true"}, NFD_0300),
        ({NFD: "false", NFD_0300: "true"}, NFD_0300),
        ({NFD: "false"}, None),
        ({NFD: "True"}, None),
        ({NFD: ""}, None),
        ({"feature.node.kubernetes.io/pci-1002.present": "true"}, None),
        ({"feature.node.kubernetes.io/pci-0302_10de_2236.present": "true"}, None),
        ({PRESENT: "true"}, None),
        ({}, None),
    ],
)
def test_gpu_detection(labels: dict[str, str], detected: str | None) -> None:
    assert gpu_detection(labels) == detected
    result = plan(default_policy(), node(labels))
    assert result.gpu_node == (detected is not None)
    if detected is not None:
        assert result.gpu_detection == detected


@pytest.mark.parametrize(
    ("labels", "present_change"),
    [
        ({NFD: "true"}, "true"),
        ({NFD: "true", PRESENT: "false"}, "true"),
        ({NFD: "true", PRESENT: "yes"}, "true"),
        ({NFD: "true", PRESENT: "true"}, "unchanged"),
        ({NFD: "false", PRESENT: "true"}, "false"),  # the NFD label went away
        ({PRESENT: "true"}, "false"),  # hand-set without NFD: reset
        ({PRESENT: "false"}, "unchanged"),
        ({PRESENT: "yes"}, "unchanged"),  # flips only from exactly "true"
        ({}, "unchanged"),  # a non-GPU node never gets the label
    ],
)
def test_gpu_present(labels: dict[str, str], present_change: str) -> None:
    result, after = plan_labels(default_policy(), labels)
    if present_change == "unchanged":
        assert PRESENT not in result.label_changes
    else:
        assert result.label_changes[PRESENT] == present_change
    assert (PRESENT in after) == (PRESENT in labels or present_change != "unchanged")


def test_gpu_present_is_never_deleted() -> None:
    for labels in ({PRESENT: "true"}, {PRESENT: "false"}, {NFD: "true", PRESENT: "true"}):
        for policy in (default_policy(), sandbox_policy()):
            assert plan(policy, node(labels)).label_changes.get(PRESENT, "kept") is not None


@pytest.mark.parametrize("present", ["true", "false", None])
def test_gpu_gone_removes_every_known_deploy_label(present: str | None) -> None:
    labels = {deploy(key): "true" for key in CONTAINER_KEYS | VGPU_KEYS | {"mig-manager"}}
    labels |= {deploy(key): "false" for key in DRA_KEYS}
    labels |= {deploy("operands"): "true", deploy("custom-thing"): "x", MIG_CONFIG: "all-1g.5gb"}
    if present is not None:
        labels[PRESENT] = present
    result, after = plan_labels(sandbox_policy(), labels)
    assert deploy_labels(after) == {"operands": "true", "custom-thing": "x"}
    assert after[MIG_CONFIG] == "all-1g.5gb"  # never removed, even when the GPU goes
    assert result.operands == () and result.advertises == {}
    assert result.must_not_advertise == ("nvidia.com/gpu",)
    assert result.workload.config is None and result.workload.reason == "not-a-gpu-node"


# --- §2.2 the workload config -----------------------------------------------------------


@pytest.mark.parametrize(
    ("sandbox", "default", "label", "config", "reason", "notice"),
    [
        (False, None, None, "container", "sandbox-disabled", None),
        (False, "vm-vgpu", None, "container", "sandbox-disabled", None),
        (False, None, "vm-vgpu", "container", "ignored-sandbox-disabled", "warning"),
        (False, None, "vm-passthrough", "container", "ignored-sandbox-disabled", "warning"),
        (False, None, "container", "container", "ignored-sandbox-disabled", "info"),
        (False, None, "", "container", "ignored-sandbox-disabled", "warning"),
        (True, None, None, "container", "default", None),
        (True, "vm-passthrough", None, "vm-passthrough", "default", None),
        (True, "vm-vgpu", None, "vm-vgpu", "default", None),
        (True, None, "vm-vgpu", "vm-vgpu", "label", None),
        (True, "vm-vgpu", "container", "container", "label", None),
        (True, None, "vm-passthrough", "vm-passthrough", "label", None),
        (True, None, "bogus", "container", "invalid-label", "warning"),
        (True, "vm-vgpu", "bogus", "vm-vgpu", "invalid-label", "warning"),
        (True, None, "VM-VGPU", "container", "invalid-label", "warning"),
        (True, None, "", "container", "invalid-label", "warning"),
        (True, "vm-passthrough", "", "vm-passthrough", "invalid-label", "warning"),
    ],
)
def test_workload_decision(
    sandbox: bool,
    default: str | None,
    label: str | None,
    config: str,
    reason: str,
    notice: str | None,
) -> None:
    policy = make_policy(sandbox=sandbox, default_workload=default)
    labels = {} if label is None else {WORKLOAD: label}
    result = plan(policy, gpu_node(labels))
    assert (result.workload.config, result.workload.reason) == (config, reason)
    assert result.workload.label_value == label
    codes = {n.code: n.severity for n in result.notices}
    workload_notices = {
        c: s for c, s in codes.items() if c in ("WorkloadLabelIgnored", "InvalidWorkloadLabel")
    }
    if notice is None:
        assert workload_notices == {}
    else:
        assert list(workload_notices.values()) == [notice]


def test_empty_label_gets_a_different_message_from_an_absent_one() -> None:
    policy = sandbox_policy()
    empty = decide_workload(policy, {WORKLOAD: ""}, gpu=True)
    absent = decide_workload(policy, {}, gpu=True)
    assert "an empty value" in empty.message
    assert empty.message != absent.message
    assert "'bogus'" in decide_workload(policy, {WORKLOAD: "bogus"}, gpu=True).message


def test_ignored_label_message_says_why() -> None:
    result = plan(default_policy(), gpu_node({WORKLOAD: "vm-vgpu"}))
    (notice,) = [n for n in result.notices if n.code == "WorkloadLabelIgnored"]
    assert "sandboxWorkloads.enabled is false" in notice.message


# --- §2.3 deploy labels per config ------------------------------------------------------


@pytest.mark.parametrize(
    ("workload", "mode", "keys"),
    [
        ("container", None, CONTAINER_KEYS),
        ("vm-passthrough", None, PASSTHROUGH_KEYS),
        ("vm-passthrough", "kubevirt", PASSTHROUGH_KEYS),
        ("vm-passthrough", "kata", KATA_KEYS),
        ("vm-vgpu", None, VGPU_KEYS),
        ("vm-vgpu", "kata", VGPU_KEYS),  # kata changes only vm-passthrough
    ],
)
def test_deploy_labels_per_config(workload: str, mode: str | None, keys: set[str]) -> None:
    result, after = plan_labels(sandbox_policy(mode=mode), {NFD: "true", WORKLOAD: workload})
    assert deploy_labels(after) == dict.fromkeys(keys, "true")
    assert deploy_labels(result.desired_labels) == dict.fromkeys(keys, "true")


@pytest.mark.parametrize("workload", ["container", "vm-passthrough", "vm-vgpu"])
def test_switching_config_replaces_the_labels(workload: str) -> None:
    everything = CONTAINER_KEYS | PASSTHROUGH_KEYS | KATA_KEYS | VGPU_KEYS
    labels = {NFD: "true", PRESENT: "true", WORKLOAD: workload}
    labels |= {deploy(key): "true" for key in everything}
    expected = {"container": CONTAINER_KEYS, "vm-passthrough": PASSTHROUGH_KEYS}
    _, after = plan_labels(sandbox_policy(), labels)
    assert set(deploy_labels(after)) == expected.get(workload, VGPU_KEYS)


@pytest.mark.parametrize("value", ["false", "pre-installed", "paused-for-mig-change", "x"])
def test_user_values_are_kept_while_in_the_effective_set(value: str) -> None:
    labels = {NFD: "true", deploy("driver"): value, deploy("device-plugin"): value}
    result, after = plan_labels(default_policy(), labels)
    assert after[deploy("driver")] == value and after[deploy("device-plugin")] == value
    assert deploy("driver") not in result.label_changes
    assert status_of(result, "driver") == "held"
    assert status_of(result, "device-plugin") == "held"
    assert "nvidia.com/gpu" not in result.advertises
    held = [n.message for n in result.notices if n.code == "OperandHeld"]
    assert f"driver does not run: {deploy('driver')}={value}" in held


def test_paused_values_survive_in_vm_vgpu() -> None:
    paused = "paused-for-vgpu-change"
    labels = {
        NFD: "true",
        WORKLOAD: "vm-vgpu",
        deploy("sandbox-device-plugin"): paused,
        deploy("sandbox-validator"): paused,
    }
    result, after = plan_labels(sandbox_policy(), labels)
    assert after[deploy("sandbox-device-plugin")] == paused
    assert after[deploy("sandbox-validator")] == paused
    assert result.advertises == {}  # the sandbox device plugin is paused


@pytest.mark.parametrize("value", ["false", "pre-installed", "paused-for-vgpu-change", ""])
def test_user_values_are_deleted_on_a_workload_switch(value: str) -> None:
    labels = {NFD: "true", WORKLOAD: "vm-vgpu", deploy("driver"): value}
    labels[deploy("device-plugin")] = value
    result, after = plan_labels(sandbox_policy(), labels)
    assert result.label_changes[deploy("driver")] is None
    assert deploy("driver") not in after and deploy("device-plugin") not in after


def test_empty_values_are_refilled() -> None:
    labels = {NFD: "true", deploy("driver"): "", deploy("client"): ""}
    result, after = plan_labels(default_policy(), labels)
    assert result.label_changes[deploy("driver")] == "true"
    assert after[deploy("client")] == "true"


def test_unknown_deploy_keys_are_untouched() -> None:
    labels = {NFD: "true", deploy("my-own-operand"): "true", deploy("DRIVER"): "x"}
    labels[deploy("operands")] = "true"
    result, after = plan_labels(sandbox_policy(), {**labels, WORKLOAD: "vm-vgpu"})
    for key in labels:
        assert key not in result.label_changes
        assert after[key] == labels[key]


@pytest.mark.parametrize("workload", ["container", "vm-passthrough", "vm-vgpu"])
def test_dra_keys_are_removed(workload: str) -> None:
    labels = {NFD: "true", WORKLOAD: workload} | {deploy(key): "true" for key in DRA_KEYS}
    result, after = plan_labels(sandbox_policy(), labels)
    for key in DRA_KEYS:
        assert result.label_changes[deploy(key)] is None
        assert deploy(key) not in after


# --- mig-manager --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({MIG_CAPABLE: "true"}, "true"),  # added on MIG-capable container nodes
        ({MIG_CAPABLE: "false"}, None),  # not added elsewhere
        ({"nvidia.com/gpu.product": "NVIDIA-A100-PCIE-40GB"}, "true"),
        ({MIG_CAPABLE: "true", deploy("mig-manager"): ""}, ""),  # presence counts: kept empty
        ({MIG_CAPABLE: "true", deploy("mig-manager"): "false"}, "false"),
        ({MIG_CAPABLE: "false", deploy("mig-manager"): "true"}, "true"),  # never swept
        ({MIG_CAPABLE: "false", deploy("mig-manager"): ""}, ""),
        ({deploy("mig-manager"): "paused-for-mig-change"}, "paused-for-mig-change"),
    ],
)
def test_mig_manager_in_container_mode(labels: dict[str, str], expected: str | None) -> None:
    result, after = plan_labels(default_policy(), {NFD: "true", **labels})
    assert after.get(deploy("mig-manager")) == expected
    assert (status_of(result, "mig-manager") == "runs") == (expected == "true")


@pytest.mark.parametrize("workload", ["vm-passthrough", "vm-vgpu"])
def test_mig_manager_is_removed_from_vm_configs(workload: str) -> None:
    labels = {NFD: "true", WORKLOAD: workload, MIG_CAPABLE: "true", deploy("mig-manager"): "true"}
    result, after = plan_labels(sandbox_policy(), labels)
    assert result.label_changes[deploy("mig-manager")] is None
    assert deploy("mig-manager") not in after


@pytest.mark.parametrize(
    ("labels", "capable"),
    [
        ({MIG_CAPABLE: "true"}, True),
        ({MIG_CAPABLE: "false", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, False),
        ({MIG_CAPABLE: "", "nvidia.com/gpu.product": "NVIDIA-H100"}, False),
        ({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, True),
        ({"nvidia.com/gpu.product": "nvidia-a30"}, True),
        ({"nvidia.com/gpu.product": "NVIDIA-A10"}, False),
        ({"nvidia.com/vgpu.host-driver-version": "595.91", MIG_CAPABLE: "true"}, False),
        ({"nvidia.com/vgpu.host-driver-version": "", MIG_CAPABLE: "true"}, True),
        ({}, False),
    ],
)
def test_mig_capable(labels: dict[str, str], capable: bool) -> None:
    assert mig_capable(labels) is capable


# --- §7 the MIG default config ----------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "policy_blocks", "expected"),
    [
        ({MIG_CAPABLE: "true"}, {}, "all-disabled"),
        ({MIG_CAPABLE: "true", MIG_CONFIG: ""}, {}, "all-disabled"),  # empty is overwritten
        ({MIG_CAPABLE: "true", MIG_CONFIG: "all-1g.10gb"}, {}, "all-1g.10gb"),
        ({MIG_CAPABLE: "false"}, {}, None),
        ({}, {}, None),
        ({MIG_CAPABLE: "true"}, {"migManager": {"enabled": False}}, None),
        ({MIG_CAPABLE: "true"}, {"migManager": {"config": {"default": "all-balanced"}}}, None),
        ({MIG_CAPABLE: "true", "nvidia.com/vgpu.host-driver-version": "595"}, {}, None),
        ({MIG_CAPABLE: "true", **OPERANDS_OFF}, {}, "all-disabled"),  # opt-out does not stop it
        ({MIG_CAPABLE: "true", WORKLOAD: "vm-passthrough"}, {}, "all-disabled"),
        ({MIG_CAPABLE: "true", WORKLOAD: "vm-vgpu"}, {}, "all-disabled"),
        (
            {MIG_CAPABLE: "true"},
            {"migManager": {"config": {"default": "all-disabled"}}},
            "all-disabled",
        ),
        ({MIG_CAPABLE: "true"}, {"migManager": {"config": {"default": ""}}}, None),  # opted out
        ({MIG_CAPABLE: "true"}, {"migManager": {"config": {"default": "other"}}}, None),
        ({MIG_CAPABLE: "true"}, {"migManager": {"config": None}}, None),  # no config: no default
        ({MIG_CAPABLE: "true"}, {"migManager": {"config": {}}}, "all-disabled"),  # CRD default
        ({MIG_CAPABLE: "true"}, {"migManager": {"config": {"name": "custom"}}}, "all-disabled"),
        ({MIG_CAPABLE: "true", MIG_CONFIG: ""}, {"migManager": {"config": {"default": ""}}}, ""),
        ({MIG_CAPABLE: "true", **OPERANDS_OFF}, {"migManager": {"config": {"default": ""}}}, None),
    ],
)
def test_mig_config_default(
    labels: dict[str, str], policy_blocks: dict[str, dict[str, object]], expected: str | None
) -> None:
    policy = sandbox_policy(**policy_blocks)  # type: ignore[arg-type]
    _, after = plan_labels(policy, {NFD: "true", **labels})
    assert after.get(MIG_CONFIG) == expected


def test_no_mig_manager_block_writes_no_mig_config() -> None:
    """Upstream compares `migManager.config.default` with `all-disabled`; nil is `""`."""
    for spec in ({}, {"migManager": {}}, {"migManager": {"enabled": True}}):
        policy = parse_cluster_policy({"spec": {"sandboxWorkloads": {"enabled": True}, **spec}})
        _, after = plan_labels(policy, {NFD: "true", MIG_CAPABLE: "true"})
        assert MIG_CONFIG not in after, spec


def test_mig_config_default_needs_a_gpu_node() -> None:
    _, after = plan_labels(make_policy(), {MIG_CAPABLE: "true"})
    assert MIG_CONFIG not in after


# --- the operand opt-out -----------------------------------------------------------------


@pytest.mark.parametrize("workload", ["container", "vm-passthrough", "vm-vgpu"])
def test_operands_false_removes_every_state_label_and_adds_none(workload: str) -> None:
    labels = {NFD: "true", WORKLOAD: workload, **OPERANDS_OFF}
    labels |= {deploy(key): "true" for key in CONTAINER_KEYS | VGPU_KEYS | {"mig-manager"}}
    result, after = plan_labels(sandbox_policy(), labels)
    assert deploy_labels(after) == {"operands": "false"}
    assert running(result) == set()
    assert result.advertises == {}
    assert after[PRESENT] == "true"


def test_operands_true_is_not_an_opt_out() -> None:
    _, after = plan_labels(default_policy(), {NFD: "true", deploy("operands"): "true"})
    assert set(deploy_labels(after)) == CONTAINER_KEYS | {"operands"}


# --- Appendix: observed upstream edge cases ---------------------------------------------


def test_default_workload_is_not_process_global_state() -> None:
    """Upstream keeps the last sandbox policy's default in a global; gpuop does not."""
    unlabelled = gpu_node()
    first = plan(sandbox_policy(default_workload="vm-passthrough"), unlabelled)
    assert first.workload.config == "vm-passthrough"
    # A later policy without defaultWorkload gets the documented default, not the last one.
    assert plan(sandbox_policy(), unlabelled).workload.config == "container"
    # And an invalid label falls back to this policy's default, not an earlier one's.
    invalid = gpu_node({WORKLOAD: "bogus"})
    assert plan(sandbox_policy(default_workload="vm-vgpu"), invalid).workload.config == "vm-vgpu"
    assert plan(sandbox_policy(), invalid).workload.config == "container"


def test_passthrough_labels_do_not_depend_on_an_earlier_evaluation() -> None:
    """Upstream mutates the vm-passthrough set in place; gpuop derives it per policy."""
    passthrough = gpu_node({WORKLOAD: "vm-passthrough"})
    kata = plan(sandbox_policy(mode="kata"), passthrough)
    assert deploy("kata-sandbox-device-plugin") in kata.desired_labels
    unset = plan(sandbox_policy(), passthrough)
    assert deploy("sandbox-device-plugin") in unset.desired_labels
    assert deploy("kata-sandbox-device-plugin") not in unset.desired_labels
    again = plan(sandbox_policy(mode="kata"), passthrough)
    assert again.desired_labels == kata.desired_labels


def test_switching_mode_swaps_the_device_plugin_label() -> None:
    labels = {NFD: "true", PRESENT: "true", WORKLOAD: "vm-passthrough"}
    labels |= {deploy(key): "true" for key in PASSTHROUGH_KEYS}
    result, after = plan_labels(sandbox_policy(mode="kata"), labels)
    assert result.label_changes == {
        deploy("sandbox-device-plugin"): None,
        deploy("kata-sandbox-device-plugin"): "true",
    }
    assert set(deploy_labels(after)) == KATA_KEYS


def test_missing_os_release_labels_do_not_affect_node_labels() -> None:
    with_os = {
        NFD: "true",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04",
    }
    a = plan(default_policy(), node(with_os))
    b = plan(default_policy(), node({NFD: "true"}))
    assert a.label_changes == b.label_changes


FIXED_POINT_CASES = [
    ({NFD: "true"}, "default"),
    ({NFD: "true", MIG_CAPABLE: "true"}, "default"),
    ({NFD: "true", WORKLOAD: "vm-vgpu", MIG_CAPABLE: "true"}, "sandbox"),
    ({NFD: "true", WORKLOAD: "vm-passthrough", deploy("driver"): "false"}, "kata"),
    ({NFD: "true", WORKLOAD: "bogus", deploy("mig-manager"): ""}, "sandbox"),
    ({NFD: "true", **OPERANDS_OFF, deploy("driver"): "true"}, "sandbox"),
    ({PRESENT: "true", deploy("driver"): "true", deploy("dra-driver"): "true"}, "default"),
    ({NFD: "false", PRESENT: "true", MIG_CONFIG: ""}, "default"),
    ({NFD_0302: "true", PRESENT: "false", deploy("client"): ""}, "sandbox"),
]


@pytest.mark.parametrize(("labels", "which"), FIXED_POINT_CASES)
def test_one_reconcile_reaches_the_fixed_point(labels: dict[str, str], which: str) -> None:
    policy = {
        "default": default_policy(),
        "sandbox": sandbox_policy(),
        "kata": sandbox_policy(mode="kata"),
    }[which]
    first_node = node(labels)
    first = plan(policy, first_node)
    second = plan(policy, applied(first_node, first))
    assert second.label_changes == {}
    assert second.desired_labels == first.desired_labels
    assert second.workload == first.workload
    assert [op.status for op in second.operands] == [op.status for op in first.operands]
