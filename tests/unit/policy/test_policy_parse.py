"""ClusterPolicy parsing and default resolution (gpu-operator-behaviour.md §1, §8)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuop.catalog import operand_table
from gpuop.policy import (
    PolicyError,
    ResolvedPolicy,
    default_policy,
    default_policy_object,
    parse_cluster_policy,
)

SAMPLES = Path(__file__).parent / "samples"


def load_sample(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((SAMPLES / name).read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def policy(spec: dict[str, Any] | None = None) -> ResolvedPolicy:
    return parse_cluster_policy(
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "p"},
            "spec": spec or {},
        }
    )


def enabled_names(resolved: ResolvedPolicy) -> set[str]:
    return {op.name for op in resolved.enabled_operands()}


# --- samples ----------------------------------------------------------------------------


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.yaml")))
def test_upstream_like_samples_validate(sample: str) -> None:
    resolved = parse_cluster_policy(load_sample(sample), sample)
    assert resolved.name
    for operand in resolved.enabled_operands():
        assert resolved.image_for(operand)  # every enabled operand has an image


def test_helm_default_sample() -> None:
    resolved = parse_cluster_policy(load_sample("helm-default.yaml"))
    assert not resolved.sandbox_enabled
    assert resolved.default_workload == "container"
    assert resolved.mig_manager_default_config == "all-disabled"
    assert resolved.warnings == (
        "spec.psp is ignored (PodSecurityPolicy no longer exists)",
        "spec.operator.defaultRuntime is deprecated and ignored",
    )
    assert enabled_names(resolved) == {
        "driver",
        "container-toolkit",
        "operator-validator",
        "device-plugin",
        "mps-control-daemon",
        "dcgm-exporter",
        "gpu-feature-discovery",
        "mig-manager",
    }


def test_sandbox_sample() -> None:
    resolved = parse_cluster_policy(load_sample("sandbox-kubevirt.yaml"))
    assert resolved.sandbox_enabled
    assert resolved.default_workload == "vm-passthrough"
    assert resolved.sandbox_mode == "kubevirt"
    assert resolved.vgpu_default_config == "A10-4Q"
    assert resolved.vgpu_config_map == "custom-vgpu-config"
    assert {
        "vgpu-manager",
        "vgpu-device-manager",
        "vfio-manager",
        "sandbox-device-plugin",
        "sandbox-validator",
    } <= enabled_names(resolved)
    assert "kata-sandbox-device-plugin" not in enabled_names(resolved)
    vgpu_manager = operand_table().operand("vgpu-manager")
    assert resolved.image_for(vgpu_manager) == "registry.example.com/nvidia/vgpu-manager:595.91.07"


def test_driver_disabled_sample() -> None:
    resolved = parse_cluster_policy(load_sample("driver-disabled-custom-images.yaml"))
    assert "driver" not in enabled_names(resolved)
    assert "mig-manager" not in enabled_names(resolved)
    assert "node-status-exporter" in enabled_names(resolved)
    assert resolved.runtime_class == "nvidia-custom"
    assert resolved.nri_plugin_enabled
    assert resolved.warnings == ()


def test_default_policy_is_the_helm_values() -> None:
    resolved = default_policy()
    assert resolved.name == "cluster-policy"
    assert not resolved.sandbox_enabled
    assert resolved.sandbox_mode == "kubevirt"
    assert resolved.vgpu_config_map == "default-vgpu-devices-config"
    assert resolved.vgpu_default_config == "default"
    # Helm turns dcgm off (Go nil-default on) and the sandbox operands on (nil-default off).
    assert resolved.block_enabled("dcgm", True) is False
    assert resolved.block_enabled("vfioManager", False) is True
    assert resolved.warnings == ()


def test_default_policy_object_is_not_shared_state() -> None:
    obj = copy.deepcopy(default_policy_object())
    obj["spec"]["sandboxWorkloads"]["enabled"] = True
    assert parse_cluster_policy(obj).sandbox_enabled
    assert not default_policy().sandbox_enabled


# --- malformed policies -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        (
            {"spec": {"driver": {"enabled": "yes"}}},
            "spec.driver.enabled: expected a boolean, got a string",
        ),
        (
            {"spec": {"driver": {"enabled": 1}}},
            "spec.driver.enabled: expected a boolean, got a number",
        ),
        (
            {"spec": {"dcgm": {"hostPort": "5555"}}},
            "spec.dcgm.hostPort: expected an integer, got a string",
        ),
        (
            {"spec": {"dcgm": {"hostPort": 70000}}},
            "spec.dcgm.hostPort: Input should be less than or equal to 65535",
        ),
        ({"spec": {"driver": {"enabld": True}}}, "spec.driver.enabld: unknown field"),
        ({"spec": {"sandboxWorkload": {}}}, "spec.sandboxWorkload: unknown field"),
        (
            {"spec": {"sandboxWorkloads": {"defaultWorkload": "vm"}}},
            "spec.sandboxWorkloads.defaultWorkload: Input should be 'container', 'vm-passthrough' or 'vm-vgpu'",
        ),
        (
            {"spec": {"sandboxWorkloads": {"mode": "kvm"}}},
            "spec.sandboxWorkloads.mode: Input should be 'kubevirt' or 'kata'",
        ),
        (
            {"spec": {"mig": {"strategy": "all"}}},
            "spec.mig.strategy: Input should be 'none', 'single' or 'mixed'",
        ),
        (
            {"spec": {"toolkit": {"imagePullPolicy": "Sometimes"}}},
            "spec.toolkit.imagePullPolicy: Input should be 'Always', 'Never' or 'IfNotPresent'",
        ),
        (
            {"spec": {"daemonsets": {"tolerations": [{"effect": "Nope"}]}}},
            "spec.daemonsets.tolerations[0].effect: Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'",
        ),
        (
            {"spec": {"daemonsets": {"tolerations": {"key": "a"}}}},
            "spec.daemonsets.tolerations: expected a list, got a mapping",
        ),
        (
            {"spec": {"driver": {"env": [{"value": "x"}]}}},
            "spec.driver.env[0].name: Field required",
        ),
        (
            {"spec": {"driver": {"env": [{"name": ""}]}}},
            "spec.driver.env[0].name: String should have at least 1 character",
        ),
        (
            {"spec": {"driver": {"startupProbe": {"periodSeconds": 0}}}},
            "spec.driver.startupProbe.periodSeconds: Input should be greater than or equal to 1",
        ),
        (
            {"spec": {"ccManager": {"defaultMode": True}}},  # YAML `on` unquoted is a boolean
            "spec.ccManager.defaultMode: Input should be 'on', 'off' or 'devtools'",
        ),
        (
            {"spec": {"daemonsets": {"labels": {"a": 1}}}},
            "spec.daemonsets.labels.a: expected a string, got a number",
        ),
        ({"spec": []}, "spec: expected a mapping, got a list"),
        (
            {"spec": {"driver": "on"}},
            "spec.driver: expected a mapping, got a string",
        ),
        ({"apiVersion": "nvidia.com/v2"}, "apiVersion: Input should be 'nvidia.com/v1'"),
        ({"kind": "NVIDIADriver"}, "kind: expected ClusterPolicy, got 'NVIDIADriver'"),
        ({"bogus": 1}, "bogus: unknown field"),
        (
            {"spec": {"daemonsets": {"rollingUpdate": {"maxUnavailable": -1}}}},
            "spec.daemonsets.rollingUpdate.maxUnavailable:"
            " Input should be greater than or equal to 0 or expected a string, got a number",
        ),
        (
            {"spec": {"driver": {"resources": {"limits": {"cpu": [1]}}}}},
            "spec.driver.resources.limits.cpu: expected an integer or a string, got a list",
        ),
        ({"metadata": {"name": None}}, "metadata.name: expected a string, got null"),
    ],
)
def test_malformed_policies_name_the_field(obj: dict[str, Any], problem: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_cluster_policy(obj, "test.yaml")
    assert problem in caught.value.problems
    assert str(caught.value).startswith("test.yaml: ")
    for leak in ("constrained-", "NoneType", "instance of", "dict_type"):
        assert leak not in str(caught.value)


def test_every_problem_is_reported() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_cluster_policy(
            {"spec": {"driver": {"enabled": "yes"}, "gfd": {"version": 3}, "x": {}}}
        )
    assert caught.value.problems == [
        "spec.driver.enabled: expected a boolean, got a string",
        "spec.gfd.version: expected a string, got a number",
        "spec.x: unknown field",
    ]


@pytest.mark.parametrize("obj", [None, [], "ClusterPolicy", 3])
def test_non_mappings_are_rejected(obj: Any) -> None:
    with pytest.raises(PolicyError, match="expected a mapping"):
        parse_cluster_policy(obj)


def test_status_and_unknown_metadata_are_accepted() -> None:
    resolved = parse_cluster_policy(
        {
            "metadata": {"name": "p", "uid": "1", "managedFields": [{"manager": "kubectl"}]},
            "spec": {},
            "status": {"state": "ready", "namespace": "gpu-operator"},
        }
    )
    assert resolved.name == "p"


def test_int_or_string_fields() -> None:
    for value in (1, "1", "25%"):
        policy({"daemonsets": {"rollingUpdate": {"maxUnavailable": value}}})
    with pytest.raises(PolicyError):
        policy({"daemonsets": {"rollingUpdate": {"maxUnavailable": 1.5}}})


# --- defaults (nil-defaults applied once) -----------------------------------------------


def test_empty_spec_resolves_to_the_go_nil_defaults() -> None:
    resolved = policy()
    assert not resolved.sandbox_enabled
    assert resolved.default_workload == "container"
    assert resolved.sandbox_mode == "kubevirt"
    assert resolved.runtime_class == "nvidia"
    assert resolved.cdi_enabled and not resolved.nri_plugin_enabled
    assert resolved.mig_strategy == "single"
    assert resolved.mig_manager_default_config == ""  # no migManager.config: no MIG default
    assert resolved.vgpu_default_config == "default"
    assert resolved.vgpu_config_map is None
    assert enabled_names(resolved) == {
        "driver",
        "container-toolkit",
        "operator-validator",
        "device-plugin",
        "mps-control-daemon",
        "dcgm",  # Go nil-default is true (Helm sets false)
        "dcgm-exporter",
        "gpu-feature-discovery",
        "mig-manager",
    }


def test_sandbox_with_empty_blocks_enables_only_the_validator() -> None:
    resolved = policy({"sandboxWorkloads": {"enabled": True}})
    sandbox_only = enabled_names(resolved) - enabled_names(policy())
    assert sandbox_only == {"sandbox-validator"}


ALL_SANDBOX = {
    "sandboxWorkloads": {"enabled": True},
    "vgpuManager": {"enabled": True},
    "vgpuDeviceManager": {"enabled": True},
    "vfioManager": {"enabled": True},
    "sandboxDevicePlugin": {"enabled": True},
    "kataSandboxDevicePlugin": {"enabled": True},
    "kataManager": {"enabled": True},
    "ccManager": {"enabled": True},
}


@pytest.mark.parametrize(
    ("mode", "on", "off"),
    [
        (
            None,
            {"sandbox-device-plugin", "vgpu-manager"},
            {"kata-sandbox-device-plugin", "cc-manager"},
        ),
        ("kubevirt", {"sandbox-device-plugin"}, {"kata-sandbox-device-plugin", "cc-manager"}),
        ("kata", {"kata-sandbox-device-plugin", "cc-manager"}, {"sandbox-device-plugin"}),
    ],
)
def test_mode_decides_the_device_plugin_and_cc_manager(
    mode: str | None, on: set[str], off: set[str]
) -> None:
    spec = copy.deepcopy(ALL_SANDBOX)
    if mode is not None:
        spec["sandboxWorkloads"]["mode"] = mode
    names = enabled_names(policy(spec))
    assert on <= names
    assert not off & names
    assert "kata-manager" not in names  # deprecated: never deployed


def test_sandbox_operands_need_sandbox_workloads() -> None:
    spec = copy.deepcopy(ALL_SANDBOX)
    spec["sandboxWorkloads"]["enabled"] = False
    assert enabled_names(policy(spec)) == enabled_names(policy())


def test_driver_crd_skips_the_driver_and_the_vgpu_manager() -> None:
    spec = copy.deepcopy(ALL_SANDBOX)
    spec["driver"] = {"useNvidiaDriverCRD": True}
    names = enabled_names(policy(spec))
    assert "driver" not in names and "vgpu-manager" not in names
    assert "container-toolkit" in names


@pytest.mark.parametrize(
    ("spec", "warning"),
    [
        ({"psp": {"enabled": True}}, "spec.psp is ignored (PodSecurityPolicy no longer exists)"),
        (
            {"operator": {"defaultRuntime": "containerd"}},
            "spec.operator.defaultRuntime is deprecated and ignored",
        ),
        (
            {"cdi": {"enabled": False, "nriPluginEnabled": True}},
            "spec.cdi.nriPluginEnabled requires cdi.enabled and toolkit.enabled",
        ),
        (
            {"toolkit": {"enabled": False}, "cdi": {"nriPluginEnabled": True}},
            "spec.cdi.nriPluginEnabled requires cdi.enabled and toolkit.enabled",
        ),
    ],
)
def test_warnings(spec: dict[str, Any], warning: str) -> None:
    assert warning in policy(spec).warnings
