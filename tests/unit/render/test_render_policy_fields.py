"""ClusterPolicy fields reach the operand pods where upstream's transforms put them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpuop.policy import parse_cluster_policy
from gpuop.render import os_tag_of, render_all
from gpuop.render.nodes import container_runtime

REFERENCE = Path(__file__).parents[2] / "data" / "upstream-v26.7.0" / "cluster-policy.yaml"


def _render(**spec: Any) -> dict[str, dict[str, Any]]:
    policy = yaml.safe_load(REFERENCE.read_text())
    for key, value in spec.items():
        block = policy["spec"].setdefault(key, {})
        block.update(value)
    objects = render_all(parse_cluster_policy(policy), "gpu-operator")
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] == "DaemonSet"
    }


def _container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    return next(
        c for c in [*pod.get("initContainers", []), *pod["containers"]] if c["name"] == name
    )


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def test_validator_env_goes_to_its_validation_container() -> None:
    pods = _render(validator={"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "true"}]}})
    plugin = _container(pods["nvidia-operator-validator"], "plugin-validation")
    assert _env(plugin)["WITH_WORKLOAD"] == "true"
    assert [e["name"] for e in plugin["env"]].count("WITH_WORKLOAD") == 1


def test_plugin_validation_is_dropped_without_the_device_plugin() -> None:
    pods = _render(devicePlugin={"enabled": False})
    names = [c["name"] for c in pods["nvidia-operator-validator"]["initContainers"]]
    assert names == ["driver-validation", "toolkit-validation", "cuda-validation"]


def test_driver_manager_and_probe_settings() -> None:
    pods = _render(
        driver={
            "manager": {"env": [{"name": "ENABLE_AUTO_DRAIN", "value": "true"}]},
            "startupProbe": {"failureThreshold": 7},
            "rdma": {"enabled": True},
        }
    )
    driver = pods["nvidia-driver-daemonset"]
    manager = _env(_container(driver, "k8s-driver-manager"))
    assert manager["ENABLE_AUTO_DRAIN"] == "true"
    assert manager["GPU_DIRECT_RDMA_ENABLED"] == "true"
    assert _container(driver, "nvidia-driver-ctr")["startupProbe"]["failureThreshold"] == 7


def test_component_env_replaces_a_template_variable() -> None:
    pods = _render(devicePlugin={"env": [{"name": "DEVICE_ID_STRATEGY", "value": "index"}]})
    env = _container(pods["nvidia-device-plugin-daemonset"], "nvidia-device-plugin")["env"]
    assert [e for e in env if e["name"] == "DEVICE_ID_STRATEGY"] == [
        {"name": "DEVICE_ID_STRATEGY", "value": "index"}
    ]


def test_host_paths_and_install_dir() -> None:
    pods = _render(
        hostPaths={"rootFS": "/host-root", "driverInstallDir": "/opt/nvidia"},
        toolkit={"installDir": "/opt/toolkit"},
    )
    volumes = {
        v["name"]: v["hostPath"]["path"]
        for pod in pods.values()
        for v in pod.get("volumes", [])
        if "hostPath" in v
    }
    assert "/" not in volumes.values() and "/run/nvidia/driver" not in volumes.values()
    assert "/host-root" in volumes.values() and "/opt/nvidia" in volumes.values()
    toolkit = _container(pods["nvidia-container-toolkit-daemonset"], "nvidia-container-toolkit-ctr")
    assert _env(toolkit)["ROOT"] == "/opt/toolkit"


def test_driver_without_os_labels_and_digest_images() -> None:
    pods = _render(driver={"version": "sha256:" + "a" * 64})
    image = _container(pods["nvidia-driver-daemonset"], "nvidia-driver-ctr")["image"]
    assert image == "nvcr.io/nvidia/driver@sha256:" + "a" * 64
    assert os_tag_of({}) is None
    assert (
        os_tag_of(
            {
                "feature.node.kubernetes.io/system-os_release.ID": "rocky",
                "feature.node.kubernetes.io/system-os_release.VERSION_ID": "9.3",
            }
        )
        == "rocky9"
    )


def test_vgpu_manager_has_the_driver_manager_and_an_os_tagged_image() -> None:
    policy = yaml.safe_load(REFERENCE.read_text())
    policy["spec"]["vgpuManager"].update(
        enabled=True, repository="registry.example/nvidia", version="595.91.07"
    )
    nodes = yaml.safe_load((REFERENCE.parent / "nodes.yaml").read_text())["items"]
    objects = render_all(parse_cluster_policy(policy), "gpu-operator", nodes=nodes)
    pod = next(
        o["spec"]["template"]["spec"]
        for o in objects
        if o["metadata"]["name"] == "nvidia-vgpu-manager-daemonset"
    )
    assert _container(pod, "nvidia-vgpu-manager-ctr")["image"] == (
        "registry.example/nvidia/vgpu-manager:595.91.07-ubuntu24.04"
    )
    manager = _container(pod, "k8s-driver-manager")
    assert manager["image"] == "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
    assert pod["hostPID"] and pod["hostIPC"]


def test_operands_outside_the_reference_get_upstreams_pods() -> None:
    pods = _render(
        sandboxWorkloads={"mode": "kata"},
        dcgm={"enabled": True, "hostNetwork": True},
        nodeStatusExporter={"enabled": True},
        ccManager={"defaultMode": "devtools"},
    )
    dcgm = pods["nvidia-dcgm"]
    assert dcgm["hostNetwork"] and dcgm["runtimeClassName"] == "nvidia"
    assert _container(dcgm, "nvidia-dcgm-ctr")["ports"] == [{"name": "dcgm", "containerPort": 5555}]
    cc = _container(pods["nvidia-cc-manager"], "nvidia-cc-manager")
    assert _env(cc)["DEFAULT_CC_MODE"] == "devtools"
    kata = pods["nvidia-kata-sandbox-device-plugin-daemonset"]
    assert [c["name"] for c in kata["initContainers"]] == ["vfio-pci-validation"]
    exporter = _container(pods["nvidia-node-status-exporter"], "nvidia-node-status-exporter")
    assert _env(exporter)["COMPONENT"] == "metrics"


def test_cdi_off_drops_the_cdi_env() -> None:
    pods = _render(cdi={"enabled": False}, toolkit={"installDir": "/opt/toolkit"})
    toolkit = _env(
        _container(pods["nvidia-container-toolkit-daemonset"], "nvidia-container-toolkit-ctr")
    )
    assert "CDI_ENABLED" not in toolkit and "NVIDIA_CONTAINER_RUNTIME_MODE" not in toolkit
    plugin = _env(_container(pods["nvidia-device-plugin-daemonset"], "nvidia-device-plugin"))
    assert plugin["DEVICE_LIST_STRATEGY"] == "envvar"
    assert "CDI_ANNOTATION_PREFIX" not in plugin and "NVIDIA_CDI_HOOK_PATH" not in plugin
    on = _render(toolkit={"installDir": "/opt/toolkit"})
    mig = _env(_container(on["nvidia-mig-manager"], "nvidia-mig-manager"))
    assert mig["NVIDIA_CDI_HOOK_PATH"] == "/opt/toolkit/toolkit/nvidia-cdi-hook"
    mounts = _container(on["nvidia-container-toolkit-daemonset"], "nvidia-container-toolkit-ctr")[
        "volumeMounts"
    ]
    assert {"mountPath": "/opt/toolkit", "name": "toolkit-install-dir"} in mounts


def test_precompiled_drivers_get_one_daemonset_per_kernel() -> None:
    policy = yaml.safe_load(REFERENCE.read_text())
    policy["spec"]["driver"]["usePrecompiled"] = True
    policy["spec"]["driver"]["version"] = "595"
    nodes = yaml.safe_load((REFERENCE.parent / "nodes.yaml").read_text())["items"]
    nodes[0]["metadata"]["labels"]["feature.node.kubernetes.io/kernel-version.full"] = (
        "6.8.0-60-generic"
    )
    nodes[1]["metadata"]["labels"]["feature.node.kubernetes.io/kernel-version.full"] = (
        "6.8.0-71-generic"
    )
    objects = render_all(parse_cluster_policy(policy), "gpu-operator", nodes=nodes)
    drivers = {
        o["metadata"]["name"]: o
        for o in objects
        if o["kind"] == "DaemonSet" and o["metadata"]["name"].startswith("nvidia-driver")
    }
    assert sorted(drivers) == [
        "nvidia-driver-daemonset-6.8.0-60-generic-ubuntu24.04",
        "nvidia-driver-daemonset-6.8.0-71-generic-ubuntu24.04",
    ]
    ds = drivers["nvidia-driver-daemonset-6.8.0-60-generic-ubuntu24.04"]
    pod = ds["spec"]["template"]
    assert pod["metadata"]["labels"]["nvidia.com/precompiled"] == "true"
    assert pod["spec"]["nodeSelector"]["feature.node.kubernetes.io/kernel-version.full"] == (
        "6.8.0-60-generic"
    )
    assert _container(pod["spec"], "nvidia-driver-ctr")["image"] == (
        "nvcr.io/nvidia/driver:595-6.8.0-60-generic-ubuntu24.04"
    )


def test_dcgm_exporter_settings() -> None:
    pods = _render(
        dcgm={"enabled": True},
        dcgmExporter={
            "hostNetwork": True,
            "hostPID": True,
            "enablePodLabels": True,
            "config": {"name": "my-metrics"},
            "hpcJobMapping": {"enabled": True},
        },
    )
    pod = pods["nvidia-dcgm-exporter"]
    env = _env(_container(pod, "nvidia-dcgm-exporter"))
    assert env["DCGM_REMOTE_HOSTENGINE_INFO"] == "nvidia-dcgm:5555"
    assert env["DCGM_EXPORTER_COLLECTORS"] == "/etc/dcgm-exporter/dcgm-metrics.csv"
    assert env["DCGM_HPC_JOB_MAPPING_DIR"] == "/var/lib/dcgm-exporter/job-mapping"
    assert env["DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS"] == "true"
    assert pod["hostNetwork"] and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert pod["hostPID"] and pod["automountServiceAccountToken"] is True
    volumes = {v["name"] for v in pod["volumes"]}
    assert {"metrics-config", "hpc-job-mapping"} <= volumes


def test_custom_mig_and_vgpu_configs_are_mounted() -> None:
    pods = _render(
        migManager={
            "config": {"name": "my-mig", "default": "all-disabled"},
            "gpuClientsConfig": {"name": "my-clients"},
        },
        vgpuDeviceManager={"config": {"name": "my-vgpu", "default": "default"}},
    )
    mig = pods["nvidia-mig-manager"]
    volumes = {v["name"]: v.get("configMap") for v in mig["volumes"]}
    assert volumes["mig-parted-config"] == {"name": "my-mig"}
    assert volumes["gpu-clients"]["name"] == "my-clients"
    env = _env(_container(mig, "nvidia-mig-manager"))
    assert (
        env["CONFIG_FILE"] == "/mig-parted-config/config.yaml" and "DEFAULT_CONFIG_FILE" not in env
    )
    vgpu = {v["name"]: v.get("configMap") for v in pods["nvidia-vgpu-device-manager"]["volumes"]}
    assert vgpu["vgpu-config"]["name"] == "my-vgpu"


def test_driver_licensing_rdma_and_open_modules() -> None:
    pods = _render(
        driver={
            "kernelModuleType": "open",
            "rdma": {"enabled": True, "useHostMofed": True},
            "licensingConfig": {"secretName": "licensing", "nlsEnabled": True},
        }
    )
    driver = pods["nvidia-driver-daemonset"]
    env = _env(_container(driver, "nvidia-driver-ctr"))
    assert env["OPEN_KERNEL_MODULES_ENABLED"] == "true"
    assert env["GPU_DIRECT_RDMA_ENABLED"] == "true" and env["USE_HOST_MOFED"] == "true"
    volumes = {v["name"]: v for v in driver["volumes"]}
    assert volumes["mlnx-ofed-usr-src"]["hostPath"]["path"] == "/usr/src"
    assert volumes["licensing-config"]["secret"]["secretName"] == "licensing"
    assert len(volumes["licensing-config"]["secret"]["items"]) == 2
    mounts = [m["mountPath"] for m in _container(driver, "nvidia-driver-ctr")["volumeMounts"]]
    assert "/drivers/gridd.conf" in mounts


CONFIG_MANAGED = (
    "nvidia-device-plugin-daemonset",
    "gpu-feature-discovery",
    "nvidia-device-plugin-mps-control-daemon",
)


def test_a_device_plugin_config_adds_the_config_manager_as_upstream_does() -> None:
    # handleDevicePluginConfig: an init container after the asset's, a sidecar after the
    # main container, CONFIG_FILE right after the asset's env (before MIG and CDI), two
    # mounts, the ConfigMap and emptyDir volumes, a shared process namespace unless hostPID.
    pods = _render(devicePlugin={"config": {"name": "time-slicing-config", "default": "any"}})
    plugin_image = _container(pods["nvidia-device-plugin-daemonset"], "nvidia-device-plugin")[
        "image"
    ]
    for name in CONFIG_MANAGED:
        pod = pods[name]
        main = pod["containers"][0]
        assert [c["name"] for c in pod["containers"]][1] == "config-manager"
        env_names = [e["name"] for e in main["env"]]
        assert env_names.index("CONFIG_FILE") == env_names.index("MIG_STRATEGY") - 1
        assert {"name": "config", "mountPath": "/config"} in main["volumeMounts"]
        assert {"name": "time-slicing-config", "mountPath": "/available-configs"} in main[
            "volumeMounts"
        ]
        assert pod["volumes"][-2:] == [
            {"name": "time-slicing-config", "configMap": {"name": "time-slicing-config"}},
            {"name": "config", "emptyDir": {}},
        ]
        for role in ("config-manager-init", "config-manager"):
            manager = _container(pod, role)
            assert manager["image"] == plugin_image
            env = _env(manager)
            assert (env["DEFAULT_CONFIG"], env["FALLBACK_STRATEGIES"]) == ("any", "empty")
            assert "value" not in next(e for e in manager["env"] if e["name"] == "KUBECONFIG")
    assert pods["nvidia-device-plugin-daemonset"]["shareProcessNamespace"] is True
    assert "shareProcessNamespace" not in pods["nvidia-device-plugin-mps-control-daemon"]
    inits = [c["name"] for c in pods["nvidia-device-plugin-mps-control-daemon"]["initContainers"]]
    assert inits[inits.index("mps-control-daemon-mounts") + 1] == "config-manager-init"
    signals = {
        name: _env(_container(pods[name], "config-manager"))["PROCESS_TO_SIGNAL"]
        for name in CONFIG_MANAGED
    }
    assert signals == {
        "nvidia-device-plugin-daemonset": "nvidia-device-plugin",
        "gpu-feature-discovery": "gpu-feature-discovery",
        "nvidia-device-plugin-mps-control-daemon": "/usr/bin/mps-control-daemon",
    }


def test_without_a_device_plugin_config_no_config_manager_is_added() -> None:
    pods = _render()
    for name in CONFIG_MANAGED:
        names = [c["name"] for c in [*pods[name]["containers"], *pods[name]["initContainers"]]]
        assert "config-manager" not in names and "config-manager-init" not in names


def test_policy_env_goes_where_each_upstream_transform_puts_it() -> None:
    env = [{"name": "EXTRA", "value": "1"}]
    pods = _render(devicePlugin={"env": env, "config": {"name": "ts"}}, gfd={"env": env})
    plugin = [e["name"] for e in pods["nvidia-device-plugin-daemonset"]["containers"][0]["env"]]
    assert plugin[-1] == "EXTRA"  # set last
    gfd = [e["name"] for e in pods["gpu-feature-discovery"]["containers"][0]["env"]]
    assert gfd.index("EXTRA") + 1 == gfd.index("CONFIG_FILE")  # before the config and MIG
    mps = pods["nvidia-device-plugin-mps-control-daemon"]["containers"][0]
    assert "EXTRA" not in _env(mps)  # upstream gives the MPS daemon no policy env


def test_gds_gdrcopy_and_a_custom_mps_root_reach_the_plugin_as_upstream_sets_them() -> None:
    pods = _render(
        gds={"enabled": True}, gdrcopy={"enabled": True}, devicePlugin={"mps": {"root": "/var/mps"}}
    )
    plugin = pods["nvidia-device-plugin-daemonset"]
    names = [e["name"] for e in plugin["containers"][0]["env"]]
    # After the asset's env (MPS_ROOT last), before what the MIG and CDI transforms add.
    assert names[names.index("MPS_ROOT") + 1 : names.index("MIG_STRATEGY")] == [
        "GDS_ENABLED",
        "MOFED_ENABLED",
        "GDRCOPY_ENABLED",
    ]
    assert _env(plugin["containers"][0])["MPS_ROOT"] == "/var/mps"
    for name in ("nvidia-device-plugin-daemonset", "nvidia-device-plugin-mps-control-daemon"):
        paths = {v["name"]: v["hostPath"]["path"] for v in pods[name]["volumes"] if "hostPath" in v}
        assert (paths["mps-root"], paths["mps-shm"]) == ("/var/mps", "/var/mps/shm")
    default = _render()["nvidia-device-plugin-daemonset"]["containers"][0]
    assert not {"GDS_ENABLED", "GDRCOPY_ENABLED"} & set(_env(default))


def test_a_k3s_containerd_is_mounted_where_the_policy_env_says_as_upstream_does() -> None:
    # transformForRuntime, after the policy's env: the host files' folders are mounted under
    # /runtime and the variables rewritten to the mounted paths, in place.
    k3s = "/var/lib/rancher/k3s/agent/etc/containerd"
    pods = _render(
        toolkit={
            "env": [
                {"name": "CONTAINERD_CONFIG", "value": f"{k3s}/config.toml.tmpl"},
                {"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd/containerd.sock"},
                {"name": "RUNTIME_CONFIG_SOURCE", "value": "command,file=/etc/k3s.toml"},
            ]
        }
    )
    pod = pods["nvidia-container-toolkit-daemonset"]
    main = pod["containers"][0]
    names = [e["name"] for e in main["env"]]
    assert names.index("CONTAINERD_CONFIG") < names.index("RUNTIME")
    env = _env(main)
    assert (
        env["CONTAINERD_CONFIG"] == env["RUNTIME_CONFIG"] == "/runtime/config-dir/config.toml.tmpl"
    )
    assert env["CONTAINERD_SOCKET"] == env["RUNTIME_SOCKET"] == "/runtime/sock-dir/containerd.sock"
    assert env["RUNTIME_CONFIG_SOURCE"] == "command,file=/host/etc/k3s.toml"
    paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert paths["containerd-config"] == k3s
    assert paths["containerd-socket"] == "/run/k3s/containerd"
    assert paths["containerd-drop-in-config"] == "/etc/containerd/conf.d"
    default = _render()["nvidia-container-toolkit-daemonset"]
    paths = {v["name"]: v["hostPath"]["path"] for v in default["volumes"] if "hostPath" in v}
    assert (paths["containerd-config"], paths["containerd-socket"]) == (
        "/etc/containerd",
        "/run/containerd",
    )


def test_gpudirect_rdma_storage_and_gdrcopy_keep_upstream_s_driver_sidecars() -> None:
    # transformPeerMemoryContainer, transformGDSContainer, transformGDRCopyContainer: the
    # sidecars stay in that order after the driver container; peermem runs the driver's
    # image, the others their block's image with the nodes' OS suffix.
    policy = yaml.safe_load(REFERENCE.read_text())
    policy["spec"]["driver"].update(
        {"rdma": {"enabled": True, "useHostMofed": True}, "imagePullPolicy": "Always"}
    )
    cloud_native = "nvcr.io/nvidia/cloud-native"
    policy["spec"]["gds"] = {
        "enabled": True,
        "repository": cloud_native,
        "image": "nvidia-fs",
        "version": "2.20.5",
        "imagePullSecrets": ["ngc"],
    }
    policy["spec"]["gdrcopy"] = {
        "enabled": True,
        "repository": cloud_native,
        "image": "gdrdrv",
        "version": "v2.4.4",
        "env": [{"name": "GDRCOPY_OPTION", "value": "1"}],
    }
    node = {
        "kind": "Node",
        "metadata": {
            "name": "gpu-1",
            "labels": {
                "nvidia.com/gpu.present": "true",
                "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
                "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
            },
        },
    }
    objects = render_all(parse_cluster_policy(policy), "gpu-operator", nodes=[node])
    driver = next(o for o in objects if o["metadata"]["name"] == "nvidia-driver-daemonset")
    pod = driver["spec"]["template"]["spec"]
    main, peermem, fs, gdrcopy = pod["containers"]
    assert [c["name"] for c in (main, peermem, fs, gdrcopy)] == [
        "nvidia-driver-ctr",
        "nvidia-peermem-ctr",
        "nvidia-fs-ctr",
        "nvidia-gdrcopy-ctr",
    ]
    assert main["image"].endswith("-ubuntu22.04") and peermem["image"] == main["image"]
    assert peermem["imagePullPolicy"] == "Always"
    assert _env(peermem) == {"USE_HOST_MOFED": "true"}
    assert fs["image"] == f"{cloud_native}/nvidia-fs:2.20.5-ubuntu22.04"
    assert gdrcopy["image"] == f"{cloud_native}/gdrdrv:v2.4.4-ubuntu22.04"
    assert _env(gdrcopy) == {"GDRCOPY_OPTION": "1"}
    assert {"name": "ngc"} in pod["imagePullSecrets"]
    for sidecar in (peermem, fs, gdrcopy):
        assert {m["name"] for m in sidecar["volumeMounts"]} <= {v["name"] for v in pod["volumes"]}
    plain = _render()["nvidia-driver-daemonset"]
    assert [c["name"] for c in plain["containers"]] == ["nvidia-driver-ctr"]


def _driver_pod(
    driver: dict[str, Any],
    os_id: str = "ubuntu",
    version: str = "24.04",
    configmaps: dict[str, tuple[str, ...]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    policy = yaml.safe_load(REFERENCE.read_text())
    policy["spec"]["driver"].update(driver)
    for key, value in spec.items():
        policy["spec"].setdefault(key, {}).update(value)
    nodes = yaml.safe_load((REFERENCE.parent / "nodes.yaml").read_text())["items"]
    for node in nodes:
        node["metadata"]["labels"]["feature.node.kubernetes.io/system-os_release.ID"] = os_id
        node["metadata"]["labels"]["feature.node.kubernetes.io/system-os_release.VERSION_ID"] = (
            version
        )
        node["metadata"]["labels"]["feature.node.kubernetes.io/kernel-version.full"] = "6.4.0-1"
    objects = render_all(
        parse_cluster_policy(policy), "gpu-operator", nodes=nodes, configmaps=configmaps
    )
    pod: dict[str, Any] = next(
        o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] == "DaemonSet" and o["metadata"]["name"].startswith("nvidia-driver-daemonset")
    )
    return pod


def _mounts(container: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(m["name"], m["mountPath"], m.get("subPath")) for m in container["volumeMounts"]]


def test_driver_configmaps_are_mounted_key_by_key_where_the_os_keeps_them() -> None:
    configmaps = {"repos": ("cuda.list", "a-mirror.list"), "certs": ("proxy.crt",)}
    pod = _driver_pod(
        {
            "repoConfig": {"configMapName": "repos"},
            "certConfig": {"name": "certs"},
            "secretEnv": "driver-proxy",
        },
        configmaps=configmaps,
        gds={"enabled": True, "repository": "nvcr.io/nvidia/cloud-native", "version": "2.20.5"},
    )
    driver = _container(pod, "nvidia-driver-ctr")
    repos, certs = "/etc/apt/sources.list.d", "/usr/local/share/ca-certificates"
    expected = [
        ("repos", f"{repos}/a-mirror.list", "a-mirror.list"),
        ("repos", f"{repos}/cuda.list", "cuda.list"),
        ("certs", f"{certs}/proxy.crt", "proxy.crt"),
    ]
    assert _mounts(driver)[-3:] == expected
    assert driver["envFrom"] == [{"secretRef": {"name": "driver-proxy"}}]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["repos"]["configMap"] == {
        "name": "repos",
        "items": [
            {"key": "a-mirror.list", "path": "a-mirror.list"},
            {"key": "cuda.list", "path": "cuda.list"},
        ],
    }
    # The GDS builder mounts the same files (the driver's volumes) and takes the Secret too.
    gds = _container(pod, "nvidia-fs-ctr")
    assert _mounts(gds)[-3:] == expected
    assert gds["envFrom"] == [{"secretRef": {"name": "driver-proxy"}}]
    assert [v["name"] for v in pod["volumes"]].count("repos") == 1
    # The files and the Secret are part of the driver's config digest: a new key, a new pod.
    fewer = _driver_pod(
        {"repoConfig": {"configMapName": "repos"}, "certConfig": {"name": "certs"}},
        configmaps={"repos": ("cuda.list",), "certs": ("proxy.crt",)},
    )
    assert (
        _env(driver)["DRIVER_CONFIG_DIGEST"]
        != _env(_container(fewer, "nvidia-driver-ctr"))["DRIVER_CONFIG_DIGEST"]
    )


def test_kernel_module_parameters_reach_the_driver_and_peermem() -> None:
    pod = _driver_pod(
        {"kernelModuleConfig": {"name": "kmod"}, "rdma": {"enabled": True}},
        configmaps={"kmod": ("nvidia.conf",)},
    )
    mount = ("kmod", "/drivers/nvidia.conf", "nvidia.conf")
    assert mount in _mounts(_container(pod, "nvidia-driver-ctr"))
    assert mount in _mounts(_container(pod, "nvidia-peermem-ctr"))


def test_rhel_nodes_mount_the_hosts_subscriptions_unless_a_repo_config_is_given() -> None:
    pod = _driver_pod({}, os_id="rhel", version="9.4")
    subscriptions = [m for m in _mounts(_container(pod, "nvidia-driver-ctr")) if "sub" in m[0]]
    assert subscriptions == [
        ("subscription-config-0", "/run/secrets/etc-pki-entitlement", None),
        ("subscription-config-1", "/run/secrets/redhat.repo", None),
        ("subscription-config-2", "/run/secrets/rhsm", None),
    ]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["subscription-config-1"]["hostPath"] == {
        "path": "/etc/yum.repos.d/redhat.repo",
        "type": "File",
    }
    with_repos = _driver_pod(
        {"repoConfig": {"configMapName": "repos"}},
        os_id="rhel",
        version="9.4",
        configmaps={"repos": ("cuda.repo",)},
    )
    mounts = _mounts(_container(with_repos, "nvidia-driver-ctr"))
    assert ("repos", "/etc/yum.repos.d/cuda.repo", "cuda.repo") in mounts
    assert not [m for m in mounts if m[0].startswith("subscription-config")]


def test_sles_precompiled_drivers_mount_the_hosts_modules_and_no_repositories() -> None:
    pod = _driver_pod(
        {"usePrecompiled": True, "version": "595", "repoConfig": {"configMapName": "repos"}},
        os_id="sles",
        version="15.6",
        configmaps={"repos": ("nvidia.repo",)},
    )
    mounts = _mounts(_container(pod, "nvidia-driver-ctr"))
    assert ("lib-modules", "/run/host/lib/modules", None) in mounts
    assert not [m for m in mounts if m[0] in ("repos",) or m[0].startswith("subscription")]


def test_a_configmap_not_read_is_not_mounted() -> None:
    pod = _driver_pod({"repoConfig": {"configMapName": "repos"}}, configmaps={})
    assert "repos" not in [v["name"] for v in pod["volumes"]]


def _on_runtime(runtime_version: str, **spec: Any) -> dict[str, dict[str, Any]]:
    """The DaemonSets' pod templates for GPU nodes running `runtime_version`."""
    policy = yaml.safe_load(REFERENCE.read_text())
    for key, value in spec.items():
        policy["spec"].setdefault(key, {}).update(value)
    nodes = yaml.safe_load((REFERENCE.parent / "nodes.yaml").read_text())["items"]
    for node in nodes:
        node.setdefault("status", {}).setdefault("nodeInfo", {})["containerRuntimeVersion"] = (
            runtime_version
        )
    objects = render_all(parse_cluster_policy(policy), "gpu-operator", nodes=nodes)
    return {
        o["metadata"]["name"]: o["spec"]["template"] for o in objects if o["kind"] == "DaemonSet"
    }


_RUNTIME_ENV = {
    "CONTAINERD_CONFIG",
    "CONTAINERD_SOCKET",
    "CONTAINERD_RUNTIME_CLASS",
    "DOCKER_CONFIG",
    "DOCKER_SOCKET",
    "CRIO_CONFIG",
    "NRI_SOCKET",
    "ENABLE_NRI_PLUGIN",
}


def _toolkit(templates: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    pod = templates["nvidia-container-toolkit-daemonset"]["spec"]
    return pod, _container(pod, "nvidia-container-toolkit-ctr")


def _runtime_env(container: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (e["name"], e.get("value"))
        for e in container["env"]
        if e["name"].startswith("RUNTIME") or e["name"] in _RUNTIME_ENV
    ]


def _runtime_volumes(pod: dict[str, Any]) -> list[tuple[str, Any]]:
    runtime = ("containerd-", "docker-", "crio-config", "crio-drop", "nri-")
    return [(v["name"], v["hostPath"]) for v in pod["volumes"] if v["name"].startswith(runtime)]


def test_cri_o_nodes_get_its_config_and_drop_in_and_no_socket_as_upstream_does() -> None:
    templates = _on_runtime("cri-o://1.31.1")
    pod, toolkit = _toolkit(templates)
    assert _runtime_env(toolkit) == [
        ("RUNTIME", "crio"),
        ("RUNTIME_CONFIG", "/runtime/config-dir/config.toml"),
        ("CRIO_CONFIG", "/runtime/config-dir/config.toml"),
        ("RUNTIME_DROP_IN_CONFIG", "/runtime/config-dir.d/99-nvidia.conf"),
        ("RUNTIME_DROP_IN_CONFIG_HOST_PATH", "/etc/crio/crio.conf.d/99-nvidia.conf"),
    ]
    assert _runtime_volumes(pod) == [
        ("crio-config", {"path": "/etc/crio", "type": "DirectoryOrCreate"}),
        ("crio-drop-in-config", {"path": "/etc/crio/crio.conf.d", "type": "DirectoryOrCreate"}),
    ]
    hooks = next(v for v in pod["volumes"] if v["name"] == "crio-hooks")
    assert hooks["hostPath"]["path"] == "/usr/share/containers/oci/hooks.d"
    assert templates["nvidia-device-plugin-daemonset"]["spec"]["runtimeClassName"] == "nvidia"


def test_cri_o_without_cdi_installs_the_hook_and_drops_the_runtime_class() -> None:
    templates = _on_runtime("cri-o://1.31.1", cdi={"enabled": False})
    _, toolkit = _toolkit(templates)
    assert _env(toolkit)["CRIO_CONFIG_MODE"] == "hook"
    assert "runtimeClassName" not in templates["nvidia-device-plugin-daemonset"]["spec"]
    assert "runtimeClassName" not in templates["nvidia-dcgm-exporter"]["spec"]


def test_docker_nodes_get_daemon_json_and_the_docker_socket() -> None:
    pod, toolkit = _toolkit(_on_runtime("docker://27.3.1"))
    assert _runtime_env(toolkit) == [
        ("RUNTIME", "docker"),
        ("RUNTIME_CONFIG", "/runtime/config-dir/daemon.json"),
        ("DOCKER_CONFIG", "/runtime/config-dir/daemon.json"),
        ("RUNTIME_SOCKET", "/runtime/sock-dir/docker.sock"),
        ("DOCKER_SOCKET", "/runtime/sock-dir/docker.sock"),
    ]
    assert _runtime_volumes(pod) == [
        ("docker-config", {"path": "/etc/docker", "type": "DirectoryOrCreate"}),
        ("docker-socket", {"path": "/var/run"}),
    ]


def test_one_containerd_gpu_node_makes_it_containerd() -> None:
    nodes = yaml.safe_load((REFERENCE.parent / "nodes.yaml").read_text())["items"]
    versions = ["cri-o://1.31.1", "containerd://1.7.23"]
    for node, version in zip(nodes, versions * len(nodes), strict=False):
        node.setdefault("status", {}).setdefault("nodeInfo", {})["containerRuntimeVersion"] = (
            version
        )
    assert container_runtime(nodes) == "containerd"
    assert container_runtime(nodes[:1]) == "crio"
    assert container_runtime([]) == "containerd"


def test_nri_mode_mounts_only_the_nri_socket_and_annotates_the_management_pods() -> None:
    templates = _on_runtime("containerd://1.7.23", cdi={"enabled": True, "nriPluginEnabled": True})
    pod, toolkit = _toolkit(templates)
    assert _runtime_env(toolkit) == [
        ("ENABLE_NRI_PLUGIN", "true"),
        ("RUNTIME", "containerd"),
        ("NRI_SOCKET", "/runtime/nri-sock-dir/nri.sock"),
    ]
    assert _runtime_volumes(pod) == [
        ("nri-socket", {"path": "/var/run/nri", "type": "DirectoryOrCreate"})
    ]
    plugin = templates["nvidia-device-plugin-daemonset"]
    assert plugin["metadata"]["annotations"] == {
        "nvidia.cdi.k8s.io/container.nvidia-device-plugin": "management.nvidia.com/gpu=all"
    }
    assert "runtimeClassName" not in plugin["spec"]
    validator = templates["nvidia-operator-validator"]["metadata"]["annotations"]
    assert validator["nvidia.cdi.k8s.io/container.toolkit-validation"] == (
        "management.nvidia.com/gpu=all"
    )


def _openshift_node(name: str = "worker-gpu-0") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "labels": {
                "node.openshift.io/os_id": "rhcos",
                "nvidia.com/gpu.present": "true",
                "feature.node.kubernetes.io/system-os_release.ID": "rhcos",
                "feature.node.kubernetes.io/system-os_release.VERSION_ID": "4.15",
                "feature.node.kubernetes.io/system-os_release.OSTREE_VERSION": (
                    "415.92.202402201450-0"
                ),
            },
        },
        "status": {"nodeInfo": {"containerRuntimeVersion": "cri-o://1.28.3"}},
    }


def _render_on(nodes: list[dict[str, Any]], **spec: Any) -> dict[str, dict[str, Any]]:
    policy = yaml.safe_load(REFERENCE.read_text())
    for key, value in spec.items():
        policy["spec"].setdefault(key, {}).update(value)
    objects = render_all(parse_cluster_policy(policy), "gpu-operator", nodes=nodes)
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] == "DaemonSet"
    }


def test_on_openshift_gfd_does_not_use_the_node_feature_api() -> None:
    # Upstream's TestTransformGPUDiscoveryPluginOCP: USE_NODE_FEATURE_API=false follows the
    # asset's env, before the policy's.
    pods = _render_on(
        [_openshift_node()],
        gfd={"env": [{"name": "GFD_EXTRA", "value": "1"}]},
        sandboxWorkloads={"enabled": True},
    )
    names = [e["name"] for e in pods["gpu-feature-discovery"]["containers"][0]["env"]]
    assert names.index("USE_NODE_FEATURE_API") + 1 == names.index("GFD_EXTRA")
    assert _env(pods["gpu-feature-discovery"]["containers"][0])["USE_NODE_FEATURE_API"] == "false"
    plain = _render_on([])
    assert "USE_NODE_FEATURE_API" not in _env(plain["gpu-feature-discovery"]["containers"][0])


def test_on_openshift_the_driver_and_vgpu_manager_are_not_rendered() -> None:
    spec: dict[str, Any] = {"sandboxWorkloads": {"enabled": True}, "vgpuManager": {"enabled": True}}
    pods = _render_on([_openshift_node()], **spec)
    assert not any(name.startswith("nvidia-driver-daemonset") for name in pods)
    assert "nvidia-vgpu-manager-daemonset" not in pods
    assert "nvidia-container-toolkit-daemonset" in pods
    elsewhere = _render_on([], **spec)
    assert {"nvidia-driver-daemonset", "nvidia-vgpu-manager-daemonset"} <= set(elsewhere)
