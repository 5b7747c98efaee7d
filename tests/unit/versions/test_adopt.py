"""`gpuop adopt` on what NVIDIA's operator v26.7.0 really left on a cluster, and on changes.

The recorded state (`tests/data/upstream-v26.7.0-state/`) must need nothing: the takeover
restarts no pod. A cluster changed on purpose must list exactly what would roll and why.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpuop.cli import cli
from gpuop.versions.adopt import preview_adoption, render_adoption_text

DATA = Path(__file__).parents[2] / "data" / "upstream-v26.7.0-state"


SUPPORT = (
    "configmaps",
    "services",
    "serviceaccounts",
    "roles",
    "rolebindings",
    "clusterroles",
    "clusterrolebindings",
    "runtimeclasses",
)


def _state(directory: Path = DATA) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for name in ("nodes", "daemonsets", "clusterpolicy", *SUPPORT):
        objects += json.loads((directory / f"{name}.json").read_text())["items"]
    for pod in json.loads((directory / "pods.json").read_text())["items"]:
        kind, _, owner = pod["owner"].partition("/")
        pod = copy.deepcopy(pod)
        pod["metadata"]["namespace"] = "gpu-operator"
        pod["metadata"]["ownerReferences"] = [{"kind": kind, "name": owner, "controller": True}]
        objects.append(pod)
    return objects


def _gpu_workload(node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }


@pytest.mark.parametrize("directory", [DATA, DATA / "sandbox-off"], ids=["sandbox-on", "default"])
def test_nvidias_recorded_state_needs_nothing(directory: Path) -> None:
    preview = preview_adoption(_state(directory), "gpu-operator", {})
    assert preview.clean, render_adoption_text(preview)
    assert preview.manager == "NVIDIA's GPU Operator"
    assert preview.release.startswith("v26.7.0")
    assert {d.action for d in preview.daemonsets} == {"unchanged"}


def test_a_driver_change_rolls_the_driver_and_drains_the_gpu_pods() -> None:
    objects = _state(DATA / "sandbox-off")
    policy = next(o for o in objects if o["kind"] == "ClusterPolicy")
    policy["spec"]["driver"]["version"] = "580.95.05"
    objects.append(_gpu_workload("gpu-container"))
    preview = preview_adoption(objects, "gpu-operator", {})
    assert not preview.clean
    rolls = {d.name: d for d in preview.rolls}
    assert set(rolls) == {"nvidia-driver-daemonset"}
    differences = "\n".join(rolls["nvidia-driver-daemonset"].differences)
    assert "containers[nvidia-driver-ctr].image" in differences
    assert "580.95.05" in differences
    assert "DRIVER_CONFIG_DIGEST" in differences
    drained = {n.node: n.gpu_pods for n in preview.nodes}
    assert drained == {"gpu-container": ("ml/train",)}
    text = render_adoption_text(preview)
    assert "DaemonSet nvidia-driver-daemonset ROLLS" in text
    assert "ml/train" in text


def test_a_missing_daemonset_is_made_and_an_older_gpuop_template_rolls() -> None:
    objects = [
        o
        for o in _state()
        if not (o["kind"] == "DaemonSet" and o["metadata"]["name"] == "nvidia-vfio-manager")
    ]
    plugin = next(
        o
        for o in objects
        if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "nvidia-device-plugin-daemonset"
    )
    plugin["spec"]["template"]["metadata"]["labels"]["gpuop.io/operand"] = "device-plugin"
    preview = preview_adoption(objects, "gpu-operator", {})
    actions = {d.name: d.action for d in preview.daemonsets}
    assert actions["nvidia-vfio-manager"] == "create"
    assert actions["nvidia-device-plugin-daemonset"] == "roll"
    roll = next(d for d in preview.rolls)
    assert roll.differences == (
        "spec.template.metadata.labels.gpuop.io/operand: 'device-plugin' -> (none)",
    )
    assert roll.nodes == ("gpu-container",)


def test_the_command_exits_0_when_clean_and_1_when_something_rolls(tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": _state()}))
    clean = CliRunner().invoke(cli, ["adopt", str(dump)])
    assert clean.exit_code == 0, clean.output
    assert "Nothing to change" in clean.output
    objects = _state()
    next(o for o in objects if o["kind"] == "ClusterPolicy")["spec"]["devicePlugin"]["version"] = (
        "v0.17.0"
    )
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    changed = CliRunner().invoke(cli, ["adopt", str(dump), "-o", "json"])
    assert changed.exit_code == 1, changed.output
    data = json.loads(changed.output)
    # The MPS control daemon runs the device plugin's image too.
    assert [d["name"] for d in data["daemonsets"] if d["action"] == "roll"] == [
        "nvidia-device-plugin-daemonset",
        "nvidia-device-plugin-mps-control-daemon",
    ]


def test_no_input_is_a_one_line_error() -> None:
    result = CliRunner().invoke(cli, ["adopt"])
    assert result.exit_code == 2
    assert "--live" in result.output


def test_a_missing_configmap_is_listed_as_made() -> None:
    objects = [
        o
        for o in _state()
        if not (o["kind"] == "ConfigMap" and o["metadata"]["name"] == "default-mig-parted-config")
    ]
    preview = preview_adoption(objects, "gpu-operator", {})
    assert preview.created == ("ConfigMap gpu-operator/default-mig-parted-config",)
    assert not preview.rolls and not preview.clean


def test_a_collect_bundle_with_only_the_vgpu_configmap_reports_no_missing_configmap() -> None:
    objects = [
        o
        for o in _state()
        if o["kind"] != "ConfigMap" or o["metadata"]["name"] == "default-vgpu-devices-config"
    ]
    assert preview_adoption(objects, "gpu-operator", {}).created == ()


def test_on_openshift_the_driver_toolkit_daemonset_is_kept_and_nothing_restarts() -> None:
    # NVIDIA's recorded state as OpenShift would have it: every node labelled by the
    # machine-config daemon, the driver DaemonSet named for the RHCOS version, and GFD told
    # not to use the NodeFeature API, right after its asset's env.
    objects = _state(DATA / "sandbox-off")
    dtk = "nvidia-driver-daemonset-415.92.202402201450-0"
    for obj in objects:
        meta = obj["metadata"]
        if obj["kind"] == "Node":
            meta.setdefault("labels", {})["node.openshift.io/os_id"] = "rhcos"
        elif obj["kind"] == "DaemonSet" and meta["name"] == "nvidia-driver-daemonset":
            meta["name"] = dtk
        elif obj["kind"] == "DaemonSet" and meta["name"] == "gpu-feature-discovery":
            env = obj["spec"]["template"]["spec"]["containers"][0]["env"]
            end = next(i for i, e in enumerate(env) if e["name"] == "POD_NAME")
            env.insert(end + 1, {"name": "USE_NODE_FEATURE_API", "value": "false"})
        for owner in meta.get("ownerReferences", []):
            if owner["name"] == "nvidia-driver-daemonset":
                owner["name"] = dtk
    objects.append(_gpu_workload("gpu-container"))
    preview = preview_adoption(objects, "gpu-operator", {})
    actions = {d.name: d.action for d in preview.daemonsets}
    assert actions.pop(dtk) == "kept"
    assert set(actions.values()) == {"unchanged"}, render_adoption_text(preview)
    assert preview.clean
    assert "Kept as they are (1 DaemonSets" in render_adoption_text(preview)
