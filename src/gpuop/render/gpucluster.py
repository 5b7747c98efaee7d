"""Render the objects a GPUCluster asks for: the DRA driver, its validator, DCGM, classes.

Pure: a resolved GPUCluster in, plain Kubernetes objects out. The pods are NVIDIA's DRA
stack pods as NVIDIA's GPU Operator v26.7.0 renders them (`catalog/templates/gpucluster/`,
taken from upstream's golden renderings); this module fills in what the GPUCluster sets
(images, pull settings, feature gates, env, resources, health checks, PassthroughSupport
mounts, the computeDomains capability, DaemonSet labels, annotations and tolerations) as
upstream's templates do. The DeviceClasses come from `catalog/dra.yaml`. Last, every object
gets gpuop's managed-by and operand labels, an owner reference to the GPUCluster and the
hash annotation the operator applies by; a golden test holds the rest to upstream's output.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any

import yaml

from gpuop.api.labels import (
    APP_LABEL,
    APP_PART_OF_LABEL,
    HASH_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    OPERAND_LABEL,
)
from gpuop.catalog import GpuClusterOperand, operand_table
from gpuop.catalog.dra import dra_catalog
from gpuop.manifests.quantity import parse_quantity
from gpuop.policy import PolicyError
from gpuop.policy.gpucluster import (
    API_VERSION,
    KIND,
    ResolvedGpuCluster,
    default_gpu_cluster_object,
    parse_gpu_cluster,
)
from gpuop.policy.models import ComponentSpec, EnvVar, ResourceRequirements
from gpuop.render import object_hash
from gpuop.render.support import rule_rights

# The kinds a GPUCluster renders beyond the ClusterPolicy's (`SUPPORT_KINDS`, DaemonSets):
# the first four exist before the DaemonSets whose pods use them, the compute-domain
# controller Deployment comes with the DaemonSets.
GPU_CLUSTER_KINDS = (
    "DeviceClass",
    "ResourceClaimTemplate",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "Deployment",
)
_PLACEHOLDER = re.compile(r"\$\{([a-z_]+)\}")
DCGM_SERVICE_PORT = 5555
# PassthroughSupport: the gpus container also mounts these host paths (upstream's template).
_PASSTHROUGH_MOUNTS = (
    ("lib-modules", "/lib/modules/", "HostToContainer", True),
    ("sysfs", "/sys/", "Bidirectional", False),
    ("procfs", "/proc/", "Bidirectional", False),
)


@cache
def _template_text(name: str) -> str:
    path = resources.files("gpuop.catalog").joinpath("templates", "gpucluster", f"{name}.yaml")
    return path.read_text("utf-8")


def _template(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(_template_text(name)) if doc]


def _fill(value: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        return {key: _fill(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, variables) for item in value]
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: variables[m.group(1)], value)
    return value


def _image(
    repository: str | None,
    image: str | None,
    version: str | None,
    env_name: str,
    operand: GpuClusterOperand,
    operator_env: Mapping[str, str],
) -> str:
    """Upstream image.ImagePath: the CR's three fields, else the operator's env variable.

    gpuop falls back to the operand table's defaults where upstream would fail.
    """
    if repository and image and version:
        separator = "@" if version.startswith("sha256:") else ":"
        return f"{repository}/{image}{separator}{version}"
    if operator_env.get(env_name):
        return operator_env[env_name]
    defaults = operand.image
    default_version = operand.default_version or (
        operand_table().default_versions.get(defaults.version_key or "")
    )
    repository = repository or defaults.repository
    image = image or defaults.image
    version = version or default_version
    if not version:
        raise PolicyError([f"{operand.spec_field or operand.name}.version: no image version"])
    return f"{repository}/{image}:{version}" if repository else f"{image}:{version}"


def _feature_gates(gates: Mapping[str, bool] | None) -> str:
    """upstream convertStringMapToCommaSeparatedString: sorted `Name=bool` pairs."""
    return ",".join(f"{key}={str(value).lower()}" for key, value in sorted((gates or {}).items()))


def _env_items(items: Iterable[EnvVar] | None) -> list[dict[str, Any]]:
    return [{"name": item.name, "value": item.value or ""} for item in items or ()]


def _resources(spec: ResourceRequirements | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    dumped = spec.model_dump(exclude_none=True)
    return dumped or None


def _max_resources(*specs: ResourceRequirements | None) -> dict[str, Any] | None:
    """upstream maxResourceRequirements: the larger quantity of each, limits >= requests."""
    merged: dict[str, dict[str, Any]] = {"requests": {}, "limits": {}}
    for spec in specs:
        if spec is None:
            continue
        for kind in ("requests", "limits"):
            for name, quantity in (getattr(spec, kind) or {}).items():
                current = merged[kind].get(name)
                if current is None or parse_quantity(quantity) > parse_quantity(current):
                    merged[kind][name] = quantity
    for name, request in merged["requests"].items():
        limit = merged["limits"].get(name)
        if limit is not None and parse_quantity(request) > parse_quantity(limit):
            merged["limits"][name] = request
    result = {kind: values for kind, values in merged.items() if values}
    return {key: result[key] for key in ("limits", "requests") if key in result} or None


def _set_env_value(container: dict[str, Any], name: str, value: str | None) -> None:
    """Set one env entry's value, or drop the entry (None)."""
    env = container.get("env", [])
    if value is None:
        container["env"] = [item for item in env if item["name"] != name]
        return
    for item in env:
        if item["name"] == name:
            item["value"] = value


def _pull_policy(containers: Iterable[dict[str, Any]], policy: str | None) -> None:
    for container in containers:
        if policy:
            container["imagePullPolicy"] = policy
        else:
            container.pop("imagePullPolicy", None)


class _Settings:
    """What every DRA-stack workload takes from spec.daemonsets."""

    def __init__(self, gpu_cluster: ResolvedGpuCluster) -> None:
        daemonsets = gpu_cluster.spec.daemonsets
        self.labels = dict(daemonsets.labels or {}) if daemonsets else {}
        self.annotations = dict(daemonsets.annotations or {}) if daemonsets else {}
        self.tolerations = (
            [t.model_dump(exclude_none=True) for t in daemonsets.tolerations]
            if daemonsets and daemonsets.tolerations
            else []
        )
        self.priority_class = (
            daemonsets.priorityClassName if daemonsets else None
        ) or "system-node-critical"

    def apply(self, workload: dict[str, Any], pull_secrets: list[str] | None) -> None:
        metadata = workload["metadata"]
        metadata["labels"] = {**metadata.get("labels", {}), **self.labels}
        if self.annotations:
            metadata["annotations"] = {**self.annotations, **metadata.get("annotations", {})}
        template = workload["spec"]["template"]
        pod_labels = {
            k: v for k, v in self.labels.items() if k not in (APP_LABEL, APP_PART_OF_LABEL)
        }
        template["metadata"]["labels"] = {**template["metadata"]["labels"], **pod_labels}
        if self.annotations:
            template["metadata"]["annotations"] = {
                **self.annotations,
                **template["metadata"].get("annotations", {}),
            }
        pod = template["spec"]
        pod["priorityClassName"] = self.priority_class
        tolerations = [*pod.get("tolerations", []), *self.tolerations]
        if tolerations:
            pod["tolerations"] = tolerations
        if pull_secrets:
            pod["imagePullSecrets"] = [{"name": name} for name in pull_secrets]


def _probes(container: dict[str, Any], port: int | None) -> None:
    if port is None:
        container.pop("livenessProbe", None)
        container.pop("startupProbe", None)
        return
    for probe in ("livenessProbe", "startupProbe"):
        if probe in container:
            container[probe]["grpc"]["port"] = port


def _dra_driver(
    gc: ResolvedGpuCluster, namespace: str, operator_env: Mapping[str, str]
) -> list[dict[str, Any]]:
    spec = gc.spec.draDriver
    operand = operand_table().gpucluster_operand("dra-driver")
    validator = operand_table().gpucluster_operand("dra-validator")
    image = _image(
        spec.repository, spec.image, spec.version, operand.image_env, operand, operator_env
    )
    variables = {
        "namespace": namespace,
        "image": image,
        "validator_image": _image(None, None, None, validator.image_env, validator, operator_env),
        "feature_gates": _feature_gates(spec.featureGates),
        "kubelet_root": gc.kubelet_root_dir.rstrip("/"),
        "driver_install_dir": gc.driver_install_dir,
        "gpus_port": str(gc.gpus_healthcheck_port or -1),
        "compute_domains_port": str(gc.compute_domains_healthcheck_port or -1),
        "pull_policy": spec.imagePullPolicy or "",
    }
    domains = gc.compute_domains_enabled
    template = _template("dra-driver-compute-domains" if domains else "dra-driver")
    objects: list[dict[str, Any]] = _fill(template, variables)
    gpus = spec.gpus.kubeletPlugin if spec.gpus else None
    cd = spec.computeDomains
    cd_plugin = cd.kubeletPlugin if cd else None
    settings = _Settings(gc)
    result: list[dict[str, Any]] = []
    for obj in objects:
        if obj["kind"] == "DeviceClassesHere":
            classes = dra_catalog().classes(compute_domains=domains)
            result += [c.manifest(dra_catalog().api_version) for c in classes]
            continue
        if obj["kind"] == "DaemonSet":
            pod = obj["spec"]["template"]["spec"]
            plugins = {c["name"]: c for c in pod["containers"]}
            _pull_policy([*pod["containers"], *pod["initContainers"]], spec.imagePullPolicy)
            for name, plugin, port in (
                ("gpus", gpus, gc.gpus_healthcheck_port),
                ("compute-domains", cd_plugin, gc.compute_domains_healthcheck_port),
            ):
                container = plugins.get(name)
                if container is None:
                    continue
                if not spec.featureGates:
                    _set_env_value(container, "FEATURE_GATES", None)
                container["env"] += _env_items(plugin.env if plugin else None)
                _probes(container, port)
                extra = _resources(plugin.resources if plugin else None)
                if extra:
                    container["resources"] = extra
            init_resources = _max_resources(
                gpus.resources if gpus else None,
                cd_plugin.resources if cd_plugin and domains else None,
            )
            if init_resources:
                pod["initContainers"][0]["resources"] = init_resources
            if (spec.featureGates or {}).get("PassthroughSupport"):
                mounts = plugins["gpus"]["volumeMounts"]
                for volume, path, propagation, read_only in _PASSTHROUGH_MOUNTS:
                    mount: dict[str, Any] = {
                        "mountPath": path,
                        "mountPropagation": propagation,
                        "name": volume,
                    }
                    if read_only:
                        mount["readOnly"] = True
                    mounts.append(mount)
                    pod["volumes"].append(
                        {"hostPath": {"path": path, "type": "Directory"}, "name": volume}
                    )
            settings.apply(obj, spec.imagePullSecrets)
        if obj["kind"] == "Deployment":
            container = obj["spec"]["template"]["spec"]["containers"][0]
            _pull_policy([container], spec.imagePullPolicy)
            if not spec.featureGates:
                _set_env_value(container, "FEATURE_GATES", None)
            controller = cd.controller if cd else None
            container["env"] += _env_items(controller.env if controller else None)
            extra = _resources(controller.resources if controller else None)
            if extra:
                container["resources"] = extra
            settings.apply(obj, spec.imagePullSecrets)
        result.append(obj)
    return result


def _component_pod(
    obj: dict[str, Any], component: ComponentSpec | None, settings: _Settings
) -> dict[str, Any]:
    """Args, env, resources, pull settings, host network of a DCGM-style DaemonSet."""
    pod = obj["spec"]["template"]["spec"]
    container = pod["containers"][0]
    _pull_policy([container], component.imagePullPolicy if component else None)
    if component and component.args:
        container["args"] = list(component.args)
    container["env"] = [
        *container.get("env", []),
        *_env_items(component.env if component else None),
    ]
    if not container["env"]:
        container.pop("env")
    extra = _resources(component.resources if component else None)
    if extra:
        container["resources"] = {**container.get("resources", {}), **extra}
    if component and component.hostNetwork:
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"
    settings.apply(obj, component.imagePullSecrets if component else None)
    return obj


def _component_image(
    spec: ComponentSpec | None, operand: GpuClusterOperand, env: Mapping[str, str]
) -> str:
    """The image of an optional component block (DCGM, the exporter): its fields, else defaults."""
    if spec is None:
        return _image(None, None, None, operand.image_env, operand, env)
    return _image(spec.repository, spec.image, spec.version, operand.image_env, operand, env)


def _component_objects(
    name: str, spec: ComponentSpec | None, namespace: str, env: Mapping[str, str]
) -> list[dict[str, Any]]:
    """An optional component's template (DCGM, the exporter), filled with its image."""
    image = _component_image(spec, operand_table().gpucluster_operand(name), env)
    objects: list[dict[str, Any]] = _fill(_template(name), {"namespace": namespace, "image": image})
    return objects


def _dcgm(gc: ResolvedGpuCluster, namespace: str, env: Mapping[str, str]) -> list[dict[str, Any]]:
    spec = gc.spec.dcgm
    objects = _component_objects("dcgm-dra", spec, namespace, env)
    settings = _Settings(gc)
    return [_component_pod(o, spec, settings) if o["kind"] == "DaemonSet" else o for o in objects]


def _dcgm_exporter(
    gc: ResolvedGpuCluster, namespace: str, env: Mapping[str, str]
) -> list[dict[str, Any]]:
    spec = gc.spec.dcgmExporter
    objects = _component_objects("dcgm-exporter-dra", spec, namespace, env)
    settings = _Settings(gc)
    for obj in objects:
        if obj["kind"] != "DaemonSet":
            continue
        pod = obj["spec"]["template"]["spec"]
        container = pod["containers"][0]
        extra: list[dict[str, Any]] = []
        if gc.dcgm_enabled:
            dcgm = operand_table().gpucluster_operand("dcgm-dra").daemonset
            extra.append(
                {"name": "DCGM_REMOTE_HOSTENGINE_INFO", "value": f"{dcgm}:{DCGM_SERVICE_PORT}"}
            )
        position = 1 + next(
            i for i, item in enumerate(container["env"]) if item["name"] == "NODE_NAME"
        )
        container["env"][position:position] = extra
        if spec and spec.enablePodLabels:
            container["env"].append(
                {"name": "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", "value": "true"}
            )
        if spec and spec.enablePodUID:
            container["env"].append(
                {"name": "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", "value": "true"}
            )
        if spec and spec.podLabelAllowlistRegex:
            container["env"].append(
                {
                    "name": "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX",
                    "value": ",".join(spec.podLabelAllowlistRegex),
                }
            )
        if spec and spec.hostPID:
            pod["hostPID"] = True
        if spec and spec.annotations:
            template = obj["spec"]["template"]["metadata"]
            template["annotations"] = {**template.get("annotations", {}), **spec.annotations}
        _component_pod(obj, spec, settings)
    return objects


def _validator(
    gc: ResolvedGpuCluster, namespace: str, env: Mapping[str, str]
) -> list[dict[str, Any]]:
    operand = operand_table().gpucluster_operand("dra-validator")
    spec = gc.spec.draDriver
    image = _image(None, None, None, operand.image_env, operand, env)
    objects: list[dict[str, Any]] = _fill(
        _template("dra-validator"),
        {
            "namespace": namespace,
            "validator_image": image,
            "pull_policy": spec.imagePullPolicy or "",
        },
    )
    settings = _Settings(gc)
    for obj in objects:
        if obj["kind"] == "DaemonSet":
            pod = obj["spec"]["template"]["spec"]
            _pull_policy([*pod["containers"], *pod["initContainers"]], spec.imagePullPolicy)
            settings.apply(obj, spec.imagePullSecrets)
    return objects


_RENDERERS = {
    "dra-driver": _dra_driver,
    "dra-validator": _validator,
    "dcgm-dra": _dcgm,
    "dcgm-exporter-dra": _dcgm_exporter,
}


def owner_reference(gc: ResolvedGpuCluster) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": gc.name,
        "uid": gc.model.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def render_operand(
    gc: ResolvedGpuCluster,
    operand: str,
    namespace: str,
    operator_env: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One DRA-stack operand's objects, as upstream renders them, with gpuop's marks."""
    objects = _RENDERERS[operand](gc, namespace, operator_env or {})
    for obj in objects:
        metadata = obj["metadata"]
        metadata["labels"] = {
            **metadata.get("labels", {}),
            MANAGED_BY_LABEL: MANAGED_BY,
            OPERAND_LABEL: operand,
        }
        metadata["ownerReferences"] = [owner_reference(gc)]
        metadata.setdefault("annotations", {})[HASH_ANNOTATION] = object_hash(obj)
    return objects


def render_gpu_cluster(
    gc: ResolvedGpuCluster, namespace: str, operator_env: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Every object the GPUCluster asks for, operand by operand in upstream's state order."""
    objects: list[dict[str, Any]] = []
    for name in gc.enabled_operands():
        objects += render_operand(gc, name, namespace, operator_env)
    return copy.deepcopy(objects)


def delegated_rules(cluster_wide: bool) -> set[tuple[str, str, str, str]]:
    """The rights the operator must hold to grant the DRA stack's operands theirs (as
    `gpuop.render.support.delegated_rules` says for the ClusterPolicy's): the rules of the
    ClusterRoles when `cluster_wide`, else of the Roles, of a GPUCluster with every
    operand and capability on."""
    obj = default_gpu_cluster_object()
    obj["spec"]["dcgm"] = {"enabled": True}
    obj["spec"]["draDriver"]["featureGates"] = {"PassthroughSupport": True}
    kind = "ClusterRole" if cluster_wide else "Role"
    rendered = render_gpu_cluster(parse_gpu_cluster(obj), "gpu-operator")
    return rule_rights(rule for o in rendered if o["kind"] == kind for rule in o.get("rules", []))
