"""Pods from `kubectl get pods -o wide` output, as GPU Operator bug reports show them.

Most reports carry `kubectl get pods -n gpu-operator -o wide` (or `-A`): one row a pod,
with its readiness (`0/1`), its status as kubectl words it (`Init:CrashLoopBackOff`,
`Init:0/1`, `Running`) and, in the wide form, its node. Each row becomes a Pod bound to its
node, known by namespace and name (without `-A`, the namespace of the `-n` flag on a
pasted command line, else none). What the row shows goes in the fields kubectl derived it
from: the phase, the Ready condition, and the waiting reason of a container (an init
container's for `Init:`). Images, labels and owners are not shown, and are left out. A
table without the NODE column binds no pod to a node and is not read.

    pods = parse_pod_table(text)          # None when `text` is not such a table
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["PodTable", "parse_pod_table", "pasted_namespace"]

_HEADER: Final = re.compile(r"^(NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\b")
_READY: Final = re.compile(r"^(?P<ready>[0-9]+)/(?P<total>[0-9]+)$")
_NONE: Final = "<none>"
_NAMESPACE_FLAG: Final = re.compile(
    r"\bkubectl\b.*\s(?:-n|--namespace)(?:\s+|=)(?P<ns>[a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\s|$)"
)
_ANY_HEADER: Final = re.compile(
    r"^[ \t>]*(?:NAMESPACE[ \t]+)?NAME[ \t]+READY[ \t]+STATUS[ \t]+RESTARTS[ \t]+AGE[ \t]+IP[ \t]+NODE\b",
    re.M,
)
# kubectl's STATUS words for a pod that has not started its containers yet.
_PENDING: Final = frozenset({"Pending", "ContainerCreating", "PodInitializing"})


@dataclass
class PodTable:
    """The Pods read from the table."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    pods: int = 0


def _status(word: str, ready: str) -> dict[str, Any]:
    """The pod status kubectl's READY and STATUS columns were derived from."""
    counts = _READY.match(ready)
    is_ready = counts is not None and counts["ready"] == counts["total"] != "0"
    status: dict[str, Any] = {
        "conditions": [{"type": "Ready", "status": "True" if is_ready else "False"}]
    }
    if word == "Completed":
        status["phase"] = "Succeeded"
    elif word.startswith("Init:") or word in _PENDING:
        status["phase"] = "Pending"
    else:
        status["phase"] = "Running"
    if word.startswith("Init:"):
        status["initContainerStatuses"] = [
            {"ready": False, "state": {"waiting": {"reason": word.removeprefix("Init:")}}}
        ]
    elif word not in ("Running", "Completed"):
        status["containerStatuses"] = [{"ready": False, "state": {"waiting": {"reason": word}}}]
    return status


def _columns(header: str) -> dict[str, int]:
    """Where each column the reader needs starts (kubectl pads every column)."""
    starts: dict[str, int] = {}
    for name in ("NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "NODE"):
        found = re.search(rf"(?<!\S){name}(?!\S)", header)  # NODE: the first, before NOMINATED
        if found is not None:
            starts[name] = found.start()
    after = re.search(r"(?<!\S)NOMINATED NODE(?!\S)", header)
    starts["END"] = after.start() if after is not None else len(header) + 1024
    return starts


def pasted_namespace(lines: list[str], start: int) -> str:
    """The namespace of a table without -A (whose rows name none): the `-n X` of the
    kubectl command line pasted up to three lines above its header, else ""."""
    return next(
        (
            m["ns"]
            for line in reversed(lines[max(0, start - 3) : start])
            if (m := _NAMESPACE_FLAG.search(line))
        ),
        "",
    )


def _cell(row: str, start: int, end: int) -> str:
    return row[start:end].strip() if len(row) > start else ""


def parse_pod_table(text: str) -> PodTable | None:
    """The Pods of every `kubectl get pods -o wide` table in `text`; None if none.

    Pasted output (indented, with Windows line ends, among other commands' output and
    prose) is read; a line that is not a pod row ends a table."""
    if "RESTARTS" not in text or _ANY_HEADER.search(text) is None:
        return None  # a large YAML or JSON dump is not split into lines for nothing
    lines = text.replace("\r\n", "\n").expandtabs(8).split("\n")
    result = PodTable()
    for start, header in enumerate(lines):
        if _HEADER.match(header.strip()):
            _read_rows(lines, start, result)
    return result if result.pods else None


def _read_rows(lines: list[str], start: int, result: PodTable) -> None:
    header = lines[start]
    indent = len(header) - len(header.lstrip())
    cols = _columns(header[indent:])
    namespaced = "NAMESPACE" in cols
    given = pasted_namespace(lines, start)
    for line in lines[start + 1 :]:
        row = line[indent:].rstrip()
        if not row.strip():
            continue
        name = _cell(row, cols["NAME"], cols["READY"])
        ready = _cell(row, cols["READY"], cols["STATUS"])
        word = _cell(row, cols["STATUS"], cols["RESTARTS"])
        node = _cell(row, cols["NODE"], cols["END"])
        namespace = _cell(row, 0, cols["NAME"]) if namespaced else given
        cells = (name, ready, word, node)
        if not all(cells) or any(" " in cell for cell in cells) or not _READY.match(ready):
            break  # not a row of this table, or its columns are not aligned
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": []},
            "status": _status(word, ready),
        }
        if node != _NONE:
            pod["spec"]["nodeName"] = node
        result.objects.append(pod)
        result.pods += 1
