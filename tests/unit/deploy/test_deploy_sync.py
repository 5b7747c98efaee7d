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


def _rights(rules: list[dict[str, object]]) -> set[tuple[str, str, str, str]]:
    rights = set()
    for rule in rules:
        for group in rule["apiGroups"]:  # type: ignore[attr-defined]
            for resource in rule["resources"]:  # type: ignore[attr-defined]
                for verb in rule["verbs"]:  # type: ignore[attr-defined]
                    for name in rule.get("resourceNames") or [""]:  # type: ignore[attr-defined]
                        rights.add((group, resource, verb, name))
    return rights


def _without_covered(rights: set[tuple[str, str, str, str]]) -> set[tuple[str, str, str, str]]:
    """A right on one named object is covered by the same right on every object."""
    return {r for r in rights if not r[3] or (r[0], r[1], r[2], "") not in rights}


def test_the_operand_rights_the_operator_holds_are_exactly_those_it_grants() -> None:
    """Kubernetes lets the operator create an operand's Role only if it holds those rights:
    `gpuop-operator-operands` holds the union of catalog/operand-rbac.yaml and of the DRA
    stack's roles (a GPUCluster's), no more."""
    from gpuop.catalog import operand_table
    from gpuop.render import gpucluster
    from gpuop.render.support import delegated_rules

    deployable = [op.name for op in operand_table().operands if not op.deprecated]
    shipped = {(obj["kind"], obj["metadata"]["name"]): obj for obj in deploy_manifests("rbac")}
    for kind, cluster_wide in (("ClusterRole", True), ("Role", False)):
        held = _rights(shipped[(kind, "gpuop-operator-operands")]["rules"])
        granted = _without_covered(
            delegated_rules(deployable, cluster_wide) | gpucluster.delegated_rules(cluster_wide)
        )
        assert held == granted, kind
