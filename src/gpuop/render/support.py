"""Render the objects around the operand DaemonSets: identities, ConfigMaps, Services.

NVIDIA's operand images expect more than their pod: each runs under a ServiceAccount of its
own with the Role and ClusterRole that let it label nodes, list pods or evict them
(`catalog/operand-rbac.yaml`, from upstream's assets); several mount ConfigMaps the operator
creates (entrypoint scripts, the driver's startup probe, mig-parted's default config); the
DCGM exporter and the operator are scraped through Services, and through ServiceMonitors
where Prometheus' operator is installed. Like upstream, these objects exist while their
operand is enabled and are owned by the ClusterPolicy, so they go when it goes.

Pure, like the DaemonSet rendering: the operator applies what this returns, `gpuop render`
prints it, the audit reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from gpuop.api.labels import MANAGED_BY_LABEL
from gpuop.catalog import Operand

SERVICE_MONITOR_KIND = "ServiceMonitor"
SERVICE_MONITOR_CRD = "servicemonitors.monitoring.coreos.com"
MIG_PARTED_DEFAULT = "default-mig-parted-config"
GPU_CLIENTS_DEFAULT = "default-gpu-clients"
OPERATOR_METRICS = "operator-metrics"
RBAC_API = "rbac.authorization.k8s.io/v1"
# Kinds the operator creates beside DaemonSets, in the order they are applied: what a pod
# refers to exists before the pod's DaemonSet.
SUPPORT_KINDS = (
    "ServiceAccount",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Service",
    SERVICE_MONITOR_KIND,
)


@dataclass(frozen=True)
class Identity:
    """An operand's ServiceAccount and the rights bound to it."""

    operand: str
    service_account: str
    pod_service_account: str
    labels: Mapping[str, str]
    role: Mapping[str, Any] | None
    cluster_role: Mapping[str, Any] | None


@cache
def identities() -> dict[str, Identity]:
    """Every operand's identity, by operand name."""
    text = resources.files("gpuop.catalog").joinpath("operand-rbac.yaml").read_text("utf-8")
    data = yaml.safe_load(text)
    result = {}
    for name, entry in data["operands"].items():
        result[name] = Identity(
            operand=name,
            service_account=entry["service_account"],
            pod_service_account=entry.get("pod_service_account") or entry["service_account"],
            labels=dict(entry.get("labels") or {}),
            role=entry.get("role"),
            cluster_role=entry.get("cluster_role"),
        )
    return result


def pod_service_account(operand: str) -> str | None:
    """The ServiceAccount an operand's pods run under (upstream's `serviceAccountName`)."""
    identity = identities().get(operand)
    return identity.pod_service_account if identity else None


def _metadata(
    name: str,
    namespace: str | None,
    labels: Mapping[str, str],
    owner: Mapping[str, Any],
    managed_by: str,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = {**labels, MANAGED_BY_LABEL: managed_by}
    if annotations:
        meta["annotations"] = dict(annotations)
    meta["ownerReferences"] = [dict(owner)]
    return meta


def _binding(
    kind: str,
    role_kind: str,
    role_name: str,
    account: str,
    namespace: str,
    meta: dict[str, Any],
) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API,
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def identity_objects(
    operand: str,
    namespace: str,
    owner: Mapping[str, Any],
    managed_by: str,
    settings: SupportSettings | None = None,
) -> list[dict[str, Any]]:
    """The ServiceAccount, Role, ClusterRole and bindings of one operand (none if unknown);
    a gated role (`_RBAC_GATES`) only while `settings` ask for it."""
    identity = identities().get(operand)
    if identity is None:
        return []
    labels = identity.labels
    account = identity.service_account
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _metadata(account, namespace, labels, owner, managed_by),
        }
    ]
    grants = (
        (identity.role, "Role", "RoleBinding", namespace),
        (identity.cluster_role, "ClusterRole", "ClusterRoleBinding", None),
    )
    for role, role_kind, binding_kind, scope in grants:
        if role is None:
            continue
        name = role["name"]
        gate = _RBAC_GATES.get(name)
        if gate is not None and not gate(settings or SupportSettings()):
            continue
        objects.append(
            {
                "apiVersion": RBAC_API,
                "kind": role_kind,
                "metadata": _metadata(name, scope, labels, owner, managed_by),
                "rules": [dict(rule) for rule in role["rules"]],
            }
        )
        meta = _metadata(name, scope, labels, owner, managed_by)
        objects.append(_binding(binding_kind, role_kind, name, account, namespace, meta))
    return objects


@cache
def _object_templates(name: str) -> tuple[dict[str, Any], ...]:
    path = resources.files("gpuop.catalog").joinpath(f"templates/objects/{name}.yaml")
    if not path.is_file():
        return ()
    return tuple(doc for doc in yaml.safe_load_all(path.read_text("utf-8")) if doc)


@cache
def mig_parted_default_config() -> str:
    """mig-parted's default config as the ConfigMap holds it (the file less its header)."""
    text = resources.files("gpuop.catalog").joinpath("mig-parted-config.yaml").read_text("utf-8")
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    return "".join(lines[start:])


def _fill(value: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for key, replacement in variables.items():
            value = value.replace("${" + key + "}", replacement)
        return value
    if isinstance(value, list):
        return [_fill(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, variables) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class SupportSettings:
    """What of the ClusterPolicy the objects around the operands depend on."""

    custom_configmaps: frozenset[str] = frozenset()
    dcgm_exporter_service_monitor: Mapping[str, Any] | None = None
    operator_service_monitor: Mapping[str, Any] | None = None
    dcgm_exporter_service: Mapping[str, Any] | None = None
    # The exporter adds pod labels or UIDs to its metrics (`enablePodLabels`, `enablePodUID`,
    # or the same env vars set to true): only then may it read every pod.
    dcgm_exporter_pod_metadata: bool = False


# ClusterRoles (and their bindings) upstream creates only while a setting asks for them
# (`rbacGates` in its object controls).
_RBAC_GATES: Mapping[str, Callable[[SupportSettings], bool]] = {
    "nvidia-dcgm-exporter-read-pods": lambda settings: settings.dcgm_exporter_pod_metadata,
}


def _service_monitor_edits(monitor: dict[str, Any], settings: Mapping[str, Any]) -> None:
    """`serviceMonitor.{additionalLabels,interval,scrapeTimeout,honorLabels,relabelings}`."""
    labels = settings.get("additionalLabels")
    if isinstance(labels, dict):
        monitor["metadata"]["labels"] = {**monitor["metadata"]["labels"], **labels}
    endpoint = monitor["spec"]["endpoints"][0]
    for field in ("interval", "scrapeTimeout"):
        if settings.get(field):
            endpoint[field] = settings[field]
    if settings.get("honorLabels") is not None:
        endpoint["honorLabels"] = settings["honorLabels"]
    if settings.get("relabelings") is not None:
        endpoint["relabelings"] = settings["relabelings"]


def _keep_service_monitor(state: str, settings: SupportSettings) -> bool:
    if state == "dcgm-exporter":
        monitor = settings.dcgm_exporter_service_monitor
        return bool(monitor and monitor.get("enabled") is True)
    # The operator's and the node status exporter's exist whenever Prometheus' CRD does.
    return True


def state_objects(
    state: str,
    namespace: str,
    owner: Mapping[str, Any],
    managed_by: str,
    settings: SupportSettings,
) -> list[dict[str, Any]]:
    """The ConfigMaps, Services and ServiceMonitors of one operand (or `operator-metrics`)."""
    variables = {"namespace": namespace, "mig_parted_config": mig_parted_default_config()}
    objects = []
    for template in _object_templates(state):
        obj = _fill(template, variables)
        meta = obj["metadata"]
        if obj["kind"] == "ConfigMap" and meta["name"] in settings.custom_configmaps:
            continue
        if obj["kind"] == SERVICE_MONITOR_KIND:
            if not _keep_service_monitor(state, settings):
                continue
            edits = (
                settings.dcgm_exporter_service_monitor
                if state == "dcgm-exporter"
                else settings.operator_service_monitor
                if state == OPERATOR_METRICS
                else None
            )
            if edits:
                _service_monitor_edits(obj, edits)
        if obj["kind"] == "Service" and state == "dcgm-exporter" and settings.dcgm_exporter_service:
            for field in ("type", "internalTrafficPolicy"):
                if settings.dcgm_exporter_service.get(field):
                    obj["spec"][field] = settings.dcgm_exporter_service[field]
        obj["metadata"] = _metadata(
            meta["name"],
            namespace,
            meta.get("labels") or {},
            owner,
            managed_by,
            meta.get("annotations"),
        )
        objects.append(obj)
    return objects


def support_objects(
    operands: Iterable[Operand],
    namespace: str,
    owner: Mapping[str, Any],
    managed_by: str,
    settings: SupportSettings,
) -> list[dict[str, Any]]:
    """Everything the enabled operands need beside their DaemonSets, in apply order."""
    objects: list[dict[str, Any]] = []
    for operand in operands:
        objects += identity_objects(operand.name, namespace, owner, managed_by, settings)
        objects += state_objects(operand.name, namespace, owner, managed_by, settings)
    objects += state_objects(OPERATOR_METRICS, namespace, owner, managed_by, settings)
    order = {kind: i for i, kind in enumerate(SUPPORT_KINDS)}
    return sorted(objects, key=lambda o: order.get(o["kind"], len(order)))


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name): what identifies an object the operator manages (one namespace)."""
    return str(obj["kind"]), str(obj["metadata"]["name"])


def delegated_rules(operands: Iterable[str], cluster_wide: bool) -> set[tuple[str, str, str, str]]:
    """The rights the operator must hold to grant the operands theirs (Kubernetes refuses a
    Role or binding that grants more than its creator holds), as (group, resource, verb,
    resource name or "") tuples: the ClusterRoles' rules when `cluster_wide`, else the
    Roles'."""
    rights: set[tuple[str, str, str, str]] = set()
    for name in operands:
        identity = identities().get(name)
        role = (
            None if identity is None else (identity.cluster_role if cluster_wide else identity.role)
        )
        rights |= rule_rights((role or {}).get("rules", []))
    return rights


def rule_rights(rules: Iterable[Mapping[str, Any]]) -> set[tuple[str, str, str, str]]:
    """RBAC rules as the (group, resource, verb, resource name or "") tuples they grant."""
    return {
        (group, resource, verb, resource_name)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for resource_name in rule.get("resourceNames") or [""]
    }
