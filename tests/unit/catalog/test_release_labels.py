"""release_labels.yaml: every release line once, and the newest equal to the operand table."""

from __future__ import annotations

from gpuop.catalog import WORKLOAD_CONFIGS, operand_table
from gpuop.catalog.release_labels import release_labels
from gpuop.catalog.versions import version_matrix


def test_every_release_line_has_exactly_one_era() -> None:
    table = release_labels()
    covered = [line for era in table.eras for line in era.lines]
    matrix = [line.line for line in version_matrix().lines]
    # The 1.x lines before the matrix; v1.7.0 was the first to set deploy labels.
    legacy = ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11"]
    assert covered == [*legacy, *matrix]
    assert table.pre_deploy_lines == frozenset(legacy[:7])
    assert table.lines == tuple(covered)
    for release in version_matrix().releases:
        assert table.era(release.line) is not None, release.version


def test_the_newest_era_is_what_the_planner_uses() -> None:
    newest = release_labels().newest
    deploy = operand_table().deploy_labels
    assert release_labels().prefix == deploy.prefix
    assert release_labels().mig_manager_key == deploy.mig_manager_key
    for config in WORKLOAD_CONFIGS:
        for mode in ("kubevirt", "kata"):
            assert newest.keys_for(config, mode) == frozenset(deploy.keys_for(config, mode))
    assert newest.known_keys(deploy.mig_manager_key) == deploy.known_keys
    assert newest.fills_empty


def test_upstream_facts_per_release() -> None:
    table = release_labels()
    old, v23_3, v25_10, v26_3 = (table.era(x) for x in ("22.9", "23.3", "25.10", "26.3"))
    assert old is not None and v23_3 is not None and v25_10 is not None and v26_3 is not None
    assert "kata-manager" not in old.keys_for("vm-passthrough", "kubevirt")
    assert "cc-manager" in v25_10.keys_for("vm-vgpu", "kubevirt")
    assert "client" not in v26_3.keys_for("container", "kubevirt")
    # No sandboxWorkloads.mode before 26.3: a kata policy gets the kubevirt set.
    assert not v25_10.has_modes
    assert v25_10.keys_for("vm-passthrough", "kata") == v25_10.keys_for(
        "vm-passthrough", "kubevirt"
    )
    assert "kata-sandbox-device-plugin" in v26_3.keys_for("vm-passthrough", "kata")
    assert not old.default_mig_config and v23_3.default_mig_config
    assert not v26_3.fills_empty
    assert (old.removes, v26_3.removes) == ("other-configs", "all-known")
    assert set(table.policy_fields.values()) <= set(table.lines)
    v1_7, v1_10, v1_11 = (table.era(x) for x in ("1.7", "1.10", "1.11"))
    assert v1_7 is not None and v1_10 is not None and v1_11 is not None
    assert not {"dcgm", "node-status-exporter"} & v1_7.keys_for("container", "kubevirt")
    assert {"dcgm", "node-status-exporter"} <= v1_10.keys_for("container", "kubevirt")
    # No workload configs before v1.11.0: every GPU node gets the container set.
    assert not v1_10.sandbox_workloads and v1_11.sandbox_workloads
    assert v1_10.keys_for("vm-vgpu", "kubevirt") == v1_10.keys_for("container", "kubevirt")
    assert v1_11.keys_for("vm-vgpu", "kubevirt") == old.keys_for("vm-vgpu", "kubevirt")
