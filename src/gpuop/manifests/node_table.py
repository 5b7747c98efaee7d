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
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["NodeTable", "key_value_list", "parse_node_table"]

_HEADER: Final = re.compile(r"^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\b.*\sLABELS\s*$")
_ANY_HEADER: Final = re.compile(
    r"^[ \t>]*NAME[ \t]+STATUS[ \t]+ROLES[ \t]+AGE[ \t]+VERSION\b", re.M
)
_NONE: Final = "<none>"


@dataclass
class NodeTable:
    """The Nodes read from the table."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    nodes: int = 0


def key_value_list(column: str) -> dict[str, str] | None:
    """`a=1,b=` (a label or selector column) as a mapping, `<none>` as an empty one; None
    where an item is not `key=value`."""
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
    """The Nodes of every `kubectl get nodes --show-labels` table in `text`; None if none.

    Output pasted into a report (indented, with Windows line ends, among other commands'
    output and prose) is read as well; a line that is not a node row ends a table."""
    if "LABELS" not in text or _ANY_HEADER.search(text) is None:
        return None  # a large YAML or JSON dump is not split into lines for nothing
    lines = text.replace("\r\n", "\n").expandtabs(8).split("\n")
    result = NodeTable()
    for start, header in enumerate(lines):
        if not _HEADER.match(header.strip()):
            continue
        for line in lines[start + 1 :]:
            row = line.strip()
            if not row:
                continue
            # The labels are the last column: no label holds a space, while -o wide's
            # OS-IMAGE does, so columns are not counted from the left.
            fields = row.split()
            labels = key_value_list(fields[-1]) if len(fields) >= 6 else None
            if labels is None:
                break
            result.objects.append(_node(row, labels))
            result.nodes += 1
    return result if result.nodes else None
