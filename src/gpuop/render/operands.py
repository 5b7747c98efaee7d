"""What an operand's pod gets beyond its catalog template, as upstream's transforms add it.

The validation init containers (`validator.<block>.env`), the CDI environment of the
toolkit and device plugin, the DCGM exporter's metrics ConfigMap and pod-metadata mapping,
the MIG manager's configs, and the driver's own settings (its driver manager, probes,
open kernel modules, RDMA, vGPU licensing, virtual topology, `DRIVER_CONFIG_DIGEST`).
`gpuop.render` renders a DaemonSet from the template and hands its pod spec here; each
function changes it in place.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import yaml

from gpuop.api.labels import DRIVER_CONFIG_DIGEST_ENV
from gpuop.catalog import Operand
from gpuop.policy import ResolvedPolicy
from gpuop.policy.models import DriverManagerSpec


def set_env(container: dict[str, Any], items: Iterable[dict[str, Any]]) -> None:
    """Set env vars as upstream's `setContainerEnv` does: replace in place, else append."""
    items = list(items)
    if not items:
        return
    env = container.setdefault("env", [])
    for item in items:
        for i, existing in enumerate(env):
            if existing.get("name") == item["name"]:
                env[i] = item
                break
        else:
            env.append(item)


# Validation init containers: which `validator.<block>.env` each takes.
_VALIDATION_ENV_BLOCKS = {
    "driver": "driver",
    "toolkit": "toolkit",
    "cuda": "cuda",
    "plugin": "plugin",
    "vfio-pci": "vfioPCI",
    "vgpu-manager": "vgpuManager",
    "vgpu-devices": "vgpuDevices",
}


_VALIDATOR_OPERANDS = ("operator-validator", "sandbox-validator")


# Driver images are published per OS: their tag ends with the GPU nodes' OS.
OS_TAGGED_OPERANDS = ("driver", "vgpu-manager")


def _env_items(items: Iterable[Any] | None) -> list[dict[str, Any]]:
    return [{"name": e.name, "value": e.value or ""} for e in items or []]


def driver_manager(policy: ResolvedPolicy, operand: Operand) -> DriverManagerSpec | None:
    spec = policy.policy.spec
    if operand.name == "driver":
        return (spec.driver.manager if spec.driver else None) or DriverManagerSpec()
    if operand.name == "vfio-manager":
        return (spec.vfioManager.driverManager if spec.vfioManager else None) or DriverManagerSpec()
    if operand.name == "vgpu-manager":
        return (spec.vgpuManager.driverManager if spec.vgpuManager else None) or DriverManagerSpec()
    return None


def apply_driver_manager(
    policy: ResolvedPolicy,
    operand: Operand,
    pod_spec: dict[str, Any],
    manager: DriverManagerSpec,
    component: Any,
) -> None:
    """Upstream's `transformDriverManagerInitContainer`: resources, RDMA flags, env."""
    init = next(
        (c for c in pod_spec.get("initContainers", []) if c["name"] == "k8s-driver-manager"), None
    )
    if init is None:
        return
    if component is not None and component.resources:
        init["resources"] = component.resources.model_dump(exclude_none=True)
    driver = policy.policy.spec.driver
    rdma = driver.rdma if driver and operand.name == "driver" else None
    if rdma is not None and rdma.enabled:
        set_env(init, [{"name": "GPU_DIRECT_RDMA_ENABLED", "value": "true"}])
        if rdma.useHostMofed:
            set_env(init, [{"name": "USE_HOST_MOFED", "value": "true"}])
    set_env(init, _env_items(manager.env))


def apply_validations(policy: ResolvedPolicy, operand: Operand, pod_spec: dict[str, Any]) -> None:
    """Upstream's validator transforms: per-validation env and resources, unused ones dropped."""
    spec = policy.policy.spec
    validator = spec.validator
    kept = []
    for init in pod_spec.get("initContainers", []):
        name = init["name"]
        if not name.endswith("-validation"):
            kept.append(init)
            continue
        check = name.removesuffix("-validation")
        if operand.name in _VALIDATOR_OPERANDS:
            if check == "plugin" and not policy.block_enabled("devicePlugin", True):
                continue
            if check == "cc-manager" and not policy.block_enabled("ccManager", False):
                continue
        if validator is not None and validator.resources:
            init["resources"] = validator.resources.model_dump(exclude_none=True)
        block = _VALIDATION_ENV_BLOCKS.get(check)
        if block and (operand.name in _VALIDATOR_OPERANDS or check in ("driver", "toolkit")):
            sub = getattr(validator, block, None) if validator else None
            if check in ("cuda", "plugin") and validator and validator.imagePullSecrets:
                secrets = ",".join(validator.imagePullSecrets)
                set_env(init, [{"name": "VALIDATOR_IMAGE_PULL_SECRETS", "value": secrets}])
            set_env(init, _env_items(sub.env if sub else None))
        kept.append(init)
    if "initContainers" in pod_spec:
        pod_spec["initContainers"] = kept


# Env that upstream sets only with CDI on (`transformToolkitCtrForCDI` and friends); with
# CDI off a variable either goes or takes its asset value.
_CDI_ENV: dict[str, dict[str, str | None]] = {
    "container-toolkit": {
        "CDI_ENABLED": None,
        "NVIDIA_RUNTIME_SET_AS_DEFAULT": None,
        "NVIDIA_CONTAINER_RUNTIME_MODE": None,
        "CRIO_CONFIG_MODE": None,
    },
    "device-plugin": {
        "CDI_ENABLED": None,
        "DEVICE_LIST_STRATEGY": "envvar",
        "CDI_ANNOTATION_PREFIX": None,
        "NVIDIA_CDI_HOOK_PATH": None,
    },
    "mig-manager": {"CDI_ENABLED": None, "NVIDIA_CDI_HOOK_PATH": None},
}


def apply_cdi(policy: ResolvedPolicy, operand: Operand, container: dict[str, Any]) -> None:
    """CDI-off variants, and the CDI hook's path only where the toolkit installs it."""
    cdi_only = _CDI_ENV.get(operand.name)
    if cdi_only is None:
        return
    toolkit_on = policy.block_enabled("toolkit", True)
    env = []
    for item in container.get("env", []):
        name = item["name"]
        if name == "NVIDIA_CDI_HOOK_PATH" and not toolkit_on:
            continue
        if not policy.cdi_enabled and name in cdi_only:
            value = cdi_only[name]
            if value is None:
                continue
            item = {"name": name, "value": value}
        env.append(item)
    container["env"] = env


_DCGM_JOB_MAPPING_DIR = "/var/lib/dcgm-exporter/job-mapping"


_DCGM_METRICS_FILE = "dcgm-metrics.csv"


# The exporter's env vars that turn on pod labels or UIDs in its metrics.
DCGM_POD_METADATA_ENV = (
    "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS",
    "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID",
)


def apply_dcgm_exporter(policy: ResolvedPolicy, pod_spec: dict[str, Any]) -> None:
    """Upstream's `TransformDCGMExporter`, past what every operand gets."""
    spec = policy.policy.spec
    exporter = spec.dcgmExporter
    main = pod_spec["containers"][0]
    if any(op.name == "dcgm" for op in policy.enabled_operands()):
        set_env(main, [{"name": "DCGM_REMOTE_HOSTENGINE_INFO", "value": "nvidia-dcgm:5555"}])
    if exporter is None:
        return
    if exporter.hostPID:
        pod_spec["hostPID"] = True
    mapping = exporter.hpcJobMapping
    if mapping and mapping.enabled:
        directory = mapping.directory or _DCGM_JOB_MAPPING_DIR
        set_env(main, [{"name": "DCGM_HPC_JOB_MAPPING_DIR", "value": directory}])
        main.setdefault("volumeMounts", []).append(
            {"name": "hpc-job-mapping", "readOnly": True, "mountPath": directory}
        )
        pod_spec.setdefault("volumes", []).append(
            {
                "name": "hpc-job-mapping",
                "hostPath": {"path": directory, "type": "DirectoryOrCreate"},
            }
        )
    if exporter.enablePodLabels:
        set_env(main, [{"name": DCGM_POD_METADATA_ENV[0], "value": "true"}])
    if exporter.enablePodUID:
        set_env(main, [{"name": DCGM_POD_METADATA_ENV[1], "value": "true"}])
    if exporter.podLabelAllowlistRegex:
        allowlist = ",".join(exporter.podLabelAllowlistRegex)
        set_env(
            main,
            [{"name": "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX", "value": allowlist}],
        )
    user_env = {e.name: e.value or "" for e in exporter.env or []}
    reads_api = (
        exporter.enablePodLabels
        or exporter.enablePodUID
        or any(user_env.get(name, "").lower() == "true" for name in DCGM_POD_METADATA_ENV)
        or user_env.get("DCGM_EXPORTER_CONFIGMAP_DATA", "") not in ("", "none")
    )
    if reads_api:
        pod_spec["automountServiceAccountToken"] = True
    if exporter.config and exporter.config.name:
        path = f"/etc/dcgm-exporter/{_DCGM_METRICS_FILE}"
        main.setdefault("volumeMounts", []).append(
            {
                "name": "metrics-config",
                "readOnly": True,
                "mountPath": path,
                "subPath": _DCGM_METRICS_FILE,
            }
        )
        pod_spec.setdefault("volumes", []).append(
            {
                "name": "metrics-config",
                "configMap": {
                    "name": exporter.config.name,
                    "items": [{"key": _DCGM_METRICS_FILE, "path": _DCGM_METRICS_FILE}],
                },
            }
        )
        set_env(main, [{"name": "DCGM_EXPORTER_COLLECTORS", "value": path}])
    kubelet_root = spec.hostPaths.kubeletRootDir if spec.hostPaths else None
    if kubelet_root and kubelet_root != "/var/lib/kubelet":
        for volume in pod_spec.get("volumes", []):
            if volume["name"] == "pod-gpu-resources":
                volume["hostPath"]["path"] = f"{kubelet_root.rstrip('/')}/pod-resources"


def set_configmap(pod_spec: dict[str, Any], volume_name: str, configmap: str) -> None:
    for volume in pod_spec.get("volumes", []):
        if volume["name"] == volume_name and "configMap" in volume:
            volume["configMap"]["name"] = configmap


def apply_mig_manager_configs(policy: ResolvedPolicy, pod_spec: dict[str, Any]) -> None:
    """`migManager.config.name` and `gpuClientsConfig.name`, as upstream's MIG manager transform."""
    mig = policy.policy.spec.migManager
    custom = mig.config.name if mig and mig.config else None
    clients = mig.gpuClientsConfig.name if mig and mig.gpuClientsConfig else None
    if clients:
        set_configmap(pod_spec, "gpu-clients", clients)
    if not custom:
        return
    for volume in pod_spec.get("volumes", []):
        if volume["name"] == "mig-parted-config":
            # A custom config is mounted whole, as config.yaml.
            volume["configMap"] = {"name": custom}
    main = pod_spec["containers"][0]
    main["env"] = [e for e in main.get("env", []) if e["name"] != "DEFAULT_CONFIG_FILE"]
    set_env(main, [{"name": "CONFIG_FILE", "value": "/mig-parted-config/config.yaml"}])


@cache
def _driver_sidecars() -> dict[str, Any]:
    path = resources.files("gpuop.catalog").joinpath("templates/driver-sidecars.yaml")
    loaded: dict[str, Any] = yaml.safe_load(path.read_text("utf-8"))
    return loaded


# The operator's env variables that name the GDS and GDRCopy images when the policy does not.
_SIDECAR_IMAGE_ENV = {"nvidia-fs-ctr": "GDS_IMAGE", "nvidia-gdrcopy-ctr": "GDRCOPY_IMAGE"}


def _block_image(
    block: Any, env_name: str, operator_env: Mapping[str, str] | None, os_tag: str | None
) -> str | None:
    """A gds/gdrcopy block's image as upstream's resolveDriverTag makes it: repository,
    image and version (or the image alone, or the operator's env), with the nodes' OS
    suffix unless pinned by digest; None where nothing names it."""
    if block.repository and block.image and block.version:
        separator = "@" if block.version.startswith("sha256:") else ":"
        image = f"{block.repository}/{block.image}{separator}{block.version}"
    elif block.image and not block.repository and not block.version:
        image = block.image
    else:
        image = (operator_env or {}).get(env_name) or ""
    if not image:
        return None
    return f"{image}-{os_tag}" if os_tag and "sha256:" not in image else image


def sidecar_pull_secrets(policy: ResolvedPolicy) -> list[str]:
    """The image pull secrets the driver pod gets for its GDS and GDRCopy sidecars."""
    spec = policy.policy.spec
    if spec.driver is not None and spec.driver.usePrecompiled is True:
        return []  # upstream refuses GDS and GDRCopy with precompiled drivers
    return [
        secret
        for block in (spec.gds, spec.gdrcopy)
        if block is not None and block.enabled is True
        for secret in block.imagePullSecrets or []
    ]


def _driver_sidecar_containers(
    policy: ResolvedPolicy,
    driver: Any,
    image: str,
    operator_env: Mapping[str, str] | None,
    os_tag: str | None,
) -> list[dict[str, Any]]:
    """Upstream's driver sidecars (`templates/driver-sidecars.yaml`) that the policy keeps,
    in their order, filled in as upstream's transforms do."""
    spec = policy.policy.spec
    kept: list[tuple[str, str, Any]] = []
    if driver.rdma and driver.rdma.enabled:
        kept.append(("nvidia-peermem-ctr", image, driver))
    precompiled = driver.usePrecompiled is True
    for name, block in (("nvidia-fs-ctr", spec.gds), ("nvidia-gdrcopy-ctr", spec.gdrcopy)):
        if block is None or block.enabled is not True or precompiled:
            continue
        sidecar_image = _block_image(block, _SIDECAR_IMAGE_ENV[name], operator_env, os_tag)
        if sidecar_image is not None:
            kept.append((name, sidecar_image, block))
    containers = []
    for name, sidecar_image, block in kept:
        sidecar = copy.deepcopy(_driver_sidecars()[name])
        sidecar["image"] = sidecar_image
        if block.imagePullPolicy:
            sidecar["imagePullPolicy"] = block.imagePullPolicy
        if name == "nvidia-peermem-ctr" and driver.rdma.useHostMofed:
            set_env(sidecar, [{"name": "USE_HOST_MOFED", "value": "true"}])
        elif name != "nvidia-peermem-ctr" and block.env:
            set_env(sidecar, [{"name": e.name, "value": e.value or ""} for e in block.env])
        if driver.resources:
            sidecar["resources"] = driver.resources.model_dump(exclude_none=True)
        containers.append(sidecar)
    return containers


@cache
def _driver_os() -> dict[str, Any]:
    path = resources.files("gpuop.catalog").joinpath("templates/driver-os.yaml")
    loaded: dict[str, Any] = yaml.safe_load(path.read_text("utf-8"))
    return loaded


def os_id_of_tag(os_tag: str | None) -> str | None:
    """The OS id of an OS tag (`ubuntu` of `ubuntu22.04`, `sl-micro` of `sl-micro6.0`)."""
    found = re.match(r"[a-z]+(?:-[a-z]+)*", os_tag or "")
    return found.group(0) if found else None


def _configmap_files(
    pod_spec: dict[str, Any],
    containers: list[dict[str, Any]],
    name: str,
    directory: str,
    keys: Sequence[str],
) -> None:
    """Upstream's `createConfigMapVolumeMounts` and `createConfigMapVolume`: each key of
    ConfigMap `name` mounted as a file of `directory` in each of `containers` (subPath, so
    the directory's own files stay), in sorted key order, and the ConfigMap's volume (named
    as the ConfigMap, listing those keys) once."""
    files = sorted(keys)
    for container in containers:
        container.setdefault("volumeMounts", []).extend(
            {"name": name, "readOnly": True, "mountPath": f"{directory}/{key}", "subPath": key}
            for key in files
        )
    source: dict[str, Any] = {"name": name}
    if files:
        source["items"] = [{"key": key, "path": key} for key in files]
    pod_spec.setdefault("volumes", []).append({"name": name, "configMap": source})


def _apply_driver_files(
    policy: ResolvedPolicy,
    pod_spec: dict[str, Any],
    container: dict[str, Any],
    os_tag: str | None,
    configmaps: Mapping[str, Sequence[str]] | None,
    runtime: str,
) -> None:
    """What `transformDriverContainer` and its sidecars' transforms mount after licensing:
    the kernel module parameters, SLES' host modules for precompiled drivers, the package
    repositories, CA certificates, the `secretEnv` Secret and the host's subscriptions.

    Each ConfigMap is mounted key by key, so its keys must be known (`configmaps`, read from
    the cluster); one not known is left out, where upstream stops updating the driver until
    the ConfigMap exists. An OS outside upstream's tables gets neither repositories nor
    certificates, where upstream stops the same way.
    """
    driver = policy.policy.spec.driver
    assert driver is not None
    tables, os_id = _driver_os(), os_id_of_tag(os_tag)
    known = configmaps or {}
    sidecars = {c["name"]: c for c in pod_spec.get("containers", [])[1:]}
    builders = [sidecars[n] for n in ("nvidia-fs-ctr", "nvidia-gdrcopy-ctr") if n in sidecars]
    modules = driver.kernelModuleConfig.name if driver.kernelModuleConfig else None
    if modules and modules in known:
        peermem = [sidecars["nvidia-peermem-ctr"]] if "nvidia-peermem-ctr" in sidecars else []
        _configmap_files(pod_spec, [container, *peermem], modules, "/drivers", known[modules])
    precompiled = driver.usePrecompiled is True
    if precompiled and os_id in ("sles", "sl-micro"):
        container.setdefault("volumeMounts", []).append(
            {"name": "lib-modules", "mountPath": "/run/host/lib/modules", "readOnly": True}
        )
        pod_spec.setdefault("volumes", []).append(
            {"name": "lib-modules", "hostPath": {"path": "/lib/modules", "type": "Directory"}}
        )
    if precompiled:
        return
    repos = driver.repoConfig.configMapName if driver.repoConfig else None
    certs = driver.certConfig.name if driver.certConfig else None
    # The GDS and GDRCopy builders get the driver's repositories, certificates and Secret.
    for name, table in ((repos, "repo_config_dirs"), (certs, "cert_config_dirs")):
        directory = tables[table].get(os_id or "")
        if name and name in known and directory:
            _configmap_files(pod_spec, [container, *builders], name, directory, known[name])
    for target in (container, *builders) if driver.secretEnv else ():
        target.setdefault("envFrom", []).append({"secretRef": {"name": driver.secretEnv}})
    subscriptions = tables["subscriptions"].get(os_id or "", [])
    if os_id == "rhel" and (repos or runtime == "crio"):
        # Upstream: a repo config replaces the host's entitlements, and CRI-O hands them on.
        subscriptions = []
    for number, entry in enumerate(sorted(subscriptions, key=lambda e: e["mountPath"])):
        volume = f"subscription-config-{number}"
        container.setdefault("volumeMounts", []).append(
            {"name": volume, "mountPath": entry["mountPath"], "readOnly": True}
        )
        pod_spec.setdefault("volumes", []).append(
            {"name": volume, "hostPath": {"path": entry["path"], "type": entry["type"]}}
        )


def apply_driver(
    policy: ResolvedPolicy,
    pod_spec: dict[str, Any],
    container: dict[str, Any],
    operator_env: Mapping[str, str] | None = None,
    os_tag: str | None = None,
    configmaps: Mapping[str, Sequence[str]] | None = None,
    runtime: str = "containerd",
) -> None:
    """Upstream's `transformDriverContainer`: probes, open modules, RDMA, vGPU licensing,
    and the files, Secret and host paths the policy and the nodes' OS hand the driver
    (`configmaps`: the keys of the ConfigMaps the policy names, in the operator's namespace)."""
    driver = policy.policy.spec.driver
    if driver is None:
        return
    for field in ("startupProbe", "livenessProbe", "readinessProbe"):
        probe = getattr(driver, field)
        if probe is None or field not in container:
            continue
        for key, value in probe.model_dump(exclude_none=True).items():
            if value:
                container[field][key] = value
    if driver.kernelModuleType == "open":
        set_env(container, [{"name": "OPEN_KERNEL_MODULES_ENABLED", "value": "true"}])
    if driver.rdma and driver.rdma.enabled:
        set_env(container, [{"name": "GPU_DIRECT_RDMA_ENABLED", "value": "true"}])
        if driver.rdma.useHostMofed:
            for volume in pod_spec.get("volumes", []):
                if volume["name"] == "mlnx-ofed-usr-src":
                    volume["hostPath"]["path"] = "/usr/src"
            set_env(container, [{"name": "USE_HOST_MOFED", "value": "true"}])
    sidecars = _driver_sidecar_containers(policy, driver, container["image"], operator_env, os_tag)
    pod_spec["containers"][1:1] = sidecars
    licensing = driver.licensingConfig
    if licensing and (licensing.secretName or licensing.configMapName):
        mounts = container.setdefault("volumeMounts", [])
        items = [{"key": "gridd.conf", "path": "gridd.conf"}]
        mounts.append(
            {
                "name": "licensing-config",
                "readOnly": True,
                "mountPath": "/drivers/gridd.conf",
                "subPath": "gridd.conf",
            }
        )
        if licensing.nlsEnabled:
            token = "client_configuration_token.tok"
            items.append({"key": token, "path": token})
            mounts.append(
                {
                    "name": "licensing-config",
                    "readOnly": True,
                    "mountPath": f"/drivers/ClientConfigToken/{token}",
                    "subPath": token,
                }
            )
        source: dict[str, Any] = (
            {"secret": {"secretName": licensing.secretName, "items": items}}
            if licensing.secretName
            else {"configMap": {"name": licensing.configMapName, "items": items}}
        )
        pod_spec.setdefault("volumes", []).append({"name": "licensing-config", **source})
    topology = driver.virtualTopology
    if topology and topology.config:
        conf = "nvidia-topologyd.conf"
        container.setdefault("volumeMounts", []).append(
            {
                "name": "topology-config",
                "readOnly": True,
                "mountPath": f"/etc/nvidia/{conf}",
                "subPath": conf,
            }
        )
        pod_spec.setdefault("volumes", []).append(
            {
                "name": "topology-config",
                "configMap": {"name": topology.config, "items": [{"key": conf, "path": conf}]},
            }
        )
    _apply_driver_files(policy, pod_spec, container, os_tag, configmaps, runtime)


# The containers of a driver pod that carry DRIVER_CONFIG_DIGEST (upstream's TransformDriver).
_DIGEST_INIT_CONTAINERS = ("k8s-driver-manager",)
_DIGEST_CONTAINERS = ("nvidia-driver-ctr", "openshift-driver-toolkit-ctr")


def _fnv1a_32(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def _direct_env(container: dict[str, Any]) -> list[tuple[str, str]]:
    """A container's env vars with a direct value, by name (upstream's `ExtractEnvVars`)."""
    pairs = [
        (str(e["name"]), str(e.get("value") or ""))
        for e in container.get("env") or []
        if "valueFrom" not in e and e["name"] != DRIVER_CONFIG_DIGEST_ENV
    ]
    return sorted(pairs, key=lambda pair: pair[0])


def _go_env(pairs: list[tuple[str, str]]) -> str:
    items = " ".join(f"{{Name:(string){name} Value:(string){value}}}" for name, value in pairs)
    return f"([]config.EnvVar)[{items}]"


def _go_strings(values: list[str]) -> str:
    return "([]string)[" + " ".join(values) + "]"


def driver_config_digest(pod_spec: dict[str, Any]) -> str:
    """The `DRIVER_CONFIG_DIGEST` NVIDIA's operator gives a driver pod spec.

    Upstream (`extractDriverInstallConfig`, `GetObjectHashIgnoreEmptyKeys`) fills a
    `DriverInstallState` from the driver manager and driver containers and the volumes,
    prints each non-empty field as go-spew's `%#v` does, in field-name order, and takes the
    FNV-1a 32-bit hash in decimal. The driver manager and the driver read it to tell an
    install that must start over from one that only restarts, so a value that differs from
    upstream's for the same spec would also be a new pod template. The sidecars upstream
    adds for RDMA, GDS and GDRCopy are read the same way when present.
    """
    fields: dict[str, str] = {}
    for container in pod_spec.get("initContainers") or []:
        if container.get("name") == "k8s-driver-manager":
            if container.get("image"):
                fields["DriverManagerImage"] = f"(string){container['image']}"
            if env := _direct_env(container):
                fields["ManagerEnv"] = _go_env(env)
    for container in pod_spec.get("containers") or []:
        name, image = container.get("name"), container.get("image") or ""
        if name == "nvidia-driver-ctr":
            if image:
                fields["DriverImage"] = f"(string){image}"
            if container.get("command"):
                fields["DriverCommand"] = _go_strings(list(container["command"]))
            if container.get("args"):
                fields["DriverArgs"] = _go_strings(list(container["args"]))
            if env := _direct_env(container):
                fields["DriverEnv"] = _go_env(env)
            secrets = [
                f["secretRef"]["name"]
                for f in container.get("envFrom") or []
                if (f.get("secretRef") or {}).get("name")
            ]
            if secrets:
                fields["SecretEnvSource"] = f"(string){secrets[-1]}"
            mounts = sorted(
                container.get("volumeMounts") or [], key=lambda m: (m["name"], m["mountPath"])
            )
            if mounts:
                items = " ".join(
                    f"{{Name:(string){m['name']} MountPath:(string){m['mountPath']}"
                    f" SubPath:(string){m.get('subPath') or ''}"
                    f" ReadOnly:(bool){'true' if m.get('readOnly') else 'false'}}}"
                    for m in mounts
                )
                fields["AdditionalVolumeMounts"] = f"([]config.VolumeMountConfig)[{items}]"
        elif name == "nvidia-peermem-ctr":
            fields["PeermemImage"] = f"(string){image}" if image else ""
            fields["GPUDirectRDMAEnabled"] = "(bool)true"
        elif name in ("nvidia-fs-ctr", "nvidia-gdrcopy-ctr"):
            prefix = "GDS" if name == "nvidia-fs-ctr" else "GDRCopy"
            fields[f"{prefix}Image"] = f"(string){image}" if image else ""
            fields[f"{prefix}Enabled"] = "(bool)true"
            if env := _direct_env(container):
                fields[f"{prefix}Env"] = _go_env(env)
        elif name == "openshift-driver-toolkit-ctr":
            fields["DTKImage"] = f"(string){image}" if image else ""
            fields["DTKEnabled"] = "(bool)true"
    volumes = sorted(pod_spec.get("volumes") or [], key=lambda v: v["name"])
    if volumes:
        items = " ".join(
            f"{{Name:(string){v['name']}"
            f" ConfigMapName:(string){(v.get('configMap') or {}).get('name') or ''}"
            f" SecretName:(string){(v.get('secret') or {}).get('secretName') or ''}"
            f" HostPath:(string){(v.get('hostPath') or {}).get('path') or ''}}}"
            for v in volumes
        )
        fields["AdditionalVolumes"] = f"([]config.VolumeConfig)[{items}]"
    for volume in volumes:
        if volume["name"] == "host-root" and (volume.get("hostPath") or {}).get("path"):
            fields["HostRoot"] = f"(string){volume['hostPath']['path']}"
    text = "".join(f"{name}:{fields[name]}" for name in sorted(fields) if fields[name])
    return str(_fnv1a_32(text.encode("utf-8")))


def apply_driver_config_digest(pod_spec: dict[str, Any]) -> None:
    """Set `DRIVER_CONFIG_DIGEST` where upstream sets it, once every other transform is done."""
    item = {"name": DRIVER_CONFIG_DIGEST_ENV, "value": driver_config_digest(pod_spec)}
    for container in pod_spec.get("initContainers") or []:
        if container.get("name") in _DIGEST_INIT_CONTAINERS:
            set_env(container, [item])
    for container in pod_spec.get("containers") or []:
        if container.get("name") in _DIGEST_CONTAINERS:
            set_env(container, [item])
