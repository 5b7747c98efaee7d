"""`kubectl get nodes --show-labels` tables as posted: read as Nodes with labels only."""

from __future__ import annotations

from gpuop.check import run_checks
from gpuop.manifests import load_objects
from gpuop.manifests.node_table import parse_node_table

# As kubectl prints it (tabwriter: columns padded to the widest cell, three spaces apart).
TABLE = """\
$ kubectl get nodes --show-labels
NAME           STATUS                     ROLES           AGE   VERSION   LABELS
cpu-1          Ready                      control-plane   12d   v1.29.4   kubernetes.io/hostname=cpu-1,node-role.kubernetes.io/control-plane=
gpu-worker-1   Ready,SchedulingDisabled   <none>          12d   v1.29.4   feature.node.kubernetes.io/pci-10de.present=true,kubernetes.io/hostname=gpu-worker-1,nvidia.com/gpu.count=2,nvidia.com/gpu.deploy.container-toolkit=true,nvidia.com/gpu.deploy.dcgm=true,nvidia.com/gpu.deploy.dcgm-exporter=true,nvidia.com/gpu.deploy.device-plugin=true,nvidia.com/gpu.deploy.driver=true,nvidia.com/gpu.deploy.gpu-feature-discovery=true,nvidia.com/gpu.deploy.node-status-exporter=true,nvidia.com/gpu.deploy.operator-validator=true,nvidia.com/gpu.present=true,nvidia.com/gpu.product=NVIDIA-A10,nvidia.com/gpu.replicas=1
bare           NotReady                   <none>          1d    v1.29.4   <none>
"""

WIDE = """\
NAME    STATUS   ROLES    AGE   VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE             KERNEL-VERSION     CONTAINER-RUNTIME     LABELS
gpu-1   Ready    <none>   3d    v1.30.2   10.0.0.7      <none>        Ubuntu 22.04.4 LTS   5.15.0-105-generic   containerd://1.7.13   kubernetes.io/hostname=gpu-1,nvidia.com/gpu.present=true
"""


def test_each_row_is_a_node_with_its_labels() -> None:
    table = parse_node_table(TABLE)
    assert table is not None and table.nodes == 3
    cpu, gpu, bare = table.objects
    assert cpu["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] == ""
    assert gpu["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A10"
    assert gpu["spec"] == {"unschedulable": True}
    assert bare["metadata"]["labels"] == {}
    # The table shows no capacity: none is made up.
    assert "capacity" not in gpu["status"] and "allocatable" not in gpu["status"]
    assert gpu["status"]["nodeInfo"]["kubeletVersion"] == "v1.29.4"


def test_wide_output_and_pasted_forms() -> None:
    table = parse_node_table(WIDE)
    assert table is not None
    assert table.objects[0]["metadata"]["labels"] == {
        "kubernetes.io/hostname": "gpu-1",
        "nvidia.com/gpu.present": "true",
    }
    indented = "\n".join("    " + line for line in TABLE.splitlines())
    crlf = TABLE.replace("\n", "\r\n")
    for pasted in (indented, crlf):
        again = parse_node_table(pasted)
        assert again is not None and again.objects == parse_node_table(TABLE).objects  # type: ignore[union-attr]


def test_other_text_is_no_table() -> None:
    assert parse_node_table("apiVersion: v1\nkind: Node\n") is None
    assert (
        parse_node_table("NAME   STATUS   ROLES   AGE   VERSION\ngpu-1 Ready <none> 1d v1\n")
        is None
    )
    assert load_objects(TABLE, "nodes.txt")[1]["metadata"]["name"] == "gpu-worker-1"


def test_checks_read_labels_and_skip_what_nodes_advertise() -> None:
    table = parse_node_table(TABLE)
    assert table is not None
    report = run_checks(table.objects)
    assert [f for f in report.findings if f.severity != "info"] == []
    assert any(skip.check == "advertised resources" for skip in report.skipped)
    drifted = parse_node_table(TABLE.replace("nvidia.com/gpu.deploy.dcgm-exporter=true,", ""))
    assert drifted is not None
    found = {(f.code, f.subject) for f in run_checks(drifted.objects).findings}
    assert ("GPU302", "Node/gpu-worker-1") in found


def test_a_node_without_status_is_not_called_empty() -> None:
    table = parse_node_table(TABLE)
    assert table is not None
    node = table.objects[1]
    del node["status"]  # a dump trimmed to the node's metadata
    codes = {f.code for f in run_checks([node]).findings}
    assert not codes & {"GPU207", "GPU214"}
    node["status"] = {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}}
    assert {f.code for f in run_checks([node]).findings} & {"GPU207", "GPU214"}
