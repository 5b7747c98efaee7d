"""Nodes from `kubectl get nodes --show-labels` output, the other form node states are posted in.

A bug report often shows a cluster's nodes as the table `kubectl get nodes --show-labels`
(or `-o wide --show-labels`) prints: a header line, then one row per node whose last
column is the node's labels, `key=value` joined by commas. Label values cannot hold a
comma or a space, so the column splits cleanly. The table shows no capacity, allocatable
or pods, so each Node is made with labels, its kubelet version and whether it is cordoned,
and no `status.capacity`: the checks that compare what a node advertises skip it rather
than call it empty.

    nodes = parse_node_table(text)        # None when `text` is not such a table
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["NodeTable", "parse_node_table"]

_HEADER: Final = re.compile(r"^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\b.*\sLABELS\s*$")
_NONE: Final = "<none>"
# Where the header may be: after a command line or a prompt, not deep in a document.
_HEAD_LINES: Final = 20
_HEAD_CHARS: Final = 16384


@dataclass
class NodeTable:
    """The Nodes read from the table."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    nodes: int = 0


def _labels(column: str) -> dict[str, str] | None:
    """`a=1,b=` as a mapping; None where an item is not `key=value`."""
    if column == _NONE:
        return {}
    labels: dict[str, str] = {}
    for item in column.split(","):
        key, equals, value = item.partition("=")
        if not equals or not key:
            return None
        labels[key] = value
    return labels


def _node(row: str, labels: dict[str, str]) -> dict[str, Any]:
    name, status, _roles, _age, version, *_ = row.split()
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        # No capacity or allocatable: the table does not show them.
        "status": {"nodeInfo": {"kubeletVersion": version}},
    }
    if "SchedulingDisabled" in status.split(","):
        node["spec"] = {"unschedulable": True}
    return node


def parse_node_table(text: str) -> NodeTable | None:
    """The Nodes of `kubectl get nodes --show-labels` output; None for other text.

    Output pasted into a reply (indented, with Windows line ends) is read as well. Lines
    before the header (the command, a prompt) are skipped; a row that is not a node row
    ends the table."""
    head = text[:_HEAD_CHARS].replace("\r\n", "\n").split("\n")[:_HEAD_LINES]
    if not any(_HEADER.match(line.strip()) for line in head):
        return None  # a large YAML or JSON dump is not split into lines for nothing
    lines = textwrap.dedent(text.replace("\r\n", "\n").expandtabs(8)).split("\n")
    start = next(i for i, line in enumerate(lines) if _HEADER.match(line.strip()))
    result = NodeTable()
    for line in lines[start + 1 :]:
        row = line.strip()
        if not row:
            continue
        # The labels are the last column: no label holds a space, while -o wide's
        # OS-IMAGE does, so columns are not counted from the left.
        fields = row.split()
        labels = _labels(fields[-1]) if len(fields) >= 6 else None
        if labels is None:
            break
        result.objects.append(_node(row, labels))
        result.nodes += 1
    return result if result.nodes else None
