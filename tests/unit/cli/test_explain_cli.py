"""`gpuop explain`: text and JSON output, inputs, KubeVirt's refusals and exit codes 0/1/2.

The dumps live in `tests/corpus/explain/`: a three-node cluster with one node per workload
config (`nodes.json`, `pods.json`: one pod running on the container node, two pending),
the same as a `kubectl get nodes,pods -A -o json` List, a KubeVirt CR that permits only the
passthrough resource (and misspells the vGPU one), and a `gpuop collect` bundle.
"""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from cli_support import Run, RunCli
from click.testing import CliRunner
from fuzzing import scaled
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lightkube.core.exceptions import ApiError

from gpuop.cli import cli
from gpuop.cli.common import UserError
from gpuop.cli.explain import (
    explain,
    explain_objects,
    render_text,
    validate_cluster,
)
from gpuop.cli.running import printable, spread_greedy
from gpuop.explain.subjects import SubjectError
from gpuop.kube.reads import ReadError, read_cluster
from gpuop.manifests import ManifestError, load_objects
from gpuop.manifests.describe import parse_describe
from kit.explain_corpus import generate_case

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "explain"
NODES = str(CORPUS / "nodes.json")
PODS = str(CORPUS / "pods.json")
KUBEVIRT = str(CORPUS / "kubevirt.json")
ENGINE_KEYS = {
    "pod",
    "feasible",
    "nodes",
    "summary",
    "filter_summary",
    "preemption",
    "never_fits_anywhere",
    "requests",
    "warnings",
}


@pytest.fixture
def run(gpuop: RunCli, monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """`gpuop explain ...` through `gpuop.cli.main`, registered here if it is not yet.

    Lines are not wrapped (a 1000-column terminal): these tests read what is said, and
    test_cli_golden.py how it is laid out at 80 and 120 columns.
    """
    monkeypatch.setitem(cli.commands, "explain", explain)
    return functools.partial(gpuop, columns=1000)


def corpus(name: str) -> str:
    return str(CORPUS / name)


def as_json(result: Run) -> Any:
    assert result.stderr == "", result.stderr
    return json.loads(result.stdout)


def single_error_line(result: Run) -> str:
    assert result.code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ")
    return lines[0]


# --------------------------------------------------------------------------- fits / not


def test_a_pod_that_fits_lists_every_node(run: RunCli) -> None:
    result = run("explain", corpus("pod-gpu.yaml"), "--cluster", NODES, PODS)
    assert result.code == 0, result.stderr
    assert result.stdout == (
        "Pod ml/cuda-job: fits 1 of 3 node(s): a10-container\n"
        "  requests: nvidia.com/gpu 1\n"
        "  a10-container    fits\n"
        "  a10-passthrough  no: Insufficient nvidia.com/gpu [NodeResourcesFit]\n"
        "                   nvidia.com/gpu: requested 1, already requested by pods on the node 0,"
        " allocatable 0\n"
        "  a10-vgpu         no: Insufficient nvidia.com/gpu [NodeResourcesFit]\n"
        "                   nvidia.com/gpu: requested 1, already requested by pods on the node 0,"
        " allocatable 0\n"
    )


def test_json_is_the_engine_schema_plus_the_subject(run: RunCli) -> None:
    data = as_json(run("explain", corpus("pod-gpu.yaml"), "--cluster", NODES, PODS, "-o", "json"))
    assert isinstance(data, dict)
    assert set(data) >= ENGINE_KEYS
    assert data["pod"] == "ml/cuda-job"
    assert data["feasible"] == ["a10-container"]
    assert data["summary"] is None
    assert data["fits"] is True
    assert data["subject"] == {"kind": "Pod", "name": "ml/cuda-job", "launcher": None}
    assert data["kubevirt_refusal"] is None
    verdicts = {n["name"]: n for n in data["nodes"]}
    assert verdicts["a10-vgpu"]["plugin"] == "NodeResourcesFit"
    assert verdicts["a10-vgpu"]["insufficient"] == [
        {
            "resource": "nvidia.com/gpu",
            "requested": 1,
            "used": 0,
            "allocatable": 0,
            "unresolvable": True,
        }
    ]


def test_running_pods_use_their_node(run: RunCli, tmp_path: Path) -> None:
    two = yaml.safe_load(Path(corpus("pod-gpu.yaml")).read_text())
    two["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 2
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(two))
    result = run("explain", str(path), "--cluster", NODES, PODS)
    assert result.code == 1
    assert (
        "nvidia.com/gpu: requested 2, already requested by pods on the node 1, allocatable 2"
        in result.stdout
    )
    assert (
        "  scheduler: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3"
        " nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is"
        " not helpful for scheduling.\n" in result.stdout
    )
    # Without the running pod, the container node takes it.
    assert run("explain", str(path), "--cluster", NODES).code == 0


def test_never_fits_anywhere_names_the_workload_config(run: RunCli) -> None:
    result = run("explain", corpus("pod-vgpu-24q.yaml"), "--cluster", NODES, PODS)
    assert result.code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "Pod vdi/render-0: fits none of 3 node(s)"
    assert (
        "  scheduler: 0/3 nodes are available: 3 Insufficient nvidia.com/NVIDIA_A10-24Q."
        " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    ) in lines
    never = [line for line in lines if "never fits anywhere" in line]
    assert never == [
        "  never fits anywhere: no node advertises nvidia.com/NVIDIA_A10-24Q; it is advertised"
        " by the sandbox device plugin on vm-vgpu nodes (a vGPU type name): label a node"
        " nvidia.com/gpu.workload.config=vm-vgpu or ask for the resource that workload config"
        " advertises"
    ]
    data = as_json(
        run("explain", corpus("pod-vgpu-24q.yaml"), "--cluster", NODES, PODS, "-o", "json")
    )
    assert data["never_fits_anywhere"] == ["nvidia.com/NVIDIA_A10-24Q"]
    assert data["advertised_by"] == {"nvidia.com/NVIDIA_A10-24Q": "vm-vgpu"}


def _pod(resource: str, count: str = "1", name: str = "p") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {"name": "main", "image": "pause", "resources": {"limits": {resource: count}}}
            ]
        },
    }


@pytest.mark.parametrize(
    ("resource", "config", "words"),
    [
        ("nvidia.com/gpu", "container", "the NVIDIA device plugin on container nodes"),
        ("nvidia.com/GA100_A100_PCIE_80GB", "vm-passthrough", "(a PCI model name)"),
        ("nvidia.com/NVIDIA_L40S-48Q", "vm-vgpu", "(a vGPU type name)"),
        ("nvidia.com/mig-1g.10gb", "container", "container nodes"),
    ],
)
def test_classify_resource_says_which_config_advertises_it(
    run: RunCli, tmp_path: Path, resource: str, config: str, words: str
) -> None:
    nodes = json.loads(Path(NODES).read_text())
    nodes["items"] = [n for n in nodes["items"] if n["metadata"]["name"] != "a10-container"]
    cluster = tmp_path / "no-container.json"
    cluster.write_text(json.dumps(nodes))
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps(_pod(resource)))
    result = run("explain", str(manifest), "--cluster", str(cluster))
    assert result.code == 1
    assert f"never fits anywhere: no node advertises {resource};" in result.stdout
    assert words in result.stdout
    assert f"nvidia.com/gpu.workload.config={config}" in result.stdout
    data = as_json(run("explain", str(manifest), "--cluster", str(cluster), "-o", "json"))
    assert data["advertised_by"] == {resource: config}


def test_a_misspelt_name_points_at_the_advertised_one(run: RunCli) -> None:
    result = run("explain", corpus("pod-wrong-case.yaml"), "--cluster", NODES)
    assert result.code == 1
    assert (
        "never fits anywhere: no node advertises nvidia.com/GA102GL_a10; no NVIDIA workload"
        " config advertises a resource of that name (nodes advertise nvidia.com/GA102GL_A10:"
        " names must match exactly)"
    ) in result.stdout
    data = as_json(run("explain", corpus("pod-wrong-case.yaml"), "--cluster", NODES, "-o", "json"))
    assert data["advertised_by"] == {"nvidia.com/GA102GL_a10": None}
    assert data["near_misses"] == {"nvidia.com/GA102GL_a10": ["nvidia.com/GA102GL_A10"]}


DESCRIBED = Path(__file__).resolve().parents[2] / "data" / "describe"


def test_gpu_nodes_that_advertise_nothing_are_named_where_nothing_advertises_the_gpu(
    run: RunCli, tmp_path: Path
) -> None:
    # The Karpenter-made Bottlerocket node of bottlerocket#4087: its machine has a GPU, and
    # no device plugin registered it.
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps(_pod("nvidia.com/gpu")))
    described = parse_describe((DESCRIBED / "bottlerocket-no-gpu.txt").read_text())
    assert described is not None
    dump = str(tmp_path / "nodes.json")
    Path(dump).write_text(json.dumps({"kind": "List", "items": described.objects}))
    result = run("explain", str(manifest), "--cluster", dump)
    assert result.code == 1
    (never,) = [line for line in result.stdout.splitlines() if "never fits anywhere" in line]
    assert never == (
        "  never fits anywhere: no node advertises nvidia.com/gpu; 1 node(s) have NVIDIA GPUs"
        " but advertise none, ip-10-20-31-47.eu-central-1.compute.internal"
        " (karpenter.k8s.aws/instance-gpu-count=1): no device plugin registered them"
        " (`gpuop check` says why, for each node's manager)"
    )
    data = as_json(run("explain", str(manifest), "--cluster", dump, "-o", "json"))
    assert data["silent_gpu_nodes"] == [
        "ip-10-20-31-47.eu-central-1.compute.internal (karpenter.k8s.aws/instance-gpu-count=1)"
    ]
    # A node whose GPUs the device plugin advertises is not silent, and a resource that is
    # not NVIDIA's names no GPU node.
    data = as_json(run("explain", str(manifest), "--cluster", NODES, "-o", "json"))
    assert data["silent_gpu_nodes"] == []
    manifest.write_text(json.dumps(_pod("example.com/fpga")))
    data = as_json(run("explain", str(manifest), "--cluster", dump, "-o", "json"))
    assert data["silent_gpu_nodes"] == []


MANAGERS = Path(__file__).resolve().parents[2] / "corpus" / "managers"


def test_gpu_nodes_the_dra_driver_serves_are_named_where_nothing_advertises_the_gpu(
    run: RunCli, tmp_path: Path
) -> None:
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps(_pod("nvidia.com/gpu")))
    # The GPU Operator's DRA stack: the driver's ResourceSlices publish the node's cards.
    stack = json.loads((MANAGERS / "gpu-operator-gpucluster.json").read_text())
    stack["items"] = [o for o in stack["items"] if o["kind"] != "GPUCluster"]
    dump = str(tmp_path / "dra-stack.json")
    Path(dump).write_text(json.dumps(stack))
    result = run("explain", str(manifest), "--cluster", dump)
    assert result.code == 1
    (never,) = [line for line in result.stdout.splitlines() if "never fits anywhere" in line]
    assert never == (
        "  never fits anywhere: no node advertises nvidia.com/gpu; 1 node(s) serve their GPUs"
        " through NVIDIA's DRA driver instead, dra-1 (ResourceSlices of gpu.nvidia.com): claim"
        " one with a ResourceClaim (DeviceClass gpu.nvidia.com) rather than asking for"
        " nvidia.com/gpu"
    )
    data = as_json(run("explain", str(manifest), "--cluster", dump, "-o", "json"))
    assert data["dra_gpu_nodes"] == ["dra-1 (ResourceSlices of gpu.nvidia.com)"]
    # Nodes alone: the label NVIDIA's guide has users set for the kubelet plugin says it,
    # and the node is not one whose GPUs no plugin registered.
    dump = str(MANAGERS / "dra-driver-nodes-only.json")
    data = as_json(run("explain", str(manifest), "--cluster", dump, "-o", "json"))
    assert data["dra_gpu_nodes"] == ["dra-1 (nvidia.com/dra-kubelet-plugin=true)"]
    assert data["silent_gpu_nodes"] == []
    # Nodes that advertise the device plugin's resource are no DRA node.
    data = as_json(run("explain", str(manifest), "--cluster", NODES, "-o", "json"))
    assert data["dra_gpu_nodes"] == []


def test_nodes_another_vendors_plugin_serves_are_named_where_the_gpu_fits_nowhere(
    run: RunCli, tmp_path: Path
) -> None:
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps(_pod("nvidia.com/gpu")))
    # ACK's GPU sharing: nvidia.com/gpu at 0, the cards served as aliyun.com/gpu-mem.
    dump = str(MANAGERS / "ack-cgpu.json")
    result = run("explain", str(manifest), "--cluster", dump)
    assert result.code == 1
    (shared,) = [line for line in result.stdout.splitlines() if "other vendors'" in line]
    assert shared == (
        "  other vendors' GPU plugins: 1 node(s) register their GPUs under their own names"
        " instead, cn-hangzhou.10.0.1.7 (aliyun.com/gpu-count 2, aliyun.com/gpu-mem 44): ask"
        " for those names, or give the node back to NVIDIA's device plugin (`gpuop check`"
        " names each node's manager)"
    )
    data = as_json(run("explain", str(manifest), "--cluster", dump, "-o", "json"))
    assert data["shared_gpu_nodes"] == [
        "cn-hangzhou.10.0.1.7 (aliyun.com/gpu-count 2, aliyun.com/gpu-mem 44)"
    ]
    # Volcano registers no nvidia.com/gpu at all: no workload config hint either.
    dump = str(MANAGERS / "volcano-vgpu.json")
    result = run("explain", str(manifest), "--cluster", dump)
    (never,) = [line for line in result.stdout.splitlines() if "never fits anywhere" in line]
    assert never == "  never fits anywhere: no node advertises nvidia.com/gpu"
    # A node NVIDIA's plugin serves is none of them, nor is a pod that fits.
    data = as_json(
        run("explain", str(manifest), "--cluster", str(MANAGERS / "ack.json"), "-o", "json")
    )
    assert data["fits"] and data["shared_gpu_nodes"] == []
    data = as_json(run("explain", str(manifest), "--cluster", NODES, "-o", "json"))
    assert data["shared_gpu_nodes"] == []


def test_unknown_extended_resource(run: RunCli, tmp_path: Path) -> None:
    manifest = tmp_path / "pod.json"
    manifest.write_text(json.dumps(_pod("example.com/fpga")))
    result = run("explain", str(manifest), "--cluster", NODES)
    assert result.code == 1
    assert "  never fits anywhere: no node advertises example.com/fpga\n" in result.stdout


# --------------------------------------------------------------------------- KubeVirt


def test_vmi_is_explained_through_its_launcher(run: RunCli) -> None:
    result = run("explain", corpus("vmi-passthrough.yaml"), "--cluster", NODES, PODS)
    assert result.code == 0
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "VirtualMachineInstance vms/vm-passthrough: fits 1 of 3 node(s): a10-passthrough",
        "  launcher pod: virt-launcher-vm-passthrough (rendered)",
        "  requests: memory 8Gi, nvidia.com/GA102GL_A10 1",
    ]
    assert "note: launcher pod rendered by gpuop" in result.stdout
    data = as_json(run("explain", corpus("vmi-passthrough.yaml"), "--cluster", NODES, "-o", "json"))
    assert data["pod"] == "vms/virt-launcher-vm-passthrough"
    assert data["subject"] == {
        "kind": "VirtualMachineInstance",
        "name": "vms/vm-passthrough",
        "launcher": "rendered",
    }


def test_device_not_permitted_is_reported_in_kubevirts_words(run: RunCli) -> None:
    result = run("explain", corpus("vmi-vgpu.yaml"), "--cluster", NODES, PODS, KUBEVIRT)
    assert result.code == 1  # no launcher pod is created: it fits nowhere
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "VirtualMachineInstance vms/vm-vgpu: blocked by KubeVirt (the launcher pod would fit"
        " 1 of 3)"
    )
    assert (
        "  KubeVirt: failed to render launch manifest: GPU nvidia.com/NVIDIA_A10-12Q is not"
        " permitted in permittedHostDevices configuration"
    ) in lines
    data = as_json(
        run("explain", corpus("vmi-vgpu.yaml"), "--cluster", NODES, KUBEVIRT, "-o", "json")
    )
    assert data["fits"] is False
    assert data["feasible"] == ["a10-vgpu"]
    assert data["kubevirt_refusal"] == (
        "failed to render launch manifest: GPU nvidia.com/NVIDIA_A10-12Q is not permitted in"
        " permittedHostDevices configuration"
    )
    # Without a KubeVirt CR in the input nothing is checked, as KubeVirt does.
    assert run("explain", corpus("vmi-vgpu.yaml"), "--cluster", NODES).code == 0
    # A permitted device is fine.
    assert run("explain", corpus("vmi-passthrough.yaml"), "--cluster", NODES, KUBEVIRT).code == 0


def test_host_devices_need_their_feature_gate(run: RunCli, tmp_path: Path) -> None:
    vmi = yaml.safe_load(Path(corpus("vmi-passthrough.yaml")).read_text())
    vmi["spec"]["domain"]["devices"] = {
        "hostDevices": [{"name": "h", "deviceName": "nvidia.com/GA102GL_A10"}]
    }
    path = tmp_path / "vmi.yaml"
    path.write_text(yaml.safe_dump(vmi))
    result = run("explain", str(path), "--cluster", NODES, KUBEVIRT)
    assert result.code == 1
    assert (
        "  KubeVirt: Host Devices feature gate is not enabled in kubevirt-config" in result.stdout
    )


def test_vm_template_with_three_gpus_fits_nowhere(run: RunCli) -> None:
    result = run("explain", corpus("vm-passthrough-two.yaml"), "--cluster", NODES)
    assert result.code == 1
    assert result.stdout.startswith("VirtualMachine vms/vm-two-gpus: fits none of 3 node(s)\n")
    assert "requests: memory 16Gi, nvidia.com/GA102GL_A10 3" in result.stdout
    assert "scheduler: 0/3 nodes are available: 3 Insufficient nvidia.com/GA102GL_A10." in (
        result.stdout
    )


def test_memory_overhead_is_added_to_the_launcher(run: RunCli) -> None:
    data = as_json(
        run(
            "explain",
            corpus("vmi-passthrough.yaml"),
            "--cluster",
            NODES,
            "--memory-overhead",
            "512Mi",
            "-o",
            "json",
        )
    )
    assert data["requests"]["memory"] == str(8 * 2**30 + 512 * 2**20)
    assert not any("memory overhead" in w for w in data["warnings"])


def test_a_live_launcher_pod_is_used_when_present(run: RunCli, tmp_path: Path) -> None:
    vmi = yaml.safe_load(Path(corpus("vmi-passthrough.yaml")).read_text())
    vmi["metadata"]["uid"] = "uid-vmi"
    launcher = _pod("nvidia.com/GA102GL_A10", name="virt-launcher-vm-passthrough-x2x9k")
    launcher["metadata"]["namespace"] = "vms"
    launcher["metadata"]["labels"] = {"kubevirt.io/created-by": "uid-vmi"}
    launcher["spec"]["containers"][0]["resources"]["requests"] = {"memory": "9Gi"}
    cluster = tmp_path / "cluster.json"
    nodes = json.loads(Path(NODES).read_text())["items"]
    cluster.write_text(json.dumps({"kind": "List", "items": [*nodes, launcher]}))
    manifest = tmp_path / "vmi.json"
    manifest.write_text(json.dumps(vmi))
    data = as_json(run("explain", str(manifest), "--cluster", str(cluster), "-o", "json"))
    assert data["subject"]["launcher"] == "vms/virt-launcher-vm-passthrough-x2x9k"
    assert data["requests"]["memory"] == str(9 * 2**30)
    assert data["feasible"] == ["a10-passthrough"]


# --------------------------------------------------------------------------- inputs


def test_several_manifests_give_a_json_list(run: RunCli) -> None:
    result = run(
        "explain",
        corpus("pod-gpu.yaml"),
        corpus("vmi-vgpu.yaml"),
        "--cluster",
        NODES,
        "-o",
        "json",
    )
    data = as_json(result)
    assert [d["pod"] for d in data] == ["ml/cuda-job", "vms/virt-launcher-vm-vgpu"]
    assert result.code == 0


def test_manifest_from_stdin(run: RunCli) -> None:
    text = Path(corpus("pod-gpu.yaml")).read_text()
    result = run("explain", "-", "--cluster", NODES, "-o", "json", input=text)
    assert as_json(result)["feasible"] == ["a10-container"]


def test_cluster_from_stdin(run: RunCli) -> None:
    text = Path(NODES).read_text()
    result = run("explain", corpus("pod-gpu.yaml"), "--cluster", "-", "-o", "json", input=text)
    assert as_json(result)["feasible"] == ["a10-container"]


def test_kubectl_list_dump_and_bundle(run: RunCli) -> None:
    from_list = as_json(
        run(
            "explain",
            corpus("pod-gpu.yaml"),
            "--cluster",
            corpus("kubectl-nodes-pods.json"),
            "-o",
            "json",
        )
    )
    from_files = as_json(
        run("explain", corpus("pod-gpu.yaml"), "--cluster", NODES, PODS, "-o", "json")
    )
    bundle = run("explain", corpus("pod-gpu.yaml"), "--cluster", corpus("bundle"), "-o", "json")
    assert bundle.stderr.startswith("gpuop: note: a gpuop collect bundle holds only the pods")
    assert from_list == from_files == json.loads(bundle.stdout)


def test_cluster_is_repeatable_and_takes_a_comma_list(run: RunCli) -> None:
    repeated = run(
        "explain", corpus("pod-gpu.yaml"), "--cluster", NODES, "--cluster", PODS, "-o", "json"
    )
    assert repeated.code == 0, repeated.stderr
    comma = run("explain", corpus("pod-gpu.yaml"), "--cluster", f"{NODES},{PODS}", "-o", "json")
    # The older form, where the manifest came first: the files after --cluster are the cluster.
    greedy = run("explain", corpus("pod-gpu.yaml"), "--cluster", NODES, PODS, "-o", "json")
    with_equals = run("explain", corpus("pod-gpu.yaml"), f"--cluster={NODES}", PODS, "-o", "json")
    assert repeated.stdout == comma.stdout == greedy.stdout == with_equals.stdout


def test_cluster_does_not_swallow_the_manifest_after_it(run: RunCli) -> None:
    before = run("explain", corpus("pod-gpu.yaml"), "--cluster", NODES, "-o", "json")
    after = run("explain", "--cluster", NODES, corpus("pod-gpu.yaml"), "-o", "json")
    with_f = run("explain", "--cluster", NODES, "-f", corpus("pod-gpu.yaml"), "-o", "json")
    assert after.code == before.code, after.stderr
    assert after.stdout == before.stdout == with_f.stdout
    assert json.loads(after.stdout)["subject"]["kind"] == "Pod"


def test_cluster_stays_greedy_when_an_option_names_the_workload(run: RunCli) -> None:
    """`--all-pending --cluster nodes.json pods.json`: pods.json is cluster input, as before."""
    old = run("explain", "--all-pending", "--cluster", NODES, PODS, "-o", "json")
    new = run("explain", "--all-pending", "--cluster", NODES, "--cluster", PODS, "-o", "json")
    assert old.code == new.code and old.stdout == new.stdout


def test_spread_greedy() -> None:
    assert spread_greedy(
        ["m.yaml", "--cluster", "a", "b", "-", "-o", "json", "c"], "--cluster"
    ) == [
        "m.yaml",
        "--cluster",
        "a",
        "--cluster",
        "b",
        "--cluster",
        "-",
        "-o",
        "json",
        "c",
    ]
    assert spread_greedy(["--cluster=a", "b", "--", "c"], "--cluster") == [
        "--cluster=a",
        "--cluster",
        "b",
        "--",
        "c",
    ]
    assert spread_greedy(["--cluster", "-o"], "--cluster") == ["--cluster", "-o"]


def test_pod_by_name_from_the_dump(run: RunCli) -> None:
    pending = as_json(
        run("explain", "--pod", "trainer-1", "-n", "ml", "--cluster", NODES, PODS, "-o", "json")
    )
    assert pending["pod"] == "ml/trainer-1"
    assert pending["feasible"] == []
    running = run("explain", "--pod", "trainer-0", "-n", "ml", "--cluster", NODES, PODS)
    assert running.code == 0
    assert (
        "note: already bound to a10-container: explained as if it were being scheduled now"
        in running.stdout
    )
    missing = single_error_line(run("explain", "--pod", "nope", "--cluster", NODES, PODS))
    assert missing == "error: Pod default/nope is not in the cluster input"


def test_vmi_by_name_from_a_bundle(run: RunCli) -> None:
    result = run("explain", "--vmi", "vdi-1", "-n", "vdi", "--cluster", corpus("bundle"))
    assert result.code == 1
    assert "KubeVirt: failed to render launch manifest: GPU nvidia.com/NVIDIA_A10-12Q" in (
        result.stdout
    )


def test_all_pending(run: RunCli) -> None:
    result = run("explain", "--all-pending", "--cluster", corpus("bundle"), "-o", "json")
    data = json.loads(result.stdout)
    assert result.code == 1
    assert [(d["subject"]["kind"], d["subject"]["name"]) for d in data] == [
        ("Pod", "ml/trainer-1"),
        ("Pod", "vdi/render-0"),
        ("Pod", "ml/small-0"),
        ("VirtualMachineInstance", "vdi/vdi-1"),
    ]
    assert [d["fits"] for d in data] == [False, False, True, False]
    only_ml = json.loads(
        run(
            "explain", "--all-pending", "-n", "ml", "--cluster", corpus("bundle"), "-o", "json"
        ).stdout
    )
    assert [d["pod"] for d in only_ml] == ["ml/trainer-1", "ml/small-0"]


def test_all_pending_with_nothing_pending(run: RunCli) -> None:
    result = run("explain", "--all-pending", "--cluster", NODES)
    assert (result.code, result.stdout) == (0, "no Pending pods or waiting VMIs\n")
    assert as_json(run("explain", "--all-pending", "--cluster", NODES, "-o", "json")) == []


def test_large_clusters_group_nodes_by_reason(run: RunCli, tmp_path: Path) -> None:
    template = json.loads(Path(NODES).read_text())["items"][1]  # the passthrough node
    nodes = []
    for index in range(60):
        node = json.loads(json.dumps(template))
        node["metadata"]["name"] = f"n{index:02d}"
        if index % 3 == 0:
            node["spec"]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
        nodes.append(node)
    cluster = tmp_path / "nodes.json"
    cluster.write_text(json.dumps({"kind": "List", "items": nodes}))
    result = run("explain", corpus("vmi-passthrough.yaml"), "--cluster", str(cluster))
    assert result.code == 0
    assert "  40 node(s) fit: n01, n02, n04, n05, n07 and 35 more\n" in result.stdout
    assert (
        "  20 node(s) no: node(s) had untolerated taint(s) [TaintToleration]: n00, n03, n06,"
        " n09, n12 and 15 more\n"
    ) in result.stdout
    every = run("explain", corpus("vmi-passthrough.yaml"), "--cluster", str(cluster), "--all-nodes")
    assert "  n59  fits\n" in every.stdout
    assert "untolerated taint {k: v} (k=v:NoSchedule)" in every.stdout


def test_preemption_is_shown(run: RunCli, tmp_path: Path) -> None:
    low = _pod("nvidia.com/gpu", "2", name="low")
    low["spec"]["nodeName"] = "a10-container"
    high = _pod("nvidia.com/gpu", "1", name="high")
    high["spec"]["priority"] = 1000
    cluster = tmp_path / "cluster.json"
    nodes = json.loads(Path(NODES).read_text())["items"]
    cluster.write_text(json.dumps({"kind": "List", "items": [*nodes, low]}))
    manifest = tmp_path / "high.json"
    manifest.write_text(json.dumps(high))
    result = run("explain", str(manifest), "--cluster", str(cluster))
    assert result.code == 1
    assert (
        "  scheduler: 0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 Insufficient"
        " nvidia.com/gpu. preemption: found a potential placement for pod on node"
        " a10-container, preempting 1 victims\n"
    ) not in result.stdout  # the histogram merges equal reasons
    assert "preemption: found a potential placement for pod on node a10-container" in (
        result.stdout
    )
    assert (
        "  preemption: would evict default/low on a10-container and nominate the pod there\n"
        in result.stdout
    )


# --------------------------------------------------------------------------- bad input


def test_not_a_workload(run: RunCli, tmp_path: Path) -> None:
    manifest = tmp_path / "service.yaml"
    manifest.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n")
    line = single_error_line(run("explain", str(manifest), "--cluster", NODES))
    assert line == (
        f"error: {manifest}: Service 'web' is not a Pod, VirtualMachineInstance,"
        " VirtualMachine, ResourceClaim or a workload controller (Deployment, ReplicaSet, StatefulSet,"
        " DaemonSet, Job, CronJob)"
    )


def test_deployment_is_explained_through_its_pod_template(run: RunCli) -> None:
    result = run("explain", corpus("deployment.yaml"), "--cluster", NODES, "-o", "json")
    assert result.code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["subject"] == {"kind": "Deployment", "name": "default/web", "launcher": None}
    assert "explained through its pod template (spec.template)" in result.stdout


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("StatefulSet", ("spec", "template")),
        ("DaemonSet", ("spec", "template")),
        ("Job", ("spec", "template")),
        ("CronJob", ("spec", "jobTemplate", "spec", "template")),
    ],
)
def test_controllers_are_read_through_their_pod_template(
    run: RunCli, tmp_path: Path, kind: str, path: tuple[str, ...]
) -> None:
    template: dict[str, Any] = {
        "spec": {
            "containers": [
                {"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "64"}}}
            ]
        }
    }
    for key in reversed(path):
        template = {key: template}
    manifest = tmp_path / "workload.json"
    manifest.write_text(json.dumps({"kind": kind, "metadata": {"name": "w"}, **template}))
    result = run("explain", str(manifest), "--cluster", NODES)
    assert result.code == 1, result.stderr  # 64 GPUs fit nowhere
    assert result.stdout.startswith(f"{kind} default/w: fits none of")
    missing = tmp_path / "no-template.json"
    missing.write_text(json.dumps({"kind": kind, "metadata": {"name": "w"}, "spec": {}}))
    line = single_error_line(run("explain", str(missing), "--cluster", NODES))
    assert f"{'.'.join(path)} is missing" in line


def test_unknown_quantity_format(run: RunCli) -> None:
    line = single_error_line(run("explain", corpus("pod-bad-quantity.yaml"), "--cluster", NODES))
    assert line.startswith(
        f"error: {corpus('pod-bad-quantity.yaml')}: Pod 'typo':"
        " containers[main].resources.limits.nvidia.com/gpu: '1x' is not a quantity"
    )


def test_unknown_quantity_in_the_cluster(run: RunCli, tmp_path: Path) -> None:
    nodes = json.loads(Path(NODES).read_text())
    nodes["items"][0]["status"]["allocatable"]["nvidia.com/gpu"] = "two"
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes))
    line = single_error_line(run("explain", corpus("pod-gpu.yaml"), "--cluster", str(path)))
    assert line.startswith(
        "error: Node 'a10-container': status.allocatable.nvidia.com/gpu: 'two' is not a quantity"
    )


def test_vmi_guest_memory_must_be_a_quantity(run: RunCli, tmp_path: Path) -> None:
    vm = yaml.safe_load(Path(corpus("vm-passthrough-two.yaml")).read_text())
    vm["spec"]["template"]["spec"]["domain"]["memory"]["guest"] = "16 GB"
    path = tmp_path / "vm.yaml"
    path.write_text(yaml.safe_dump(vm))
    line = single_error_line(run("explain", str(path), "--cluster", NODES))
    assert "spec.domain.memory.guest: '16 GB' is not a quantity" in line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--cluster", NODES), "nothing to explain"),
        ((corpus("pod-gpu.yaml"),), "no cluster to explain against"),
        ((corpus("pod-gpu.yaml"), "--live", "--cluster", NODES), "not both"),
        ((corpus("pod-gpu.yaml"), "--cluster", NODES, "--kubeconfig", "k"), "need --live"),
        (("-", "--cluster", "-"), "'-' (stdin) can be given once"),
        ((corpus("pod-gpu.yaml"), "-n", "x", "--cluster", NODES), "-n/--namespace goes with"),
        (
            (corpus("pod-gpu.yaml"), "--cluster", NODES, "--memory-overhead", "lots"),
            "--memory-overhead: 'lots' is not a quantity",
        ),
        ((corpus("missing.yaml"), "--cluster", NODES), "cannot read"),
        ((corpus("pod-gpu.yaml"), "--cluster", corpus("missing.json")), "cannot read"),
    ],
)
def test_usage_errors_are_one_line(run: RunCli, args: tuple[str, ...], message: str) -> None:
    assert message in single_error_line(run("explain", *args, input=""))


def test_invalid_yaml_is_one_line(run: RunCli) -> None:
    line = single_error_line(
        run("explain", "-", "--cluster", NODES, input="kind: Pod\n  bad: [indent\n")
    )
    assert "not valid YAML" in line


def test_live_without_a_cluster_is_one_line(run: RunCli, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    line = single_error_line(
        run("explain", corpus("pod-gpu.yaml"), "--live", "--kubeconfig", str(kubeconfig))
    )
    assert "cannot reach the cluster" in line


# --------------------------------------------------------------------------- --live


class FakeCluster:
    """A `lightkube.Client` stand-in: lists from dumps, or fails the way a cluster does."""

    def __init__(self, objects: list[dict[str, Any]], failures: dict[str, Exception]) -> None:
        self.objects = objects
        self.failures = failures

    def list(self, res: Any, *, namespace: Any = None, chunk_size: int | None = None) -> Any:
        kind = res._api_info.resource.kind
        if kind in self.failures:
            raise self.failures[kind]
        return [
            {k: v for k, v in o.items() if k != "kind"} for o in self.objects if o["kind"] == kind
        ]


def _status_error(code: int, as_api_error: bool) -> Exception:
    request = httpx2.Request("GET", "https://127.0.0.1/apis/kubevirt.io/v1/kubevirts")
    if as_api_error:
        body = {"kind": "Status", "apiVersion": "v1", "code": code, "message": "no"}
        return ApiError(request=request, response=httpx2.Response(code, json=body, request=request))
    response = httpx2.Response(
        code, text="404 page not found", headers={"Content-Type": "text/plain"}, request=request
    )
    return httpx2.HTTPStatusError("not found", request=request, response=response)


def _live(
    monkeypatch: pytest.MonkeyPatch, objects: list[dict[str, Any]], **failures: Exception
) -> None:
    import tempfile

    import gpuop.kube

    fake = FakeCluster(objects, failures)
    monkeypatch.setattr(gpuop.kube, "sync_client", lambda *_args, **_kw: fake)
    # --live follows kubectl's rule: it needs a kubeconfig to name the cluster it reads.
    kubeconfig = Path(tempfile.mkdtemp()) / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
        "contexts: [{name: fake, context: {cluster: fake}}]\n"
        "clusters: [{name: fake, cluster: {server: 'https://fake.invalid'}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))


def _dump(*names: str) -> list[dict[str, Any]]:
    return [obj for name in names for obj in load_objects((CORPUS / name).read_text())]


def test_live_reads_nodes_pods_and_kubevirt(run: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    _live(monkeypatch, _dump("nodes.json", "pods.json", "kubevirt.json"))
    result = run("explain", corpus("vmi-vgpu.yaml"), "--live", "-o", "json")
    data = as_json(result)
    assert result.code == 1
    assert data["kubevirt_refusal"] is not None
    pod = as_json(run("explain", "--pod", "trainer-1", "-n", "ml", "--live", "-o", "json"))
    assert pod["feasible"] == []


@pytest.mark.parametrize("as_api_error", [True, False])
def test_live_without_kubevirt_crds(
    run: RunCli, monkeypatch: pytest.MonkeyPatch, as_api_error: bool
) -> None:
    """A cluster without KubeVirt answers 404 (plain text for an unknown API group)."""
    missing = _status_error(404, as_api_error)
    _live(
        monkeypatch,
        _dump("nodes.json"),
        KubeVirt=missing,
        VirtualMachineInstance=missing,
    )
    result = run("explain", corpus("vmi-vgpu.yaml"), "--live")
    assert result.code == 0, result.stderr
    line = single_error_line(run("explain", "--vmi", "x", "--live"))
    assert line == "error: VirtualMachineInstance default/x is not in the cluster input"


def test_live_refused_nodes_is_one_line(run: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    _live(monkeypatch, [], Node=_status_error(403, True))
    line = single_error_line(run("explain", corpus("pod-gpu.yaml"), "--live"))
    assert line == "error: cannot list Nodes: not allowed to list them"


def test_read_cluster_skips_optional_kinds() -> None:
    fake = FakeCluster(_dump("nodes.json"), {"KubeVirt": _status_error(403, True)})
    read = read_cluster(fake)
    assert read.skipped == [("KubeVirt", "not allowed to list them")]
    assert [o["kind"] for o in read.objects] == ["Node", "Node", "Node"]
    assert read.of_kind("Pod") == []
    with pytest.raises(ReadError, match="cannot reach the cluster"):
        read_cluster(FakeCluster([], {"Node": httpx2.ConnectError("refused")}))


# --------------------------------------------------------------------------- fuzz

FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["1", "0", "-1", "1.5", "2Gi", "500m", "1e3", "1x", "", "1e999", "0x10", "٣"]),
)
_odd = st.one_of(_scalars, st.lists(_scalars, max_size=2), st.just({"a": {"b": [1]}}))
_RESOURCES = [
    "cpu",
    "memory",
    "pods",
    "ephemeral-storage",
    "hugepages-2Mi",
    "nvidia.com/gpu",
    "nvidia.com/GA102GL_A10",
    "nvidia.com/NVIDIA_A10-12Q",
    "nvidia.com/",
    "example.com/fpga",
    "kubernetes.io/x",
    "requests.cpu",
]
_LABELS = ["gpuop.dev/pool", "nvidia.com/gpu.present", "kubevirt.io/schedulable", "a/b/c", ""]
_NODE_NAMES = ["n0", "n1", "n2"]
_quantity = st.one_of(st.sampled_from(["1", "2", "0", "500m", "8Gi", "1.5", "-1", "1e3"]), _scalars)
_resource_list = st.one_of(
    st.dictionaries(
        st.one_of(st.sampled_from(_RESOURCES), st.text(max_size=6)), _quantity, max_size=3
    ),
    _odd,
)
_resources = st.one_of(
    st.fixed_dictionaries({}, optional={"requests": _resource_list, "limits": _resource_list}),
    _odd,
)
_container = st.one_of(
    st.fixed_dictionaries(
        {"name": st.one_of(st.sampled_from(["main", "side"]), _scalars)},
        optional={
            "resources": _resources,
            "restartPolicy": st.one_of(st.just("Always"), _scalars),
            "ports": st.one_of(
                st.lists(
                    st.fixed_dictionaries(
                        {"hostPort": st.one_of(st.integers(-1, 70_000), _scalars)},
                        optional={"protocol": _scalars, "hostIP": _scalars},
                    ),
                    max_size=2,
                ),
                _odd,
            ),
        },
    ),
    _odd,
)
_requirement = st.fixed_dictionaries(
    {
        "key": st.one_of(st.sampled_from([*_LABELS, "metadata.name"]), _scalars),
        "operator": st.one_of(
            st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]),
            _scalars,
        ),
    },
    optional={
        "values": st.one_of(
            st.lists(st.one_of(st.sampled_from(_NODE_NAMES), _scalars), max_size=2), _odd
        )
    },
)
_term = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "matchExpressions": st.one_of(st.lists(_requirement, max_size=2), _odd),
            "matchFields": st.one_of(st.lists(_requirement, max_size=1), _odd),
        },
    ),
    _odd,
)
_affinity = st.one_of(
    st.fixed_dictionaries(
        {
            "nodeAffinity": st.one_of(
                st.fixed_dictionaries(
                    {
                        "requiredDuringSchedulingIgnoredDuringExecution": st.one_of(
                            st.fixed_dictionaries(
                                {"nodeSelectorTerms": st.one_of(st.lists(_term, max_size=2), _odd)}
                            ),
                            _odd,
                        )
                    }
                ),
                _odd,
            )
        },
        optional={"podAffinity": _odd},
    ),
    _odd,
)
_toleration = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "key": st.one_of(st.sampled_from(_LABELS), _scalars),
            "operator": st.one_of(st.sampled_from(["Exists", "Equal", "Gt", "Lt"]), _scalars),
            "value": _scalars,
            "effect": st.one_of(st.sampled_from(["NoSchedule", "NoExecute"]), _scalars),
        },
    ),
    _odd,
)
_selector = st.one_of(st.dictionaries(st.sampled_from(_LABELS), _scalars, max_size=2), _odd)
_pod_spec = st.fixed_dictionaries(
    {},
    optional={
        "containers": st.one_of(st.lists(_container, max_size=2), _odd),
        "initContainers": st.one_of(st.lists(_container, max_size=1), _odd),
        "nodeSelector": _selector,
        "affinity": _affinity,
        "tolerations": st.one_of(st.lists(_toleration, max_size=2), _odd),
        "priority": _scalars,
        "preemptionPolicy": st.one_of(st.just("Never"), _scalars),
        "nodeName": st.one_of(st.sampled_from(_NODE_NAMES), _scalars),
        "overhead": _resource_list,
        "resources": _resources,
        "schedulingGates": _odd,
    },
)
_device = st.one_of(
    st.fixed_dictionaries(
        {"name": _scalars},
        optional={"deviceName": st.one_of(st.sampled_from(_RESOURCES), _scalars)},
    ),
    _odd,
)
_vmi_spec = st.fixed_dictionaries(
    {},
    optional={
        "domain": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "resources": _resources,
                    "memory": st.one_of(st.fixed_dictionaries({"guest": _quantity}), _odd),
                    "devices": st.one_of(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "gpus": st.one_of(st.lists(_device, max_size=2), _odd),
                                "hostDevices": st.one_of(st.lists(_device, max_size=1), _odd),
                            },
                        ),
                        _odd,
                    ),
                },
            ),
            _odd,
        ),
        "nodeSelector": _selector,
        "tolerations": st.one_of(st.lists(_toleration, max_size=1), _odd),
        "affinity": _affinity,
    },
)
_metadata = st.one_of(
    st.fixed_dictionaries(
        {"name": st.one_of(st.sampled_from(["p", "vm"]), _scalars)},
        optional={
            "namespace": st.one_of(st.just("ns"), _scalars),
            "uid": _scalars,
            "labels": _selector,
        },
    ),
    _odd,
)


def _manifest(kind: str) -> Any:
    spec: Any = {
        "Pod": _pod_spec,
        "VirtualMachineInstance": _vmi_spec,
        "VirtualMachine": st.fixed_dictionaries(
            {"template": st.one_of(st.fixed_dictionaries({"spec": _vmi_spec}), _odd)}
        ),
    }.get(kind, _odd)
    return st.fixed_dictionaries(
        {"kind": st.just(kind), "metadata": _metadata},
        optional={"apiVersion": _scalars, "spec": st.one_of(spec, _odd), "status": _odd},
    )


_KINDS = ["Pod", "VirtualMachineInstance", "VirtualMachine", "Deployment", "Node", "List"]
_manifests = st.one_of(st.sampled_from(_KINDS).flatmap(_manifest), _odd)
_node = st.fixed_dictionaries(
    {
        "kind": st.just("Node"),
        "metadata": st.one_of(
            st.fixed_dictionaries(
                {"name": st.one_of(st.sampled_from(_NODE_NAMES), _scalars)},
                optional={"labels": _selector},
            ),
            _odd,
        ),
    },
    optional={
        "spec": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "taints": st.one_of(st.lists(_toleration, max_size=2), _odd),
                    "unschedulable": _scalars,
                },
            ),
            _odd,
        ),
        "status": st.one_of(
            st.fixed_dictionaries(
                {}, optional={"allocatable": _resource_list, "capacity": _resource_list}
            ),
            _odd,
        ),
    },
)
_kubevirt_cr = st.fixed_dictionaries(
    {
        "kind": st.just("KubeVirt"),
        "metadata": _metadata,
        "spec": st.one_of(
            st.fixed_dictionaries(
                {
                    "configuration": st.one_of(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "permittedHostDevices": st.one_of(
                                    st.fixed_dictionaries(
                                        {},
                                        optional={
                                            "pciHostDevices": st.lists(
                                                st.one_of(
                                                    st.fixed_dictionaries(
                                                        {
                                                            "resourceName": st.one_of(
                                                                st.sampled_from(_RESOURCES),
                                                                _scalars,
                                                            )
                                                        }
                                                    ),
                                                    _odd,
                                                ),
                                                max_size=2,
                                            ),
                                            "mediatedDevices": _odd,
                                        },
                                    ),
                                    _odd,
                                ),
                                "developerConfiguration": _odd,
                            },
                        ),
                        _odd,
                    )
                }
            ),
            _odd,
        ),
    }
)
_cluster_objects = st.lists(
    st.one_of(_node, _node, st.sampled_from(["Pod"]).flatmap(_manifest), _kubevirt_cr),
    max_size=4,
)


def _as_text(value: Any, style: int) -> str:
    if style == 0:
        return json.dumps(value)
    if style == 1:
        return yaml.safe_dump_all(value if isinstance(value, list) else [value])
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": value})


_texts = st.one_of(
    st.tuples(_manifests, st.integers(0, 1)).map(lambda pair: _as_text(*pair)),
    st.tuples(st.lists(_manifests, max_size=3), st.integers(0, 2)).map(lambda p: _as_text(*p)),
    st.text(max_size=40),
)
_cluster_texts = st.one_of(
    st.tuples(_cluster_objects, st.integers(0, 2)).map(lambda pair: _as_text(*pair)),
    st.text(max_size=20),
)


#: Valid cluster texts read once (most examples reuse one): text -> objects.
_READ: dict[str, list[dict[str, Any]]] = {}


def explain_text(manifest: str, cluster_text: str) -> int:
    """What `gpuop explain - --cluster FILE` does with the texts, without the command line."""
    try:
        cluster = _READ.get(cluster_text)
        if cluster is None:
            cluster = load_objects(cluster_text, "cluster")
            validate_cluster(cluster)
        objects = load_objects(manifest, "<stdin>")
        if not objects:
            return 2
        results = explain_objects([("<stdin>", obj) for obj in objects], cluster)
    except (UserError, SubjectError, ManifestError, RecursionError):
        return 2
    printable(render_text(results, all_nodes=True)).encode("utf-8")
    json.dumps([result.to_dict() for result in results])
    return 0 if all(result.fits for result in results) else 1


# Hypothesis draws the structured inputs above at about 5 ms apiece, which would make
# 10,000 of them a minute of CPU. The 10,000 are instead mutations of valid objects (the
# corpus's pods and nodes, the VMIs and VMs of tests/corpus/explain) made with a random
# generator seeded by hypothesis: about 2 ms each, reading, explaining and output included,
# and run through the command's pipeline (`explain_text`); a subset of them, and 500 of
# the structured ones, go through the real command.
_ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**70,
    1.5,
    float("nan"),
    float("inf"),
    "",
    "1x",
    "٣",
    "1e999",
    "-1",
    "0.5",
    "nvidia.com/gpu",
    "x" * 300,
    "\ud800",
    [],
    [None],
    {},
    {"a": {"b": [1]}},
    "Always",
    "Exists",
    "Never",
]
_ODD_KEYS = ["", "kind", "spec", "nvidia.com/gpu", "cpu", "memory", "nodeName", "limits", "x"]


def _bases() -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    manifests: list[dict[str, Any]] = []
    clusters: list[list[dict[str, Any]]] = []
    for index in range(12):
        case = generate_case(7, index, existing_pods=True)
        manifests.append(case.pod)
        # Two nodes are enough to exercise every filter, and keep each example cheap.
        nodes = list(case.nodes[:2])
        names = {node["metadata"]["name"] for node in nodes}
        clusters.append(
            [*nodes, *(p for p in case.existing_pods if p["spec"]["nodeName"] in names)]
        )
    for name in ("vmi-passthrough.yaml", "vmi-vgpu.yaml", "vm-passthrough-two.yaml"):
        manifests.append(yaml.safe_load((CORPUS / name).read_text()))
    clusters.append(
        load_objects((CORPUS / "nodes.json").read_text())
        + load_objects((CORPUS / "kubevirt.json").read_text())
    )
    return manifests, clusters


_BASE_MANIFESTS, _BASE_CLUSTERS = _bases()


def mutate(value: Any, rng: random.Random, rate: float) -> Any:
    """`value` with about `rate` of its leaves, keys and items replaced, dropped or added."""
    if rng.random() < rate / 4:
        return rng.choice(_ODD_VALUES)
    if isinstance(value, dict):
        out = {k: mutate(v, rng, rate) for k, v in value.items() if rng.random() > rate / 2}
        if rng.random() < rate:
            out[rng.choice(_ODD_KEYS)] = rng.choice(_ODD_VALUES)
        return out
    if isinstance(value, list):
        items = [mutate(v, rng, rate) for v in value if rng.random() > rate / 2]
        if rng.random() < rate:
            items.insert(rng.randrange(len(items) + 1), rng.choice(_ODD_VALUES))
        return items
    return rng.choice(_ODD_VALUES) if rng.random() < rate else value


def _serialise(documents: list[Any], rng: random.Random, *, damage: bool) -> str:
    style = rng.random()
    if damage and style < 0.03:  # YAML is slow to write and read: a few are enough
        text = yaml.safe_dump_all(documents)
    elif style < 0.3 or len(documents) != 1:
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": documents})
    else:
        text = json.dumps(documents[0])
    if damage and rng.random() < 0.05:  # a damaged file
        cut = rng.randrange(len(text) + 1)
        text = text[:cut] + rng.choice(["", "\x00", "{", ":", "\t- ", "é"]) + text[cut:]
    return text


_CLUSTER_TEXTS = [
    json.dumps({"apiVersion": "v1", "kind": "List", "items": c}) for c in _BASE_CLUSTERS
]
_READ.update((text, load_objects(text)) for text in _CLUSTER_TEXTS)


def mutated_inputs(rng: random.Random) -> tuple[str, str]:
    """(manifest text, cluster text): from intact to thoroughly malformed."""
    picked = [rng.choice(_BASE_MANIFESTS) for _ in range(rng.choice((1, 1, 1, 2)))]
    if rng.random() < 0.05:
        picked[0] = {**picked[0], "kind": rng.choice(["Deployment", "Node", "", 3])}
    rate = rng.choice((0.0, 0.02, 0.05, 0.1, 0.2))
    manifest = _serialise([mutate(doc, rng, rate) for doc in picked], rng, damage=True)
    index = rng.randrange(len(_BASE_CLUSTERS))
    if rng.random() < 0.7:
        return manifest, _CLUSTER_TEXTS[index]
    cluster = [mutate(obj, rng, rng.choice((0.005, 0.02))) for obj in _BASE_CLUSTERS[index]]
    return manifest, _serialise(cluster, rng, damage=False)


#: Inputs per hypothesis example: hypothesis's own bookkeeping costs about 0.7 ms an
#: example, as much as explaining one input, so each example explains several.
PER_EXAMPLE = 8


@pytest.mark.fuzz
@settings(FUZZ, max_examples=scaled(10_000) // PER_EXAMPLE)
@given(seed=st.integers(0, 2**64))
def test_malformed_inputs_give_a_result_or_exit_2(seed: int) -> None:
    """10,000 malformed inputs through the command's pipeline (reading, explaining, output)."""
    rng = random.Random(seed)
    for index in range(PER_EXAMPLE):
        manifest, cluster_text = mutated_inputs(rng)
        assert explain_text(manifest, cluster_text) in (0, 1, 2), (seed, index)


def _through_the_command(tmp: Path, manifest: str, cluster_text: str, output: str) -> None:
    cluster = tmp / "cluster.yaml"
    cluster.write_bytes(cluster_text.encode("utf-8", "surrogatepass"))
    result = CliRunner().invoke(
        explain,
        ["-", "--cluster", str(cluster), "-o", output],
        input=manifest.encode("utf-8", "surrogatepass"),
    )
    assert result.exit_code in (0, 1, 2), (result.output, result.exception)
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert result.stdout == ""
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    else:
        assert result.exit_code == explain_text(manifest, cluster_text)


@pytest.mark.fuzz
@settings(FUZZ, max_examples=scaled(300))
@given(seed=st.integers(0, 2**64), output=st.sampled_from(["text", "json"]))
def test_mutated_inputs_through_the_command(
    tmp_path_factory: pytest.TempPathFactory, seed: int, output: str
) -> None:
    """A subset of those through the real command, in-process: exit 0, 1 or 2, one line."""
    manifest, cluster_text = mutated_inputs(random.Random(seed))
    _through_the_command(tmp_path_factory.mktemp("fuzz"), manifest, cluster_text, output)


@pytest.mark.fuzz
@settings(FUZZ, max_examples=scaled(500))
@given(manifest=_texts, cluster_text=_cluster_texts, output=st.sampled_from(["text", "json"]))
def test_malformed_inputs_through_the_command_never_trace_back(
    tmp_path_factory: pytest.TempPathFactory, manifest: str, cluster_text: str, output: str
) -> None:
    """Structured malformed inputs (wrong types in every field) through the real command."""
    _through_the_command(tmp_path_factory.mktemp("fuzz"), manifest, cluster_text, output)


# --------------------------------------------------------------------------- DRA claims

DRA = CORPUS / "dra"


def test_invalid_cel_in_a_claim_is_one_line(run: RunCli) -> None:
    line = single_error_line(
        run("explain", str(DRA / "claim-bad-cel.yaml"), "--cluster", str(DRA / "cluster.json"))
    )
    assert line == (
        "error: ResourceClaim ml/bad-cel, request gpu: selector #0: CEL compile error in"
        " \"device.attributes['gpu.nvidia.com'].productName ==\": syntax error at column 49"
    )


def test_invalid_cel_in_a_device_class_is_one_line(run: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "class.yaml"
    bad.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: broken}\n"
        "spec: {selectors: [{cel: {expression: 'device.driver.nope()'}}]}\n"
    )
    line = single_error_line(
        run(
            "explain",
            str(DRA / "pod-big-gpu.yaml"),
            "--cluster",
            f"{DRA / 'cluster.json'},{bad}",
        )
    )
    assert "DeviceClass broken: selector #0: CEL compile error" in line
    assert "undeclared reference to 'nope'" in line


def test_malformed_slice_is_one_line(run: RunCli, tmp_path: Path) -> None:
    bad = tmp_path / "slice.yaml"
    bad.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\n"
        "spec: {driver: gpu.nvidia.com, nodeName: dra-a, pool: {name: p},"
        " devices: [{name: d, capacity: {memory: {value: lots}}}]}\n"
    )
    line = single_error_line(
        run("explain", str(DRA / "pod-big-gpu.yaml"), "--cluster", f"{DRA / 'cluster.json'},{bad}")
    )
    assert line.startswith("error: ResourceSlice s.spec.devices[0] (d).capacity[memory].value:")


def test_unknown_device_class_is_the_schedulers_reason(run: RunCli) -> None:
    result = run(
        "explain", str(DRA / "claim-unknown-class.yaml"), "--cluster", str(DRA / "cluster.json")
    )
    assert result.code == 1 and "Traceback" not in result.stderr
    assert "request gpu: device class gpu.example.com does not exist" in result.stdout


def test_claims_json_has_the_reason_per_device(run: RunCli) -> None:
    data = as_json(
        run(
            "explain",
            str(DRA / "pod-two-vfio.yaml"),
            "--cluster",
            str(DRA / "cluster.json"),
            "-o",
            "json",
        )
    )
    by_node = {c["node"]: c for c in data["claims"]}
    considered = {d["device"]: d["reason"] for d in by_node["dra-b"]["by_request"][0]["considered"]}
    assert considered["gpu-vfio-0"] == "already allocated to vms/vm-0"
    assert data["feasible"] == []


def test_a_described_pending_pod_is_explained_and_its_events_are_not_subjects(
    run: RunCli,
) -> None:
    described = Path(__file__).resolve().parents[2] / "data" / "describe"
    result = run(
        "explain",
        str(described / "pod-pending-gpu.txt"),
        "--cluster",
        str(described / "eks-device-plugin.txt"),
    )
    assert result.code in (0, 1), result.stderr
    assert result.stdout.startswith("Pod default/cuda-vectoradd: fits ")
    assert "Event" not in result.stdout
