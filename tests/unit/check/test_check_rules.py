"""Rules beyond the corpus: sharing, MIG, names, states, policies, events, outputs."""

from __future__ import annotations

import copy
import json
from typing import Any

import corpus_gen
import pytest

from gpuop.check import REPORT_SCHEMA, RULES, Report, render_text, run_checks, to_sarif
from gpuop.check.kubevirt import parse_version
from gpuop.check.policy import salvage
from gpuop.naming import PciDatabase
from gpuop.policy import parse_cluster_policy

Obj = dict[str, Any]


def _lab_node(name: str, workload: str, **kwargs: Any) -> tuple[Obj, Obj]:
    policy_obj = corpus_gen.lab_policy()
    node, _ = corpus_gen.node_object(
        name, corpus_gen.resolved(policy_obj), workload=workload, **kwargs
    )
    return policy_obj, node


def _codes(objects: list[Obj], **kwargs: Any) -> set[tuple[str, str]]:
    return run_checks(objects, **kwargs).codes()


def _set(node: Obj, resource: str, value: str | None) -> None:
    corpus_gen._set(node, resource, value)


# --- resources ---------------------------------------------------------------------------


def test_time_slicing_replicas_multiply_the_container_count() -> None:
    policy, node = _lab_node("ts-1", "container")
    node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4"
    _set(node, "nvidia.com/gpu", "8")
    assert _codes([policy, node]) == set()
    _set(node, "nvidia.com/gpu", "9")
    assert _codes([policy, node]) == {("GPU205", "Node/ts-1")}


@pytest.mark.parametrize("advertised", ["0", "2"])
def test_zero_replicas_means_no_whole_gpus_not_one(advertised: str) -> None:
    """GFD writes gpu.replicas=0 for MIG-enabled GPUs: no whole GPU is expected."""
    policy, node = _lab_node("mig-0", "container")
    node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "0"
    _set(node, "nvidia.com/gpu", advertised)
    assert _codes([policy, node]) == set()


def test_replicas_label_parse() -> None:
    from gpuop.check.advertised import gfd_replicas

    assert gfd_replicas({"nvidia.com/gpu.replicas": "0"}) == 0
    assert gfd_replicas({"nvidia.com/gpu.replicas": "4"}) == 4
    assert gfd_replicas({"nvidia.com/gpu.replicas": "x"}) is None
    assert gfd_replicas({}) is None


def test_mig_resources_are_not_counted_as_whole_gpus() -> None:
    policy, node = _lab_node("mig-1", "container")
    policy["spec"]["mig"] = {"strategy": "mixed"}
    _set(node, "nvidia.com/gpu", "0")
    _set(node, "nvidia.com/mig-1g.10gb", "14")
    assert _codes([policy, node]) == set()


def test_mig_names_under_the_single_strategy() -> None:
    # The plugin's MIG_STRATEGY comes from the ClusterPolicy (single by default), and only
    # mixed names MIG devices `nvidia.com/mig-<profile>`: this node's plugin runs another.
    policy, node = _lab_node("mig-1", "container")
    _set(node, "nvidia.com/gpu", "0")
    _set(node, "nvidia.com/mig-1g.10gb", "14")
    report = run_checks([policy, node])
    assert report.codes() == {("GPU212", "Node/mig-1")}
    assert "the ClusterPolicy's mig.strategy single" in report.findings[0].message


def test_without_a_cluster_policy_the_default_mig_strategy_is_not_held_against_a_node() -> None:
    # Nodes only: the policy is assumed, so its `single` says nothing of the cluster's.
    _, node = _lab_node("mig-1", "container")
    _set(node, "nvidia.com/gpu", "0")
    _set(node, "nvidia.com/mig-1g.10gb", "14")
    node["metadata"]["labels"]["nvidia.com/mig.strategy"] = "mixed"
    assert _codes([node]) == {("GPU001", "ClusterPolicy/(default)")}  # info: no policy


def test_fewer_passthrough_devices_than_cards() -> None:
    # The plugin registered two devices (capacity) but one is unhealthy (allocatable).
    policy, node = _lab_node("pt-1", "vm-passthrough")
    node["status"]["allocatable"]["nvidia.com/GA102GL_A10"] = "1"
    assert _codes([policy, node]) == {("GPU206", "Node/pt-1")}


def test_fewer_passthrough_devices_than_the_hint_says() -> None:
    policy, node = _lab_node("pt-1", "vm-passthrough")
    _set(node, "nvidia.com/GA102GL_A10", "1")
    # Nothing else on a real node counts the cards: one healthy device is all it shows.
    assert _codes([policy, node]) == set()
    node["metadata"]["annotations"]["gpuop.io/gpu-inventory"] = json.dumps(
        [{"pci": "10de:2236"}, {"pci": "10de:2236"}]
    )
    assert _codes([policy, node]) == {("GPU206", "Node/pt-1")}


def test_missing_resource_with_nothing_else_advertised() -> None:
    policy, node = _lab_node("pt-1", "vm-passthrough")
    _set(node, "nvidia.com/GA102GL_A10", "0")
    report = run_checks([policy, node])
    assert report.codes() == {("GPU207", "Node/pt-1")}
    assert "nvidia-sandbox-device-plugin-daemonset" in report.findings[0].hint


def test_stale_resource_at_zero_is_healthy() -> None:
    policy, node = _lab_node("pt-1", "vm-passthrough")
    _set(node, "nvidia.com/gpu", "0")
    assert _codes([policy, node]) == set()


def test_vgpu_pending_state_explains_counts() -> None:
    policy, node = _lab_node("vg-1", "vm-vgpu")
    node["metadata"]["labels"]["nvidia.com/vgpu.config.state"] = "pending"
    _set(node, "nvidia.com/NVIDIA_A10-12Q", "1")
    assert _codes([policy, node]) == {("GPU306", "Node/vg-1")}


def test_raw_device_id_name_from_an_old_pci_ids() -> None:
    policy, node = _lab_node("pt-1", "vm-passthrough")
    _set(node, "nvidia.com/GA102GL_A10", None)
    _set(node, "nvidia.com/2236", "2")
    report = run_checks([policy, node])
    assert report.codes() == {("GPU209", "Node/pt-1")}
    assert "nvidia.com/2236" in report.findings[0].message


def test_pci_ids_decide_the_passthrough_name() -> None:
    policy, node = _lab_node("pt-1", "vm-passthrough")
    _set(node, "nvidia.com/GA102GL_A10", None)
    _set(node, "nvidia.com/GA102GL_A10_24GB", "2")
    assert _codes([policy, node]) == {("GPU209", "Node/pt-1")}
    database = PciDatabase.parse("10de  NVIDIA Corporation\n\t2236  GA102GL [A10 24GB]\n")
    assert _codes([policy, node], pci_db=database) == set()


def test_invalid_and_unreadable_quantities() -> None:
    policy, node = _lab_node("c-1", "container")
    _set(node, "nvidia.com/gpu", "1.5")
    node["status"]["allocatable"]["nvidia.com/GA102GL_A10"] = {"not": "a quantity"}
    codes = _codes([policy, node])
    assert codes == {("GPU210", "Node/c-1")}


def test_non_gpu_node_with_a_deploy_label_only() -> None:
    policy = corpus_gen.lab_policy()
    node, _ = corpus_gen.node_object("cpu-1", corpus_gen.resolved(policy), model=None)
    node["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] = "true"
    assert _codes([policy, node]) == {("GPU402", "Node/cpu-1")}


def _device_plugin_pod(node: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "nvidia-device-plugin-daemonset-x1",
            "namespace": "gpu-operator",
            "ownerReferences": [{"kind": "DaemonSet", "name": "nvidia-device-plugin-daemonset"}],
        },
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


@pytest.mark.parametrize("evidence", ["advertised", "gpu-present", "plugin-pod"])
def test_gpu_node_without_nfd_label_is_not_an_error(evidence: str) -> None:
    """Advertised GPUs (with gpu.present or a device plugin pod, or alone) make a GPU node."""
    policy = corpus_gen.lab_policy()
    node, _ = corpus_gen.node_object("gpu-1", corpus_gen.resolved(policy), model=None)
    _set(node, "nvidia.com/gpu", "2")
    objects = [policy, node]
    if evidence == "gpu-present":
        node["metadata"]["labels"]["nvidia.com/gpu.present"] = "true"
    if evidence == "plugin-pod":
        objects.append(_device_plugin_pod("gpu-1"))
    report = run_checks(objects)
    assert report.exit_code == 0
    (finding,) = [f for f in report.findings if f.code == "GPU401"]
    assert finding.severity == "info"
    assert "advertises nvidia.com/gpu: 2" in finding.message
    if evidence == "gpu-present":
        assert "nvidia.com/gpu.present=true" in finding.message
    if evidence == "plugin-pod":
        assert "nvidia-device-plugin-daemonset-x1" in finding.message


@pytest.mark.parametrize("alias", [None, ""])
def test_kata_node_names_follow_the_gpu_alias(alias: str | None) -> None:
    """The Kata plugin advertises nvidia.com/pgpu, or model names with P_GPU_ALIAS=""."""
    policy = corpus_gen.policy_object(sandbox=True)
    policy["spec"]["sandboxWorkloads"]["mode"] = "kata"
    if alias is not None:
        policy["spec"]["kataSandboxDevicePlugin"] = {
            "enabled": True,
            "env": [{"name": "P_GPU_ALIAS", "value": alias}],
        }
    node, _ = corpus_gen.node_object(
        "kata-1", corpus_gen.resolved(policy), workload="vm-passthrough"
    )
    for resource in list(node["status"]["allocatable"]):
        if resource.startswith("nvidia.com/"):
            _set(node, resource, None)
    model_name, other = "nvidia.com/GA102GL_A10", "nvidia.com/pgpu"
    if alias is None:
        model_name, other = other, model_name
    _set(node, model_name, "2")
    assert _codes([policy, node]) == set()
    _set(node, model_name, None)
    _set(node, other, "2")
    assert ("GPU201", "Node/kata-1") in _codes([policy, node])


def _custom_vgpu_cluster(advertised: dict[str, str]) -> list[Obj]:
    """A vm-vgpu node whose custom vGPU config lists only GPU 0 of its two A10s."""
    policy, node = _lab_node("vg-1", "vm-vgpu")
    policy["spec"]["vgpuDeviceManager"] = {"enabled": True, "config": {"name": "custom-vgpu"}}
    node["metadata"]["labels"]["nvidia.com/vgpu.config"] = "only-first"
    for resource in list(node["status"]["allocatable"]):
        if resource.startswith("nvidia.com/"):
            _set(node, resource, None)
    for resource, value in advertised.items():
        _set(node, resource, value)
    document = {
        "version": "v1",
        "vgpu-configs": {"only-first": [{"devices": [0], "vgpu-devices": {"A10-24Q": 1}}]},
    }
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "custom-vgpu", "namespace": "gpu-operator"},
        "data": {"config.yaml": json.dumps(document)},
    }
    return [policy, node, configmap]


@pytest.mark.parametrize(
    "advertised",
    [
        {"nvidia.com/NVIDIA_A10-24Q": "1"},  # GPU 1 holds nothing
        {"nvidia.com/NVIDIA_A10-24Q": "2"},  # GPU 1 kept an A10-24Q from before
        {"nvidia.com/NVIDIA_A10-24Q": "1", "nvidia.com/NVIDIA_A10-12Q": "2"},  # or two 12Q
    ],
)
def test_unlisted_gpus_keep_their_vgpu_devices(advertised: dict[str, str]) -> None:
    assert _codes(_custom_vgpu_cluster(advertised)) == set()


def test_listed_gpus_are_still_checked() -> None:
    codes = _codes(_custom_vgpu_cluster({"nvidia.com/NVIDIA_A10-12Q": "2"}))
    assert ("GPU207", "Node/vg-1") in codes or ("GPU203", "Node/vg-1") in codes


# --- labels and states -------------------------------------------------------------------


def test_operand_turned_off_by_label_is_info() -> None:
    policy, node = _lab_node("c-1", "container")
    node["metadata"]["labels"]["nvidia.com/gpu.deploy.driver"] = "pre-installed"
    report = run_checks([policy, node])
    assert report.codes() == {("GPU304", "Node/c-1")}
    assert report.exit_code == 0


def test_deploy_labels_missing_without_contradiction() -> None:
    policy, node = _lab_node("c-1", "container")
    del node["metadata"]["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"]
    assert _codes([policy, node]) == {("GPU302", "Node/c-1")}


def test_deploy_labels_of_two_configs_are_named() -> None:
    policy, node = _lab_node("v-1", "vm-vgpu")
    node["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] = "true"
    report = run_checks([policy, node])
    (finding,) = report.findings
    assert finding.code == "GPU301"
    assert "two configs, vm-vgpu and container" in finding.message
    assert "nvidia.com/gpu.deploy.device-plugin-" in finding.hint


@pytest.mark.parametrize(
    ("daemonset", "app"),
    [
        # OpenShift's driver toolkit and an NVIDIADriver resource label their pods
        # `app: <DaemonSet>`; precompiled drivers keep `app: nvidia-driver-daemonset`.
        ("nvidia-driver-daemonset-415.92.202402201450-0", None),
        ("nvidia-driver-daemonset-5.15.0-105-generic-ubuntu22.04", "nvidia-driver-daemonset"),
        ("nvidia-gpu-driver-ubuntu22.04-6c8f7d9b5", None),
    ],
)
def test_a_driver_pod_is_known_by_every_name_upstream_gives_its_daemonset(
    daemonset: str, app: str | None
) -> None:
    objects = corpus_gen.operand_not_ready()
    for obj in objects:
        name = obj["metadata"]["name"]
        if obj["kind"] == "DaemonSet" and name == "nvidia-driver-daemonset":
            obj["metadata"]["name"] = daemonset
        owners = obj["metadata"].get("ownerReferences", [])
        for owner in owners:
            if owner["name"] == "nvidia-driver-daemonset":
                owner["name"] = daemonset
                obj["metadata"]["labels"]["app"] = app or daemonset
    driver_pods = {
        f"Pod/{o['metadata']['namespace']}/{o['metadata']['name']}"
        for o in objects
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith("nvidia-driver-daemonset-")
    }
    found = {subject for code, subject in _codes(objects) if code == "GPU307"}
    assert found == driver_pods


def test_mig_config_failed() -> None:
    policy, node = _lab_node("c-1", "container")
    node["metadata"]["labels"]["nvidia.com/mig.config.state"] = "failed"
    assert _codes([policy, node]) == {("GPU305", "Node/c-1")}


def test_sandbox_disabled_label_container_is_silent() -> None:
    policy = corpus_gen.policy_object(sandbox=False)
    node, _ = corpus_gen.node_object("c-1", corpus_gen.resolved(policy), workload="container")
    assert _codes([policy, node]) == set()


# --- policy ------------------------------------------------------------------------------


def test_policy_override_wins_over_the_input() -> None:
    objects = corpus_gen.healthy_lab()
    override = parse_cluster_policy(corpus_gen.policy_object(sandbox=False))
    report = run_checks(objects, policy=override, policy_source="--policy x.yaml")
    assert ("GPU101", "Node/lab-2") in report.codes()
    assert report.policy is not None and report.policy.source == "--policy x.yaml"


def _lab_with_second_policy() -> tuple[list[Obj], Obj, Obj]:
    """The healthy lab (sandbox on) and a second, newer ClusterPolicy with sandbox off."""
    objects = corpus_gen.healthy_lab()
    lab_policy = next(o for o in objects if o.get("kind") == "ClusterPolicy")
    other = corpus_gen.policy_object(sandbox=False)
    other["metadata"].update(name="b-new", creationTimestamp="2026-08-01T09:00:00Z")
    return [*objects, other], lab_policy, other


def test_the_policy_checked_is_the_one_the_operator_reconciles() -> None:
    objects, lab_policy, _ = _lab_with_second_policy()
    report = run_checks(objects)
    assert report.policy is not None and report.policy.source == "ClusterPolicy cluster-policy"
    assert ("GPU002", "ClusterPolicy/b-new") in report.codes()
    # The oldest is being deleted: the operator reconciles the other one, so does the check,
    # and the one going away is not reported as ignored.
    lab_policy["metadata"]["deletionTimestamp"] = "2026-11-01T00:00:00Z"
    report = run_checks(objects)
    assert report.policy is not None and report.policy.source == "ClusterPolicy b-new"
    assert ("GPU101", "Node/lab-2") in report.codes()
    assert not any(code == "GPU002" for code, _ in report.codes())


def test_a_policy_without_a_creation_time_is_the_oldest() -> None:
    objects, _, other = _lab_with_second_policy()
    del other["metadata"]["creationTimestamp"]
    report = run_checks(objects)
    assert report.policy is not None and report.policy.source == "ClusterPolicy b-new"
    assert ("GPU002", "ClusterPolicy/cluster-policy") in report.codes()


def test_every_policy_being_deleted_means_the_default_one() -> None:
    objects = corpus_gen.healthy_lab()
    for obj in objects:
        if obj.get("kind") == "ClusterPolicy":
            obj["metadata"]["deletionTimestamp"] = "2026-11-01T00:00:00Z"
    report = run_checks(objects)
    assert report.policy is not None and report.policy.source == "default"
    gpu001 = [f for f in report.findings if f.code == "GPU001"]
    assert len(gpu001) == 1 and "being deleted (cluster-policy)" in gpu001[0].message


def test_salvage_drops_only_unknown_fields() -> None:
    obj: dict[str, Any] = {"spec": {"driver": {"enabled": True, "future": 1}, "list": [{"x": 1}]}}
    trimmed = salvage(obj, ["spec.driver.future: unknown field", "spec.list[0].x: unknown field"])
    assert trimmed is not None
    assert trimmed[0] == {"spec": {"driver": {"enabled": True}, "list": [{}]}}
    assert salvage(obj, ["spec.driver.enabled: Input should be a valid boolean"]) is None
    assert obj["spec"]["driver"]["future"] == 1  # the input is not modified


def test_vgpu_config_from_a_configmap_in_the_input() -> None:
    cluster = corpus_gen.lab()
    config = {
        "version": "v1",
        "vgpu-configs": {"default": [{"devices": "all", "vgpu-devices": {"A10-4Q": 6}}]},
    }
    cluster.extra.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "default-vgpu-devices-config", "namespace": "gpu-operator"},
            "data": {"config.yaml": json.dumps(config)},
        }
    )
    report = run_checks(cluster.objects())
    assert ("GPU203", "Node/lab-3") in report.codes()
    assert "NVIDIA_A10-4Q" in " ".join(f.message for f in report.findings)


# --- workloads and KubeVirt --------------------------------------------------------------


def test_events_in_the_events_k8s_io_shape_are_read() -> None:
    objects = corpus_gen.unadvertised_request()
    objects.append(
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "e1", "namespace": "ml"},
            "regarding": {"kind": "Pod", "namespace": "ml", "name": "passthrough-test"},
            "note": "0/2 nodes are available: 2 Insufficient nvidia.com/GA102GL_A10.",
            "eventTime": "2026-08-01T10:00:00.000000Z",
        }
    )
    report = run_checks(objects)
    (finding,) = [f for f in report.findings if f.code == "GPU601"]
    assert "last event: 0/2 nodes are available" in finding.message
    assert "vm-passthrough" in finding.hint


def test_pending_launcher_pod_is_reported_through_its_vmi() -> None:
    cluster = corpus_gen.lab()
    machine = corpus_gen.vmi("vm-x", "nvidia.com/GA100_A100_PCIE_40GB", "gpus", None)
    launcher = corpus_gen.launcher_pod(machine, "nvidia.com/GA100_A100_PCIE_40GB")
    cluster.extra += [machine, launcher]
    codes = _codes(cluster.objects())
    assert ("GPU601", "VirtualMachineInstance/vms/vm-x") in codes
    assert not [c for c in codes if c[1].startswith("Pod/")]


def test_kubevirt_modern_mdev_setting_and_unknown_version() -> None:
    cluster = corpus_gen.lab()
    kubevirt = corpus_gen.kubevirt_object(list(cluster.nodes.values()), gates=("HostDevices",))
    kubevirt["spec"]["configuration"]["mediatedDevicesConfiguration"] = {"enabled": False}
    del kubevirt["status"]
    cluster.kubevirt = kubevirt
    report = run_checks(cluster.objects())
    assert report.codes() == set()
    assert any(skip.check == "kubevirt-gpu-gate" for skip in report.skipped)


def test_other_providers_permitted_devices_are_not_blamed_on_nvidia() -> None:
    """GPU503/GPU508 are about NVIDIA's plugin; KubeVirt's or Intel's entries are not."""
    cluster = corpus_gen.lab()
    assert cluster.kubevirt is not None
    permitted = cluster.kubevirt["spec"]["configuration"]["permittedHostDevices"]
    permitted["pciHostDevices"] += [
        {"pciVendorSelector": "8086:4940", "resourceName": "intel.com/qat"},
        # An NVIDIA card served by KubeVirt's own device plugin under its own name.
        {"pciVendorSelector": "10DE:1EB8", "resourceName": "devices.kubevirt.io/t4"},
    ]
    permitted["mediatedDevices"] += [
        {"mdevNameSelector": "i915-GVTg_V5_4", "resourceName": "intel.com/U630"},
        {
            "mdevNameSelector": "i915-GVTg_V5_8",
            "resourceName": "intel.com/U630-8",
            "externalResourceProvider": False,
        },
    ]
    assert _codes(cluster.objects()) == set()
    permitted["mediatedDevices"][0].pop("externalResourceProvider")
    assert _codes(cluster.objects()) == {("GPU503", "KubeVirt/kubevirt/kubevirt")}


def _without_policy(cluster: Any) -> list[Obj]:
    return [obj for obj in cluster.objects() if obj.get("kind") != "ClusterPolicy"]


def test_missing_policy_checks_vm_nodes_as_sandbox_nodes() -> None:
    """No ClusterPolicy: vm-* nodes are not container nodes by assumption (no errors)."""
    report = run_checks(_without_policy(corpus_gen.lab()))
    assert report.codes() == {("GPU001", "ClusterPolicy/(default)")}
    (finding,) = report.findings
    assert finding.severity == "info"
    assert (
        "lab-2, lab-3" in finding.message and "as if sandbox workloads were on" in finding.message
    )


def test_missing_policy_drift_on_a_vm_node_is_at_most_a_warning() -> None:
    cluster = corpus_gen.lab()
    _set(cluster.nodes["lab-3"], "nvidia.com/NVIDIA_A10-12Q", "3")
    report = run_checks(_without_policy(cluster))
    assert ("GPU107", "Node/lab-3") in report.codes()
    assert report.exit_code == 0
    (finding,) = [f for f in report.findings if f.code == "GPU107"]
    assert finding.severity == "warning"
    assert "no ClusterPolicy" in finding.message
    # With the policy in the input the same drift is an error.
    assert run_checks(cluster.objects()).exit_code == 1


def test_missing_policy_container_nodes_keep_their_severities() -> None:
    cluster = corpus_gen.lab()
    _set(cluster.nodes["lab-1"], "nvidia.com/gpu", "9")
    report = run_checks(_without_policy(cluster))
    (finding,) = [f for f in report.findings if f.code == "GPU205"]
    assert finding.severity == "error"


def _hyperconverged(permitted: Obj) -> Obj:
    return {
        "apiVersion": "hco.kubevirt.io/v1beta1",
        "kind": "HyperConverged",
        "metadata": {"name": "kubevirt-hyperconverged", "namespace": "openshift-cnv"},
        "spec": {"permittedHostDevices": permitted},
    }


def test_hyperconverged_permitted_devices_are_the_source_of_truth() -> None:
    cluster = corpus_gen.lab()
    assert cluster.kubevirt is not None
    permitted = copy.deepcopy(cluster.kubevirt["spec"]["configuration"]["permittedHostDevices"])
    # HCO owns the KubeVirt CR: with HCO's list complete, KubeVirt's own copy does not count.
    del cluster.kubevirt["spec"]["configuration"]["permittedHostDevices"]
    objects = cluster.objects()
    assert ("GPU507", "KubeVirt/kubevirt/kubevirt") in _codes(objects)
    assert _codes([*objects, _hyperconverged(permitted)]) == set()
    # HCO's list is read even without a KubeVirt CR in the input.
    without_kubevirt = [o for o in objects if o.get("kind") != "KubeVirt"]
    report = run_checks([*without_kubevirt, _hyperconverged(permitted)])
    assert report.codes() == set()
    assert any(skip.check == "kubevirt-gates" for skip in report.skipped)
    # Findings about HCO's list name the HyperConverged CR and its field.
    permitted.pop("mediatedDevices")
    report = run_checks([*objects, _hyperconverged(permitted)])
    subject = "HyperConverged/openshift-cnv/kubevirt-hyperconverged"
    assert ("GPU501", subject) in report.codes()
    (finding,) = [f for f in report.findings if f.code == "GPU501"]
    assert "spec.permittedHostDevices.mediatedDevices of the HyperConverged CR" in finding.hint


def test_kubevirt_versions() -> None:
    assert parse_version("v1.4.0") == (1, 4, 0)
    assert parse_version("1.8") == (1, 8, 0)
    assert parse_version("v1.5.2-rc.1") == (1, 5, 2)
    assert parse_version("main") is None


def test_missing_kinds_are_listed_as_skipped() -> None:
    _, node = _lab_node("pt-1", "vm-passthrough")
    report = run_checks([node])
    checks = {skip.check for skip in report.skipped}
    assert {"operands", "workloads", "kubevirt"} <= checks
    assert ("GPU001", "ClusterPolicy/(default)") in report.codes()
    empty = run_checks([])
    assert "nodes" in {skip.check for skip in empty.skipped}
    assert empty.exit_code == 0


# --- outputs -----------------------------------------------------------------------------


def _validate(value: Any, schema: dict[str, Any], path: str = "$") -> None:
    """A small JSON Schema check (the keywords REPORT_SCHEMA uses)."""
    if "const" in schema:
        assert value == schema["const"], path
    if "enum" in schema:
        assert value in schema["enum"], path
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        checks = {
            "object": lambda v: isinstance(v, dict),
            "array": lambda v: isinstance(v, list),
            "string": lambda v: isinstance(v, str),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
        }
        assert any(checks[name](value) for name in names), f"{path}: {value!r} is not {names}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            assert key in value, f"{path}.{key} missing"
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                _validate(item, properties[key], f"{path}.{key}")
            elif extra is False:
                raise AssertionError(f"{path}.{key} not allowed")
            elif isinstance(extra, dict):
                _validate(item, extra, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            _validate(item, schema["items"], f"{path}[{index}]")


@pytest.mark.parametrize(
    "build",
    [corpus_gen.healthy_lab, corpus_gen.kubevirt_not_permitted, corpus_gen.operand_not_ready],
)
def test_json_follows_the_documented_schema(build: Any) -> None:
    report = run_checks(build())
    data = json.loads(report.to_json())
    _validate(data, REPORT_SCHEMA)
    assert data["schema_version"] == 1
    assert data["summary"]["error"] == report.counts["error"]


def test_sarif_has_one_rule_per_code_and_valid_results() -> None:
    report = run_checks(corpus_gen.kubevirt_not_permitted())
    sarif = to_sarif(report)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == sorted(RULES)
    assert len(run["results"]) == len(report.findings)
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        (location,) = result["locations"][0]["logicalLocations"]
        assert location["fullyQualifiedName"].split("/")[0] in (
            "Node",
            "KubeVirt",
            "VirtualMachineInstance",
        )
        assert result["message"]["text"]
    json.dumps(sarif)


def test_text_groups_findings_by_node_and_colours_on_request() -> None:
    report: Report = run_checks(corpus_gen.operand_not_ready())
    plain = render_text(report, color=False)
    assert "Node lab-1 (container, 2× A10 per GFD)" in plain
    assert "Pod gpu-operator/nvidia-driver-daemonset-" in plain
    assert "\x1b[" not in plain
    assert "\x1b[" in render_text(report, color=True)
    assert "No problems found." in render_text(run_checks(corpus_gen.healthy_lab()))


def test_finding_order_is_stable() -> None:
    objects = corpus_gen.no_cluster_policy()
    first = run_checks(objects).to_json()
    assert run_checks(list(reversed(copy.deepcopy(objects)))).to_json() == first


# --- drift variants the simulator may produce on other nodes ----------------------------


@pytest.mark.parametrize(
    ("node", "change", "codes"),
    [
        ("lab-3", {"nvidia.com/NVIDIA_A10-8Q": "6"}, {"GPU203"}),  # added, 12Q kept
        ("lab-2", {"nvidia.com/gpu": "2"}, {"GPU202"}),
        ("lab-3", {"nvidia.com/GA102GL_A10": "2"}, {"GPU202"}),
        ("lab-3", {"nvidia.com/gpu": "2"}, {"GPU202"}),
        ("lab-1", {"nvidia.com/gpu": "4"}, {"GPU205"}),
        ("lab-2", {"nvidia.com/GA102GL_A10": "0", "nvidia.com/gpu": "2"}, {"GPU201"}),
    ],
)
def test_resource_drift_variants(node: str, change: dict[str, str], codes: set[str]) -> None:
    cluster = corpus_gen.lab()
    for resource, value in change.items():
        _set(cluster.nodes[node], resource, value)
    report = run_checks(cluster.objects())
    on_node = {f.code for f in report.findings if f.node == node}
    assert on_node == codes
    assert {f.node for f in report.findings if f.node} == {node}


@pytest.mark.parametrize(
    ("node", "labels", "codes"),
    [
        ("lab-3", {"nvidia.com/gpu.workload.config": "vm-passthrough"}, {"GPU201", "GPU301"}),
        ("lab-2", {"nvidia.com/gpu.workload.config": "container"}, {"GPU201", "GPU301"}),
        ("lab-1", {"nvidia.com/gpu.deploy.sandbox-device-plugin": "true"}, {"GPU301"}),
        ("lab-2", {"nvidia.com/gpu.deploy.vgpu-device-manager": "true"}, {"GPU301"}),
        ("lab-1", {"nvidia.com/mig.config.state": "pending"}, {"GPU306"}),
        (
            "lab-3",
            {"nvidia.com/gpu.deploy.sandbox-device-plugin": "paused-for-vgpu-change"},
            {"GPU303"},
        ),
        (
            "lab-1",
            {"nvidia.com/gpu.deploy.driver": "pre-installed_paused-for-driver-upgrade"},
            {"GPU303"},
        ),
    ],
)
def test_label_drift_variants(node: str, labels: dict[str, str], codes: set[str]) -> None:
    cluster = corpus_gen.lab(vms=False)
    cluster.nodes[node]["metadata"]["labels"].update(labels)
    cluster.operands = False
    report = run_checks(cluster.objects())
    assert {f.code for f in report.findings if f.node == node} == codes
    assert {f.node for f in report.findings if f.node} == {node}


@pytest.mark.parametrize(("vms", "codes"), [(True, set()), (False, {"GPU303"})])
def test_a_parked_vgpu_device_manager_is_reported_only_without_vms_using_the_devices(
    vms: bool, codes: set[str]
) -> None:
    cluster = corpus_gen.lab(vms=vms)
    labels = cluster.nodes["lab-3"]["metadata"]["labels"]
    labels["nvidia.com/gpu.deploy.vgpu-device-manager"] = "paused-for-vgpu-change"
    cluster.operands = False
    report = run_checks(cluster.objects())
    assert {f.code for f in report.findings if f.node == "lab-3"} == codes


def test_with_the_sandbox_plugin_off_a_known_passthrough_name_is_no_mismatch() -> None:
    """KubeVirt's own plugin (or one installed by hand) serves the cards: a name gpuop's
    pci.ids gives is right; only a name no device has is GPU209."""
    policy, node = _lab_node("pt-off", "vm-passthrough")
    policy["spec"]["sandboxDevicePlugin"] = {"enabled": False}
    assert not {c for c in _codes([policy, node]) if c[0] == "GPU209"}
    for part in ("capacity", "allocatable"):
        resources = node["status"][part]
        count = resources.pop("nvidia.com/GA102GL_A10")
        resources["nvidia.com/2236"] = count
    assert ("GPU209", "Node/pt-off") in _codes([policy, node])


def test_a_node_opted_out_of_operands_is_not_told_to_wait_for_its_plugin() -> None:
    policy, node = _lab_node("c-1", "container")
    labels = node["metadata"]["labels"]
    for key in [k for k in labels if k.startswith("nvidia.com/")]:
        del labels[key]
    labels["nvidia.com/gpu.deploy.operands"] = "false"
    labels["nvidia.com/gpu.present"] = "true"  # the operator sets it on every GPU node
    node["status"]["allocatable"] = {"cpu": "8"}
    node["status"]["capacity"] = {"cpu": "8"}
    assert _codes([policy, node]) == set()
    # Without the opt-out its plugin would run, and what it will advertise is unknown.
    del labels["nvidia.com/gpu.deploy.operands"]
    assert ("GPU104", "Node/c-1") in _codes([policy, node])
