"""Render the objects a ClusterPolicy asks for: operand DaemonSets, RuntimeClasses, ConfigMaps.

Pure: a resolved policy and the operand table in, plain Kubernetes objects out. The operand
images are NVIDIA's and their pod specs are the contract they expect, so each operand's pod
comes from a template of the pod NVIDIA's GPU Operator deploys for it
(`catalog/templates/operands/`), filled from the ClusterPolicy as upstream's transforms
fill theirs (images, env, validations, driver manager, probes, host paths, CDI). What every
operand shares (labels, owner, node selector on its deploy label, tolerations, priority,
update strategy) is added last. The operator applies these objects; `gpuop render` prints
them; the audit reads them; a differential test holds them to upstream's output.
"""

from __future__ import annotations

import copy
import hashlib
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import yaml

from gpuop.api.labels import (
    APP_COMPONENT_LABEL,
    APP_LABEL,
    DEFAULT_VGPU_CONFIGMAP,
    GPU_TAINT_KEY,
    HASH_ANNOTATION,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    NFD_KERNEL,
    OPERAND_LABEL,
    OPERAND_POD_MANAGED_BY,
    PRECOMPILED_LABEL,
    deploy_label,
)
from gpuop.catalog import Operand, operand_table
from gpuop.policy import ResolvedPolicy
from gpuop.policy.models import DriverManagerSpec
from gpuop.render.nodes import (
    container_runtime,
    driver_os_tag,
    kernel_versions,
    on_openshift,
    sanitized_kernel,
)
from gpuop.render.nodes import os_tag_of as os_tag_of  # the operator reads it here
from gpuop.render.operands import (
    DCGM_POD_METADATA_ENV,
    OS_TAGGED_OPERANDS,
    apply_cdi,
    apply_dcgm_exporter,
    apply_driver,
    apply_driver_config_digest,
    apply_driver_manager,
    apply_mig_manager_configs,
    apply_validations,
    driver_manager,
    set_configmap,
    set_env,
    sidecar_pull_secrets,
)
from gpuop.render.support import (
    GPU_CLIENTS_DEFAULT,
    MIG_PARTED_DEFAULT,
    SupportSettings,
    pod_service_account,
    support_objects,
)
from gpuop.vgpu import default_vgpu_config_object

VALIDATIONS_DIR = "/run/nvidia/validations"
DRIVER_MANAGER_REPOSITORY = "nvcr.io/nvidia/cloud-native"
# `${name}` in an operand template: a value from the ClusterPolicy.
_PLACEHOLDER = re.compile(r"\$\{([a-z_]+)\}")
DEFAULT_TOLERATIONS = [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
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


@cache
def _operand_template(operand: str) -> dict[str, Any] | None:
    path = resources.files("gpuop.catalog").joinpath(f"templates/operands/{operand}.yaml")
    if not path.is_file():
        return None
    loaded = yaml.safe_load(path.read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _substitute(value: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: variables[m.group(1)], value)
    if isinstance(value, list):
        return [_substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, variables) for k, v in value.items()}
    return value


def _manager_image(manager: DriverManagerSpec | None) -> tuple[str, str]:
    """The k8s-driver-manager image and pull policy of a driver or VFIO manager block."""
    repository = (manager.repository if manager else None) or DRIVER_MANAGER_REPOSITORY
    image = (manager.image if manager else None) or "k8s-driver-manager"
    version = (manager.version if manager else None) or operand_table().default_versions.get(
        "vfio_manager"
    )
    pull = (manager.imagePullPolicy if manager else None) or "IfNotPresent"
    return f"{repository}/{image}:{version}", pull


def _template_variables(
    policy: ResolvedPolicy,
    operand: Operand,
    operator_env: dict[str, str] | None,
    os_tag: str | None,
    kernel: tuple[str, str] | None = None,
) -> dict[str, str]:
    spec = policy.policy.spec
    component = policy.component(operand.spec_block)
    image = policy.image_for(operand, operator_env)
    if kernel is not None and "sha256:" not in image:
        # Precompiled drivers are tagged `<version>-<kernel>-<os>`.
        image = f"{image}-{kernel[0]}"
    tagged = ":" in image.rsplit("/", 1)[-1]
    if operand.name in OS_TAGGED_OPERANDS and os_tag and tagged and "sha256:" not in image:
        image = f"{image}-{os_tag}"
    validator = operand_table().operand("operator-validator")
    manager_image, manager_pull = _manager_image(driver_manager(policy, operand))
    host_paths = spec.hostPaths
    toolkit = spec.toolkit
    return {
        "image": image,
        "pull_policy": (component.imagePullPolicy if component else None) or "IfNotPresent",
        "validator_image": policy.image_for(validator, operator_env),
        "validator_pull_policy": (spec.validator.imagePullPolicy if spec.validator else None)
        or "IfNotPresent",
        "driver_manager_image": manager_image,
        "driver_manager_pull_policy": manager_pull,
        "mig_strategy": policy.mig_strategy,
        "cdi_enabled": str(policy.cdi_enabled).lower(),
        "runtime_class": policy.runtime_class,
        "vgpu_default_config": policy.vgpu_default_config,
        "default_workload": policy.default_workload,
        "toolkit_install_dir": (toolkit.installDir if toolkit else None) or "/usr/local/nvidia",
        "kernel_module_type": (spec.driver.kernelModuleType if spec.driver else None) or "auto",
        "root_fs": (host_paths.rootFS if host_paths else None) or "/",
        "driver_install_dir": (host_paths.driverInstallDir if host_paths else None)
        or "/run/nvidia/driver",
    }


MPS_CONTROL_DAEMON = "mps-control-daemon"
DEFAULT_MPS_ROOT = "/run/nvidia/mps"


# The toolkit's view of the host's container runtime: upstream's default files per runtime
# (top-level config, drop-in config, socket; "" where the runtime has none) and the folders
# it mounts them at (`DefaultRuntime*TargetDir`).
RUNTIME_FILES: dict[str, tuple[str, str, str]] = {
    "containerd": (
        "/etc/containerd/config.toml",
        "/etc/containerd/conf.d/99-nvidia.toml",
        "/run/containerd/containerd.sock",
    ),
    "docker": ("/etc/docker/daemon.json", "", "/var/run/docker.sock"),
    "crio": ("/etc/crio/config.toml", "/etc/crio/crio.conf.d/99-nvidia.conf", ""),
}
_CONFIG_DIR = "/runtime/config-dir/"
_DROP_IN_DIR = "/runtime/config-dir.d/"
_SOCKET_DIR = "/runtime/sock-dir/"
_NRI_SOCKET_DIR = "/runtime/nri-sock-dir/"
NRI_SOCKET_FILE = "/var/run/nri/nri.sock"
# The mounts transformRuntimeConfigAndSocketMounts adds (the templates hold containerd's).
_RUNTIME_MOUNT_SUFFIXES = ("-config", "-drop-in-config", "-socket")


def _apply_toolkit_runtime(
    policy: ResolvedPolicy, pod_spec: dict[str, Any], component: Any | None, runtime: str
) -> None:
    """The toolkit's runtime settings as upstream's TransformToolkit and transformForRuntime
    make them, after the policy's env. With CRI-O and CDI off the OCI hook is installed
    (`CRIO_CONFIG_MODE=hook`, the hooks folder outside OpenShift's). In NRI plugin mode only
    the NRI socket is mounted. Otherwise the runtime's config file (`CONTAINERD_CONFIG`,
    `DOCKER_CONFIG`, `CRIO_CONFIG` or `RUNTIME_CONFIG`), drop-in file and socket name host
    files (k3s and RKE2 keep containerd elsewhere); their folders are mounted under /runtime
    and the variables rewritten to the mounted paths, and file sources in
    `RUNTIME_CONFIG_SOURCE` are read through /host."""
    main = pod_spec["containers"][0]
    env: list[dict[str, Any]] = main.get("env", [])
    start = next((i for i, e in enumerate(env) if e.get("name") == "RUNTIME"), len(env))
    main["env"] = env[:start]
    runtime_volumes = {
        f"{name}{suffix}" for name in RUNTIME_FILES for suffix in _RUNTIME_MOUNT_SUFFIXES
    }
    main["volumeMounts"] = [
        m for m in main.get("volumeMounts", []) if m["name"] not in runtime_volumes
    ]
    pod_spec["volumes"] = [
        v for v in pod_spec.get("volumes", []) if v["name"] not in runtime_volumes
    ]
    if policy.nri_plugin_enabled and policy.cdi_enabled:
        set_env(main, [{"name": "ENABLE_NRI_PLUGIN", "value": "true"}])
    if runtime == "crio" and not policy.cdi_enabled:
        set_env(main, [{"name": "CRIO_CONFIG_MODE", "value": "hook"}])
    if runtime == "crio":
        for volume in pod_spec["volumes"]:
            if volume["name"] == "crio-hooks":
                volume["hostPath"]["path"] = "/usr/share/containers/oci/hooks.d"
    if component is not None and component.env:
        set_env(main, [{"name": e.name, "value": e.value or ""} for e in component.env])
    set_env(main, [{"name": "RUNTIME", "value": runtime}])

    def value(name: str) -> str:
        found = next((e.get("value") for e in main["env"] if e.get("name") == name), None)
        return found if isinstance(found, str) else ""

    def mount(name: str, target: str, host_dir: str, kind: str | None) -> None:
        main.setdefault("volumeMounts", []).append({"mountPath": target, "name": name})
        host: dict[str, Any] = {"path": host_dir, **({"type": kind} if kind else {})}
        pod_spec["volumes"].append({"hostPath": host, "name": name})

    if policy.nri_plugin_enabled:
        nri_socket = value("NRI_SOCKET") or NRI_SOCKET_FILE
        set_env(
            main,
            [{"name": "NRI_SOCKET", "value": _NRI_SOCKET_DIR + posixpath.basename(nri_socket)}],
        )
        mount("nri-socket", _NRI_SOCKET_DIR, posixpath.dirname(nri_socket), "DirectoryOrCreate")
        return
    if runtime == "containerd":
        set_env(main, [{"name": "CONTAINERD_RUNTIME_CLASS", "value": policy.runtime_class}])
    default_config, default_drop_in, default_socket = RUNTIME_FILES[runtime]
    own = {"containerd": "CONTAINERD", "docker": "DOCKER", "crio": "CRIO"}[runtime]
    config = value(f"{own}_CONFIG") or value("RUNTIME_CONFIG") or default_config
    config_in = _CONFIG_DIR + posixpath.basename(config)
    set_env(
        main,
        [
            {"name": "RUNTIME_CONFIG", "value": config_in},
            {"name": f"{own}_CONFIG", "value": config_in},
        ],
    )
    mount(f"{runtime}-config", _CONFIG_DIR, posixpath.dirname(config), "DirectoryOrCreate")
    if default_drop_in:
        drop_in = value("RUNTIME_DROP_IN_CONFIG") or default_drop_in
        set_env(
            main,
            [
                {
                    "name": "RUNTIME_DROP_IN_CONFIG",
                    "value": _DROP_IN_DIR + posixpath.basename(drop_in),
                },
                {"name": "RUNTIME_DROP_IN_CONFIG_HOST_PATH", "value": drop_in},
            ],
        )
        mount(
            f"{runtime}-drop-in-config",
            _DROP_IN_DIR,
            posixpath.dirname(drop_in),
            "DirectoryOrCreate",
        )
    sources = value("RUNTIME_CONFIG_SOURCE")
    if sources:
        rewritten = []
        for source in sources.split(","):
            kind, sep, where = source.partition("=")
            rewritten.append(
                f"file={posixpath.join('/host', where.lstrip('/'))}"
                if sep and kind == "file"
                else source
            )
        set_env(main, [{"name": "RUNTIME_CONFIG_SOURCE", "value": ",".join(rewritten)}])
    if default_socket:
        socket = value(f"{own}_SOCKET") or default_socket
        socket_in = _SOCKET_DIR + posixpath.basename(socket)
        set_env(
            main,
            [
                {"name": "RUNTIME_SOCKET", "value": socket_in},
                {"name": f"{own}_SOCKET", "value": socket_in},
            ],
        )
        mount(f"{runtime}-socket", _SOCKET_DIR, posixpath.dirname(socket), None)


def _direct_access_env(policy: ResolvedPolicy) -> list[dict[str, str]]:
    """What upstream's device plugin transform sets for GPUDirect Storage and GDRCopy (the
    devices /dev/nvidia-fs*, /dev/infiniband and /dev/gdrdrv handed to containers)."""
    spec = policy.policy.spec
    env = []
    if spec.gds is not None and spec.gds.enabled is True:
        env += [
            {"name": "GDS_ENABLED", "value": "true"},
            {"name": "MOFED_ENABLED", "value": "true"},
        ]
    if spec.gdrcopy is not None and spec.gdrcopy.enabled is True:
        env.append({"name": "GDRCOPY_ENABLED", "value": "true"})
    return env


def _apply_mps_root(policy: ResolvedPolicy, operand: Operand, pod_spec: dict[str, Any]) -> None:
    """`devicePlugin.mps.root`: the MPS volumes' host paths (and the plugin's MPS_ROOT)."""
    plugin = policy.policy.spec.devicePlugin
    root = plugin.mps.root if plugin is not None and plugin.mps is not None else None
    if not root or root == DEFAULT_MPS_ROOT:
        return
    for volume in pod_spec.get("volumes", []):
        if volume.get("name") == "mps-root" and "hostPath" in volume:
            volume["hostPath"]["path"] = root
        elif volume.get("name") == "mps-shm" and "hostPath" in volume:
            volume["hostPath"]["path"] = f"{root}/shm"
    if operand.name == "device-plugin":
        set_env(pod_spec["containers"][0], [{"name": "MPS_ROOT", "value": root}])


@cache
def _config_manager() -> dict[str, Any]:
    path = resources.files("gpuop.catalog").joinpath("templates/config-manager.yaml")
    loaded = yaml.safe_load(path.read_text("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _apply_plugin_config(
    policy: ResolvedPolicy,
    operand: Operand,
    pod_spec: dict[str, Any],
    operator_env: dict[str, str] | None,
    openshift: bool = False,
) -> None:
    """`devicePlugin.config`, as upstream's handleDevicePluginConfig applies it to the device
    plugin, GPU feature discovery and the MPS control daemon (`templates/config-manager.yaml`):
    the config-manager init container and sidecar, CONFIG_FILE and the two mounts on the main
    container, the ConfigMap and emptyDir volumes, a shared process namespace. The main
    container's env is put in upstream's order: its asset's env, (GPU feature discovery) the
    policy's env, CONFIG_FILE, then what later transforms set (MIG, CDI)."""
    spec = _config_manager()
    entry = spec["operands"].get(operand.name)
    if entry is None:
        return
    plugin = policy.policy.spec.devicePlugin
    config = plugin.config if plugin is not None else None
    name = config.name if config is not None else None
    main = pod_spec["containers"][0]
    env: list[dict[str, Any]] = main.get("env", [])
    end = next((i for i, e in enumerate(env) if e.get("name") == entry["asset_env_end"]), None)
    if end is None:
        return
    head, tail = env[: end + 1], env[end + 1 :]
    main["env"] = head
    if openshift and operand.name == "gpu-feature-discovery":
        # Upstream's TransformGPUDiscoveryPlugin: OpenShift's NFD does not serve the
        # NodeFeature API, so GFD writes its labels through NFD's feature files.
        set_env(main, [{"name": "USE_NODE_FEATURE_API", "value": "false"}])
    component = policy.component(operand.spec_block)
    if entry["user_env_before_config"] and component and component.env:
        set_env(main, [{"name": e.name, "value": e.value or ""} for e in component.env])
    if operand.name == "device-plugin":
        set_env(main, _direct_access_env(policy))
    if name:
        set_env(main, [{"name": "CONFIG_FILE", "value": "/config/config.yaml"}])
    set_env(main, tail)
    if not name:
        return
    mounts = [
        {"name": "config", "mountPath": "/config"},
        {"name": name, "mountPath": "/available-configs"},
    ]
    main.setdefault("volumeMounts", []).extend(copy.deepcopy(mounts))
    device_plugin = operand_table().operand("device-plugin")
    variables = {
        "image": policy.image_for(device_plugin, operator_env),
        "default_config": (config.default if config is not None else None) or "",
        "process": entry["process"],
    }
    resources_block = (
        policy.component(operand.spec_block) if operand.name == "gpu-feature-discovery" else plugin
    )
    added = []
    for role in ("init", "sidecar"):
        container = _substitute(copy.deepcopy(spec[role]), variables)
        # The API server stores an env var with an empty value without `value`.
        container["env"] = [
            {k: v for k, v in item.items() if not (k == "value" and v == "")}
            for item in container["env"]
        ]
        if plugin is not None and plugin.imagePullPolicy:
            container["imagePullPolicy"] = plugin.imagePullPolicy
        if resources_block is not None and resources_block.resources:
            container["resources"] = resources_block.resources.model_dump(exclude_none=True)
        container["volumeMounts"] = copy.deepcopy(mounts)
        added.append(container)
    init, sidecar = added
    inits = pod_spec.setdefault("initContainers", [])
    after = next(
        (i for i, c in enumerate(inits) if c.get("name") == entry["init_after"]), len(inits) - 1
    )
    inits.insert(after + 1, init)
    pod_spec["containers"].insert(1, sidecar)
    if not pod_spec.get("hostPID"):
        pod_spec["shareProcessNamespace"] = True
    pod_spec.setdefault("volumes", []).extend(
        [{"name": name, "configMap": {"name": name}}, {"name": "config", "emptyDir": {}}]
    )


def _render_from_template(
    policy: ResolvedPolicy,
    operand: Operand,
    template: dict[str, Any],
    operator_env: dict[str, str] | None,
    os_tag: str | None,
    kernel: tuple[str, str] | None = None,
    configmaps: Mapping[str, Sequence[str]] | None = None,
    runtime: str = "containerd",
    openshift: bool = False,
) -> dict[str, Any]:
    filled = _substitute(
        copy.deepcopy(template), _template_variables(policy, operand, operator_env, os_tag, kernel)
    )
    pod_spec: dict[str, Any] = filled["podSpec"]
    component = policy.component(operand.spec_block)
    main = pod_spec["containers"][0]
    apply_cdi(policy, operand, main)
    cc_manager = policy.policy.spec.ccManager
    if operand.name == "cc-manager" and cc_manager and cc_manager.defaultMode:
        set_env(main, [{"name": "DEFAULT_CC_MODE", "value": cc_manager.defaultMode}])
    if component and component.hostNetwork:
        pod_spec["hostNetwork"] = True
        pod_spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if operand.name == "dcgm-exporter":
        apply_dcgm_exporter(policy, pod_spec)
    elif operand.name == "mig-manager":
        apply_mig_manager_configs(policy, pod_spec)
    elif operand.name == "vgpu-device-manager" and policy.vgpu_config_map:
        set_configmap(pod_spec, "vgpu-config", policy.vgpu_config_map)
    takes_policy_env = operand.name != MPS_CONTROL_DAEMON  # upstream sets neither
    if operand.name == "container-toolkit":
        _apply_toolkit_runtime(policy, pod_spec, component, runtime)
        takes_policy_env = False  # set before the runtime's, which may rewrite them
    _apply_plugin_config(policy, operand, pod_spec, operator_env, openshift)
    if operand.name in ("device-plugin", MPS_CONTROL_DAEMON):
        _apply_mps_root(policy, operand, pod_spec)
    if component and component.env and takes_policy_env:
        set_env(main, [{"name": e.name, "value": e.value or ""} for e in component.env])
    if component and component.args and takes_policy_env:
        main["args"] = list(component.args)
    if component and component.resources:
        main["resources"] = component.resources.model_dump(exclude_none=True)
    pull_secrets = list(component.imagePullSecrets or []) if component else []
    manager = driver_manager(policy, operand)
    if manager is not None:
        apply_driver_manager(policy, operand, pod_spec, manager, component)
        pull_secrets += [s for s in manager.imagePullSecrets or [] if s not in pull_secrets]
    apply_validations(policy, operand, pod_spec)
    if operand.name == "driver":
        apply_driver(policy, pod_spec, main, operator_env, os_tag, configmaps, runtime)
        pull_secrets += [s for s in sidecar_pull_secrets(policy) if s not in pull_secrets]
        apply_driver_config_digest(pod_spec)
    if pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": s} for s in pull_secrets]
    if not _takes_runtime_class(policy, runtime):
        pod_spec.pop("runtimeClassName", None)
    ds: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": operand.daemonset,
            "annotations": dict(filled.get("annotations") or {}),
        },
        "spec": {
            "selector": {"matchLabels": dict(filled["selector"])},
            "template": {"metadata": {}, "spec": pod_spec},
            "updateStrategy": {"type": filled["updateStrategy"]},
        },
    }
    exporter = policy.policy.spec.dcgmExporter
    pod_annotations = dict(filled.get("podAnnotations") or {})
    if operand.name == "dcgm-exporter" and exporter and exporter.annotations:
        pod_annotations.update(exporter.annotations)
    nri_container = _NRI_ANNOTATED.get(operand.name)
    if policy.nri_plugin_enabled and nri_container is not None:
        # Upstream's setNRIPluginAnnotation: the management CDI device for that container.
        named = nri_container or pod_spec["containers"][0]["name"]
        pod_annotations[f"nvidia.cdi.k8s.io/container.{named}"] = "management.nvidia.com/gpu=all"
    if pod_annotations:
        ds["spec"]["template"]["metadata"]["annotations"] = pod_annotations
    return ds


# Operands whose pods upstream annotates for the NRI plugin, and the container it names
# ("": the first container).
_NRI_ANNOTATED = {
    "gpu-feature-discovery": "",
    "device-plugin": "nvidia-device-plugin",
    "mps-control-daemon": "",
    "dcgm-exporter": "",
    "dcgm": "",
    "mig-manager": "",
    "operator-validator": "toolkit-validation",
}


def _takes_runtime_class(policy: ResolvedPolicy, runtime: str) -> bool:
    """Upstream's setRuntimeClassName: none in NRI plugin mode, nor with CRI-O and CDI off
    (the OCI hook, not a runtime class, reaches the GPUs then)."""
    return not policy.nri_plugin_enabled and (policy.cdi_enabled or runtime != "crio")


def render_daemonset(
    policy: ResolvedPolicy,
    operand: Operand,
    namespace: str,
    operator_env: dict[str, str] | None = None,
    os_tag: str | None = None,
    kernel: tuple[str, str] | None = None,
    configmaps: Mapping[str, Sequence[str]] | None = None,
    runtime: str = "containerd",
    openshift: bool = False,
) -> dict[str, Any]:
    """The DaemonSet for one enabled operand, with its hash annotation set.

    Operands with a pod template (`catalog/templates/operands/`) get upstream's pod spec;
    `os_tag` (see `driver_os_tag`) suffixes the driver image tag; `kernel` (a kernel version
    and its nodes' OS, see `kernel_versions`) makes the precompiled driver's DaemonSet for it;
    `configmaps` (name -> keys, see `named_configmap_keys`) are the ConfigMaps the policy
    hands the driver, which it mounts key by key; `runtime` is the GPU nodes' container
    runtime (see `container_runtime`); `openshift` whether the nodes are OpenShift's (see
    `on_openshift`).
    """
    template = _operand_template(operand.name)
    if template is None:
        return _finish(
            policy,
            operand,
            namespace,
            _render_generic(policy, operand, namespace, operator_env, runtime),
            {},
        )
    ds = _render_from_template(
        policy, operand, template, operator_env, os_tag, kernel, configmaps, runtime, openshift
    )
    labels = dict(template.get("labels") or {})
    node_selector: dict[str, str] = {}
    if kernel is not None:
        # Upstream's `transformPrecompiledDriverDaemonset`: one DaemonSet per kernel version.
        version, node_os = kernel
        ds["metadata"]["name"] += f"-{sanitized_kernel(version)}-{node_os}"
        labels[PRECOMPILED_LABEL] = "true"
        node_selector[NFD_KERNEL] = version
    return _finish(policy, operand, namespace, ds, labels, template.get("podLabels"), node_selector)


def render_operand_daemonsets(
    policy: ResolvedPolicy,
    operand: Operand,
    namespace: str,
    operator_env: dict[str, str] | None,
    os_tag: str | None,
    kernels: Mapping[str, str],
    configmaps: Mapping[str, Sequence[str]] | None = None,
    runtime: str = "containerd",
    openshift: bool = False,
) -> list[dict[str, Any]]:
    """An operand's DaemonSets: one, or with precompiled drivers one per kernel version;
    none for the operands `kept_on_openshift` names, on OpenShift."""
    if operand.name in kept_on_openshift(openshift):
        return []
    driver = policy.policy.spec.driver
    kernel_list: list[tuple[str, str] | None] = [None]
    if operand.name == "driver" and driver and driver.usePrecompiled:
        kernel_list = list(sorted(kernels.items()))
    return [
        render_daemonset(
            policy, operand, namespace, operator_env, os_tag, kernel, configmaps, runtime, openshift
        )
        for kernel in kernel_list
    ]


# Upstream renders these on OpenShift with the Driver Toolkit (`transformOpenShiftDriver
# ToolkitContainer`: one DaemonSet per RHCOS version, its image from the `driver-toolkit`
# ImageStream, OPENSHIFT_VERSION from the ClusterVersion). gpuop does not render that: it
# neither applies its own DaemonSets for them nor deletes the live ones, and says so.
OPENSHIFT_KEPT_OPERANDS = ("driver", "vgpu-manager")


def kept_on_openshift(
    openshift: bool, operands: Iterable[Operand] | None = None
) -> tuple[str, ...]:
    """The operands whose live DaemonSets gpuop leaves as they are (see above): of
    `operands` (the enabled ones, say), or of all."""
    if not openshift:
        return ()
    if operands is None:
        return OPENSHIFT_KEPT_OPERANDS
    return tuple(op.name for op in operands if op.name in OPENSHIFT_KEPT_OPERANDS)


def named_configmaps(policy: ResolvedPolicy) -> tuple[str, ...]:
    """The ConfigMaps (in the operator's namespace) the policy hands the driver file by file:
    `driver.kernelModuleConfig`, `driver.repoConfig`, `driver.certConfig`."""
    driver = policy.policy.spec.driver
    if driver is None:
        return ()
    names = [
        driver.kernelModuleConfig.name if driver.kernelModuleConfig else None,
        driver.repoConfig.configMapName if driver.repoConfig else None,
        driver.certConfig.name if driver.certConfig else None,
    ]
    return tuple(dict.fromkeys(name for name in names if name))


def named_configmap_keys(
    policy: ResolvedPolicy, objects: Iterable[Mapping[str, Any]], namespace: str
) -> dict[str, tuple[str, ...]]:
    """The keys of each ConfigMap `named_configmaps` names, from objects such as a dump's
    (ConfigMaps in `namespace`, or without one)."""
    wanted = set(named_configmaps(policy))
    found: dict[str, tuple[str, ...]] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") != "ConfigMap" or meta.get("name") not in wanted:
            continue
        if meta.get("namespace") not in (None, namespace):
            continue
        found[str(meta["name"])] = configmap_keys(obj)
    return found


def configmap_keys(configmap: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys the driver mounts of a ConfigMap: its `data` (upstream reads no
    `binaryData`), sorted."""
    return tuple(sorted(str(key) for key in configmap.get("data") or {}))


def _finish(
    policy: ResolvedPolicy,
    operand: Operand,
    namespace: str,
    ds: dict[str, Any],
    template_labels: Mapping[str, str],
    template_pod_labels: Mapping[str, str] | None = None,
    extra_node_selector: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Labels, ownership, node placement and rollout settings every operand shares."""
    daemonsets = policy.policy.spec.daemonsets
    user_labels = dict(daemonsets.labels or {}) if daemonsets else {}
    user_labels.pop(APP_LABEL, None)
    labels = {
        **user_labels,
        **template_labels,
        APP_LABEL: operand.daemonset,
        MANAGED_BY_LABEL: MANAGED_BY,
        OPERAND_LABEL: operand.name,
    }
    if operand.name == "driver":
        labels[APP_COMPONENT_LABEL] = "nvidia-driver"
    metadata = ds["metadata"]
    metadata.setdefault("name", operand.daemonset)
    metadata["namespace"] = namespace
    metadata["labels"] = labels
    user_annotations = dict(daemonsets.annotations or {}) if daemonsets else {}
    metadata["annotations"] = {**user_annotations, **(metadata.get("annotations") or {})}
    metadata["ownerReferences"] = [_owner_reference(policy)]
    spec = ds["spec"]
    strategy = (daemonsets.updateStrategy if daemonsets else None) or "RollingUpdate"
    if operand.name == "driver" or spec.get("updateStrategy", {}).get("type") == "OnDelete":
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
    # The pod template carries upstream's labels only: one label of gpuop's own there would
    # make every operand pod NVIDIA's operator started a new revision, rolled on takeover.
    if template_pod_labels is None:
        pod_labels = {k: v for k, v in labels.items() if k != OPERAND_LABEL}
    else:
        pod_labels = {**user_labels, **template_pod_labels}
    pod_labels[MANAGED_BY_LABEL] = OPERAND_POD_MANAGED_BY
    pod.setdefault("metadata", {})["labels"] = pod_labels
    pod_spec = pod["spec"]
    node_selector = {deploy_label(operand.deploy_label): "true"}
    node_selector.update(operand.extra_node_selector)
    node_selector.update(extra_node_selector or {})
    pod_spec["nodeSelector"] = node_selector
    pod_spec["tolerations"] = (
        [t.model_dump(exclude_none=True) for t in daemonsets.tolerations]
        if daemonsets and daemonsets.tolerations
        else DEFAULT_TOLERATIONS
    )
    pod_spec["priorityClassName"] = (
        daemonsets.priorityClassName if daemonsets and daemonsets.priorityClassName else None
    ) or "system-node-critical"
    if daemonsets and daemonsets.podSecurityContext:
        pod_spec["securityContext"] = dict(daemonsets.podSecurityContext)
    account = pod_service_account(operand.name)
    if account is not None:
        pod_spec["serviceAccountName"] = account
    metadata["annotations"][HASH_ANNOTATION] = object_hash(ds)
    return ds


def _render_generic(
    policy: ResolvedPolicy,
    operand: Operand,
    namespace: str,
    operator_env: dict[str, str] | None = None,
    runtime: str = "containerd",
) -> dict[str, Any]:
    """An operand without an upstream pod template: the shared shape, filled from its row."""
    ds = copy.deepcopy(_template())
    image = policy.image_for(operand, operator_env)
    component = policy.component(operand.spec_block)
    ds["metadata"]["annotations"] = {}
    spec = ds["spec"]
    spec["selector"] = {"matchLabels": {APP_LABEL: operand.daemonset}}
    spec["template"]["metadata"] = {}
    pod_spec = spec["template"]["spec"]
    if operand.host.host_pid:
        pod_spec["hostPID"] = True
    if operand.host.host_ipc:
        pod_spec["hostIPC"] = True
    if component and component.hostNetwork:
        pod_spec["hostNetwork"] = True
    if operand.name in _NVIDIA_RUNTIME_OPERANDS and _takes_runtime_class(policy, runtime):
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
    classes: list[dict[str, Any]] = [
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {
                "name": name,
                "labels": {
                    APP_COMPONENT_LABEL: "gpu-operator",
                    MANAGED_BY_LABEL: MANAGED_BY,
                },
                "ownerReferences": [_owner_reference(policy)],
            },
            "handler": name,
        }
        for name in names
    ]
    for runtime_class in classes:
        runtime_class["metadata"]["annotations"] = {HASH_ANNOTATION: object_hash(runtime_class)}
    return classes


def render_vgpu_configmap(policy: ResolvedPolicy, namespace: str) -> dict[str, Any]:
    """The vGPU device manager's default config, generated from the GPU catalog."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DEFAULT_VGPU_CONFIGMAP,
            "namespace": namespace,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
            "ownerReferences": [_owner_reference(policy)],
        },
        "data": {"config.yaml": yaml.safe_dump(default_vgpu_config_object(), sort_keys=False)},
    }


def support_settings(policy: ResolvedPolicy) -> SupportSettings:
    """What of the ClusterPolicy the objects around the operands depend on."""
    spec = policy.policy.spec
    custom: set[str] = set()
    mig = spec.migManager
    if mig and mig.config and mig.config.name and mig.config.name != MIG_PARTED_DEFAULT:
        custom.add(MIG_PARTED_DEFAULT)
    clients = mig.gpuClientsConfig.name if mig and mig.gpuClientsConfig else None
    if clients and clients != GPU_CLIENTS_DEFAULT:
        custom.add(GPU_CLIENTS_DEFAULT)
    exporter = spec.dcgmExporter
    metrics = spec.operator.metrics if spec.operator else None
    return SupportSettings(
        custom_configmaps=frozenset(custom),
        dcgm_exporter_service_monitor=(
            dict(exporter.serviceMonitor) if exporter and exporter.serviceMonitor else None
        ),
        operator_service_monitor=(
            dict(metrics.serviceMonitor) if metrics and metrics.serviceMonitor else None
        ),
        dcgm_exporter_service=(
            exporter.service.model_dump(exclude_none=True)
            if exporter and exporter.service
            else None
        ),
        dcgm_exporter_pod_metadata=bool(
            exporter
            and (
                exporter.enablePodLabels
                or exporter.enablePodUID
                or any(
                    e.name in DCGM_POD_METADATA_ENV and (e.value or "").lower() == "true"
                    for e in exporter.env or []
                )
            )
        ),
    )


def render_support_objects(
    policy: ResolvedPolicy, operands: Iterable[Operand], namespace: str
) -> list[dict[str, Any]]:
    """ServiceAccounts, RBAC, ConfigMaps, Services and ServiceMonitors of these operands
    and of the operator, in apply order; the vGPU devices ConfigMap unless the policy
    names its own."""
    operands = list(operands)
    objects = support_objects(
        operands, namespace, _owner_reference(policy), MANAGED_BY, support_settings(policy)
    )
    if any(op.name == "vgpu-device-manager" for op in operands) and (
        policy.vgpu_config_map in (None, "", DEFAULT_VGPU_CONFIGMAP)
    ):
        objects.append(render_vgpu_configmap(policy, namespace))
    for obj in objects:
        obj["metadata"].setdefault("annotations", {})[HASH_ANNOTATION] = object_hash(obj)
    return objects


def render_all(
    policy: ResolvedPolicy,
    namespace: str,
    operator_env: dict[str, str] | None = None,
    nodes: Iterable[Mapping[str, Any]] = (),
    configmaps: Mapping[str, Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """Every object the policy asks for, in apply order (for `gpuop render` and the audit).

    `nodes` decide the driver image's OS suffix, as they do in the operator; `configmaps`
    are the keys of the ConfigMaps the policy hands the driver (`named_configmap_keys`).
    """
    nodes = list(nodes)
    os_tag = driver_os_tag(nodes)
    runtime = container_runtime(nodes)
    openshift = on_openshift(nodes)
    objects: list[dict[str, Any]] = list(render_runtime_classes(policy))
    enabled = policy.enabled_operands()
    objects += render_support_objects(policy, enabled, namespace)
    kernels = kernel_versions(nodes)
    for op in enabled:
        objects += render_operand_daemonsets(
            policy, op, namespace, operator_env, os_tag, kernels, configmaps, runtime, openshift
        )
    return objects
