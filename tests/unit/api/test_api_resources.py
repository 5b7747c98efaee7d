"""Resource kinds and workload configs, derived from the operand table."""

from __future__ import annotations

import pytest

from gpuop.api import resources
from gpuop.api.labels import deploy_label
from gpuop.api.resources import (
    CONFIG_KIND,
    KIND_CONFIG,
    PLUGIN_KINDS,
    current_workload,
    device_plugins,
    normalised,
    plugin_daemonset,
)
from gpuop.catalog import WORKLOAD_CONFIGS, operand_table


def test_the_mapping_read_from_the_shipped_table() -> None:
    assert dict(KIND_CONFIG) == {
        "container": "container",
        "passthrough": "vm-passthrough",
        "kata": "vm-passthrough",
        "vgpu": "vm-vgpu",
    }
    assert dict(CONFIG_KIND) == {
        "container": "container",
        "vm-passthrough": "passthrough",
        "vm-vgpu": "vgpu",
    }
    assert set(PLUGIN_KINDS) == {"container", "passthrough", "kata", "vgpu"}
    assert "other" not in PLUGIN_KINDS


def test_plugin_daemonsets_are_the_advertising_operands() -> None:
    table = operand_table()
    by_advertises = {op.advertises: op.daemonset for op in table.operands if op.advertises}
    assert plugin_daemonset("container") == by_advertises["gpu"]
    assert plugin_daemonset("passthrough") == by_advertises["sandbox"]
    assert plugin_daemonset("vgpu") == by_advertises["sandbox"]
    assert plugin_daemonset("kata") == by_advertises["pgpu"]
    assert plugin_daemonset("other") == "the device plugin"


def test_every_plugin_is_one_its_workload_config_deploys() -> None:
    table = operand_table()
    for plugin in device_plugins():
        operand = table.operand(plugin.operand)
        assert operand.deploy_label in table.deploy_labels.keys_for(plugin.workload, plugin.mode)
        assert KIND_CONFIG[plugin.kind] == plugin.workload


@pytest.mark.parametrize("mode", ["kubevirt", "kata"])
@pytest.mark.parametrize("workload", WORKLOAD_CONFIGS)
def test_a_node_labelled_for_a_config_reads_as_that_config(workload: str, mode: str) -> None:
    keys = operand_table().deploy_labels.keys_for(workload, mode)  # type: ignore[arg-type]
    labels = {deploy_label(key): "true" for key in keys}
    assert current_workload(labels) == workload
    # Values do not matter: a paused or disabled operand still names its config.
    assert current_workload({k: "false" for k in labels}) == workload


def test_keys_every_config_shares_name_none() -> None:
    assert current_workload({}) is None
    assert current_workload({"kubernetes.io/hostname": "n1"}) is None
    shared = {deploy_label("client"): "true", deploy_label("sandbox-validator"): "true"}
    assert current_workload(shared) is None
    assert current_workload({deploy_label("mig-manager"): "true"}) is None


def test_a_node_part_way_through_a_switch_reads_as_containers_then_vgpu() -> None:
    mixed = {deploy_label("driver"): "true", deploy_label("vgpu-manager"): "true"}
    assert current_workload(mixed) == "container"
    mixed = {deploy_label("vfio-manager"): "true", deploy_label("vgpu-device-manager"): "true"}
    assert current_workload(mixed) == "vm-vgpu"


def test_the_mapping_follows_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Change the table and the derived vocabulary changes with it."""
    table = operand_table()
    operands = tuple(
        op.model_copy(update={"advertises": "sandbox"})
        if op.name == "kata-sandbox-device-plugin"
        else op
        for op in table.operands
    )
    by_workload = table.deploy_labels.by_workload.model_copy(
        update={"vm_vgpu": (*table.deploy_labels.by_workload.vm_vgpu, "vfio-manager")}
    )
    deploy = table.deploy_labels.model_copy(update={"by_workload": by_workload})
    changed = table.model_copy(update={"operands": operands, "deploy_labels": deploy})
    monkeypatch.setattr(resources, "operand_table", lambda: changed)
    resources.device_plugins.cache_clear()
    resources._own_keys.cache_clear()
    try:
        # Kata's plugin now names PCI models: no `kata` kind is advertised any more.
        assert set(resources._kind_config()) == {"container", "passthrough", "vgpu"}
        # vfio-manager is shared by two configs now, so it names neither.
        assert current_workload({deploy_label("vfio-manager"): "true"}) is None
        assert current_workload({deploy_label("vgpu-manager"): "true"}) == "vm-vgpu"
    finally:
        monkeypatch.undo()
        resources.device_plugins.cache_clear()
        resources._own_keys.cache_clear()
    assert current_workload({deploy_label("vfio-manager"): "true"}) == "vm-passthrough"


def test_normalised_drops_case_and_punctuation() -> None:
    assert normalised("nvidia.com/TU104GL_Tesla_T4") == normalised("nvidia.com/TU104GL_TESLA_T4")
    assert normalised("nvidia.com/GA102GL_A10") == "NVIDIACOMGA102GLA10"
