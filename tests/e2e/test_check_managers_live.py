"""`gpuop check --live` names what manages each node, read back from a real API server.

The simulator presents one node per manager (`gpuop sim node add --managed-by`: labels,
extended resources, the OS image, the plugin's pod bound to the node, the DRA driver's
ResourceSlice, the KubeVirt CR entry that lets KubeVirt's own plugin serve the cards,
under a KubeVirt CRD the test serves), and four shapes it does not make are written from
`tests/corpus/managers` (a GKE node whose plugin pod is not in the input, a Karpenter node
with the plugin's Helm chart, a Karpenter-made Bottlerocket node that registers no GPU,
and an AKS node whose problem detector reports a missing GPU). The check, reading the
cluster through `gpuop collect`'s reader, names each node's manager and finds only the
unregistered GPU (GPU214) and the reported fault (GPU215); a resource then registered with
0 devices is GPU211 on that node alone, and a node registering fewer GPUs than its
provisioner's label gives is GPU213.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client, codecs
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Namespace, Node, Pod
from lightkube.resources.resource_v1 import ResourceSlice
from lightkube.types import PatchType

from gpuop.kube import ops, sync_client

# gpuop reads Nodes and Pods as lightkube's generic resources (`gpuop.kube.kinds`); they must
# be registered before this module's own `from_dict` registers the typed Node, as gpuop's
# modules do by importing the kind table first.
from gpuop.kube.collect import collect
from gpuop.kube.errors import KubeApiError
from gpuop.sim.hardware import NodeSpec, cards_for
from gpuop.sim.managers import shape_objects, shape_of
from gpuop.sim.registry import add_nodes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "check"))
import managers_corpus

pytestmark = pytest.mark.e2e

KUBEVIRT_PLUGIN = "nvidia-kubevirt-gpu-device-plugin"
# manager -> (GPU model, count, the manager its node must be named with): every shape the
# simulator makes.
SIMULATED = {
    "nvidia-device-plugin": ("A10", 2, "nvidia-device-plugin"),
    "gke": ("L4", 1, "gke"),
    "eks-auto-mode": ("H100", 8, "eks-auto-mode"),
    "aks": ("A100", 1, "nvidia-device-plugin"),  # the plugin's static manifest
    "aks-managed-gpu": ("A100", 1, "aks-managed-gpu"),
    KUBEVIRT_PLUGIN: ("A100", 4, KUBEVIRT_PLUGIN),
    "nvidia-dra-driver": ("H100", 2, "nvidia-dra-driver"),
    "hami": ("A10", 1, "hami"),
    "bottlerocket": ("A10", 1, "bottlerocket"),
    "kubevirt": ("A10", 2, "kubevirt"),  # not the model NVIDIA's KubeVirt plugin serves
    "eks": ("A10", 1, "nvidia-device-plugin"),  # the plugin's static manifest
    "volcano-vgpu": ("A10", 2, "volcano-vgpu"),
    "aliyun-gpushare": ("A10", 2, "aliyun-gpushare"),
    "tencent-gpu-manager": ("A10", 2, "tencent-gpu-manager"),
}
KUBEVIRT_CRD = Path(__file__).resolve().parents[1] / "data" / "kubevirt" / "kubevirt-crd.yaml"
# corpus scenario -> the manager its node must be named with
SHAPES = {
    "gke-time-sharing-nodes-only": "gke",
    "karpenter-plugin": "nvidia-device-plugin",
}
# corpus scenario written with drift from the start -> (its manager, the finding on its node)
DRIFTED = {
    "bottlerocket-no-plugin": ("bottlerocket", "GPU214"),
    "aks-h100-gpu-missing": ("nvidia-device-plugin", "GPU215"),
}
# The node names of those scenarios, made unique to each run.
_CORPUS_NODES = ("gke-a100-1", "ip-10-0-12-34", "ip-192-168-164-242", "aks-ndh100-1")


def _renamed(obj: dict[str, Any], suffix: str) -> dict[str, Any]:
    """The object with its node's name (and the names made from it) unique to this run."""
    text = json.dumps(obj)
    for node in _CORPUS_NODES:
        text = text.replace(f'{node}"', f'{node}-{suffix}"')
        text = text.replace(f'"{node}-gpu', f'"{node}-{suffix}-gpu')
    return dict(json.loads(text))


def _write_node(client: Client, node: dict[str, Any]) -> str:
    # With its status, as a kubelet registers a node: kwok, playing the kubelet, fills in
    # only what the status lacks, so the OS image stays as written.
    client.create(from_dict(node))
    return str(node["metadata"]["name"])


def _write(client: Client, obj: dict[str, Any]) -> None:
    namespace = obj["metadata"].get("namespace")
    if namespace:
        with contextlib.suppress(ApiError):
            client.create(Namespace(metadata={"name": namespace}))  # type: ignore[arg-type]
    obj = dict(obj)
    obj.pop("status", None)
    if obj["kind"] == "Pod":
        obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "ownerReferences"}
    client.create(from_dict(obj))


def _serve_kubevirt(client: Client) -> None:
    """KubeVirt's CRD, for the KubeVirt CR that `--managed-by kubevirt` permits cards in."""
    (crd,) = codecs.load_all_yaml(KUBEVIRT_CRD.read_text(encoding="utf-8"))
    with contextlib.suppress(ApiError):
        client.create(crd)
    deadline = time.monotonic() + 30
    while not ops.crd_established_sync(client, "kubevirts.kubevirt.io"):
        assert time.monotonic() < deadline, "the KubeVirt CRD did not become Established"
        time.sleep(0.2)
    while True:  # Established comes before the kind's storage answers lists
        try:
            ops.list_dra_sync(client, "KubeVirt")
            return
        except KubeApiError:
            assert time.monotonic() < deadline, "KubeVirt CRs cannot be listed"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def managed_nodes(kubeconfig_path: Path) -> Iterator[dict[str, str]]:
    client = sync_client(str(kubeconfig_path))
    _serve_kubevirt(client)
    suffix = uuid.uuid4().hex[:5]
    wanted: dict[str, str] = {}
    created: list[tuple[Any, str, str | None]] = []
    specs = [
        NodeSpec(f"{shape}-{suffix}", gpu, count, managed_by=shape)
        for shape, (gpu, count, _) in SIMULATED.items()
    ]
    add_nodes(client, specs, "gpu-operator")
    for spec in specs:
        wanted[spec.name] = SIMULATED[spec.managed_by][2]
        created.append((Node, spec.name, None))
        shape = shape_of(spec.managed_by)
        assert shape is not None
        for obj in shape_objects(shape, spec.name, cards_for(spec)):
            resource = Pod if obj["kind"] == "Pod" else ResourceSlice
            created.append((resource, obj["metadata"]["name"], obj["metadata"].get("namespace")))
    shapes = {**SHAPES, **{name: manager for name, (manager, _) in DRIFTED.items()}}
    for scenario, manager in shapes.items():
        build, _, _ = managers_corpus.SCENARIOS[scenario]
        for obj in build():
            obj = _renamed(obj, suffix)
            if obj["kind"] == "Node":
                wanted[_write_node(client, obj)] = manager
                created.append((Node, obj["metadata"]["name"], None))
            elif obj["kind"] in ("Pod", "ResourceSlice"):
                _write(client, obj)
                resource = Pod if obj["kind"] == "Pod" else ResourceSlice
                created.append(
                    (resource, obj["metadata"]["name"], obj["metadata"].get("namespace"))
                )
    yield wanted
    for resource, name, namespace in reversed(created):
        with contextlib.suppress(ApiError):
            if namespace:
                client.delete(resource, name, namespace=namespace, grace_period=0)
            else:
                client.delete(resource, name)
    with contextlib.suppress(ApiError):
        client.delete(CustomResourceDefinition, "kubevirts.kubevirt.io")


def _check(kubeconfig: Path) -> dict[str, Any]:
    result = subprocess.run(
        [
            *(sys.executable, "-m", "gpuop", "check", "--live"),
            *("--kubeconfig", str(kubeconfig), "-o", "json", "--fail-on", "error"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return dict(json.loads(result.stdout))


def test_each_node_is_named_with_its_manager_and_drift_is_found_on_its_node(
    kubeconfig_path: Path, managed_nodes: dict[str, str]
) -> None:
    from gpuop.check import run_checks

    client = sync_client(str(kubeconfig_path))
    report = run_checks(collect(client).all_objects())
    named = {node.name: node.managers[:1] for node in report.nodes if node.name in managed_nodes}
    assert named == {name: (manager,) for name, manager in managed_nodes.items()}
    # Bottlerocket is named by the OS image its node reports, read back as the simulator
    # wrote it.
    (bottlerocket,) = [n for n in managed_nodes if n.startswith("bottlerocket-")]
    node_obj = client.get(Node, bottlerocket)
    assert node_obj.status is not None and node_obj.status.nodeInfo is not None
    assert node_obj.status.nodeInfo.osImage == shape_of("bottlerocket").os_image  # type: ignore[union-attr]
    unregistered = next(name for name in managed_nodes if name.startswith("ip-192-168-164-242"))
    ours = {
        (f.code, f.node): f.message
        for f in report.findings
        if f.node in managed_nodes and f.severity != "info"
    }
    # The Karpenter-made Bottlerocket node whose GPU is not registered (GPU214), and nothing
    # else: the taint its message names is read back from the node's spec.
    # The AKS node whose problem detector reports a missing GPU (a node condition, read back
    # through kwok, which keeps the conditions it does not own).
    missing = next(name for name in managed_nodes if name.startswith("aks-ndh100-1"))
    assert sorted(ours) == [("GPU214", unregistered), ("GPU215", missing)], ours
    assert "(tainted nvidia.com/gpu=true:NoSchedule" in ours["GPU214", unregistered]

    # NVIDIA's KubeVirt plugin registers the model with no card bound to vfio-pci.
    zeroed = next(name for name, m in managed_nodes.items() if m == KUBEVIRT_PLUGIN)
    node_obj = client.get(Node, zeroed)
    assert node_obj.status is not None and node_obj.status.allocatable is not None
    (model,) = [r for r in node_obj.status.allocatable if r.startswith("nvidia.com/")]
    assert model == "nvidia.com/GA100_A100_PCIE_40GB"
    zero = {model: "0"}
    patch = {"status": {"capacity": zero, "allocatable": zero}}
    client.patch(Node.Status, zeroed, patch, patch_type=PatchType.MERGE)
    # Karpenter labels its node with the machine's 4 GPUs; the plugin registers 3.
    short = next(name for name in managed_nodes if name.startswith("ip-10-0-12-34"))
    three = {"nvidia.com/gpu": "3"}
    patch = {"status": {"capacity": three, "allocatable": three}}
    client.patch(Node.Status, short, patch, patch_type=PatchType.MERGE)
    data = _check(kubeconfig_path)
    found = {
        (f["code"], f["name"])
        for f in data["findings"]
        if f["name"] in managed_nodes and f["severity"] != "info"
    }
    assert found == {
        ("GPU211", zeroed),
        ("GPU213", short),
        ("GPU214", unregistered),
        ("GPU215", missing),
    }
    node = next(n for n in data["nodes"] if n["name"] == zeroed)
    assert node["management"]["managers"] == [KUBEVIRT_PLUGIN]
