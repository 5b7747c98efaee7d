"""The one input layer: -f everywhere, limits, kinds read, --cluster, --live headers.

Every command that reads objects takes `-f/--filename FILE` (repeatable, `-`, directories,
Lists, multi-document YAML) with the same result as its positional FILES or older flag; every
YAML reader refuses an alias bomb fast; input over the size limit and input holding none of
the kinds a command reads are exit status 2 with one line.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from cli_support import REPO_ROOT, RunCli

from gpuop.kube import reads as kube_reads
from gpuop.manifests import MAX_ALIAS_EXPANSION, alias_growth

EXPLAIN = REPO_ROOT / "tests" / "corpus" / "explain"
NODES = str(EXPLAIN / "nodes.json")
PODS = str(EXPLAIN / "pods.json")
POD = str(EXPLAIN / "pod-gpu.yaml")
DUMP = str(REPO_ROOT / "tests" / "corpus" / "check" / "healthy-lab.json")
POLICY = str(REPO_ROOT / "tests" / "golden" / "upgrade" / "inputs" / "policy-26.3.2.yaml")


def billion_laughs(levels: int = 9, kind: str = "Node") -> str:
    """The classic alias bomb: 9 levels of 9 aliases, a billion strings when expanded."""
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        name, below = chr(97 + level), chr(96 + level)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{below}"] * 9) + "]")
    return "\n".join(lines) + f"\nkind: {kind}\nmetadata: {{name: n}}\n"


# Every command that reads YAML, with {} for the file.
YAML_READERS = {
    "check": ("check", "{}"),
    "check -f": ("check", "-f", "{}"),
    "check --policy": ("check", DUMP, "--policy", "{}"),
    "check --vgpu-config": ("check", DUMP, "--vgpu-config", "{}"),
    "check --config": ("check", DUMP, "--config", "{}"),
    "versions check": ("versions", "check", "{}"),
    "upgrade preview --dump": ("upgrade", "preview", "26.3.3", "26.7.0", "-f", "{}"),
    "explain": ("explain", "{}", "--cluster", NODES),
    "explain --cluster": ("explain", POD, "--cluster", "{}"),
    "kubevirt check": ("kubevirt", "check", "{}"),
    "kubevirt permitted-devices": ("kubevirt", "permitted-devices", "-f", "{}"),
    "kubevirt vmi-example --cluster": ("kubevirt", "vmi-example", "n", "--cluster", "{}"),
    "kubevirt vmi-example --values": (
        "kubevirt",
        "vmi-example",
        "--values",
        "{}",
        "--resource-from-values",
        "gpuResource",
    ),
    "plan --node": ("plan", "--node", "{}"),
    "plan -f": ("plan", "-f", "{}"),
    "plan --policy": ("plan", "--gpu", "A10", "--policy", "{}"),
    "policy validate": ("policy", "validate", "{}"),
    "policy validate -f": ("policy", "validate", "-f", "{}"),
    "audit --policy": ("audit", "--policy", "{}"),
    "render --policy": ("render", "--policy", "{}"),
    "render -f": ("render", "-f", "{}"),
    "render --nodes": ("render", "--policy", POLICY, "--nodes", "{}"),
    "check --live --kubeconfig": ("check", "--live", "--kubeconfig", "{}"),
}


def _argv(argv: tuple[str, ...], path: Path) -> list[str]:
    return [str(path) if arg == "{}" else arg for arg in argv]


def test_alias_growth_counts_each_container_once() -> None:
    shared = ["x"] * 10
    assert alias_growth({"a": shared, "b": shared, "c": shared}) == 2 * 11
    assert alias_growth({"a": [1, 2], "b": [3]}) == 0
    looped: list[Any] = []
    looped.append(looped)
    assert alias_growth(looped) > MAX_ALIAS_EXPANSION
    assert alias_growth(yaml.safe_load(billion_laughs())) > MAX_ALIAS_EXPANSION


@pytest.mark.parametrize("command", YAML_READERS)
def test_alias_bomb_is_refused_fast(gpuop: RunCli, tmp_path: Path, command: str) -> None:
    path = tmp_path / "bomb.yaml"
    kind = "ClusterPolicy" if "policy" in command or "render" in command else "Node"
    path.write_text(billion_laughs(kind=kind), encoding="utf-8")
    started = time.perf_counter()
    run = gpuop(*_argv(YAML_READERS[command], path))
    seconds = time.perf_counter() - started
    assert seconds < 5, f"{command}: {seconds:.1f} s"
    assert run.code == 2, (run.stdout, run.stderr)
    assert "alias bomb" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert "Traceback" not in run.stdout + run.stderr


def test_a_few_aliases_are_read(gpuop: RunCli, tmp_path: Path) -> None:
    """Anchors reused a few times (as Helm values do) are ordinary YAML."""
    path = tmp_path / "node.yaml"
    path.write_text(
        "kind: Node\nmetadata:\n  name: n\n  labels: &l {a: b}\n  annotations: *l\n",
        encoding="utf-8",
    )
    run = gpuop("plan", "--node", str(path), "-o", "json")
    assert run.code in (0, 1), run.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("check", "{}"),
        ("plan", "-f", "{}"),
        ("policy", "validate", "{}"),
        ("explain", POD, "--cluster", "{}"),
        ("names", "pci", "-f", "{}"),
    ],
)
def test_input_over_the_size_limit_is_one_line(
    gpuop: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"kind": "List", "items": [{"kind": "Node"}] * 200}))
    monkeypatch.setenv("GPUOP_MAX_INPUT_BYTES", "1000")
    run = gpuop(*_argv(argv, path))
    assert run.code == 2
    assert run.stderr == (
        f"error: {path}: larger than 1000 bytes, the most gpuop reads from one input"
        " (GPUOP_MAX_INPUT_BYTES raises it)\n"
    )


def test_stdin_over_the_size_limit(gpuop: RunCli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUOP_MAX_INPUT_BYTES", "100")
    run = gpuop("check", "-", input="x" * 500)
    assert run.code == 2 and "stdin: larger than 100 bytes" in run.stderr


# Command lines with the older form, and with -f: the same output.
SAME_WITH_F = {
    "check": (("check", DUMP), ("check", "-f", DUMP)),
    "versions check": (
        ("versions", "check", DUMP, "--today", "2026-01-01"),
        ("versions", "check", "-f", DUMP, "--today", "2026-01-01"),
    ),
    "kubevirt check": (("kubevirt", "check", NODES), ("kubevirt", "check", "-f", NODES)),
    "kubevirt permitted-devices": (
        ("kubevirt", "permitted-devices", NODES),
        ("kubevirt", "permitted-devices", "--filename", NODES),
    ),
    "kubevirt vmi-example": (
        ("kubevirt", "vmi-example", "a10-passthrough", "--cluster", NODES),
        ("kubevirt", "vmi-example", "a10-passthrough", "-f", NODES),
    ),
    "explain": (
        ("explain", POD, "--cluster", NODES),
        ("explain", "-f", POD, "--cluster", NODES),
    ),
    "plan": (("plan", "--nodes", NODES, "-o", "json"), ("plan", "-f", NODES, "-o", "json")),
    "policy validate": (("policy", "validate", POLICY), ("policy", "validate", "-f", POLICY)),
    "audit": (("audit", "--policy", POLICY, "-o", "json"), ("audit", "-f", POLICY, "-o", "json")),
    "render": (("render", "--policy", POLICY), ("render", "-f", POLICY)),
    "upgrade preview": (
        ("upgrade", "preview", "26.3.3", "26.7.0", "--dump", NODES, "--today", "2026-01-01"),
        ("upgrade", "preview", "26.3.3", "26.7.0", "-f", NODES, "--today", "2026-01-01"),
    ),
}


@pytest.mark.parametrize("command", SAME_WITH_F)
def test_f_reads_what_the_older_form_reads(gpuop: RunCli, command: str) -> None:
    old, new = SAME_WITH_F[command]
    before, after = gpuop(*old), gpuop(*new)
    assert before.code in (0, 1), before.stderr
    assert (after.code, after.stdout) == (before.code, before.stdout)


def test_f_is_repeatable_and_takes_a_comma_list(gpuop: RunCli, tmp_path: Path) -> None:
    data = json.loads(Path(NODES).read_text())
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({**data, "items": data["items"][:1]}))
    second.write_text(json.dumps({**data, "items": data["items"][1:]}))
    whole = gpuop("plan", "-f", NODES, "-o", "json").stdout
    assert gpuop("plan", "-f", str(first), "-f", str(second), "-o", "json").stdout == whole
    assert gpuop("plan", "-f", f"{first},{second}", "-o", "json").stdout == whole
    directory = tmp_path / "nodes"
    directory.mkdir()
    shutil.copy(first, directory / "1.json")
    shutil.copy(second, directory / "2.json")
    assert gpuop("plan", "-f", str(directory), "-o", "json").stdout == whole


def test_a_json_stream_on_stdin_is_read_as_kubectl_reads_it(gpuop: RunCli) -> None:
    nodes = [o for o in json.loads(Path(DUMP).read_text())["items"] if o["kind"] == "Node"]
    stream = "".join(json.dumps(node) + "\n" for node in nodes)  # jq -c '.items[]'
    whole = json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes})
    run = gpuop("check", "-", "-o", "json", input=stream)
    assert run.code in (0, 1), run.stderr
    assert run.stdout == gpuop("check", "-", "-o", "json", input=whole).stdout
    plan = gpuop("plan", "-f", "-", "-o", "json", input=stream)
    assert plan.code == 0, plan.stderr
    assert plan.stdout == gpuop("plan", "-f", "-", "-o", "json", input=whole).stdout
    # `--policy FILE` reads a stream too, and finds its one ClusterPolicy.
    policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"}}
    audit = gpuop("audit", "--policy", "-", "-o", "json", input=json.dumps(policy) + stream)
    assert audit.code == 0, audit.stderr


@pytest.mark.parametrize("command", [("check", "-"), ("plan", "-f", "-")], ids=" ".join)
def test_two_yaml_outputs_joined_without_a_separator_are_refused(
    gpuop: RunCli, command: tuple[str, ...]
) -> None:
    node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n"
    run = gpuop(*command, input=node + node.replace("name: a", "name: b"))
    assert run.code == 2 and "Traceback" not in run.stderr
    assert "'apiVersion' is given twice in one mapping (first on line 1)" in run.stderr
    assert "two documents joined without a '---' line between them?" in run.stderr
    assert run.stderr.startswith("error: stdin: ")


def test_stdin_once(gpuop: RunCli) -> None:
    run = gpuop("plan", "-f", "-", "-f", "-")
    assert run.code == 2 and run.stderr == "error: '-' (stdin) can be given once\n"


@pytest.mark.parametrize(
    "command",
    [("check",), ("versions", "check"), ("kubevirt", "check")],
    ids=" ".join,
)
def test_every_checker_takes_stdin_once_config_included(
    gpuop: RunCli, command: tuple[str, ...]
) -> None:
    run = gpuop(*command, "-", "--config", "-", input="{}")
    assert run.code == 2 and run.stderr == "error: '-' (stdin) can be given once\n"


def test_policy_validate_reads_multi_document_yaml_and_directories(
    gpuop: RunCli, tmp_path: Path
) -> None:
    policy = yaml.safe_load(Path(POLICY).read_text())
    broken = {**policy, "spec": {"driver": {"enabled": "maybe"}}}
    path = tmp_path / "policies.yaml"
    path.write_text(yaml.safe_dump_all([policy, broken]))
    run = gpuop("policy", "validate", str(path), "-o", "json")
    assert run.code == 2
    assert [result["valid"] for result in json.loads(run.stdout)] == [True, False]
    directory = tmp_path / "dir"
    directory.mkdir()
    shutil.copy(POLICY, directory / "cp.yaml")
    listed = gpuop("policy", "validate", "-f", str(directory), str(POLICY))
    assert listed.code == 0
    # Long temporary paths wrap the line; the count is of words, not lines.
    assert " ".join(listed.stdout.split()).count(": valid ClusterPolicy") == 2


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (("policy", "validate", "{}"), "gpuop policy validate"),
        (("plan", "-f", "{}"), "gpuop plan -f"),
        (("plan", "--node", "{}"), "gpuop plan --node"),
        (("plan", "--gpu", "A10", "--policy", "{}"), "gpuop plan --policy"),
        (("audit", "--policy", "{}"), "gpuop audit --policy"),
        (("render", "--policy", "{}"), "gpuop render --policy"),
        (("render", "-f", "{}"), "gpuop render -f"),
        (("explain", "{}", "--cluster", NODES), "gpuop explain"),
    ],
)
@pytest.mark.parametrize("text", ["", "null\n", '{"kind": "List", "items": []}'])
def test_empty_input_is_no_objects_of_the_kinds_read(
    gpuop: RunCli, tmp_path: Path, argv: tuple[str, ...], command: str, text: str
) -> None:
    if command == "gpuop plan --node" and "List" in text:
        pytest.skip("--node takes one Node; a List is refused as not one")
    path = tmp_path / "input.yaml"
    path.write_text(text)
    run = gpuop(*_argv(argv, path))
    assert run.code == 2, (run.stdout, run.stderr)
    assert f"no objects of the kinds {command} reads" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_render_takes_the_policy_and_nodes_from_f(gpuop: RunCli, tmp_path: Path) -> None:
    split = gpuop("render", "--policy", POLICY, "--nodes", NODES, "-o", "json")
    assert split.code == 0, split.stderr
    together = tmp_path / "all.yaml"
    nodes = json.loads(Path(NODES).read_text())
    together.write_text(yaml.safe_dump_all([yaml.safe_load(Path(POLICY).read_text()), nodes]))
    assert gpuop("render", "-f", str(together), "-o", "json").stdout == split.stdout
    both = gpuop("render", "-f", str(together), "--policy", POLICY)
    assert both.code == 2 and "not both" in both.stderr
    only_nodes = gpuop("render", "-f", NODES)
    assert only_nodes.code == 2 and "holding a ClusterPolicy" in only_nodes.stderr


def test_policy_from_a_list_holding_one(gpuop: RunCli, tmp_path: Path) -> None:
    """`kubectl get clusterpolicies -o yaml` is a List: --policy takes its one item."""
    path = tmp_path / "list.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [yaml.safe_load(Path(POLICY).read_text())],
            }
        )
    )
    direct = gpuop("plan", "--gpu", "A10", "--policy", POLICY, "-o", "json")
    listed = gpuop("plan", "--gpu", "A10", "--policy", str(path), "-o", "json")
    assert direct.code == listed.code
    assert json.loads(listed.stdout)["operands"] == json.loads(direct.stdout)["operands"]


def test_names_reads_values_from_f(gpuop: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "ids.txt"
    path.write_text("10de:2236\n# comment\n\n20b5\n")
    from_file = gpuop("names", "pci", "-f", str(path), "-o", "json")
    from_args = gpuop("names", "pci", "10de:2236", "20b5", "-o", "json")
    assert from_file.code == from_args.code == 0
    assert from_file.stdout == from_args.stdout


@pytest.mark.parametrize(
    ("kind", "template"),
    [
        ("Job", {"spec": {"template": "T"}}),
        ("StatefulSet", {"spec": {"template": "T"}}),
        ("DaemonSet", {"spec": {"template": "T"}}),
        ("ReplicaSet", {"spec": {"template": "T"}}),
        ("CronJob", {"spec": {"jobTemplate": {"spec": {"template": "T"}}}}),
    ],
)
def test_workload_controllers_are_read_through_their_pod_template(
    gpuop: RunCli, tmp_path: Path, kind: str, template: dict[str, Any]
) -> None:
    pod = yaml.safe_load(Path(POD).read_text())
    body = json.loads(
        json.dumps(template).replace(
            '"T"', json.dumps({"metadata": {"labels": {"app": "x"}}, "spec": pod["spec"]})
        )
    )
    path = tmp_path / "workload.yaml"
    path.write_text(
        yaml.safe_dump({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"}, **body})
    )
    through = gpuop("explain", "-f", str(path), "--cluster", NODES, "-o", "json")
    direct = gpuop("explain", POD, "--cluster", NODES, "-o", "json")
    assert through.code == direct.code, through.stderr
    assert json.loads(through.stdout)["subject"]["kind"] == kind
    assert json.loads(through.stdout)["feasible"] == json.loads(direct.stdout)["feasible"]


# --------------------------------------------------------------------------- --cluster


def test_vmi_example_cluster_does_not_swallow_the_node(gpuop: RunCli) -> None:
    after = gpuop("kubevirt", "vmi-example", "--cluster", NODES, "a10-passthrough")
    before = gpuop("kubevirt", "vmi-example", "a10-passthrough", "--cluster", NODES)
    assert after.code == before.code == 0, after.stderr
    assert after.stdout == before.stdout
    assert "nvidia.com/GA102GL_A10" in after.stdout


def test_old_greedy_cluster_form_still_reads_every_file(gpuop: RunCli) -> None:
    old = gpuop("explain", POD, "--cluster", NODES, PODS, "-o", "json")
    new = gpuop("explain", POD, "--cluster", NODES, "--cluster", PODS, "-o", "json")
    assert old.code == new.code and old.stdout == new.stdout


# --------------------------------------------------------------------------- --live header

KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: admin@lab
contexts:
- name: admin@lab
  context: {cluster: lab, user: admin}
clusters:
- name: lab
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: admin
  user: {}
"""
CLUSTER_LINE = "cluster lab (https://127.0.0.1:6443), context admin@lab"


@pytest.fixture
def live_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kubeconfig, and the explain corpus served as the cluster it names."""
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    objects = (
        json.loads(Path(NODES).read_text())["items"] + json.loads(Path(PODS).read_text())["items"]
    )

    def fake_read(client: Any, kinds: Any) -> Any:
        assert str(client.config.cluster.server) == "https://127.0.0.1:6443"
        return SimpleNamespace(objects=[obj for obj in objects if obj.get("kind") in kinds])

    monkeypatch.setattr(kube_reads, "read_cluster", fake_read)
    return str(path)


def test_explain_live_names_the_cluster(gpuop: RunCli, live_cluster: str) -> None:
    run = gpuop("explain", POD, "--live", "--kubeconfig", live_cluster)
    assert run.code in (0, 1), run.stderr
    assert run.stdout.splitlines()[1] == CLUSTER_LINE
    pending = gpuop("explain", "--all-pending", "--live", "--kubeconfig", live_cluster)
    assert CLUSTER_LINE in pending.stdout.splitlines()[:2]


def test_explain_live_json_names_the_cluster(gpuop: RunCli, live_cluster: str) -> None:
    import json as json_module

    from jsonschema import validate

    run = gpuop("explain", POD, "--live", "--kubeconfig", live_cluster, "-o", "json")
    document = json_module.loads(run.stdout)
    assert document["cluster"]["kubeconfig"] == live_cluster
    schema = json_module.loads(
        (Path(__file__).parents[3] / "docs" / "schemas" / "explain.schema.json").read_text()
    )
    validate(document, schema)


def test_kubevirt_check_live_names_the_cluster(gpuop: RunCli, live_cluster: str) -> None:
    run = gpuop("kubevirt", "check", "--live", "--kubeconfig", live_cluster)
    assert run.code in (0, 1), run.stderr
    assert run.stdout.splitlines()[1] == CLUSTER_LINE
    data = json.loads(
        gpuop("kubevirt", "check", "--live", "--kubeconfig", live_cluster, "-o", "json").stdout
    )
    assert data["cluster"]["cluster"] == "lab"


def test_permitted_devices_live_names_the_cluster(gpuop: RunCli, live_cluster: str) -> None:
    run = gpuop("kubevirt", "permitted-devices", "--live", "--kubeconfig", live_cluster)
    assert run.code in (0, 1), run.stderr
    assert f"gpuop: read {CLUSTER_LINE}" in run.stderr
    json.loads(run.stdout)  # the patch itself stays a plain merge patch


# --------------------------------------------------------------------------- toolkit


def test_configure_runtime_refuses_a_drop_in_the_glob_never_loads(
    gpuop: RunCli, tmp_path: Path
) -> None:
    config = tmp_path / "etc" / "containerd" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("version = 2\n")
    run = gpuop(
        "toolkit",
        "configure-runtime",
        "--root",
        str(tmp_path),
        "--import",
        "glob",
        "--drop-in",
        "/etc/containerd/conf.d/99-nvidia.tml",
    )
    assert run.code == 2
    assert "never loads it" in run.stderr
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.toml"]
    assert config.read_text() == "version = 2\n"


def test_values_are_edited_in_place_keeping_the_users_file(tmp_path: Path) -> None:
    """`vmi-example --values` changes one scalar: comments, quoting, `on` and order stay."""
    from gpuop.cli.inputs import write_values

    path = tmp_path / "values.yaml"
    original = (
        "# Lab values (edited by hand)\n"
        "replicas: 2\n"
        'gpuResource: "nvidia.com/old"   # set by gpuop\n'
        "feature: on\n"
        "nested:\n"
        "  # keep me\n"
        "  other: 'x'\n"
    )
    path.write_text(original)
    said = write_values(str(path), "gpuResource", "nvidia.com/GA102GL_A10")
    assert said == f"{path}: gpuResource: nvidia.com/old -> nvidia.com/GA102GL_A10"
    assert path.read_text() == original.replace("nvidia.com/old", "nvidia.com/GA102GL_A10")
    write_values(str(path), "nested.gpu", "nvidia.com/NVIDIA_A10-12Q")
    assert path.read_text().endswith("  other: 'x'\n  gpu: nvidia.com/NVIDIA_A10-12Q\n")
    assert "feature: on\n" in path.read_text()


def test_values_gpuop_cannot_edit_by_line_are_left_alone_with_what_to_set(
    tmp_path: Path,
) -> None:
    from gpuop.cli.common import UserError
    from gpuop.cli.inputs import write_values

    path = tmp_path / "values.yaml"
    path.write_text("gpuResource: {a: 1}\n")
    with pytest.raises(UserError, match=r"set gpuResource: nvidia\.com/x"):
        write_values(str(path), "gpuResource", "nvidia.com/x")
    assert path.read_text() == "gpuResource: {a: 1}\n"


def test_check_takes_the_release_by_either_name(gpuop: RunCli) -> None:
    by_version = gpuop("check", NODES, "--operator-version", "v25.10.0", "-o", "json")
    by_release = gpuop("check", NODES, "--operator-release", "v25.10.0", "-o", "json")
    assert by_version.code == by_release.code and by_version.stdout == by_release.stdout
    assert json.loads(by_release.stdout)["operator_release"]["version"] == "25.10.0"


def test_the_cli_says_what_describe_output_leaves_out(gpuop: RunCli) -> None:
    result = gpuop(
        "check",
        "-",
        "-o",
        "json",
        input=(
            Path(__file__).parents[2] / "data" / "describe" / "aks-gpu-two-nodes.txt"
        ).read_text(),
    )
    assert result.code == 1, result.stderr
    assert json.loads(result.stdout)["summary"]["objects"] == {"Node": 2, "Pod": 3}
    assert "`kubectl describe node` output: read 2 Nodes" in result.stderr
    assert "by name only" in result.stderr


def test_explain_refuses_nodes_whose_capacity_the_input_does_not_show(gpuop: RunCli) -> None:
    table = REPO_ROOT / "tests" / "data" / "tables" / "nodes-show-labels.txt"
    run = gpuop("explain", POD, "--cluster", str(table))
    assert run.code == 2
    assert "cpu-1, gpu-worker-1: no status.allocatable or capacity in the input" in run.stderr
    assert "Traceback" not in run.stderr
