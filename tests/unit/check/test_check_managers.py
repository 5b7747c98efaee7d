"""`gpuop check` holds each node to the contract of what manages its GPUs.

The corpus (`tests/corpus/managers`, written by managers_corpus.py) has a dump per manager,
healthy and drifted: every healthy one has no error or warning, every drift is found with
its code on its node, and every node's manager is named.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import managers_corpus
import pytest

from gpuop.check import Report, run_checks
from gpuop.check.operands import operator_daemonset
from gpuop.check.sharing import plugin_settings
from gpuop.manifests import load_objects

CORPUS = managers_corpus.CORPUS
DATA = Path(__file__).resolve().parents[2] / "data"


@functools.cache
def _report(name: str) -> Report:
    path = CORPUS / f"{name}.json"
    return run_checks(load_objects(path.read_text(encoding="utf-8"), str(path)))


def test_corpus_files_are_generated() -> None:
    files = {path.name for path in CORPUS.glob("*.json")}
    assert files == {f"{name}.json" for name in managers_corpus.SCENARIOS}
    for name, (build, _, _) in managers_corpus.SCENARIOS.items():
        assert (CORPUS / f"{name}.json").read_text() == managers_corpus.render(build()), name


@pytest.mark.parametrize("name", sorted(managers_corpus.SCENARIOS))
def test_findings_and_managers(name: str) -> None:
    _, managers, expected = managers_corpus.SCENARIOS[name]
    report = _report(name)
    found = sorted(f"{f.code} {f.kind}/{f.name}" for f in report.findings if f.severity != "info")
    assert found == sorted(expected)
    primary = {node.name: node.managers[0] for node in report.nodes if node.managers}
    assert primary == managers


def test_every_manager_of_the_catalogue_has_a_healthy_dump() -> None:
    from gpuop.catalog.managers import manager_catalog

    healthy = {
        manager
        for name, (_, managers, expected) in managers_corpus.SCENARIOS.items()
        if not expected
        for manager in managers.values()
    }
    # The GPU Operator's own healthy dumps are the main corpus (tests/corpus/check).
    missing = set(manager_catalog().managers) - healthy - {"gpu-operator", "eks", "aks"}
    assert not missing


def test_every_manager_has_a_dump_with_drift_found_on_its_node() -> None:
    from gpuop.catalog.managers import manager_catalog

    drifted = {
        manager
        for name, (_, managers, expected) in managers_corpus.SCENARIOS.items()
        if expected
        for node, manager in managers.items()
        if any(item.endswith(f"/{node}") for item in expected)
    }
    # The GPU Operator's drift is the main corpus's (tests/corpus/check).
    missing = {*manager_catalog().managers, "kubevirt"} - drifted - {"gpu-operator"}
    assert not missing


def test_the_report_says_who_manages_a_node_and_why(tmp_path: Path) -> None:
    report = _report("standalone-plugin-zero")
    data = report.to_dict()
    assert data["summary"]["managers"] == {"nvidia-device-plugin": 1}
    (node,) = data["nodes"]
    assert node["management"]["managers"] == ["nvidia-device-plugin"]
    assert any("nvdp-nvidia-device-plugin" in e["signal"] for e in node["management"]["evidence"])


@pytest.mark.parametrize("name", sorted(managers_corpus.SCENARIOS))
def test_a_node_advertising_nvidia_devices_is_a_gpu_node_whatever_manages_it(name: str) -> None:
    # A managed cloud's node carries no label the planner reads (GKE's, AKS's), yet the
    # report's "with GPUs" must count it.
    for node in _report(name).nodes:
        node_obj = next(
            o
            for o in load_objects((CORPUS / f"{name}.json").read_text(encoding="utf-8"), "corpus")
            if o.get("kind") == "Node" and o["metadata"]["name"] == node.name
        )
        allocatable = (node_obj.get("status") or {}).get("allocatable") or {}
        advertises = any(
            key.startswith("nvidia.com/") and str(value).isdigit() and int(value) > 0
            for key, value in allocatable.items()
        )
        if advertises:
            assert node.gpu_node, (name, node.name)


def test_without_the_operator_its_contract_is_said_not_to_apply() -> None:
    report = _report("gke")
    (notice,) = [f for f in report.findings if f.code == "GPU001"]
    assert "no node shows NVIDIA's GPU Operator (its GPUs are managed by gke)" in notice.message
    assert report.release is None and "operator_release" not in report.to_dict()


def test_a_zero_device_resource_on_an_operator_node_is_named_not_called_missing() -> None:
    import json

    from managers_corpus import _gfd, _node

    deploy = {
        f"nvidia.com/gpu.deploy.{key}": "true"
        for key in ("driver", "container-toolkit", "device-plugin", "operator-validator")
    }
    node = _node("op-0", {**_gfd("NVIDIA-A100-SXM4-40GB", 4), **deploy}, {"nvidia.com/gpu": "0"})
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [node]})
    report = run_checks(load_objects(text, "op-0"))
    codes = {f.code for f in report.findings}
    assert "GPU211" in codes and "GPU207" not in codes


def test_a_sharing_config_is_read_as_the_plugin_reads_it() -> None:
    objects = managers_corpus.time_slicing()
    configmap = objects[-1]
    # No `version` (the plugin reads v1), `gpu` for `nvidia.com/gpu`: still a config, whose
    # renameByDefault the node (advertising `nvidia.com/gpu`) does not follow.
    configmap["data"]["a100-ts"] = (
        "sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
        "    - name: gpu\n      replicas: 4\n"
    )
    assert run_checks(objects).codes() >= {("GPU212", "Node/ts-1")}
    # A resource's own `rename` the plugin ignores (it warns): no `.shared` name is due.
    configmap["data"]["a100-ts"] = (
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
        "      rename: nvidia.com/gpu.shared\n      replicas: 4\n"
    )
    assert not [f for f in run_checks(objects).findings if f.severity != "info"]


def test_the_operators_daemonsets_are_told_from_the_plugins_static_manifest() -> None:
    upstream = json.loads(
        (DATA / "upstream-v26.7.0-state" / "daemonsets.json").read_text(encoding="utf-8")
    )
    operator = {
        operator_daemonset(ds) for ds in upstream["items"] if operator_daemonset(ds) is not None
    }
    assert "device-plugin" in operator and len(operator) == len(upstream["items"])
    # Same name, the static manifest's `name: nvidia-device-plugin-ds` pods: not the operator's.
    static = managers_corpus.aks_mig()[-1]
    assert static["metadata"]["name"] == "nvidia-device-plugin-daemonset"
    assert operator_daemonset(static) is None


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--mig-strategy=mixed"], [], ("mixed", "--mig-strategy=mixed")),
        (["--mig-strategy", "single"], [], ("single", "--mig-strategy=single")),
        (
            ["-mig-strategy=single"],
            [{"name": "MIG_STRATEGY", "value": "mixed"}],
            ("single", "--mig-strategy=single"),
        ),
        ([], [{"name": "MIG_STRATEGY", "value": "mixed"}], ("mixed", "MIG_STRATEGY=mixed")),
        ([], [], None),
    ],
)
def test_the_plugins_mig_strategy_is_read_from_its_flags_before_its_environment(
    args: list[str], env: list[dict[str, str]], expected: tuple[str, str] | None
) -> None:
    daemonset = managers_corpus.aks_mig()[-1]
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    container["args"] = args
    container["env"] = env
    settings = plugin_settings(daemonset)
    assert settings is not None
    got = (settings.mig_strategy, settings.mig_strategy_source) if settings.mig_strategy else None
    assert got == expected


def test_a_plugin_that_reads_no_config_runs_the_default_mig_strategy() -> None:
    daemonset = managers_corpus.aks_mig()[-1]
    daemonset["spec"]["template"]["spec"]["containers"][0]["args"] = []
    settings = plugin_settings(daemonset)
    assert settings is not None
    assert settings.mig_strategy_in_effect() == (
        "none",
        "DaemonSet gpu-resources/nvidia-device-plugin-daemonset (no --mig-strategy,"
        " MIG_STRATEGY or config file: the plugin's default none)",
    )
    # A config file it reads may set the strategy: then the DaemonSet alone does not decide.
    daemonset["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "CONFIG_FILE", "value": "/etc/nvidia/config.yaml"}
    ]
    settings = plugin_settings(daemonset)
    assert settings is not None and settings.mig_strategy_in_effect() is None
    objects = managers_corpus.aks_mig()
    objects[-1]["spec"]["template"]["spec"]["containers"][0]["args"] = []
    assert run_checks(objects).codes() >= {("GPU212", "Node/aks-gpumig-1")}


@pytest.mark.parametrize(
    ("machine", "gpus", "partition", "found"),
    [
        ("n1-standard-8", "4", None, False),  # two T4s or four: a multiple of 2 either way
        ("n1-standard-8", "3", None, True),
        ("a2-highgpu-2g", "4", "1g.9gb", False),  # a profile not in the table: not counted
        ("a2-megagpu-16g", "32", None, False),  # sixteen cards by two clients
        ("a2-megagpu-16g", "16", None, True),  # eight cards lost: a multiple, but not 32
    ],
)
def test_gke_sharing_is_counted_from_the_pools_labels(
    machine: str, gpus: str, partition: str | None, found: bool
) -> None:
    objects = managers_corpus.gke_shared(gpus, clients="2", partition=partition)
    objects[0]["metadata"]["labels"]["node.kubernetes.io/instance-type"] = machine
    codes = run_checks(objects).codes()
    assert (("GPU212", "Node/gke-a100-1") in codes) is found


def test_a_static_plugin_pod_names_its_nodes_manager() -> None:
    # ACK before Kubernetes 1.32 runs its plugin as a static pod, owned by the Node: with
    # none of ACK's node labels in the dump, that pod alone names ACK.
    objects = managers_corpus.ack(schedule=None, plugin="static")
    objects[0]["metadata"]["labels"] = {"kubernetes.io/hostname": "cn-hangzhou.10.0.1.7"}
    management = run_checks(objects).nodes[0].management
    assert management is not None
    assert management["managers"] == ["ack"]
    assert management["certain"]


def test_another_vendors_sharing_resources_mean_a_zero_nvidia_gpu_is_no_failure() -> None:
    # ACK's sharing modes set nvidia.com/gpu to 0 while aliyun.com/gpu-mem serves the cards;
    # with the sharing resources at 0 too, nothing serves them.
    shared = {"nvidia.com/gpu": "0", "aliyun.com/gpu-mem": "44", "aliyun.com/gpu-count": "2"}
    report = run_checks(managers_corpus.ack(shared, schedule="cgpu", plugin="gpushare"))
    assert not [f for f in report.findings if f.severity != "info"]
    dead = {name: "0" for name in shared}
    report = run_checks(managers_corpus.ack(dead, schedule="cgpu", plugin="gpushare"))
    assert [f.code for f in report.findings if f.severity == "error"] == ["GPU211"]
