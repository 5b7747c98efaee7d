"""DaemonSets from `kubectl get daemonsets` output, as GPU Operator bug reports show them.

Reports carry `kubectl get ds -n gpu-operator` (or `-A`, or `-o wide`) to show which
operands run: one row a DaemonSet, with its desired, current, ready, up-to-date and
available counts and its node selector (`nvidia.com/gpu.deploy.driver=true`; before
v1.7.0 of the operator, `nvidia.com/gpu.present=true`), and in the wide form its
containers and images. Each row becomes a DaemonSet with those fields where the API keeps
them (`status.desiredNumberScheduled`, ..., `spec.template.spec.nodeSelector`, the
template's containers), so the checks read it as they read a dumped one. Without `-A`, the
namespace is that of a `-n` flag on a pasted command line, else none.

    daemonsets = parse_daemonset_table(text)   # None when `text` is not such a table
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final

from gpuop.manifests.node_table import key_value_list
from gpuop.manifests.pod_table import pasted_namespace

__all__ = ["DaemonSetTable", "parse_daemonset_table"]

_COUNTS: Final = ("DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE")
_HEADER: Final = re.compile(
    r"^(?P<ns>NAMESPACE\s+)?NAME\s+DESIRED\s+CURRENT\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+"
    r"NODE SELECTOR\s+AGE(?P<wide>\s+CONTAINERS\s+IMAGES\s+SELECTOR)?\s*$"
)
_ANY_HEADER: Final = re.compile(
    r"^[ \t>]*(?:NAMESPACE[ \t]+)?NAME[ \t]+DESIRED[ \t]+CURRENT\b", re.M
)


@dataclass
class DaemonSetTable:
    """The DaemonSets read from the table."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    daemonsets: int = 0


def _daemonset(cells: list[str], namespace: str, wide: bool) -> dict[str, Any] | None:
    name, *numbers = cells[:6]
    selector = key_value_list(cells[6])
    if selector is None or not all(number.isdigit() for number in numbers):
        return None
    desired, current, ready, updated, available = (int(number) for number in numbers)
    status: dict[str, Any] = {
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": current,
        "numberReady": ready,
        "updatedNumberScheduled": updated,
        "numberAvailable": available,
    }
    if desired > available:
        status["numberUnavailable"] = desired - available
    template: dict[str, Any] = {"nodeSelector": selector} if selector else {}
    if wide:
        names, images = cells[8].split(","), cells[9].split(",")
        if len(names) == len(images):
            template["containers"] = [
                {"name": container, "image": image}
                for container, image in zip(names, images, strict=True)
            ]
    metadata = {"name": name, "namespace": namespace} if namespace else {"name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata,
        "spec": {"template": {"spec": template}},
        "status": status,
    }


def parse_daemonset_table(text: str) -> DaemonSetTable | None:
    """The DaemonSets of every `kubectl get daemonsets` table in `text`; None if none.

    Pasted output (indented, with Windows line ends, among other output and prose) is
    read; a line that is not a row ends a table."""
    if "UP-TO-DATE" not in text or _ANY_HEADER.search(text) is None:
        return None  # a large YAML or JSON dump is not split into lines for nothing
    lines = text.replace("\r\n", "\n").expandtabs(8).split("\n")
    result = DaemonSetTable()
    for start, line in enumerate(lines):
        header = _HEADER.match(line.strip().lstrip("> "))
        if header is None:
            continue
        given = pasted_namespace(lines, start)
        namespaced, wide = header["ns"] is not None, header["wide"] is not None
        width = 8 + (1 if namespaced else 0) + (3 if wide else 0)
        for row in lines[start + 1 :]:
            cells = row.strip().lstrip("> ").split()
            if not cells:
                continue
            if len(cells) != width:
                break  # not a row of this table
            namespace = cells.pop(0) if namespaced else given
            daemonset = _daemonset(cells, namespace, wide)
            if daemonset is None:
                break
            result.objects.append(daemonset)
            result.daemonsets += 1
    return result if result.daemonsets else None
