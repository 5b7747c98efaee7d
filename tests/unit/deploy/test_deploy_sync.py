"""The shipped manifests agree with each other and with the code that generates them."""

from __future__ import annotations

from pathlib import Path

import yaml

from gpuop.lab.stack import deploy_manifests
from gpuop.policy.crd import crd_manifest

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "deploy" / "helm" / "gpuop"


def test_chart_crd_is_the_generated_crd() -> None:
    chart_crd = yaml.safe_load((CHART / "crds" / "clusterpolicies.nvidia.com.yaml").read_text())
    assert chart_crd == crd_manifest(), (
        "run: gpuop policy crd > deploy/helm/gpuop/crds/clusterpolicies.nvidia.com.yaml"
    )


def test_chart_rbac_is_the_shipped_rbac() -> None:
    """The chart's RBAC with its default names, less its labels, is the shipped RBAC."""
    lines = (CHART / "templates" / "rbac.yaml").read_text().splitlines()
    lines = [
        line for line in lines if line.strip() != "labels:" and 'include "gpuop.labels"' not in line
    ]
    text = (
        "\n".join(lines)
        .replace('{{ include "gpuop.namespace" . }}', "gpu-operator")
        .replace('{{ include "gpuop.fullname" . }}', "gpuop-operator")
    )
    assert "{{" not in text
    chart = [d for d in yaml.safe_load_all(text) if d]
    assert chart == deploy_manifests("rbac")


def test_no_wildcards_and_a_locked_down_operator_pod() -> None:
    for obj in deploy_manifests("rbac"):
        for rule in obj.get("rules", []):
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field], (
                    f"{obj['kind']} {obj['metadata']['name']}: wildcard in {field}"
                )
    deployment = deploy_manifests("deployment")[0]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_chart_deployment_matches_the_shipped_deployment_security() -> None:
    text = (CHART / "templates" / "deployment.yaml").read_text()
    for needle in (
        "runAsNonRoot: true",
        "readOnlyRootFilesystem: true",
        "allowPrivilegeEscalation: false",
        "drop: [ALL]",
    ):
        assert needle in text
