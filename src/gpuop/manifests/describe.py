"""Nodes and Pods from `kubectl describe` output, the form most cluster states are posted in.

Bug reports and forum threads carry `kubectl describe node` far more often than
`kubectl get node -o yaml`, so `gpuop check` and the other readers take it as a dump: each
`Name:` block of a node becomes a Node with what the text shows (labels, annotations,
taints, `Unschedulable`, conditions, capacity, allocatable, system info), and each row of
its `Non-terminated Pods` table a Pod bound to it, known by namespace and name only. What
the text does not show (a pod's images, labels and requests) is left out rather than
guessed; `DescribedNodes.pods_without_specs` says so.

`kubectl describe pod` output (reports post it for an operand that does not start) is read
too: each pod block becomes a Pod with its node, labels, owner (`Controlled By`), node
selector, containers and init containers (image, GPU limits and requests, state, readiness,
restarts), phase and conditions, and each row of its Events table an Event about it (the
scheduler's `FailedScheduling` message says why a GPU pod waits).

    nodes = parse_describe(text)           # None when `text` is not describe output
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["DescribedNodes", "looks_like_describe", "parse_describe"]

_NAME_LINE: Final = re.compile(r"^Name:[ \t]+(\S+)[ \t]*$", re.M)
# Section headings only `kubectl describe node` prints at column 0.
_NODE_SECTION: Final = re.compile(r"^(Capacity|Allocatable|System Info|Non-terminated Pods):", re.M)
# And those only `kubectl describe pod` prints, or describe of a ClusterPolicy or KubeVirt CR.
_POD_SECTION: Final = re.compile(
    r"^(Controlled By|Init Containers|Containers):|^Kind:[ \t]+(ClusterPolicy|KubeVirt)[ \t]*$",
    re.M,
)
_POD_STATES: Final = {"Running": "running", "Waiting": "waiting", "Terminated": "terminated"}
_SECTION: Final = re.compile(r"^([A-Z][A-Za-z -]*):(?:[ \t]+(.*))?$")
_NODE_INFO_FIELDS: Final = {
    "Machine ID": "machineID",
    "System UUID": "systemUUID",
    "Boot ID": "bootID",
    "Kernel Version": "kernelVersion",
    "OS Image": "osImage",
    "Operating System": "operatingSystem",
    "Architecture": "architecture",
    "Container Runtime Version": "containerRuntimeVersion",
    "Kubelet Version": "kubeletVersion",
    "Kube-Proxy Version": "kubeProxyVersion",
}
_TAINT: Final = re.compile(r"^(?P<key>[^=:\s]+)(?:=(?P<value>[^:\s]*))?:(?P<effect>\w+)$")
_NONE: Final = "<none>"
# Marks a line that continues the one before it (see `_sections`).
_CONTINUED: Final = "\x00"


def looks_like_describe(text: str) -> bool:
    """Whether `text` is `kubectl describe node` or `describe pod` output (a `Name:` line
    and a section only those print)."""
    return bool(_NAME_LINE.search(text)) and bool(
        _NODE_SECTION.search(text) or _POD_SECTION.search(text)
    )


@dataclass
class DescribedNodes:
    """The Nodes and Pods read from describe output."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    nodes: int = 0
    pods_without_specs: int = 0
    # Pods of `kubectl describe pod` blocks, with their specs and statuses.
    described_pods: int = 0
    # ClusterPolicies and KubeVirt CRs of `kubectl describe` blocks.
    custom_resources: int = 0


def _blocks(lines: list[str]) -> Iterator[list[str]]:
    """The lines of each node, from its `Name:` line to the next one."""
    current: list[str] | None = None
    for line in lines:
        if _NAME_LINE.match(line):
            if current is not None:
                yield current
            current = [line]
        elif current is not None:
            current.append(line)
    if current is not None:
        yield current


def _sections(block: list[str]) -> dict[str, list[str]]:
    """Each column-0 heading's lines: the text after the heading, then the indented lines.

    A line indented past the column the heading's text starts at continues the line before
    it: kubectl prints an annotation longer than 140 characters as `key:` and its value on
    the next line, two columns further in. Such a line is kept with `_CONTINUED` before it.
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    column = 0
    for line in block:
        if not line.strip():
            continue
        heading = _SECTION.match(line) if not line[0].isspace() else None
        if heading is not None:
            current = sections.setdefault(heading.group(1), [])
            first = (heading.group(2) or "").strip()
            column = line.index(first) if first else 0
            if first:
                current.append(first)
        elif current is not None and line[0].isspace():
            indent = len(line) - len(line.lstrip())
            if not column:
                column = indent
            current.append(_CONTINUED + line.strip() if indent > column else line.strip())
        else:
            current = None
    return sections


def _pairs(lines: list[str], separator: str, *, continued: bool = False) -> dict[str, str]:
    """`key<separator>value` of each line; with `continued`, a line indented further adds
    to the value before it (annotations), else it is read as a line of its own."""
    found: dict[str, str] = {}
    last: str | None = None
    for line in lines:
        if line.startswith(_CONTINUED) and not continued:
            line = line.removeprefix(_CONTINUED)
        if line.startswith(_CONTINUED):
            if last is not None:  # a long value, on the lines after its key
                more = line.removeprefix(_CONTINUED)
                found[last] = f"{found[last]}\n{more}" if found[last] else more
            continue
        if line == _NONE:
            continue
        key, sep, value = line.partition(separator)
        if sep and key.strip():
            last = key.strip()
            found[last] = value.strip()
    return found


def _taints(lines: list[str]) -> list[dict[str, str]]:
    taints = []
    for line in lines:
        match = _TAINT.match(line.removeprefix(_CONTINUED))
        if match is None:
            continue
        taint = {"key": match.group("key"), "effect": match.group("effect")}
        if match.group("value"):
            taint["value"] = match.group("value")
        taints.append(taint)
    return taints


def _conditions(lines: list[str]) -> list[dict[str, str]]:
    """The Conditions table's rows: type and status, and the reason and message where the
    header places them (kubectl aligns every column under its heading)."""
    if not lines or not lines[0].removeprefix(_CONTINUED).startswith("Type"):
        return []
    header = lines[0].removeprefix(_CONTINUED)
    reason_at, message_at = header.find("Reason"), header.find("Message")
    rows = []
    for line in lines[1:]:
        line = line.removeprefix(_CONTINUED)
        parts = line.split()
        if len(parts) < 2 or line.startswith("---"):
            continue
        row = {"type": parts[0], "status": parts[1]}
        if 0 < reason_at < message_at:
            reason, message = line[reason_at:message_at].strip(), line[message_at:].strip()
            if reason:
                row["reason"] = reason
            if message:
                row["message"] = message
        rows.append(row)
    return rows


def _pod_rows(lines: list[str]) -> list[tuple[str, str]]:
    """(namespace, name) of each row of the pods table (after its `----` line)."""
    rows = []
    started = False
    for line in lines:
        line = line.removeprefix(_CONTINUED)
        if line.startswith("---"):
            started = True
            continue
        parts = line.split()
        if started and len(parts) >= 2 and not line.startswith("("):
            rows.append((parts[0], parts[1]))
    return rows


def _node(name: str, sections: dict[str, list[str]]) -> dict[str, Any]:
    metadata = _metadata(name, sections)
    annotations = _pairs(sections.get("Annotations", []), ":", continued=True)
    if annotations:
        metadata["annotations"] = annotations
    spec: dict[str, Any] = {}
    taints = _taints(sections.get("Taints", []))
    if taints:
        spec["taints"] = taints
    if _first(sections, "Unschedulable") == "true":
        spec["unschedulable"] = True
    status: dict[str, Any] = {}
    for heading, key in (("Capacity", "capacity"), ("Allocatable", "allocatable")):
        quantities = _pairs(sections.get(heading, []), ":")
        if quantities:
            status[key] = quantities
    conditions = _conditions(sections.get("Conditions", []))
    if conditions:
        status["conditions"] = conditions
    info = _pairs(sections.get("System Info", []), ":")
    node_info = {_NODE_INFO_FIELDS[k]: v for k, v in info.items() if k in _NODE_INFO_FIELDS}
    if node_info:
        status["nodeInfo"] = node_info
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": metadata}
    if spec:
        node["spec"] = spec
    if status:
        node["status"] = status
    return node


def _raw_section(block: list[str], heading: str) -> list[str]:
    """The lines under a column-0 heading, indentation kept (containers nest three deep)."""
    lines: list[str] = []
    inside = False
    for line in block:
        if line and not line[0].isspace():
            inside = line.startswith(heading + ":")
            continue
        if inside and line.strip():
            lines.append(line.rstrip())
    return lines


def _container_state(state: str, details: dict[str, str]) -> dict[str, Any]:
    """`State:  Waiting` and its `Reason:` as a containerStatuses state."""
    key = _POD_STATES.get(state.split()[0] if state else "", "waiting")
    found: dict[str, Any] = {}
    if "Reason" in details:
        found["reason"] = details["Reason"]
    if key == "terminated" and details.get("Exit Code", "").lstrip("-").isdigit():
        found["exitCode"] = int(details["Exit Code"])
    return {key: found}


def _containers(lines: list[str]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(spec, status) of each container of a `Containers:` or `Init Containers:` section:
    its name at the first indent, its fields one deeper, their details deeper still."""
    found: list[tuple[dict[str, Any], dict[str, Any]]] = []
    if not lines:
        return found
    name_indent = len(lines[0]) - len(lines[0].lstrip())
    fields: dict[str, str] = {}
    details: dict[str, dict[str, str]] = {}
    name: str | None = None
    current = ""

    def close() -> None:
        if name is None:
            return
        spec: dict[str, Any] = {"name": name}
        status: dict[str, Any] = {"name": name}
        if fields.get("Image"):
            spec["image"] = status["image"] = fields["Image"]
        resources = {
            key: {k: v for k, v in details.get(heading, {}).items() if k != "_"}
            for heading, key in (("Limits", "limits"), ("Requests", "requests"))
            if details.get(heading)
        }
        if resources:
            spec["resources"] = resources
        if "State" in fields:
            status["state"] = _container_state(fields["State"], details.get("State", {}))
        if fields.get("Ready") in ("True", "False"):
            status["ready"] = fields["Ready"] == "True"
        if fields.get("Restart Count", "").isdigit():
            status["restartCount"] = int(fields["Restart Count"])
        found.append((spec, status))

    for line in lines:
        indent = len(line) - len(line.lstrip())
        key, _, value = line.strip().partition(":")
        if indent <= name_indent:
            close()
            name, fields, details, current = key, {}, {}, ""
        elif indent <= name_indent + 2:
            current = key
            fields[key] = value.strip()
        elif current:
            details.setdefault(current, {})[key.strip()] = value.strip()
    close()
    return found


def _owner(value: str) -> list[dict[str, Any]]:
    """`Controlled By:  DaemonSet/nvidia-driver-daemonset` as an ownerReference."""
    kind, slash, name = value.partition("/")
    if not slash or not kind or not name:
        return []
    return [{"kind": kind, "name": name, "controller": True}]


def _events(lines: list[str], kind: str, name: str, namespace: str) -> list[dict[str, Any]]:
    """The Events table under a described object: type, reason, source and message, at the
    columns its header places them (an age such as `41s (x2 over 5m)` holds spaces)."""
    rows = [line.removeprefix(_CONTINUED) for line in lines]
    if not rows or not rows[0].startswith("Type"):
        return []
    header = rows[0]
    starts = [header.find(word) for word in ("Reason", "Age", "From", "Message")]
    if -1 in starts or starts != sorted(starts):
        return []
    reason_at, age_at, from_at, message_at = starts
    events: list[dict[str, Any]] = []
    for row in rows[1:]:
        if row.startswith("----") or len(row) <= message_at:
            continue
        event: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{len(events)}", "namespace": namespace},
            "involvedObject": {"kind": kind, "name": name, "namespace": namespace},
            "type": row[:reason_at].strip(),
            "reason": row[reason_at:age_at].strip(),
            "source": {"component": row[from_at:message_at].strip()},
            "message": row[message_at:].strip(),
        }
        events.append(event)
    return events


def _first(sections: dict[str, list[str]], heading: str) -> str:
    """The text on a heading's line (`Namespace:  kubevirt`), "" where there is none."""
    return (sections.get(heading) or [""])[0]


def _metadata(name: str, sections: dict[str, list[str]]) -> dict[str, Any]:
    """A described object's name, namespace and labels."""
    metadata: dict[str, Any] = {"name": name}
    namespace = _first(sections, "Namespace")
    if namespace:
        metadata["namespace"] = namespace
    labels = _pairs(sections.get("Labels", []), "=")
    if labels:
        metadata["labels"] = labels
    return metadata


def _pod(name: str, sections: dict[str, list[str]], block: list[str]) -> dict[str, Any]:
    metadata = _metadata(name, sections)
    owners = _owner(_first(sections, "Controlled By"))
    if owners:
        metadata["ownerReferences"] = owners
    spec: dict[str, Any] = {}
    node = _first(sections, "Node").split("/", 1)[0]
    if node and node != _NONE:
        spec["nodeName"] = node
    selector = _pairs(sections.get("Node-Selectors", []), "=")
    if selector:
        spec["nodeSelector"] = selector
    status: dict[str, Any] = {}
    phase = (_first(sections, "Status").split() or [""])[0]
    if phase:
        status["phase"] = "Running" if phase == "Terminating" else phase
    conditions = _conditions(sections.get("Conditions", []))
    if conditions:
        status["conditions"] = conditions
    for heading, spec_key, status_key in (
        ("Init Containers", "initContainers", "initContainerStatuses"),
        ("Containers", "containers", "containerStatuses"),
    ):
        containers = _containers(_raw_section(block, heading))
        spec[spec_key] = [container for container, _ in containers]
        statuses = [state for _, state in containers if len(state) > 1]
        if statuses:
            status[status_key] = statuses
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    if status:
        pod["status"] = status
    return pod


# `kubectl describe` prints a custom resource's fields as Title words ("Sandbox Workloads"),
# a list of maps as the maps one after another. These fields are lists: the ClusterPolicy's
# (`ClusterPolicySpec` and `ClusterPolicyStatus`, api/nvidia/v1 at v26.7.0) and the
# KubeVirt CR's that gpuop reads (`KubeVirtConfiguration`, kubevirt.io/api core/v1).
_LIST_FIELDS: Final = frozenset(
    {
        "args",
        "conditions",
        "env",
        "imagePullSecrets",
        "podLabelAllowlistRegex",
        "relabelings",
        "tolerations",
        "featureGates",
        "disabledFeatureGates",
        "pciHostDevices",
        "mediatedDevices",
        "usb",
        "mediatedDeviceTypes",
        "nodeMediatedDeviceTypes",
        "generations",
    }
)
_DESCRIBED_KINDS: Final = frozenset({"ClusterPolicy", "KubeVirt"})
_TITLE_WORDS: Final = re.compile(r"[A-Za-z-]+(?: [A-Za-z-]+)*")


def _field_name(label: str) -> str:
    """The JSON field kubectl's label came from: `Sandbox Workloads` -> `sandboxWorkloads`,
    `Use Nvidia Driver CRD` -> `useNvidiaDriverCRD`. Keys kubectl prints unchanged (with
    dots, slashes or digits: label keys) stay as they are."""
    if not _TITLE_WORDS.fullmatch(label):
        return label
    first, *rest = label.split(" ")
    return first.lower() + "".join(rest)


def _scalar(value: str) -> Any:
    if value in ("true", "false"):
        return value == "true"
    if value.isdigit() and (value == "0" or not value.startswith("0")):
        return int(value)
    return None if value == "<nil>" else value


def _tree(lines: list[str], start: int, indent: int) -> tuple[Any, int]:
    """The value whose lines begin at `start`, indented `indent`: a mapping, a list of
    mappings (a key met twice starts the next one), or a list of scalars."""
    entries: list[dict[str, Any]] = [{}]
    scalars: list[Any] = []
    index = start
    while index < len(lines):
        line = lines[index]
        depth = len(line) - len(line.lstrip())
        if depth < indent:
            break
        if depth > indent:
            index += 1  # deeper than any key here: a value's continuation
            continue
        key, colon, value = line.strip().partition(":")
        if not colon or (" " in key.strip() and not _TITLE_WORDS.fullmatch(key.strip())):
            scalars.append(_scalar(line.strip()))
            index += 1
            continue
        name = _field_name(key.strip())
        if name in entries[-1]:
            entries.append({})
        value = value.strip()
        following = lines[index + 1] if index + 1 < len(lines) else ""
        deeper = len(following) - len(following.lstrip())
        if not value and following.strip() and deeper > indent:
            child, index = _tree(lines, index + 1, deeper)
            if name in _LIST_FIELDS and isinstance(child, dict):
                child = [child]
            if child:  # a map of nothing but empty ones is empty too
                entries[-1][name] = child
        elif value:
            entries[-1][name] = [_scalar(value)] if name in _LIST_FIELDS else _scalar(value)
            index += 1
        else:  # an empty map, list or string: read as absent
            index += 1
    if scalars and entries == [{}]:
        return scalars, index
    return (entries[0] if len(entries) == 1 else entries), index


def _custom_resource(
    name: str, sections: dict[str, list[str]], block: list[str]
) -> dict[str, Any] | None:
    """A custom resource kubectl described (a ClusterPolicy, a KubeVirt CR): its spec and
    status."""
    kind = _first(sections, "Kind")
    api_version = _first(sections, "API Version")
    if kind not in _DESCRIBED_KINDS or not api_version:
        return None
    metadata = _metadata(name, sections)
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    for heading, field_name in (("Spec", "spec"), ("Status", "status")):
        lines = _raw_section(block, heading)
        if lines:
            value, _ = _tree(lines, 0, len(lines[0]) - len(lines[0].lstrip()))
            if isinstance(value, dict):
                obj[field_name] = value
    return obj


def _unquoted(text: str) -> str:
    """`text` without the `> ` an e-mail reply or a Markdown quote puts before every line."""
    if not text.lstrip().startswith(">"):
        return text  # not quoted: a large dump is not split into lines for nothing
    lines = text.split("\n")
    if not all(line.startswith(">") for line in lines if line.strip()):
        return text
    return "\n".join(line[2:] if line.startswith("> ") else line[1:] for line in lines)


def parse_describe(text: str) -> DescribedNodes | None:
    """The Nodes (and their pods) in `kubectl describe node` output; None for other text.

    Output pasted into a reply or a document is read as well: indented, quoted with `> `,
    or with Windows line ends."""
    text = _unquoted(text.replace("\r\n", "\n"))
    text = textwrap.dedent(text.expandtabs(8))
    if not looks_like_describe(text):
        return None
    result = DescribedNodes()
    lines = text.split("\n")
    for block in _blocks(lines):
        name_line = _NAME_LINE.match(block[0])
        assert name_line is not None
        sections = _sections(block[1:])
        name = name_line.group(1)
        if "Namespace" in sections and sections.keys() & {"Containers", "Controlled By", "Node"}:
            result.objects.append(_pod(name, sections, block[1:]))
            result.described_pods += 1
            namespace = _first(sections, "Namespace")
            result.objects.extend(_events(sections.get("Events", []), "Pod", name, namespace))
            continue
        if "Kind" in sections and "API Version" in sections:
            custom = _custom_resource(name, sections, block[1:])
            if custom is not None:
                result.objects.append(custom)
                result.custom_resources += 1
            continue
        if not sections.keys() & {"Capacity", "Allocatable", "System Info", "Labels"}:
            continue  # another kind's describe output
        result.objects.append(_node(name, sections))
        result.nodes += 1
        for namespace, pod in _pod_rows(sections.get("Non-terminated Pods", [])):
            result.objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": pod, "namespace": namespace},
                    "spec": {"nodeName": name, "containers": []},
                    "status": {"phase": "Running"},
                }
            )
            result.pods_without_specs += 1
    return result if result.nodes or result.described_pods or result.custom_resources else None
