"""Render the objects a ClusterPolicy asks for: operand DaemonSets, RuntimeClasses, ConfigMaps.

Pure: a resolved policy and the operand table in, plain Kubernetes objects out. Each
operand's DaemonSet comes from one template (`catalog/templates/daemonset.yaml`) filled
from its row in the operand table (gate label, host paths, privileges, init containers
that wait for the files of the operands it depends on) and from the policy (image, env,
resources, tolerations, update strategy). The operator applies these objects; the audit
reads them; golden files pin them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from functools import cache
from importlib import resources
from typing import Any

import yaml

from gpuop.catalog import Operand, operand_table
from gpuop.policy import ResolvedPolicy
from gpuop.vgpu import default_vgpu_config_object

HASH_ANNOTATION = "nvidia.com/last-applied-hash"
PART_OF = "gpu-operator"
MANAGED_BY = "gpuop"
OPERAND_LABEL = "gpuop.io/operand"
VALIDATIONS_DIR = "/run/nvidia/validations"
DEFAULT_VGPU_CONFIGMAP = "default-vgpu-devices-config"
DEFAULT_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
# Operand pods that run with the nvidia RuntimeClass upstream (`setRuntimeClassName`).
_NVIDIA_RUNTIME_OPERANDS = {
    "device-plugin",
    "mps-control-daemon",
    "gpu-feature-discovery",
    "dcgm",
    "dcgm-exporter",
    "mig-manager",
    "operator-validator",
}


@cache
def _template() -> dict[str, Any]:
    text = resources.files("gpuop.catalog").joinpath("templates/daemonset.yaml").read_text("utf-8")
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


def _volume_name(path: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")
    return f"host-{slug}" if slug else "host-root"


def _owner_reference(policy: ResolvedPolicy) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "name": policy.name,
        "uid": policy.policy.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _operand_env(policy: ResolvedPolicy, operand: Operand) -> list[dict[str, str]]:
    env: list[dict[str, str]] = []
    if operand.name == "container-toolkit":
        env += [
            {"name": "RUNTIME", "value": "containerd"},
            {"name": "CONTAINERD_RUNTIME_CLASS", "value": policy.runtime_class},
            {"name": "RUNTIME_CONFIG", "value": "/runtime/config-dir/config.toml"},
            {"name": "CDI_ENABLED", "value": str(policy.cdi_enabled).lower()},
        ]
    elif operand.name == "vgpu-device-manager":
        env += [{"name": "DEFAULT_VGPU_CONFIG", "value": policy.vgpu_default_config}]
    elif operand.name == "sandbox-validator":
        env += [{"name": "DEFAULT_GPU_WORKLOAD_CONFIG", "value": policy.default_workload}]
    elif operand.name in ("device-plugin", "gpu-feature-discovery"):
        env += [{"name": "MIG_STRATEGY", "value": policy.mig_strategy}]
    component = policy.component(operand.spec_block)
    for item in component.env or [] if component else []:
        env.append({"name": item.name, "value": item.value or ""})
    return env


def _wait_container(image: str, gate_file: str) -> dict[str, Any]:
    return {
        "name": f"wait-for-{gate_file.replace('.', '').replace('_', '-')}",
        "image": image,
        "command": ["sh", "-c"],
        "args": [f"until [ -f {VALIDATIONS_DIR}/{gate_file} ]; do sleep 5; done"],
        "securityContext": {"privileged": True},
        "volumeMounts": [{"name": "run-nvidia-validations", "mountPath": VALIDATIONS_DIR}],
    }


def render_daemonset(
    policy: ResolvedPolicy,
    operand: Operand,
    namespace: str,
    operator_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The DaemonSet for one enabled operand, with its hash annotation set."""
    ds = copy.deepcopy(_template())
    image = policy.image_for(operand, operator_env)
    component = policy.component(operand.spec_block)
    daemonsets = policy.policy.spec.daemonsets
    labels = {
        "app": operand.daemonset,
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        OPERAND_LABEL: operand.name,
    }
    if operand.name == "driver":
        labels["app.kubernetes.io/component"] = "nvidia-driver"
    user_labels = dict(daemonsets.labels or {}) if daemonsets else {}
    user_labels.pop("app", None)
    user_labels.pop("app.kubernetes.io/part-of", None)
    metadata = ds["metadata"]
    metadata["name"] = operand.daemonset
    metadata["namespace"] = namespace
    metadata["labels"] = {**user_labels, **labels}
    metadata["annotations"] = dict(daemonsets.annotations or {}) if daemonsets else {}
    metadata["ownerReferences"] = [_owner_reference(policy)]

    spec = ds["spec"]
    spec["selector"] = {"matchLabels": {"app": operand.daemonset}}
    strategy = (daemonsets.updateStrategy if daemonsets else None) or "RollingUpdate"
    if operand.name == "driver":
        strategy = "OnDelete"
    spec["updateStrategy"] = {"type": strategy}
    if strategy == "RollingUpdate" and daemonsets and daemonsets.rollingUpdate:
        max_unavailable = daemonsets.rollingUpdate.maxUnavailable
        if max_unavailable is not None:
            # Like intstr.Parse upstream: "1" is the integer 1, "25%" stays a percentage.
            if isinstance(max_unavailable, str) and max_unavailable.isdigit():
                max_unavailable = int(max_unavailable)
            spec["updateStrategy"]["rollingUpdate"] = {"maxUnavailable": max_unavailable}

    pod = spec["template"]
    pod["metadata"]["labels"] = {**user_labels, **labels}
    pod_spec = pod["spec"]
    node_selector = {f"{operand_table().deploy_labels.prefix}{operand.deploy_label}": "true"}
    node_selector.update(operand.extra_node_selector)
    pod_spec["nodeSelector"] = node_selector
    tolerations = (
        [t.model_dump(exclude_none=True) for t in daemonsets.tolerations]
        if daemonsets and daemonsets.tolerations
        else DEFAULT_TOLERATIONS
    )
    pod_spec["tolerations"] = tolerations
    pod_spec["priorityClassName"] = (
        daemonsets.priorityClassName if daemonsets and daemonsets.priorityClassName else None
    ) or "system-node-critical"
    if operand.host.host_pid:
        pod_spec["hostPID"] = True
    if operand.host.host_ipc:
        pod_spec["hostIPC"] = True
    if component and component.hostNetwork:
        pod_spec["hostNetwork"] = True
    if operand.name in _NVIDIA_RUNTIME_OPERANDS and not policy.nri_plugin_enabled:
        pod_spec["runtimeClassName"] = policy.runtime_class
    if component and component.imagePullSecrets:
        pod_spec["imagePullSecrets"] = [{"name": s} for s in component.imagePullSecrets]

    volumes = [
        {
            "name": "run-nvidia-validations",
            "hostPath": {"path": VALIDATIONS_DIR, "type": "DirectoryOrCreate"},
        }
    ]
    mounts = []
    for host_path in operand.host.host_paths:
        if host_path.path == VALIDATIONS_DIR:
            continue
        name = _volume_name(host_path.path)
        volumes.append({"name": name, "hostPath": {"path": host_path.path}})
        mount_path = "/host" if host_path.path == "/" else host_path.path
        mounts.append({"name": name, "mountPath": mount_path, "readOnly": not host_path.writable})
    mounts.append({"name": "run-nvidia-validations", "mountPath": VALIDATIONS_DIR})
    pod_spec["volumes"] = volumes

    validator = operand_table().operand("operator-validator")
    wait_image = policy.image_for(validator, operator_env)
    pod_spec["initContainers"] = [_wait_container(wait_image, f) for f in operand.gate_files]
    container: dict[str, Any] = {
        "name": f"{operand.name}-ctr",
        "image": image,
        "imagePullPolicy": (component.imagePullPolicy if component else None) or "IfNotPresent",
        "env": _operand_env(policy, operand),
        "securityContext": {"privileged": operand.host.privileged},
        "volumeMounts": mounts,
    }
    if component and component.args:
        container["args"] = list(component.args)
    if component and component.resources:
        container["resources"] = component.resources.model_dump(exclude_none=True)
    pod_spec["containers"] = [container]
    env_node = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    container["env"] = [env_node, *container["env"]]
    if not pod_spec["initContainers"]:
        del pod_spec["initContainers"]
    metadata["annotations"][HASH_ANNOTATION] = object_hash(ds)
    return ds


def object_hash(obj: dict[str, Any]) -> str:
    """A stable hash of an object, ignoring its own hash annotation."""
    clean = copy.deepcopy(obj)
    clean.get("metadata", {}).get("annotations", {}).pop(HASH_ANNOTATION, None)
    digest = hashlib.sha256(json.dumps(clean, sort_keys=True, separators=(",", ":")).encode())
    return digest.hexdigest()[:16]


def render_runtime_classes(policy: ResolvedPolicy) -> list[dict[str, Any]]:
    """`nvidia`, plus `nvidia-cdi` and `nvidia-legacy` when CDI is on; none in NRI mode."""
    if policy.nri_plugin_enabled:
        return []
    names = [policy.runtime_class]
    if policy.cdi_enabled:
        names += ["nvidia-cdi", "nvidia-legacy"]
    return [
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {
                "name": name,
                "labels": {
                    "app.kubernetes.io/component": "gpu-operator",
                    "app.kubernetes.io/managed-by": MANAGED_BY,
                },
                "ownerReferences": [_owner_reference(policy)],
            },
            "handler": name,
        }
        for name in names
    ]


def render_vgpu_configmap(policy: ResolvedPolicy, namespace: str) -> dict[str, Any]:
    """The vGPU device manager's default config, generated from the GPU catalog."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DEFAULT_VGPU_CONFIGMAP,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": MANAGED_BY},
            "ownerReferences": [_owner_reference(policy)],
        },
        "data": {"config.yaml": yaml.safe_dump(default_vgpu_config_object(), sort_keys=False)},
    }


def render_all(
    policy: ResolvedPolicy, namespace: str, operator_env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Every object the policy asks for, in apply order (for `gpuop render` and the audit)."""
    objects: list[dict[str, Any]] = list(render_runtime_classes(policy))
    enabled = policy.enabled_operands()
    if any(op.name == "vgpu-device-manager" for op in enabled):
        objects.append(render_vgpu_configmap(policy, namespace))
    objects += [render_daemonset(policy, op, namespace, operator_env) for op in enabled]
    return objects
