"""`kubectl describe node` output read as Nodes and the pods they list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from gpuop.check import run_checks
from gpuop.manifests import load_objects
from gpuop.manifests.describe import looks_like_describe, parse_describe

DATA = Path(__file__).parents[2] / "data" / "describe"
AKS = (DATA / "aks-gpu-two-nodes.txt").read_text()


def test_every_node_block_becomes_a_node_with_what_the_text_shows() -> None:
    described = parse_describe(AKS)
    assert described is not None
    assert (described.nodes, described.pods_without_specs) == (2, 3)
    first, *pods, second = described.objects
    assert first["metadata"]["name"] == "aks-gpunp-12345678-vmss000000"
    assert first["metadata"]["labels"]["kubernetes.azure.com/accelerator"] == "nvidia"
    assert first["metadata"]["annotations"]["csi.volume.kubernetes.io/nodeid"] == (
        '{"disk.csi.azure.com":"aks-gpunp-12345678-vmss000000"}'
    )
    assert first["spec"] == {"taints": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]}
    assert first["status"]["capacity"]["nvidia.com/gpu"] == "1"
    assert first["status"]["allocatable"]["cpu"] == "3860m"
    assert first["status"]["nodeInfo"]["osImage"] == "Ubuntu 22.04.5 LTS"
    assert first["status"]["nodeInfo"]["kubeletVersion"] == "v1.29.9"
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods] == [
        ("default", "samples-tf-mnist-demo-7x2lq"),
        ("kube-system", "kube-proxy-9s8kd"),
        ("kube-system", "nvidia-device-plugin-daemonset-4kq7w"),
    ]
    assert {p["spec"]["nodeName"] for p in pods} == {first["metadata"]["name"]}
    assert second["spec"]["unschedulable"] is True
    assert second["spec"]["taints"][1] == {
        "key": "node.kubernetes.io/unschedulable",
        "effect": "NoSchedule",
    }


def test_pasted_indented_quoted_or_with_windows_line_ends_reads_the_same() -> None:
    indented = "\r\n".join("    " + line for line in AKS.split("\n"))
    assert load_objects(indented) == load_objects(AKS)
    quoted = "\n".join(f"> {line}" if line else ">" for line in AKS.split("\n"))
    assert load_objects(quoted) == load_objects(AKS)


def test_yaml_and_other_describe_output_are_not_taken_for_it() -> None:
    assert not looks_like_describe("kind: Node\nmetadata:\n  name: a\n")
    assert parse_describe("Name:         p\nNamespace:    default\nStatus:  Running\n") is None


def test_check_reads_it_names_the_manager_and_finds_the_empty_gpu_resource(
    tmp_path: Path,
) -> None:
    report = run_checks(load_objects(AKS))
    managers = {n.name: (n.management or {}).get("managers") for n in report.nodes}
    assert set(managers) == {"aks-gpunp-12345678-vmss000000", "aks-gpunp-12345678-vmss000001"}
    assert all(m for m in managers.values())
    problems = {(f.code, f.node) for f in report.findings if f.severity != "info"}
    assert {node for _, node in problems} == {"aks-gpunp-12345678-vmss000001"}


HAMI_NODE = """\
Name:               416a100
Roles:              master
Labels:             gpu=on
                    kubernetes.io/hostname=416a100
Annotations:        flannel.alpha.coreos.com/backend-type: vxlan
                    hami.io/node-handshake: Requesting_2024.05.20 11:44:46
                    hami.io/node-nvidia-register:
                      GPU-b7c4eb59-dd76-ca5a-8482-56fd796b0a75,10,40960,100,NVIDIA-NVIDIA A100-PCIE-40GB,0,true:GPU-ec7d894f...
                    node.alpha.kubernetes.io/ttl: 0
Taints:             <none>
Unschedulable:      false
Capacity:
  cpu:             64
  nvidia.com/gpu:  20
Allocatable:
  cpu:             64
  nvidia.com/gpu:  20
"""


def test_a_long_annotation_printed_under_its_key_is_one_value() -> None:
    described = parse_describe(HAMI_NODE)
    assert described is not None
    (node,) = described.objects
    annotations = node["metadata"]["annotations"]
    assert list(annotations) == [
        "flannel.alpha.coreos.com/backend-type",
        "hami.io/node-handshake",
        "hami.io/node-nvidia-register",
        "node.alpha.kubernetes.io/ttl",
    ]
    assert annotations["hami.io/node-nvidia-register"].startswith("GPU-b7c4eb59-dd76-ca5a-8482-")
    assert node["metadata"]["labels"] == {"gpu": "on", "kubernetes.io/hostname": "416a100"}
    assert node["status"]["capacity"] == {"cpu": "64", "nvidia.com/gpu": "20"}


def test_labels_indented_unevenly_are_still_labels() -> None:
    text = HAMI_NODE.replace(
        "                    kubernetes.io/hostname", "                      kubernetes.io/hostname"
    )
    described = parse_describe(text)
    assert described is not None
    assert described.objects[0]["metadata"]["labels"]["kubernetes.io/hostname"] == "416a100"


AKS_CONDITIONS = """\
Name:               aks-ndh100-1
Labels:             kubernetes.azure.com/accelerator=nvidia
Conditions:
  Type                  Status  LastHeartbeatTime                 LastTransitionTime                Reason            Message
  ----                  ------  -----------------                 ------------------                ------            -------
  XIDErrors             False   Mon, 30 Nov 2026 08:00:00 +0000   Mon, 30 Nov 2026 07:00:00 +0000   NoXIDErrors       no XID errors in the kernel log
  GPUMissing            True    Mon, 30 Nov 2026 08:00:00 +0000   Mon, 30 Nov 2026 07:00:00 +0000   GPUMissing        Observed GPU count 7 does not match expected GPU count 8
  Ready                 True    Mon, 30 Nov 2026 08:00:00 +0000   Mon, 30 Nov 2026 07:00:00 +0000   KubeletReady      kubelet is posting ready status
Capacity:
  nvidia.com/gpu:  7
"""


def test_the_conditions_table_is_read_with_reasons_and_messages() -> None:
    described = parse_describe(AKS_CONDITIONS)
    assert described is not None
    (node,) = described.objects
    assert node["status"]["conditions"] == [
        {
            "type": "XIDErrors",
            "status": "False",
            "reason": "NoXIDErrors",
            "message": "no XID errors in the kernel log",
        },
        {
            "type": "GPUMissing",
            "status": "True",
            "reason": "GPUMissing",
            "message": "Observed GPU count 7 does not match expected GPU count 8",
        },
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        },
    ]
    (finding,) = [f for f in run_checks(described.objects).findings if f.code == "GPU215"]
    assert finding.message == (
        "AKS reports GPUMissing=True: nvidia-smi sees fewer GPUs than the VM size has"
        " (Observed GPU count 7 does not match expected GPU count 8)"
    )
    assert finding.severity == "error"


POD = (DATA / "pod-device-plugin-waiting.txt").read_text()


def test_describe_pod_output_is_read_whole() -> None:
    described = parse_describe(POD)
    assert described is not None
    assert (described.nodes, described.described_pods) == (0, 1)
    (pod,) = described.objects
    assert pod["metadata"]["namespace"] == "gpu-operator-resources"
    assert pod["metadata"]["labels"]["helm.sh/chart"] == "gpu-operator-v22.9.2"
    assert pod["metadata"]["ownerReferences"][0]["name"] == "nvidia-device-plugin-daemonset"
    assert pod["spec"]["nodeName"] == "gpu-node-3"
    assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.deploy.device-plugin": "true"}
    (init,) = pod["spec"]["initContainers"]
    assert init["image"].endswith("gpu-operator-validator:v22.9.2")
    (status,) = pod["status"]["initContainerStatuses"]
    assert (status["name"], status["ready"], status["state"]) == (
        "toolkit-validation",
        False,
        {"running": {}},
    )
    (plugin,) = pod["status"]["containerStatuses"]
    assert plugin["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert pod["status"]["phase"] == "Pending"
    assert {c["type"]: c["status"] for c in pod["status"]["conditions"]}["Ready"] == "False"


def test_a_crashing_container_with_gpu_limits() -> None:
    text = POD.replace(
        "    State:          Waiting\n      Reason:       PodInitializing\n",
        "    State:          Waiting\n      Reason:       CrashLoopBackOff\n"
        "    Last State:     Terminated\n      Reason:       Error\n      Exit Code:    1\n",
    ).replace(
        "    Environment:\n      PASS_DEVICE_SPECS",
        "    Limits:\n      nvidia.com/gpu:  1\n    Requests:\n      nvidia.com/gpu:  1\n"
        "    Environment:\n      PASS_DEVICE_SPECS",
    )
    described = parse_describe(text)
    assert described is not None
    (pod,) = described.objects
    (container,) = pod["spec"]["containers"]
    assert container["resources"] == {
        "limits": {"nvidia.com/gpu": "1"},
        "requests": {"nvidia.com/gpu": "1"},
    }
    (status,) = pod["status"]["containerStatuses"]
    assert status["state"] == {"waiting": {"reason": "CrashLoopBackOff"}}


def test_a_pod_block_beside_node_blocks_is_not_a_node() -> None:
    described = parse_describe(AKS + "\n" + POD)
    assert described is not None
    kinds = [(o["kind"], o["metadata"]["name"]) for o in described.objects]
    assert ("Node", "nvidia-device-plugin-daemonset-md7t8") not in kinds
    assert ("Pod", "nvidia-device-plugin-daemonset-md7t8") in kinds
    assert described.nodes == 2


def test_a_described_pods_events_are_read() -> None:
    described = parse_describe((DATA / "pod-pending-gpu.txt").read_text())
    assert described is not None
    pod, event = described.objects
    (container,) = pod["spec"]["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert "nodeName" not in pod["spec"]  # Node: <none>
    assert event["involvedObject"] == {
        "kind": "Pod",
        "name": "cuda-vectoradd",
        "namespace": "default",
    }
    assert (event["type"], event["reason"], event["source"]) == (
        "Warning",
        "FailedScheduling",
        {"component": "default-scheduler"},
    )
    assert event["message"].startswith("0/2 nodes are available: 1 Insufficient nvidia.com/gpu,")


def _without_empties(value: Any) -> Any:
    """A manifest as describe output shows it: empty maps, lists and strings left out,
    numbers in strings as numbers."""
    if isinstance(value, dict):
        kept = {key: _without_empties(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item not in ({}, [], "", None)}
    if isinstance(value, list):
        return [_without_empties(item) for item in value]
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value


def test_a_described_cluster_policy_reads_back_as_its_manifest() -> None:
    described = parse_describe((DATA / "clusterpolicy-v26.7.0.txt").read_text())
    assert described is not None and described.custom_resources == 1
    (policy,) = described.objects
    manifest = yaml.safe_load(
        (DATA.parent / "upstream-v26.7.0" / "cluster-policy.yaml").read_text()
    )
    assert policy["kind"] == "ClusterPolicy" and policy["apiVersion"] == "nvidia.com/v1"
    assert policy["metadata"]["labels"] == manifest["metadata"]["labels"]
    assert policy["spec"] == _without_empties(manifest["spec"])
    assert policy["status"]["state"] == "ready"
    assert [c["type"] for c in policy["status"]["conditions"]] == ["Ready", "Error"]


def test_a_described_cluster_policy_is_the_policy_check_uses() -> None:
    text = (DATA / "clusterpolicy-v26.7.0.txt").read_text()
    report = run_checks(load_objects(text))
    assert report.policy is not None
    assert (report.policy.source, report.policy.sandbox_enabled) == (
        "ClusterPolicy cluster-policy",
        True,
    )


def test_a_described_kubevirt_cr_reads_back_as_its_manifest() -> None:
    described = parse_describe((DATA / "kubevirt-cr.txt").read_text())
    assert described is not None and described.custom_resources == 1
    (kubevirt,) = described.objects
    corpus = DATA.parents[1] / "corpus" / "explain" / "kubevirt.json"
    (manifest,) = json.loads(corpus.read_text())["items"]
    assert kubevirt["metadata"] == {"name": "kubevirt", "namespace": "kubevirt"}
    # One entry each: kubectl prints a one-item list as its map alone.
    assert kubevirt["spec"] == manifest["spec"]
