"""A bug report's text: prose, fences and several kubectl outputs, read as one dump."""

from __future__ import annotations

from pathlib import Path

from gpuop.manifests.posted import parse_posted

DATA = Path(__file__).resolve().parents[2] / "data"
PODS = (DATA / "tables" / "gpu-operator-pods-wide.txt").read_text(encoding="utf-8")
NODES = (DATA / "tables" / "nodes-show-labels.txt").read_text(encoding="utf-8")
DESCRIBE = (DATA / "describe" / "openshift-gpu-operator.txt").read_text(encoding="utf-8")


def _report(*outputs: str) -> str:
    body = "\n\nand then:\n\n".join(f"```\n{output}```" for output in outputs)
    return f"### Issue\nThe device plugin never starts.\n\n{body}\n\nThanks!\n"


def test_every_form_in_a_report_is_read() -> None:
    posted = parse_posted(_report(NODES, PODS, DESCRIBE))
    assert posted is not None
    kinds = [(obj["kind"], obj["metadata"]["name"]) for obj in posted.objects]
    assert ("Node", "worker-gpu-0.ocp.example.com") in kinds
    assert ("Node", "gpu-worker-1") in kinds
    assert ("Pod", "nvidia-device-plugin-daemonset-k8s2x") in kinds
    assert len(posted.notes) == 3


def test_where_two_forms_show_one_object_the_richer_is_kept() -> None:
    renamed = NODES.replace("gpu-worker-1", "worker-gpu-0.ocp.example.com")
    pods = PODS.replace(
        "nvidia-device-plugin-daemonset-k8s2x", "nvidia-device-plugin-daemonset-x4s8d"
    )
    posted = parse_posted(_report(renamed, pods, DESCRIBE))
    assert posted is not None
    nodes = [o for o in posted.objects if o["metadata"]["name"] == "worker-gpu-0.ocp.example.com"]
    assert len(nodes) == 1 and "capacity" in nodes[0]["status"]  # describe's
    plugin = [
        o for o in posted.objects if o["metadata"]["name"] == "nvidia-device-plugin-daemonset-x4s8d"
    ]
    assert len(plugin) == 1 and plugin[0]["status"]["conditions"]  # the table's row


def test_prose_alone_is_not_a_dump() -> None:
    assert parse_posted("### Issue\nNAME is missing from STATUS.\n") is None


POD = (DATA / "describe" / "pod-device-plugin-waiting.txt").read_text(encoding="utf-8")


def test_a_described_pod_is_richer_than_a_row_or_a_listed_name() -> None:
    # The OpenShift node lists its plugin pod; the pods table and `describe pod` show it too.
    name = "nvidia-device-plugin-daemonset-x4s8d"
    pod = (
        POD.replace("nvidia-device-plugin-daemonset-md7t8", name)
        .replace("gpu-node-3/", "worker-gpu-0.ocp.example.com/")
        .replace("gpu-operator-resources", "nvidia-gpu-operator")
    )
    pods = PODS.replace("nvidia-device-plugin-daemonset-k8s2x", name)
    posted = parse_posted(_report(DESCRIBE, pods, pod))
    assert posted is not None
    found = [o for o in posted.objects if o["metadata"]["name"] == name]
    assert len(found) == 1
    assert found[0]["spec"]["initContainers"]  # describe pod's
    assert any(
        note.startswith("`kubectl describe pod` output: read 1 Pod:") for note in posted.notes
    )
