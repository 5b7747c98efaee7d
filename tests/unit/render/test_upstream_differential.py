"""gpuop's operand DaemonSets against those NVIDIA's GPU Operator v26.7.0 wrote, field by field.

The reference (`tests/data/upstream-v26.7.0/`) is what upstream created for its Helm chart's
ClusterPolicy on a three-mode cluster of Ubuntu 24.04 GPU nodes. Both sides lose the values
the API server fills in; then every field must be equal, except the deliberate deviations
below (each also in docs/operator.md, "Deliberate deviations from upstream").
"""

from __future__ import annotations

import copy
import functools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gpuop.cli import cli, main
from gpuop.policy import parse_cluster_policy
from gpuop.render import render_all
from gpuop.render.defaults import strip_api_defaults

DATA = Path(__file__).parents[2] / "data" / "upstream-v26.7.0"

# (field, reason). A field is a path from the DaemonSet; `*` matches any list item or key;
# `env:NAME` is the env var NAME of any container.
DEVIATIONS: list[tuple[str, str]] = [
    (
        "metadata.labels.app.kubernetes.io/managed-by",
        "gpuop's operator watches the DaemonSets it manages by `managed-by: gpuop`",
    ),
    (
        "metadata.labels.gpuop.io/operand",
        "extra label on the DaemonSet (never in its pod template): what gpuop applied",
    ),
    (
        "metadata.annotations.nvidia.com/last-applied-hash",
        "each operator hashes its own rendering to skip unchanged applies",
    ),
    ("metadata.ownerReferences.*.uid", "the owning ClusterPolicy's uid differs per cluster"),
]


@functools.cache
def _upstream_once() -> dict[str, dict[str, Any]]:
    data = json.loads((DATA / "daemonsets.json").read_text())
    items = data["items"] if isinstance(data, dict) else data
    return {ds["metadata"]["name"]: ds for ds in items}


def _upstream() -> dict[str, dict[str, Any]]:
    """A fresh copy of upstream's DaemonSets (read once: each test may change its copy)."""
    return copy.deepcopy(_upstream_once())


def _nodes() -> list[dict[str, Any]]:
    return list(yaml.safe_load((DATA / "nodes.yaml").read_text())["items"])


@functools.cache
def _rendered_once() -> tuple[dict[str, Any], ...]:
    policy = parse_cluster_policy(yaml.safe_load((DATA / "cluster-policy.yaml").read_text()))
    return tuple(render_all(policy, "gpu-operator", nodes=_nodes()))


def _rendered() -> list[dict[str, Any]]:
    """A fresh copy of gpuop's rendering of the reference inputs (rendered once)."""
    return copy.deepcopy(list(_rendered_once()))


def _gpuop() -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in _rendered() if o["kind"] == "DaemonSet"}


def _remove(obj: Any, parts: list[str]) -> None:
    if not parts or obj is None:
        return
    head, rest = parts[0], parts[1:]
    if isinstance(obj, list):
        for item in obj if head == "*" else []:
            _remove(item, rest) if rest else None
        return
    if not isinstance(obj, dict):
        return
    keys = list(obj) if head == "*" else [head]
    for key in keys:
        if key not in obj:
            continue
        if rest:
            _remove(obj[key], rest)
        else:
            del obj[key]


def _split(path: str) -> list[str]:
    # Label keys contain dots; a known label key stays one part.
    for key in (
        "app.kubernetes.io/managed-by",
        "gpuop.io/operand",
        "nvidia.com/last-applied-hash",
    ):
        if path.endswith("." + key):
            return [*path[: -len(key) - 1].split("."), key]
    return path.split(".")


def _normalise(ds: dict[str, Any]) -> dict[str, Any]:
    ds = strip_api_defaults(ds)
    for field, _reason in DEVIATIONS:
        if field.startswith("env:"):
            name = field.removeprefix("env:")
            pod = ds["spec"]["template"]["spec"]
            for c in [*pod.get("initContainers", []), *pod.get("containers", [])]:
                if "env" in c:
                    c["env"] = [e for e in c["env"] if e["name"] != name]
        else:
            _remove(ds, _split(field))
    for key in ("apiVersion", "kind"):
        ds.pop(key, None)
    return ds


def _differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out: list[str] = []
        for key in sorted({*ours, *theirs}):
            sub = f"{path}.{key}" if path else str(key)
            if key not in ours:
                out.append(f"{sub}: missing (upstream {theirs[key]!r})")
            elif key not in theirs:
                out.append(f"{sub}: extra ({ours[key]!r})")
            else:
                out += _differences(ours[key], theirs[key], sub)
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        out = []
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            label = a.get("name", i) if isinstance(a, dict) else i
            out += _differences(a, b, f"{path}[{label}]")
        return out
    return [] if ours == theirs else [f"{path}: {ours!r} != upstream {theirs!r}"]


def test_the_same_daemonsets_exist() -> None:
    assert sorted(_gpuop()) == sorted(_upstream())


@pytest.mark.parametrize("name", sorted(_upstream()))
def test_daemonset_equals_upstream_except_documented_deviations(name: str) -> None:
    ours = _normalise(_gpuop()[name])
    theirs = _normalise(_upstream()[name])
    assert _differences(ours, theirs) == []


def test_driver_tag_follows_the_first_gpu_nodes_os() -> None:
    driver = _gpuop()["nvidia-driver-daemonset"]["spec"]["template"]["spec"]["containers"][0]
    assert driver["image"] == "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04"
    policy = parse_cluster_policy(yaml.safe_load((DATA / "cluster-policy.yaml").read_text()))
    rhel = [
        {
            "metadata": {
                "name": "a",
                "labels": {
                    "nvidia.com/gpu.present": "true",
                    "feature.node.kubernetes.io/system-os_release.ID": "rhel",
                    "feature.node.kubernetes.io/system-os_release.VERSION_ID": "9.4",
                },
            }
        },
        *_nodes(),
    ]
    objects = {o["metadata"]["name"]: o for o in render_all(policy, "gpu-operator", nodes=rhel)}
    image = objects["nvidia-driver-daemonset"]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "nvcr.io/nvidia/driver:595.91.07-rhel9"


def test_deviations_are_documented() -> None:
    doc = (Path(__file__).parents[3] / "docs" / "operator.md").read_text()
    assert "## Deliberate deviations from upstream" in doc
    for field, _reason in DEVIATIONS:
        assert f"`{field}`" in doc, field


def test_render_command_prints_the_same_objects() -> None:
    result = CliRunner().invoke(
        cli,
        [
            "render",
            "--policy",
            str(DATA / "cluster-policy.yaml"),
            "--nodes",
            str(DATA / "nodes.yaml"),
            "-o",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    items = json.loads(result.output)["items"]
    names = [o["metadata"]["name"] for o in items if o["kind"] == "DaemonSet"]
    assert sorted(names) == sorted(_upstream())
    assert len(items) == len(_rendered())


# Objects in upstream's list that neither operator creates.
NOT_THE_OPERATORS = {"configmap/kube-root-ca.crt", "serviceaccount/default"}


def _kubectl_name(obj: dict[str, Any]) -> str:
    group = obj["apiVersion"].rpartition("/")[0]
    kind = obj["kind"].lower()
    return (
        f"{kind}.{group}/{obj['metadata']['name']}"
        if group
        else f"{kind}/{obj['metadata']['name']}"
    )


def test_the_same_namespaced_objects_exist() -> None:
    """ServiceAccounts, Roles, RoleBindings, ConfigMaps and Services, name for name; the
    reference cluster had no Prometheus operator, so no ServiceMonitor."""
    listed = (DATA / "namespaced-objects.txt").read_text().split()
    theirs = {n for n in listed if "gpuop-simulator" not in n} - NOT_THE_OPERATORS
    ours = {
        _kubectl_name(o)
        for o in _rendered()
        if "namespace" in o["metadata"] and o["kind"] not in ("DaemonSet", "ServiceMonitor")
    }
    assert ours == theirs


def test_every_operand_pod_runs_under_a_service_account_that_is_rendered() -> None:
    objects = _rendered()
    accounts = {o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"}
    for ds in (o for o in objects if o["kind"] == "DaemonSet"):
        account = ds["spec"]["template"]["spec"]["serviceAccountName"]
        assert account in accounts, ds["metadata"]["name"]


def test_render_command_rejects_bad_input_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nspec: {driver: {version: 1}}\n")
    monkeypatch.setattr(sys, "argv", ["gpuop", "render", "--policy", str(bad)])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "spec.driver.version" in err


def test_render_command_reads_a_json_node_list_from_stdin() -> None:
    nodes = {"apiVersion": "v1", "kind": "List", "items": _nodes()}
    result = CliRunner().invoke(
        cli,
        ["render", "--policy", str(DATA / "cluster-policy.yaml"), "--nodes", "-", "-o", "json"],
        input=json.dumps(nodes),
    )
    assert result.exit_code == 0, result.output
    driver = next(
        o
        for o in json.loads(result.output)["items"]
        if o["metadata"]["name"] == "nvidia-driver-daemonset"
    )
    image = driver["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.endswith("-ubuntu24.04")


def test_no_cluster_wide_pod_reader_unless_the_exporter_reads_pod_metadata() -> None:
    """Upstream gates `nvidia-dcgm-exporter-read-pods` on pod labels or UIDs in the metrics."""

    def readers(exporter: dict[str, Any]) -> set[tuple[str, str]]:
        raw = yaml.safe_load((DATA / "cluster-policy.yaml").read_text())
        raw["spec"]["dcgmExporter"].update(exporter)
        objects = render_all(parse_cluster_policy(raw), "gpu-operator", nodes=_nodes())
        return {
            (o["kind"], o["metadata"]["name"])
            for o in objects
            if o["metadata"]["name"] == "nvidia-dcgm-exporter-read-pods"
        }

    both = {
        ("ClusterRole", "nvidia-dcgm-exporter-read-pods"),
        ("ClusterRoleBinding", "nvidia-dcgm-exporter-read-pods"),
    }
    assert readers({}) == set()
    assert readers({"enablePodLabels": True}) == both
    assert readers({"enablePodUID": True}) == both
    env = [{"name": "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", "value": "TRUE"}]
    assert readers({"env": env}) == both
