"""`gpuop plan -f`: many nodes from a List, multi-document YAML or stdin, one plan each,
each the same as planning that node alone; bad input is one line with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_support import RunCli

import gpuop.cli.plan as plan_module
from gpuop.api.labels import INVENTORY_ANNOTATION
from gpuop.planner.inventory import GpuCard, encode_inventory

NFD_LABEL = "feature.node.kubernetes.io/pci-10de.present"


def gpu_node(name: str, device: str = "2236", count: int = 2, **labels: str) -> dict[str, Any]:
    cards = [GpuCard(index, device) for index in range(count)]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {NFD_LABEL: "true", "kubernetes.io/hostname": name, **labels},
            "annotations": {INVENTORY_ANNOTATION: encode_inventory(cards)},
        },
    }


NODES = [
    gpu_node("gpu-a"),
    gpu_node("gpu-b"),
    gpu_node("gpu-c", device="26b9", count=4, **{"nvidia.com/gpu.workload.config": "vm-vgpu"}),
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-1", "labels": {}}},
]


def kubectl_list(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": nodes}


def alone(gpuop: RunCli, node: dict[str, Any], *args: str) -> str:
    run = gpuop("plan", "--node", "-", *args, input=json.dumps(node))
    assert run.code == 0, run.stderr
    return run.stdout


def test_list_gives_one_json_line_per_node_as_planned_alone(gpuop: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(kubectl_list(NODES), indent=4), encoding="utf-8")
    run = gpuop("plan", "-f", str(path), "--sandbox", "-o", "json")
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == len(NODES)
    for line, node in zip(lines, NODES, strict=True):
        assert json.loads(line) == json.loads(alone(gpuop, node, "--sandbox", "-o", "json"))
    assert [json.loads(line)["node"] for line in lines] == ["gpu-a", "gpu-b", "gpu-c", "cpu-1"]


def test_multi_document_yaml_from_stdin_as_text(gpuop: RunCli) -> None:
    run = gpuop("plan", "--nodes", "-", input=yaml.safe_dump_all(NODES[:3]))
    assert run.code == 0, run.stderr
    expected = "\n".join(alone(gpuop, node) for node in NODES[:3])
    assert run.stdout == expected
    assert run.stdout.count("Node gpu-") == 3


def test_yaml_output_is_one_document_per_node(gpuop: RunCli) -> None:
    run = gpuop("plan", "-f", "-", "-o", "yaml", input=json.dumps(kubectl_list(NODES)))
    assert run.code == 0, run.stderr
    documents = list(yaml.safe_load_all(run.stdout))
    assert [doc["node"] for doc in documents] == ["gpu-a", "gpu-b", "gpu-c", "cpu-1"]
    assert documents[0] == yaml.safe_load(alone(gpuop, NODES[0], "-o", "yaml"))


def test_a_single_node_and_an_api_node_list(gpuop: RunCli) -> None:
    single = gpuop("plan", "-f", "-", "-o", "json", input=json.dumps(NODES[0]))
    assert single.code == 0, single.stderr
    assert single.stdout.count("\n") == 1
    # The API server's NodeList leaves `kind` out of its items.
    items = [{k: v for k, v in node.items() if k != "kind"} for node in NODES[:2]]
    listed = {"apiVersion": "v1", "kind": "NodeList", "items": items}
    run = gpuop("plan", "-f", "-", "-o", "json", input=json.dumps(listed))
    assert run.code == 0, run.stderr
    assert [json.loads(line)["node"] for line in run.stdout.splitlines()] == ["gpu-a", "gpu-b"]


def test_overlay_flags_apply_to_every_node(gpuop: RunCli) -> None:
    text = json.dumps(kubectl_list(NODES[:2]))
    run = gpuop(
        "plan", "-f", "-", "--workload", "vm-passthrough", "--sandbox", "-o", "json", input=text
    )
    assert run.code == 0, run.stderr
    for line in run.stdout.splitlines():
        assert json.loads(line)["workload"]["config"] == "vm-passthrough"


def test_nodes_that_read_alike_are_planned_once(
    gpuop: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_plan = plan_module.plan_node

    def counting_plan(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[1].name)
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(plan_module, "plan_node", counting_plan)
    nodes = [gpu_node(f"gpu-{index:04d}") for index in range(1000)] + [NODES[2]]
    run = gpuop("plan", "-f", "-", "-o", "json", input=json.dumps(kubectl_list(nodes)))
    assert run.code == 0, run.stderr
    documents = [json.loads(line) for line in run.stdout.splitlines()]
    assert calls == ["gpu-0000", "gpu-c"]
    assert [doc["node"] for doc in documents] == [node["metadata"]["name"] for node in nodes]
    assert documents[999] == {**documents[0], "node": "gpu-0999"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "stdin: no objects of the kinds gpuop plan -f reads (Node); it is empty"),
        (
            '{"kind": "List", "items": []}',
            "stdin: no objects of the kinds gpuop plan -f reads (Node); it is empty",
        ),
        ('{"kind": "List", "items": {"a": 1}}', "stdin: items is not a list"),
        (
            json.dumps(kubectl_list([NODES[0], {"metadata": {"name": "p"}}])),
            "stdin: items[1]: expected a Node manifest (kind: Node), got an object with no kind",
        ),
        (
            json.dumps(kubectl_list([{"metadata": {"name": "x"}}])),
            "stdin: items[0]: expected a Node manifest (kind: Node), got an object with no kind",
        ),
        (
            yaml.safe_dump_all([NODES[0], {"kind": "Node", "metadata": {"labels": ["a"]}}]),
            "stdin: document 2: metadata.labels is not a mapping",
        ),
        ("- a\n- b\n", "stdin: expected a Node manifest (kind: Node), got a list"),
        ("kind: [Node\n", "stdin: not valid YAML or JSON (line 2, column 1)"),
        ('{"kind": "Node",', "stdin: not valid YAML or JSON"),
    ],
)
def test_bad_input_is_one_line_with_exit_2(gpuop: RunCli, text: str, message: str) -> None:
    run = gpuop("plan", "-f", "-", input=text)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.startswith(f"error: {message}")
    assert run.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-f", "x.json", "--gpu", "A10"), "give -f/--nodes FILE alone, not with --node or --gpu"),
        (("-f", "x.json", "--node", "y.yaml"), "give -f/--nodes FILE alone"),
        (("-f", "-", "--policy", "-"), "--nodes and --policy cannot both read stdin"),
        (
            (
                "-f",
                "/nonexistent/nodes.json",
            ),
            "cannot read /nonexistent/nodes.json",
        ),
    ],
)
def test_bad_flags_are_one_line_with_exit_2(
    gpuop: RunCli, args: tuple[str, ...], message: str
) -> None:
    run = gpuop("plan", *args)
    assert run.code == 2
    assert run.stdout == ""
    assert message in run.stderr and run.stderr.startswith("error: ")
    assert run.stderr.count("\n") == 1


def test_a_dump_with_other_kinds_plans_its_nodes_and_says_what_it_left_out(
    gpuop: RunCli,
) -> None:
    """`kubectl get nodes,clusterpolicies,pods -A -o json | gpuop plan -f -`: the Nodes."""
    dump = kubectl_list([NODES[0], {"kind": "Pod", "metadata": {"name": "p"}}])
    run = gpuop("plan", "-f", "-", "-o", "name", input=json.dumps(dump))
    assert run.code == 0, run.stderr
    assert run.stdout.splitlines() == [f"node/{NODES[0]['metadata']['name']}"]
    assert "not read by gpuop plan -f: 1 Pod" in run.stderr
