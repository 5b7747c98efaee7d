"""Release-aware deploy-label rules: which release labelled the nodes, and what it requires."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import release_corpus_gen as gen
from click.testing import CliRunner

from gpuop.catalog.release_labels import release_labels
from gpuop.check import render_text, run_checks
from gpuop.check.release import (
    ReleaseError,
    detect_release,
    label_expectation,
    parse_operator_version,
)
from gpuop.check.state import ClusterState
from gpuop.cli import cli

Obj = dict[str, Any]
RELEASES = {release.version: release for release in gen.RELEASES}
CLIENT = "nvidia.com/gpu.deploy.client"


def _container_dump(version: str) -> list[Obj]:
    document = gen.container(RELEASES[version])
    return copy.deepcopy(document["items"])


def _without_release(objects: list[Obj]) -> list[Obj]:
    """Nodes and a ClusterPolicy, no image or version anywhere."""
    kept = [obj for obj in objects if obj["kind"] in ("Node", "ClusterPolicy")]
    for obj in kept:
        if obj["kind"] == "ClusterPolicy":
            obj["metadata"].pop("labels", None)
            obj["spec"]["validator"] = {}
    return kept


def _nodes(objects: list[Obj]) -> list[Obj]:
    return [obj for obj in objects if obj["kind"] == "Node"]


def _warnings(objects: list[Obj], **kwargs: Any) -> set[tuple[str, str]]:
    report = run_checks(objects, **kwargs)
    return {(f.code, f.subject) for f in report.findings if f.severity != "info"}


def test_a_v25_10_container_node_without_the_client_label_is_clean() -> None:
    objects = _container_dump("25.10.1")
    assert not any(CLIENT in node["metadata"]["labels"] for node in _nodes(objects))
    assert _warnings(objects) == set()


def test_a_v26_7_container_node_without_the_client_label_is_a_warning() -> None:
    objects = _container_dump("26.7.0")
    del _nodes(objects)[0]["metadata"]["labels"][CLIENT]
    report = run_checks(objects)
    (finding,) = [f for f in report.findings if f.severity != "info"]
    assert (finding.code, finding.subject) == ("GPU302", "Node/gpu-a10-0")
    assert CLIENT in finding.message


def test_operator_version_overrides_the_input() -> None:
    objects = _container_dump("25.10.1")
    override = parse_operator_version("v26.7.0")
    assert {code for code, _ in _warnings(objects, operator_release=override)} == {"GPU302"}
    assert _warnings(objects, operator_release=parse_operator_version("25.10")) == set()


def test_unknown_release_requires_only_what_every_plausible_release_sets() -> None:
    objects = _without_release(_container_dump("26.7.0"))
    for node in _nodes(objects):
        del node["metadata"]["labels"][CLIENT]
    report = run_checks(objects)
    assert report.release is not None and not report.release.known
    # The policy has sandboxWorkloads.mode: 26.3 or later.
    assert report.release.candidates == ("26.3", "26.7")
    assert [f for f in report.findings if f.severity != "info"] == []
    # A key every plausible release sets is still required.
    del _nodes(objects)[0]["metadata"]["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"]
    assert _warnings(objects) == {("GPU302", "Node/gpu-a10-0")}


def test_unknown_release_is_said_in_text_and_json() -> None:
    objects = _without_release(_container_dump("26.7.0"))
    report = run_checks(objects)
    data = json.loads(report.to_json())
    assert data["operator_release"]["known"] is False
    assert data["operator_release"]["candidates"] == ["26.3", "26.7"]
    text = render_text(report, width=100)
    assert text.splitlines()[1].startswith("operator release unknown")
    assert "every release from 26.3 to 26.7 sets" in " ".join(text.split())


def test_without_any_hint_every_release_is_plausible() -> None:
    release = detect_release(ClusterState.from_objects([]))
    assert not release.known
    assert release.candidates[0] == "1.7" and release.candidates[-1] == "26.7"
    container = release.expectation("container", "kubevirt")
    assert "client" in container.allowed and "client" not in container.required
    # v1.7 set no dcgm or node-status-exporter key; nothing here rules it out.
    assert {"dcgm", "node-status-exporter"} <= container.allowed
    passthrough = release.expectation("vm-passthrough", "kubevirt")
    assert passthrough.required == {"sandbox-device-plugin", "sandbox-validator", "vfio-manager"}
    assert {"kata-manager", "cc-manager", "client"} <= passthrough.allowed
    assert not container.fills_empty and not container.default_mig_config


def test_older_releases_honour_an_empty_deploy_label() -> None:
    objects = _container_dump("25.10.1")
    _nodes(objects)[0]["metadata"]["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"] = ""
    assert "GPU302" not in {code for code, _ in _warnings(objects)}
    objects = _container_dump("26.7.0")
    _nodes(objects)[0]["metadata"]["labels"]["nvidia.com/gpu.deploy.dcgm-exporter"] = ""
    assert ("GPU302", "Node/gpu-a10-0") in _warnings(objects)


def test_v22_9_writes_no_mig_config_default() -> None:
    objects = _container_dump("24.9.2")
    h100 = _nodes(objects)[1]
    del h100["metadata"]["labels"]["nvidia.com/mig.config"]
    del h100["metadata"]["labels"]["nvidia.com/mig.config.state"]
    assert ("GPU302", "Node/gpu-h100-0") in _warnings(objects)
    assert _warnings(objects, operator_release=parse_operator_version("22.9.2")) == set()


def test_keys_a_release_does_not_know_are_not_its_to_remove() -> None:
    objects = _container_dump("25.10.1")
    # v26.x removes the DRA keys; v25.10 does not know them and leaves them alone.
    _nodes(objects)[0]["metadata"]["labels"]["nvidia.com/gpu.deploy.dra-driver"] = "true"
    assert _warnings(objects) == set()
    objects = _container_dump("26.7.0")
    _nodes(objects)[0]["metadata"]["labels"]["nvidia.com/gpu.deploy.dra-driver"] = "true"
    assert _warnings(objects) == {("GPU301", "Node/gpu-a10-0")}


@pytest.mark.parametrize(
    ("edit", "version", "source"),
    [
        ("deployment", "25.3.4", "Deployment gpu-operator/gpu-operator image"),
        ("helm-label", "25.3.4", "label helm.sh/chart=gpu-operator-v25.3.4"),
        ("validator", "25.3.4", "DaemonSet gpu-operator/nvidia-operator-validator image"),
        ("policy-version", "25.3.4", "ClusterPolicy spec.validator.version=v25.3.4"),
        ("gpuop", "26.7.0", "gpuop's operator labels as v26.7.0"),
        ("olm", "25.3.4", "label olm.owner=gpu-operator-certified.v25.3.4"),
    ],
)
def test_release_sources(edit: str, version: str, source: str) -> None:
    objects = copy.deepcopy(gen.container(RELEASES["25.3.4"])["items"])
    deployment = next(obj for obj in objects if obj["kind"] == "Deployment")
    policy = next(obj for obj in objects if obj["kind"] == "ClusterPolicy")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    if edit != "deployment":
        container["image"] = "nvcr.io/nvidia/gpu-operator@sha256:" + "0" * 64
    if edit not in ("deployment", "helm-label"):
        deployment["metadata"]["labels"] = {}
    if edit in ("policy-version", "gpuop"):
        objects = [obj for obj in objects if obj["kind"] != "DaemonSet"]
    if edit in ("validator", "policy-version", "gpuop"):
        policy["metadata"]["labels"] = {}
    if edit == "gpuop":
        container["image"] = "gpuop:0.1.0"
    if edit == "olm":  # OpenShift: images by digest, the release in the CSV's name
        deployment["metadata"]["labels"] = {
            "olm.owner": "gpu-operator-certified.v25.3.4",
            "olm.owner.kind": "ClusterServiceVersion",
        }
    release = detect_release(ClusterState.from_objects(objects))
    assert release.version == version
    assert source in release.source
    assert release.from_operator == (edit in ("deployment", "helm-label", "olm"))


def test_pinned_operand_versions_name_the_line_when_nothing_else_does() -> None:
    objects = _without_release(_container_dump("25.3.4"))
    policy = next(obj for obj in objects if obj["kind"] == "ClusterPolicy")
    spec = policy["spec"]
    spec["devicePlugin"] = {**spec.get("devicePlugin", {}), "version": "v0.17.4"}
    spec["dcgmExporter"] = {**spec.get("dcgmExporter", {}), "version": "4.3.1-4.4.0-ubuntu22.04"}
    release = detect_release(ClusterState.from_objects(objects))
    assert release.known and release.line == "25.3"
    assert "operand versions" in release.source
    assert not release.from_operator


def test_image_tags_of_unknown_lines_are_not_releases() -> None:
    objects = copy.deepcopy(gen.container(RELEASES["26.7.0"])["items"])
    for obj in objects:
        if obj["kind"] == "Deployment":
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = "x/gpu-operator:v27.1.0"
            obj["metadata"]["labels"] = {}
        if obj["kind"] == "DaemonSet":
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = (
                "x/gpu-operator-validator:main"
            )
        if obj["kind"] == "ClusterPolicy":
            obj["metadata"]["labels"] = {}
            obj["spec"]["validator"] = {}
    release = detect_release(ClusterState.from_objects(objects))
    assert not release.known
    # The reason names the image whose version gpuop does not know, not "no Deployment".
    assert release.source.startswith(
        "Deployment gpu-operator/gpu-operator image x/gpu-operator:v27.1.0,"
        " not a release of the lines 1.0 to 26.7; the ClusterPolicy's"
    )


def _legacy_dump(deleted: tuple[str, ...] = ("dcgm", "node-status-exporter")) -> list[Obj]:
    """The nodes of a 24.9.2 container dump, each without the deploy keys `deleted`."""
    objects = [obj for obj in _container_dump("24.9.2") if obj["kind"] == "Node"]
    for node in objects:
        for key in deleted:
            node["metadata"]["labels"].pop(f"nvidia.com/gpu.deploy.{key}", None)
    return objects


def test_nodes_without_the_keys_v1_8_added_may_be_v1_7_nodes() -> None:
    objects = _legacy_dump()
    report = run_checks(objects)
    assert report.release is not None and report.release.candidates[0] == "1.7"
    assert _warnings(objects) == set()


def test_a_dcgm_key_on_any_node_rules_out_v1_7() -> None:
    objects = _legacy_dump()
    first, *_ = _nodes(objects)
    first["metadata"]["labels"]["nvidia.com/gpu.deploy.dcgm"] = "true"
    first["metadata"]["labels"]["nvidia.com/gpu.deploy.node-status-exporter"] = "true"
    release = detect_release(ClusterState.from_objects(objects))
    assert release.candidates[0] == "1.8"
    warned = {subject for code, subject in _warnings(objects) if code == "GPU302"}
    assert warned == {f"Node/{n['metadata']['name']}" for n in _nodes(objects)[1:]}


def test_a_policy_field_of_v1_8_rules_out_v1_7() -> None:
    policy = {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"operator": {}, "dcgm": {"enabled": True}},
    }
    objects = [*_legacy_dump(), policy]
    release = detect_release(ClusterState.from_objects(objects))
    assert release.candidates[0] == "1.8"
    assert "spec.dcgm needs 1.8 or later" in release.source


def _operator_deployment(tag: str) -> Obj:
    container = {"name": "gpu-operator", "image": f"nvcr.io/nvidia/gpu-operator:{tag}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-operator", "namespace": "gpu-operator"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


@pytest.mark.parametrize(
    ("tag", "line", "warned"), [("v1.7.1", "1.7", False), ("v1.9.0", "1.9", True)]
)
def test_a_1_x_operator_image_names_its_line(tag: str, line: str, warned: bool) -> None:
    objects = _legacy_dump()
    objects.append(_operator_deployment(tag))
    release = detect_release(ClusterState.from_objects(objects))
    assert (release.line, release.from_operator) == (line, True)
    assert bool({code for code, _ in _warnings(objects)} & {"GPU302"}) is warned


def test_a_release_without_workload_configs_sets_nothing_for_vm_nodes() -> None:
    table = release_labels()
    eras = [table.era("1.10"), table.era("22.9")]
    assert None not in eras
    expectation = label_expectation(
        [era for era in eras if era is not None], "vm-passthrough", "kubevirt"
    )
    assert expectation.required == {"sandbox-device-plugin", "sandbox-validator", "vfio-manager"}


def test_1_x_operator_versions() -> None:
    assert parse_operator_version("1.9").line == "1.9"
    assert parse_operator_version("v1.7.1").version == "1.7.1"
    assert parse_operator_version("1.6.2").line == "1.6"


def _pre_deploy_dump(*, operand_pod: bool = True) -> list[Obj]:
    """GPU nodes as a release before v1.7.0 left them: no deploy key anywhere, the
    operator's driver pod (named, with its owner) on the first node."""
    objects = _legacy_dump(())
    for node in _nodes(objects):
        labels = node["metadata"]["labels"]
        for key in [key for key in labels if key.startswith("nvidia.com/gpu.deploy.")]:
            del labels[key]
    if operand_pod:
        node = _nodes(objects)[0]["metadata"]["name"]
        objects.append(_pod("nvidia-driver-daemonset-4ggb5", node, "nvidia-driver-daemonset"))
    return objects


def _pod(name: str, node: str, daemonset: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "gpu-operator-resources",
            "ownerReferences": [{"kind": "DaemonSet", "name": daemonset}],
        },
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nvcr.io/x:1"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "c", "ready": True, "state": {"running": {}}}],
        },
    }


def test_an_operand_on_a_node_without_deploy_labels_shows_a_release_before_v1_7() -> None:
    objects = _pre_deploy_dump()
    release = detect_release(ClusterState.from_objects(objects))
    assert release.candidates == ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6")
    assert "gpu-operator-resources/nvidia-driver-daemonset-4ggb5 runs on node" in release.source
    assert "before v1.7.0" in release.source
    assert _warnings(objects) == set()


def test_without_an_operand_the_releases_before_v1_7_are_not_counted() -> None:
    objects = _pre_deploy_dump(operand_pod=False)
    release = detect_release(ClusterState.from_objects(objects))
    assert release.candidates[0] == "1.7"


def test_one_labelled_node_rules_out_the_releases_before_v1_7() -> None:
    objects = _pre_deploy_dump()
    unlabelled, labelled, *_ = _nodes(objects)
    as_labelled = {n["metadata"]["name"]: n for n in _nodes(_container_dump("24.9.2"))}
    labelled["metadata"]["labels"] = as_labelled[labelled["metadata"]["name"]]["metadata"]["labels"]
    release = detect_release(ClusterState.from_objects(objects))
    assert "1.6" not in release.candidates
    warned = {subject for code, subject in _warnings(objects) if code == "GPU302"}
    assert warned == {f"Node/{unlabelled['metadata']['name']}"}


def test_a_shared_operand_name_is_no_sign_of_an_old_release() -> None:
    objects = _pre_deploy_dump(operand_pod=False)
    node = _nodes(objects)[0]["metadata"]["name"]
    objects.append(
        _pod("nvidia-device-plugin-daemonset-7kx2m", node, "nvidia-device-plugin-daemonset")
    )
    assert detect_release(ClusterState.from_objects(objects)).candidates[0] == "1.7"


def test_a_daemonset_selecting_gpu_present_shows_a_release_before_v1_7() -> None:
    objects = _pre_deploy_dump(operand_pod=False)
    objects.append(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "nvidia-driver-daemonset", "namespace": "gpu-operator-resources"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": "nvidia-driver-daemonset"}},
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.present": "true"},
                        "containers": [{"name": "nvidia-driver-ctr", "image": "nvidia/driver:450"}],
                    },
                }
            },
        }
    )
    release = detect_release(ClusterState.from_objects(objects))
    assert release.candidates[-1] == "1.6"
    assert release.source.startswith(
        "DaemonSet gpu-operator-resources/nvidia-driver-daemonset selects nodes by"
        " nvidia.com/gpu.present=true, not by a deploy label"
    )
    assert _warnings(objects) == set()


def test_a_v1_6_operator_image_names_its_line_and_requires_no_key() -> None:
    objects = _pre_deploy_dump(operand_pod=False)
    objects.append(_operator_deployment("1.6.2"))
    release = detect_release(ClusterState.from_objects(objects))
    assert (release.version, release.line, release.from_operator) == ("1.6.2", "1.6", True)
    assert _warnings(objects) == set()
    expectation = release.expectation("container", "kubevirt")
    assert expectation.required == frozenset()
    # No MIG manager before v1.7.0: a MIG-capable node needs no mig-manager key.
    assert not expectation.requires("nvidia.com/gpu.deploy.mig-manager", {})


@pytest.mark.parametrize("value", ["27.1.0", "v26", "latest", "25.11.0", "1.12.0", "0.9.0", ""])
def test_bad_operator_versions(value: str) -> None:
    with pytest.raises(ReleaseError, match="not a GPU Operator release"):
        parse_operator_version(value)


def test_a_patch_gpuop_does_not_list_uses_its_line() -> None:
    release = parse_operator_version("v25.10.7")
    assert (release.version, release.line) == ("25.10.7", "25.10")


def test_intersection_of_eras() -> None:
    eras = release_labels().eras
    expectation = label_expectation(eras, "vm-vgpu", "kubevirt")
    assert expectation.required == {
        "sandbox-device-plugin",
        "vgpu-manager",
        "vgpu-device-manager",
        "sandbox-validator",
    }
    assert expectation.allowed == {"cc-manager", "client"}
    # Only keys every era deletes count as removed: DRA keys are v26.7's alone.
    assert "dra-driver" not in expectation.removed
    assert "device-plugin" in expectation.removed


def test_cli_operator_version(tmp_path: Any) -> None:
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"kind": "List", "items": _container_dump("25.10.1")}))
    runner = CliRunner()
    clean = runner.invoke(cli, ["check", str(path), "-o", "json"])
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.stdout)["operator_release"]["version"] == "25.10.1"
    newest = runner.invoke(cli, ["check", str(path), "--operator-version", "v26.7.0", "-o", "json"])
    codes = {f["code"] for f in json.loads(newest.stdout)["findings"]}
    assert "GPU302" in codes
    bad = runner.invoke(cli, ["check", str(path), "--operator-version", "27.1"])
    assert bad.exit_code == 2
    assert "not a GPU Operator release" in bad.output


def test_a_development_chart_version_names_no_release() -> None:
    # NVIDIA's chart sources say `v1.0.0-devel` at every tag; the v26.7.0 cluster in
    # tests/data/upstream-v26.7.0 was installed from them.
    objects = _without_release(_container_dump("26.7.0"))
    for obj in objects:
        if obj["kind"] == "ClusterPolicy":
            obj["metadata"]["labels"] = {"helm.sh/chart": "gpu-operator-v1.0.0-devel"}
    release = detect_release(ClusterState.from_objects(objects))
    assert release.line != "1.0"
    assert "1.0" not in release.candidates


def test_an_operand_on_a_node_not_in_the_input_shows_no_release() -> None:
    objects = [_pod("nvidia-driver-daemonset-4ggb5", "elsewhere", "nvidia-driver-daemonset")]
    assert detect_release(ClusterState.from_objects(objects)).candidates[0] == "1.7"


def test_an_operand_placed_by_a_deploy_label_shows_v1_7_or_later() -> None:
    objects = _pre_deploy_dump()
    pod = objects[-1]
    pod["spec"]["nodeSelector"] = {"nvidia.com/gpu.deploy.driver": "true"}
    assert detect_release(ClusterState.from_objects(objects)).candidates[0] == "1.7"


def test_an_operand_selecting_gpu_present_shows_a_release_before_v1_7() -> None:
    pod = _pod("nvidia-driver-daemonset-4ggb5", "elsewhere", "nvidia-driver-daemonset")
    pod["spec"]["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    release = detect_release(ClusterState.from_objects([pod]))
    assert release.candidates[-1] == "1.6"
    assert "selects nodes by nvidia.com/gpu.present=true" in release.source


def test_an_operand_pods_chart_label_names_the_release() -> None:
    # `kubectl describe pod` of the driver: its init container is the driver manager, not
    # the validator, and the operator labels its operands' pods with its chart.
    pod = _pod("nvidia-driver-daemonset-99xrx", "node-1", "nvidia-driver-daemonset")
    pod["metadata"]["labels"] = {
        "app": "nvidia-driver-daemonset",
        "helm.sh/chart": "gpu-operator-v23.9.1",
    }
    release = detect_release(ClusterState.from_objects([pod]))
    assert (release.version, release.line) == ("23.9.1", "23.9")
    assert release.source.endswith("label helm.sh/chart=gpu-operator-v23.9.1")
