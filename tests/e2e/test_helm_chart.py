"""The Helm chart in deploy/helm/gpuop lints, installs, upgrades and uninstalls cleanly.

Against the session's real API server, with the helm built from the Go module proxy (never
skipped: the session builds helm when it is absent). The operator image the chart names is not
pulled or run here (kwok nodes run no containers), so nothing waits for the operator's pod to
become ready: these tests are about the objects the chart makes.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from gpuop.lab import stack

pytestmark = pytest.mark.e2e

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "gpuop"
CRD = "clusterpolicies.nvidia.com"
NAMESPACED = (
    "deployments,replicasets,pods,serviceaccounts,roles,rolebindings,configmaps,secrets,"
    "poddisruptionbudgets"
)
CLUSTER_SCOPED = "clusterroles,clusterrolebindings,clusterpolicies"
E2E_LABEL = "gpuop.test/e2e"  # as conftest.py labels its namespaces

# The ``helm`` and ``kubectl`` fixtures of conftest.py.
CommandRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def operator_namespace(kube_client: Client) -> Iterator[str]:
    """A second fresh namespace: the chart's ``namespace`` value, apart from the release's."""
    name = f"e2e-helm-operator-{uuid.uuid4().hex[:6]}"
    kube_client.create(Namespace(metadata=ObjectMeta(name=name, labels={E2E_LABEL: "true"})))
    try:
        yield name
    finally:
        with contextlib.suppress(ApiError):
            kube_client.delete(Namespace, name)


@pytest.fixture
def release(helm: CommandRunner, namespace: str) -> Iterator[str]:
    """A release name in ``namespace``; uninstalled afterwards if a failed test left it."""
    name = f"gpuop-e2e-{uuid.uuid4().hex[:6]}"
    yield name
    helm("uninstall", name, "-n", namespace, "--ignore-not-found", check=False)


def get_json(kubectl: CommandRunner, *args: str) -> Any:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def labelled(kubectl: CommandRunner, release: str, namespaces: list[str]) -> list[str]:
    """Every object that carries the release's instance label, namespaced and cluster-scoped."""
    selector = f"app.kubernetes.io/instance={release}"
    found: list[str] = []
    for ns in namespaces:
        out = kubectl("get", NAMESPACED, "-n", ns, "-l", selector, "-o", "name").stdout
        found += [f"{ns}/{line}" for line in out.split()]
    found += kubectl("get", CLUSTER_SCOPED, "-l", selector, "-o", "name").stdout.split()
    return found


def test_chart_lints(helm: CommandRunner) -> None:
    result = helm("lint", "--strict", str(CHART))
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


def test_bad_operand_image_name_is_refused(helm: CommandRunner) -> None:
    result = helm(
        "template", "x", str(CHART), "--set", "operandImages.driver=nvcr.io/x:1", check=False
    )
    assert result.returncode != 0
    assert "use NAME_IMAGE, e.g. DRIVER_IMAGE" in result.stderr


def test_install_upgrade_uninstall(
    helm: CommandRunner,
    kubectl: CommandRunner,
    namespace: str,
    operator_namespace: str,
    release: str,
    tmp_path: Path,
) -> None:
    policy_name = f"{release}-policy"
    values = {
        # Cluster-scoped names apart from the shipped RBAC other e2e tests install.
        "fullnameOverride": release,
        "namespace": operator_namespace,
        "image": {"repository": "registry.example/gpuop", "tag": "e2e-1", "pullPolicy": "Never"},
        "operandImages": {
            "DRIVER_IMAGE": "registry.example/driver:580.95.05",
            "DEVICE_PLUGIN_IMAGE": "registry.example/k8s-device-plugin:v0.18.0",
        },
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "clusterPolicy": {
            "name": policy_name,
            "spec": {"sandboxWorkloads": {"enabled": True, "defaultWorkload": "vm-passthrough"}},
        },
    }
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    chart_args = [release, str(CHART), "-n", namespace, "--values", str(values_file)]

    helm("install", *chart_args)

    crd = get_json(kubectl, "crd", CRD)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions.get("Established") == "True", conditions

    # What helm made, checked again by the API server with strict field validation.
    manifest = helm("get", "manifest", release, "-n", namespace).stdout
    kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", input=manifest)

    deployment = get_json(kubectl, "deployment", release, "-n", operator_namespace)
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["serviceAccountName"] == release
    assert container["image"] == "registry.example/gpuop:e2e-1"
    assert container["imagePullPolicy"] == "Never"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DRIVER_IMAGE"] == "registry.example/driver:580.95.05"
    assert env["DEVICE_PLUGIN_IMAGE"] == "registry.example/k8s-device-plugin:v0.18.0"
    assert container["resources"] == values["resources"]
    # Two replicas, one leading through NVIDIA's operator's Lease; a drain keeps one.
    assert deployment["spec"]["replicas"] == 2
    assert "--leader-elect" in container["args"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    budget = get_json(kubectl, "poddisruptionbudget", release, "-n", operator_namespace)
    assert budget["spec"]["minAvailable"] == 1
    for kind in ("serviceaccount", "role", "rolebinding"):
        get_json(kubectl, kind, release, "-n", operator_namespace)
    binding = get_json(kubectl, "clusterrolebinding", release)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": release, "namespace": operator_namespace}
    ]
    assert get_json(kubectl, "clusterrole", release)["rules"]
    policy = get_json(kubectl, "clusterpolicy", policy_name)
    sandbox = policy["spec"]["sandboxWorkloads"]
    assert (sandbox["enabled"], sandbox["defaultWorkload"]) == (True, "vm-passthrough")
    installed = labelled(kubectl, release, [namespace, operator_namespace])
    assert f"clusterpolicy.nvidia.com/{policy_name}" in installed

    helm(
        "upgrade",
        *chart_args,
        "--set",
        "image.tag=e2e-2",
        "--set",
        "operandImages.DRIVER_IMAGE=registry.example/driver:580.105.08",
        "--set",
        "resources.limits.memory=384Mi",
        "--set",
        "clusterPolicy.spec.sandboxWorkloads.enabled=false",
    )
    deployment = get_json(kubectl, "deployment", release, "-n", operator_namespace)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/gpuop:e2e-2"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DRIVER_IMAGE"] == "registry.example/driver:580.105.08"
    assert container["resources"]["limits"] == {"memory": "384Mi"}
    policy = get_json(kubectl, "clusterpolicy", policy_name)
    assert policy["spec"]["sandboxWorkloads"]["enabled"] is False
    history = json.loads(helm("history", release, "-n", namespace, "-o", "json").stdout)
    assert [h["revision"] for h in history] == [1, 2]

    helm("uninstall", release, "-n", namespace)
    deadline = time.monotonic() + 90
    while (left := labelled(kubectl, release, [namespace, operator_namespace])) and (
        time.monotonic() < deadline
    ):
        time.sleep(1)  # ReplicaSets and pods go with the garbage collector
    assert left == [], f"left behind by helm uninstall: {left}"
    for kind in ("clusterrole", "clusterrolebinding"):
        assert kubectl("get", kind, release, check=False).returncode != 0
    storage = kubectl("get", "secrets", "-n", namespace, "-l", f"owner=helm,name={release}")
    assert "No resources found" in storage.stderr
    # Helm never deletes what crds/ installed: the CRD (and so other ClusterPolicies) stays.
    get_json(kubectl, "crd", CRD)


def test_default_render_is_valid_against_the_api_server(
    helm: CommandRunner, kubectl: CommandRunner, kubeconfig_path: Path, namespace: str
) -> None:
    """`helm template` with the chart's defaults, dry-run by the API server (strict fields)."""
    stack.install_crd(str(kubeconfig_path))  # the ClusterPolicy is checked against it
    rendered = helm("template", "gpuop", str(CHART), "-n", namespace, "--include-crds").stdout
    kinds = [doc["kind"] for doc in yaml.safe_load_all(rendered) if doc]
    assert sorted(kinds) == sorted(
        [
            # ClusterPolicy's and GPUCluster's, as upstream's chart ships both.
            *["CustomResourceDefinition"] * 2,
            "ServiceAccount",
            # The operator's own rights, and the operands' rights it grants.
            *["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"] * 2,
            "Deployment",
            "PodDisruptionBudget",
            "ClusterPolicy",
        ]
    )
    result = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", input=rendered)
    assert "(server dry run)" in result.stdout
