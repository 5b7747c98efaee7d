"""Loading Kubernetes objects from JSON and YAML text."""

from __future__ import annotations

import json
from itertools import accumulate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuop.manifests import ManifestError, load_objects, load_yaml_documents
from gpuop.manifests.loading import flow_nesting_exceeds, load_json_documents

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}


def test_single_json_object() -> None:
    assert load_objects(json.dumps(POD)) == [POD]


def test_single_yaml_object() -> None:
    assert load_objects("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n") == [POD]


def test_multi_document_yaml_skips_empty_documents() -> None:
    text = "---\nkind: Pod\n---\n\n---\nkind: Node\n...\n---\n"
    assert [o["kind"] for o in load_objects(text)] == ["Pod", "Node"]


def test_kubectl_list_is_flattened() -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": [POD, NODE], "metadata": {}}
    assert load_objects(json.dumps(listing)) == [POD, NODE]


def test_typed_list_items_get_kind_and_api_version() -> None:
    listing = {"apiVersion": "v1", "kind": "NodeList", "items": [{"metadata": {"name": "n"}}]}
    assert load_objects(json.dumps(listing)) == [NODE]


def test_nested_lists_and_null_items() -> None:
    text = json.dumps(
        {
            "kind": "List",
            "items": [
                {"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": "p"}}]},
                {"kind": "NodeList", "items": None},
            ],
        }
    )
    assert load_objects(text) == [POD]


def test_a_kind_ending_in_list_without_items_is_an_object() -> None:
    assert load_objects("kind: NetworkPolicyList\n") == [{"kind": "NetworkPolicyList"}]


def test_json_with_a_byte_order_mark_and_leading_space() -> None:
    assert load_objects("\ufeff  \n" + json.dumps(POD)) == [POD]


def test_a_json_stream_is_every_value_in_it() -> None:
    # `kubectl get node a -o json` once per node, or `jq -c '.items[]'`.
    other = {**POD, "metadata": {"name": "q"}}
    pretty = json.dumps(POD, indent=4) + "\n" + json.dumps(other, indent=4) + "\n"
    assert load_objects(pretty) == [POD, other]
    assert load_objects(json.dumps(POD) + json.dumps(other)) == [POD, other]
    lines = json.dumps({"kind": "List", "items": [POD]}) + "\n" + json.dumps(other) + "\n"
    assert load_objects(lines) == [POD, other]
    assert load_json_documents("[1]\n[2]") == [[1], [2]]
    assert load_json_documents("\n  [1] [2]\n") == [[1], [2]]  # space before the first


def test_a_broken_value_in_a_json_stream_is_named_by_line() -> None:
    with pytest.raises(ManifestError) as raised:
        load_objects(json.dumps(POD) + "\n{oops", "src.json")
    assert str(raised.value).startswith("src.json: line 2, column 2: not valid JSON")
    with pytest.raises(ManifestError) as raised:
        load_objects(json.dumps(POD) + "\n[3]", "src.json")
    assert "document 2" in str(raised.value)


def test_a_key_given_twice_is_refused_not_overwritten() -> None:
    # Two `kubectl get -o yaml` outputs appended to one file, no `---` between them: a YAML
    # reader keeps the second `items` and drops the first without a word.
    nodes = "apiVersion: v1\nitems:\n- kind: Node\n  metadata: {name: a}\nkind: List\n"
    pods = "apiVersion: v1\nitems:\n- kind: Pod\n  metadata: {name: p}\nkind: List\n"
    for load in (load_objects, lambda text, source: load_yaml_documents(text, source, fast=True)):
        with pytest.raises(ManifestError) as raised:
            load(nodes + pods, "dump.yaml")
        assert str(raised.value) == (
            "dump.yaml: document 1: line 6, column 1: not valid YAML: 'apiVersion' is given"
            " twice in one mapping (first on line 1); two documents joined without a '---'"
            " line between them?"
        )
    assert len(load_objects(nodes + "---\n" + pods)) == 2
    with pytest.raises(ManifestError, match="'x' is given twice in one mapping"):
        load_objects("kind: Node\nmetadata:\n  labels:\n    x: a\n    x: b\n")
    # A merge key's values are overridden by the mapping's own, as YAML has it.
    merged = load_objects("b: &b {x: 1}\nm:\n  <<: *b\n  x: 2\nkind: Node\n")
    assert merged[0]["m"] == {"x": 2}


def test_flow_yaml_that_is_not_json_still_loads() -> None:
    assert load_objects("{kind: Pod, metadata: {name: p}, apiVersion: v1}") == [POD]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Pod\n  bad: indent\n", "src.yaml: document 1: line 2, column 6: not valid YAML"),
        ("kind: Pod\n---\nkind: [\n", "src.yaml: document 2: line 4, column 1: not valid YAML"),
        (
            '{"kind": "Pod",\n "x": [}',
            "src.yaml: line 2, column 8: not valid JSON: Expecting value",
        ),
        (
            "- kind: Pod\n",
            "src.yaml: document 1: expected a Kubernetes object (a mapping), got a list",
        ),
        ("[1, 2]", "src.yaml: expected a Kubernetes object (a mapping), got a list"),
        (
            "just text\n",
            "src.yaml: document 1: expected a Kubernetes object (a mapping), got a string",
        ),
        ("metadata: {name: p}\n", "src.yaml: document 1: object has no 'kind'"),
        (
            "kind: List\nitems: {a: 1}\n",
            "src.yaml: document 1: object (List): 'items' is a mapping, not a list",
        ),
        (
            "kind: List\nitems: [3]\n",
            "src.yaml: document 1: object.items[0] is a number, not a Kubernetes object",
        ),
        (
            "kind: List\nitems: [{metadata: {}}]\n",
            "src.yaml: document 1: object.items[0] has no 'kind'",
        ),
    ],
)
def test_errors_name_source_document_and_line(text: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        load_objects(text, "src.yaml")
    assert str(caught.value).startswith(message)
    assert caught.value.source == "src.yaml"


def test_error_fields() -> None:
    with pytest.raises(ManifestError) as caught:
        load_objects("kind: Pod\n---\nkind: [\n", "x")
    error = caught.value
    assert (error.document, error.line, error.column) == (2, 4, 1)
    assert "YAML" in error.problem


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_any_text_loads_or_raises_manifest_error(text: str) -> None:
    try:
        objects = load_objects(text)
    except ManifestError:
        return
    assert all(isinstance(o, dict) and isinstance(o.get("kind"), str) for o in objects)


_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


@given(st.text(alphabet='[]{}a"', max_size=400), st.integers(1, 12))
def test_flow_nesting_is_the_deepest_run_of_open_brackets(text: str, limit: int) -> None:
    """The fast bound (innermost pairs removed pass by pass) agrees with counting level by
    level, on balanced text and on text that brackets in strings leave unbalanced."""
    depth = max(accumulate(_STEP[c] for c in text if c in _STEP), default=0)
    assert flow_nesting_exceeds(text, limit) == (depth > limit)


def test_a_kubectl_table_gpuop_does_not_read_is_named() -> None:
    table = "$ kubectl get pods -n gpu-operator\nNAME   READY   STATUS    RESTARTS   AGE\ndp-x   1/1     Running   0          1d\n"
    with pytest.raises(ManifestError, match="it is a `kubectl get` table") as caught:
        load_objects(table, "pods.txt")
    assert "get pods -o wide" in str(caught.value)
