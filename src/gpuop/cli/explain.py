"""`gpuop explain`: why is it Pending?  kube-scheduler's verdict, node by node.

The command takes the workloads to explain (Pod, VirtualMachineInstance or VirtualMachine
manifests from files or `-`, `--pod`/`--vmi`/`--vm NAME -n NS` from the cluster, or
`--all-pending`) and a cluster (`--live`, or dumps with `--cluster FILE`), and runs
:func:`gpuop.explain.explain_pod` on each: per node, fits or not and the scheduler's reason,
then the scheduler's own `FailedScheduling` sentence.  VMIs and VMs are explained through
the virt-launcher pod KubeVirt would create (:mod:`gpuop.kubevirt.launcher`); when the
input holds a KubeVirt CR, devices missing from its `permittedHostDevices` are reported in
KubeVirt's own words, since no launcher pod is created at all then.

Exit status: 0 when every explained workload fits somewhere, 1 when one does not, 2 when
the input cannot be used (one line on stderr, never a traceback).
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

import click

from gpuop.api.labels import WORKLOAD_LABEL
from gpuop.api.resources import KIND_CONFIG, RESOURCE_PREFIX, normalised
from gpuop.cli import EXIT_INPUT
from gpuop.cli.common import emit_data, text_width
from gpuop.cli.inputs import (
    BUNDLE_MANIFEST,
    POD_TEMPLATES,
    InputError,
    input_paths,
    require_kinds,
    split_paths,
)
from gpuop.cli.inputs import pod_from_template as _pod_from_template
from gpuop.cli.layout import fit_lines
from gpuop.cli.live import LiveTarget, with_cluster_line
from gpuop.cli.options import filenames_option, live_options, output_option
from gpuop.cli.running import (
    GreedyClusterCommand,
    finish,
    guarded,
    objects_from_files,
    printable,
    quantity_problem,
    read_live_target,
)
from gpuop.explain import PodExplanation, explain_pod
from gpuop.explain.preemption import NO_VICTIMS, NOT_HELPFUL
from gpuop.kubevirt.launcher import (
    DeviceNotPermittedError,
    LauncherError,
    render_launcher_pod,
)
from gpuop.manifests import format_quantity
from gpuop.manifests.fields import get, mapping, sequence, text
from gpuop.naming import classify_resource

__all__ = [
    "EXIT_FITS",
    "EXIT_INPUT",
    "EXIT_UNSCHEDULABLE",
    "Explained",
    "Subject",
    "explain",
    "explain_objects",
    "explain_subjects",
    "render_text",
    "subjects_from_objects",
]

EXIT_FITS: Final = 0
EXIT_UNSCHEDULABLE: Final = 1

POD: Final = "Pod"
VMI: Final = "VirtualMachineInstance"
VM: Final = "VirtualMachine"
EXPLAINABLE: Final = (POD, VMI, VM)
_FINAL_PHASES: Final = ("Succeeded", "Failed")
_VMI_WAITING: Final = ("", "Pending", "Scheduling")
#: Beyond this many nodes, the text output groups rejected nodes by reason.
GROUP_NODES_ABOVE: Final = 40
_LIST_IN_GROUP: Final = 5


# --------------------------------------------------------------------------- subjects


@dataclass(frozen=True)
class Subject:
    """One workload to explain, and the pod that stands for it in the scheduler."""

    kind: str
    namespace: str
    name: str
    #: The pod to explain: the Pod itself, or the VMI's launcher pod.
    pod: dict[str, Any]
    #: For VMIs and VMs: "rendered" (by gpuop) or the launcher pod's namespace/name.
    launcher: str | None = None
    #: KubeVirt refuses to create the launcher pod (its words), or None.
    refusal: str | None = None
    #: Notes on how the subject was read (shown with the warnings).
    notes: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def title(self) -> str:
        return f"{self.kind} {self.key}"


def _describe(obj: Mapping[str, Any]) -> str:
    kind = text(obj, "kind") or "an object without a kind"
    name = text(obj, "metadata", "name")
    return f"{kind} {name!r}" if name else kind


def _check_list(obj: Mapping[str, Any], where: str, raw: Any) -> None:
    """Every entry of a resource list must be a quantity the API server would accept."""
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise InputError(f"{_describe(obj)}: {where} is a {type(raw).__name__}, not a mapping")
    for name, quantity in raw.items():
        problem = quantity_problem(quantity)
        if problem is not None:
            raise InputError(f"{_describe(obj)}: {where}.{str(name)[:80]}: {problem}")


def validate_quantities(obj: Mapping[str, Any]) -> None:
    """Raise :class:`InputError` on the first resource quantity the API server would refuse."""
    kind = text(obj, "kind")
    if kind == POD:
        spec = mapping(obj, "spec")
        for section in ("initContainers", "containers"):
            for index, container in enumerate(sequence(spec, section)):
                label = text(container, "name") or str(index)
                for part in ("requests", "limits"):
                    _check_list(
                        obj,
                        f"{section}[{label}].resources.{part}",
                        get(container, "resources", part),
                    )
        for part in ("requests", "limits"):
            _check_list(obj, f"spec.resources.{part}", get(spec, "resources", part))
        _check_list(obj, "spec.overhead", spec.get("overhead"))
        return
    spec = mapping(obj, "spec", "template", "spec") if kind == VM else mapping(obj, "spec")
    domain = mapping(spec, "domain")
    for part in ("requests", "limits"):
        _check_list(obj, f"spec.domain.resources.{part}", get(domain, "resources", part))
    guest = get(domain, "memory", "guest")
    if guest is not None:
        problem = quantity_problem(guest)
        if problem is not None:
            raise InputError(f"{_describe(obj)}: spec.domain.memory.guest: {problem}")


def validate_cluster(cluster: Sequence[Mapping[str, Any]]) -> None:
    """Raise :class:`InputError` on a quantity in a Node or Pod of a dump the API would refuse."""
    for obj in cluster:
        kind = obj.get("kind")
        if kind == POD:
            validate_quantities(obj)
        elif kind == "Node":
            for part in ("capacity", "allocatable"):
                _check_list(obj, f"status.{part}", get(obj, "status", part))


def _kubevirt_config(cluster: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for obj in cluster:
        if obj.get("kind") == "KubeVirt":
            return obj
    return None


def _permitted(kubevirt: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    found = get(kubevirt, "spec", "configuration", "permittedHostDevices")
    return found if isinstance(found, Mapping) else None


def _launcher_of(
    vmi: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The VMI's live launcher pod among `pods` (not finished), if any."""
    namespace = text(vmi, "metadata", "namespace") or "default"
    name = text(vmi, "metadata", "name")
    uid = text(vmi, "metadata", "uid")
    for pod in pods:
        if (text(pod, "metadata", "namespace") or "default") != namespace:
            continue
        if text(pod, "status", "phase") in _FINAL_PHASES:
            continue
        owned = any(
            text(owner, "kind") == VMI and text(owner, "name") == name
            for owner in sequence(pod, "metadata", "ownerReferences")
        )
        created_by = uid and text(pod, "metadata", "labels", "kubevirt.io/created-by") == uid
        if owned or created_by:
            return dict(pod)
    return None


def _gate_refusal(vmi: Mapping[str, Any], kubevirt: Mapping[str, Any] | None) -> str | None:
    if kubevirt is None:
        return None
    spec = (
        mapping(vmi, "spec", "template", "spec")
        if text(vmi, "kind") == VM
        else mapping(vmi, "spec")
    )
    if not any(text(d, "deviceName") for d in sequence(spec, "domain", "devices", "hostDevices")):
        return None
    gates = sequence(kubevirt, "spec", "configuration", "developerConfiguration", "featureGates")
    if "HostDevices" in gates:
        return None
    return "Host Devices feature gate is not enabled in kubevirt-config"


def _as_scheduled_now(pod: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """A copy of `pod` as the scheduler saw it before binding (a bound pod loses its node)."""
    result = copy.deepcopy(dict(pod))
    bound = text(pod, "spec", "nodeName")
    by_scheduler = any(
        text(c, "type") == "PodScheduled" and text(c, "status") == "True"
        for c in sequence(pod, "status", "conditions")
    )
    if bound and by_scheduler:
        spec = result.get("spec")
        if isinstance(spec, dict):
            spec.pop("nodeName", None)
        notes.append(
            f"already bound to {bound}: explained as if it were being scheduled now,"
            " without its own requests on that node"
        )
    return result


def pod_from_template(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The Pod a workload controller would create from its pod template."""
    return _pod_from_template({**obj, "kind": kind})


def _template_subject(obj: Mapping[str, Any], kind: str) -> Subject:
    pod = pod_from_template(obj, kind)
    validate_quantities(pod)
    note = f"explained through its pod template ({'.'.join(POD_TEMPLATES[kind])})"
    notes = [note]
    if kind == "DaemonSet":
        notes.append("a DaemonSet runs one pod per node: each node is one of its pods' places")
    return Subject(
        kind,
        text(obj, "metadata", "namespace") or "default",
        text(obj, "metadata", "name"),
        pod,
        notes=tuple(notes),
    )


def subject_for(
    obj: Mapping[str, Any],
    cluster: Sequence[Mapping[str, Any]],
    *,
    memory_overhead: str | None = None,
    use_live_launcher: bool = True,
) -> Subject:
    """The subject for one manifest; raises :class:`InputError` for anything unusable."""
    kind = text(obj, "kind")
    if kind in POD_TEMPLATES:
        return _template_subject(obj, kind)
    if kind not in EXPLAINABLE:
        raise InputError(
            f"{_describe(obj)} is not a Pod, VirtualMachineInstance, VirtualMachine or a"
            f" workload controller ({', '.join(POD_TEMPLATES)})"
        )
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, Mapping):
        raise InputError(f"{_describe(obj)}: spec is a {type(spec).__name__}, not a mapping")
    if kind == VM and not isinstance(get(obj, "spec", "template", "spec"), Mapping):
        raise InputError(f"{_describe(obj)}: spec.template.spec is missing")
    validate_quantities(obj)
    namespace = text(obj, "metadata", "namespace") or "default"
    name = text(obj, "metadata", "name")
    notes: list[str] = []
    if kind == POD:
        return Subject(kind, namespace, name, _as_scheduled_now(obj, notes), notes=tuple(notes))

    kubevirt = _kubevirt_config(cluster)
    permitted = _permitted(kubevirt)
    refusal: str | None = None
    try:
        render_launcher_pod(obj, permitted_host_devices=permitted)
    except DeviceNotPermittedError as exc:
        refusal = exc.condition_message
    except LauncherError:
        pass  # reported by the rendering below
    refusal = refusal or _gate_refusal(obj, kubevirt)
    live = None
    if use_live_launcher and kind == VMI:
        live = _launcher_of(obj, [o for o in cluster if o.get("kind") == POD])
    if live is not None:
        launcher = f"{text(live, 'metadata', 'namespace')}/{text(live, 'metadata', 'name')}"
        notes.append(f"explained through its launcher pod {launcher}")
        if refusal is not None:
            notes.append(f"KubeVirt would refuse its next launcher pod: {refusal}")
        return Subject(
            kind, namespace, name, _as_scheduled_now(live, notes), launcher, None, tuple(notes)
        )
    try:
        pod = render_launcher_pod(obj, memory_overhead=memory_overhead)
    except LauncherError as exc:
        raise InputError(f"{_describe(obj)}: {exc}") from None
    pod.setdefault("metadata", {}).setdefault("namespace", namespace)
    if memory_overhead is None:
        notes.append(
            "launcher pod rendered by gpuop: virt-launcher's own memory overhead is not"
            " included (--memory-overhead adds an estimate)"
        )
    return Subject(kind, namespace, name, pod, "rendered", refusal, tuple(notes))


def _select(
    cluster: Sequence[Mapping[str, Any]], kind: str, name: str, namespace: str
) -> Mapping[str, Any]:
    for obj in cluster:
        if (
            obj.get("kind") == kind
            and text(obj, "metadata", "name") == name
            and (text(obj, "metadata", "namespace") or "default") == namespace
        ):
            return obj
    raise InputError(f"{kind} {namespace}/{name} is not in the cluster input")


def _pending_pod(pod: Mapping[str, Any]) -> bool:
    return not text(pod, "spec", "nodeName") and text(pod, "status", "phase") in ("", "Pending")


def pending_objects(cluster: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Pending pods, and waiting VMIs that have no launcher pod in the input."""
    pods = [obj for obj in cluster if obj.get("kind") == POD]
    found: list[Mapping[str, Any]] = [pod for pod in pods if _pending_pod(pod)]
    for vmi in cluster:
        if vmi.get("kind") != VMI or text(vmi, "status", "phase") not in _VMI_WAITING:
            continue
        if _launcher_of(vmi, pods) is None:
            found.append(vmi)
    return found


def subjects_from_objects(
    objects: Sequence[Mapping[str, Any]],
    cluster: Sequence[Mapping[str, Any]],
    *,
    memory_overhead: str | None = None,
) -> list[Subject]:
    """A subject per object; the first object that cannot be explained raises InputError."""
    return [subject_for(obj, cluster, memory_overhead=memory_overhead) for obj in objects]


# --------------------------------------------------------------------------- explaining


@dataclass(frozen=True)
class Explained:
    """A subject and the engine's explanation of its pod."""

    subject: Subject
    explanation: PodExplanation
    #: For resources no node advertises: the workload config that would (None: none).
    advertised_by: dict[str, str | None] = field(default_factory=dict)
    #: Advertised names that differ only by case or punctuation from a missing request.
    near_misses: dict[str, list[str]] = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        return self.explanation.schedulable and self.subject.refusal is None

    def to_dict(self) -> dict[str, Any]:
        """The engine's JSON shape plus the subject, the launcher and KubeVirt's verdict."""
        data = self.explanation.to_dict()
        data["subject"] = {
            "kind": self.subject.kind,
            "name": self.subject.key,
            "launcher": self.subject.launcher,
        }
        data["fits"] = self.fits
        data["advertised_by"] = dict(self.advertised_by)
        data["near_misses"] = {k: list(v) for k, v in self.near_misses.items()}
        data["kubevirt_refusal"] = self.subject.refusal
        notes = list(self.subject.notes)
        data["warnings"] = notes + [w for w in data["warnings"] if w not in notes]
        return data


def workload_config_for(resource: str) -> str | None:
    """Which workload config's device plugin advertises `resource` (None: no NVIDIA plugin)."""
    return KIND_CONFIG.get(classify_resource(resource))


def _advertised(nodes: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for node in nodes:
        name = text(node, "metadata", "name")
        names: set[str] = set()
        for key in ("allocatable", "capacity"):
            names.update(str(k) for k in mapping(node, "status", key))
        for resource in names:
            found.setdefault(resource, []).append(name)
    return found


def relevant_pods(
    nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The pods the explainer counts: on a listed node (or nominated to one), not finished.

    The explainer ignores the others anyway; leaving them out spares it reading their
    requests once per explained pod.
    """
    names = {text(node, "metadata", "name") for node in nodes}
    return [
        pod
        for pod in pods
        if text(pod, "status", "phase") not in _FINAL_PHASES
        and (
            text(pod, "spec", "nodeName") in names
            or text(pod, "status", "nominatedNodeName") in names
        )
    ]


def explain_subjects(
    subjects: Sequence[Subject],
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
) -> list[Explained]:
    """Explain every subject against the same cluster state."""
    advertised = _advertised(nodes)
    pods = relevant_pods(nodes, pods)
    by_form: dict[str, list[str]] = {}
    for resource in advertised:
        by_form.setdefault(normalised(resource), []).append(resource)
    results = []
    for subject in subjects:
        explanation = explain_pod(subject.pod, nodes, pods)
        advertised_by = {r: workload_config_for(r) for r in explanation.never_fits_anywhere}
        near = {
            r: sorted(by_form[normalised(r)])
            for r in explanation.never_fits_anywhere
            if by_form.get(normalised(r))
        }
        results.append(Explained(subject, explanation, advertised_by, near))
    return results


# --------------------------------------------------------------------------- text output


def _amount(resource: str, amount: str) -> str:
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        try:
            return format_quantity(Decimal(amount), binary=True)
        except ArithmeticError:  # pragma: no cover - the engine gives integers
            return amount
    return amount


def _requests_line(explanation: PodExplanation) -> str:
    if not explanation.requests:
        return "requests: nothing (BestEffort)"
    return "requests: " + ", ".join(
        f"{name} {_amount(name, amount)}" for name, amount in explanation.requests
    )


def _never_fits_line(result: Explained, resource: str) -> str:
    config = result.advertised_by.get(resource)
    line = f"never fits anywhere: no node advertises {resource}"
    if config is not None:
        kind = classify_resource(resource)
        what = {
            "container": "the NVIDIA device plugin on container nodes",
            "passthrough": "the sandbox device plugin on vm-passthrough nodes (a PCI model name)",
            "vgpu": "the sandbox device plugin on vm-vgpu nodes (a vGPU type name)",
            "kata": "the Kata sandbox device plugin on vm-passthrough nodes",
        }[kind]
        line += (
            f"; it is advertised by {what}: label a node {WORKLOAD_LABEL}={config}"
            " or ask for the resource that workload config advertises"
        )
    elif resource.startswith(RESOURCE_PREFIX):
        line += "; no NVIDIA workload config advertises a resource of that name"
    near = result.near_misses.get(resource)
    if near:
        line += f" (nodes advertise {', '.join(near)}: names must match exactly)"
    return line


def _node_reason(verdict: Any) -> str:
    reasons = ", ".join(verdict.reasons) or "rejected"
    return f"{reasons} [{verdict.plugin}]" if verdict.plugin else reasons


def _node_lines(result: Explained, all_nodes: bool) -> list[str]:
    verdicts = result.explanation.nodes
    if not verdicts:
        return []
    lines: list[str] = []
    if all_nodes or len(verdicts) <= GROUP_NODES_ABOVE:
        width = min(max(len(v.name) for v in verdicts), 40)
        pad = " " * (width + 4)
        for verdict in verdicts:
            if verdict.fits:
                lines.append(f"  {verdict.name.ljust(width)}  fits")
                continue
            lines.append(f"  {verdict.name.ljust(width)}  no: {_node_reason(verdict)}")
            lines.extend(f"{pad}{detail}" for detail in verdict.details)
            extra = [p for p in verdict.preemption if p not in (NOT_HELPFUL, NO_VICTIMS)]
            lines.extend(f"{pad}preemption: {note}" for note in extra)
        return lines
    fitting = [v.name for v in verdicts if v.fits]
    if fitting:
        shown = ", ".join(fitting[:_LIST_IN_GROUP])
        more = f" and {len(fitting) - _LIST_IN_GROUP} more" if len(fitting) > _LIST_IN_GROUP else ""
        lines.append(f"  {len(fitting)} node(s) fit: {shown}{more}")
    groups: dict[str, list[str]] = {}
    for verdict in verdicts:
        if not verdict.fits:
            groups.setdefault(_node_reason(verdict), []).append(verdict.name)
    for reason, names in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        shown = ", ".join(names[:_LIST_IN_GROUP])
        more = f" and {len(names) - _LIST_IN_GROUP} more" if len(names) > _LIST_IN_GROUP else ""
        lines.append(f"  {len(names)} node(s) no: {reason}: {shown}{more}")
    lines.append("  (--all-nodes lists every node with its details)")
    return lines


def _verdict_line(result: Explained) -> str:
    explanation = result.explanation
    total = len(explanation.nodes)
    feasible = explanation.feasible
    if feasible:
        shown = ", ".join(feasible[:_LIST_IN_GROUP])
        more = (
            f" and {len(feasible) - _LIST_IN_GROUP} more" if len(feasible) > _LIST_IN_GROUP else ""
        )
        verdict = f"fits {len(feasible)} of {total} node(s): {shown}{more}"
        if result.subject.refusal is not None:
            verdict = f"blocked by KubeVirt (the launcher pod would fit {len(feasible)} of {total})"
        return verdict
    return f"fits none of {total} node(s)"


def render_result(result: Explained, *, all_nodes: bool = False) -> str:
    subject, explanation = result.subject, result.explanation
    lines = [f"{subject.title}: {_verdict_line(result)}"]
    if subject.launcher == "rendered":
        lines.append(f"  launcher pod: {text(subject.pod, 'metadata', 'name')} (rendered)")
    elif subject.launcher:
        lines.append(f"  launcher pod: {subject.launcher}")
    lines.append(f"  {_requests_line(explanation)}")
    if subject.refusal is not None:
        lines.append(f"  KubeVirt: {subject.refusal}")
        lines.append(
            "    virt-controller creates no launcher pod, so the VMI stays Pending"
            " (Synchronized=False, reason FailedCreate); the placement below is what would"
            " happen once KubeVirt accepts it (gpuop kubevirt permitted-devices)"
            if "permittedHostDevices" in subject.refusal
            else "    the VMI is refused at admission; add the gate to"
            " spec.configuration.developerConfiguration.featureGates"
        )
    lines.extend(_node_lines(result, all_nodes))
    if explanation.summary is not None:
        lines.append(f"  scheduler: {explanation.summary}")
    outcome = explanation.preemption
    if outcome.nominated_node is not None:
        chosen = next(c for c in outcome.candidates if c.node == outcome.nominated_node)
        lines.append(
            f"  preemption: would evict {', '.join(chosen.victims)} on {chosen.node}"
            " and nominate the pod there"
        )
    lines.extend(f"  {_never_fits_line(result, r)}" for r in explanation.never_fits_anywhere)
    seen: set[str] = set()
    for note in (*subject.notes, *explanation.warnings):
        if note not in seen:
            seen.add(note)
            lines.append(f"  note: {note}")
    return "\n".join(lines) + "\n"


def render_text(results: Sequence[Explained], *, all_nodes: bool = False) -> str:
    return "\n".join(render_result(r, all_nodes=all_nodes) for r in results)


# --------------------------------------------------------------------------- the command


def run_explain(
    manifests: Sequence[str],
    *,
    pod_name: str | None = None,
    vmi_name: str | None = None,
    vm_name: str | None = None,
    namespace: str | None = None,
    all_pending: bool = False,
    live: bool = False,
    kubeconfig: str | None = None,
    context: str | None = None,
    cluster_files: Sequence[str] = (),
    memory_overhead: str | None = None,
    target_out: list[LiveTarget] | None = None,
) -> tuple[list[Explained], bool]:
    """Everything `gpuop explain` does but printing: (results, whether JSON is a list).

    With --live, the cluster read is appended to `target_out` (for the header).
    """
    cluster_files = split_paths(cluster_files)
    named = [n for n in (pod_name, vmi_name, vm_name) if n]
    if not manifests and not named and not all_pending:
        raise InputError(
            "nothing to explain: give a MANIFEST file or '-' (or -f FILE),"
            " --pod/--vmi/--vm NAME, or --all-pending"
        )
    if live and cluster_files:
        raise InputError("give --cluster FILES or --live, not both")
    if not live and not cluster_files:
        raise InputError(
            "no cluster to explain against: give --cluster FILES (kubectl get nodes,pods -A"
            " -o json, a gpuop collect bundle) or --live"
        )
    if (kubeconfig or context) and not live:
        raise InputError("--kubeconfig and --context need --live")
    input_paths(manifests, cluster_files)  # '-' (stdin) at most once
    if namespace is not None and not named and not all_pending:
        raise InputError("-n/--namespace goes with --pod, --vmi, --vm or --all-pending")
    if memory_overhead is not None and quantity_problem(memory_overhead) is not None:
        raise InputError(f"--memory-overhead: {quantity_problem(memory_overhead)}")

    if live:
        kinds = ["Node", POD, "KubeVirt", VMI] + ([VM] if vm_name else [])
        cluster, target = read_live_target(kubeconfig, context, kinds)
        if target_out is not None:
            target_out.append(target)
    else:
        cluster = objects_from_files(cluster_files)
        # Without a Node every workload is "unschedulable": say the dump is wrong instead.
        require_kinds(cluster, ("Node",), "gpuop explain --cluster", cluster_files)
        validate_cluster(cluster)
        if any(os.path.isfile(os.path.join(f, BUNDLE_MANIFEST)) for f in cluster_files):
            click.echo(
                "gpuop: note: a gpuop collect bundle holds only the pods that use NVIDIA"
                " resources: cpu and memory other pods take are not counted (add a"
                " `kubectl get pods -A -o json` dump for those)",
                err=True,
            )
    sourced: list[tuple[str, Mapping[str, Any]]] = []
    for path in manifests:
        shown = "<stdin>" if path == "-" else path
        found = objects_from_files([path])
        if not found:  # an object of another kind is named below, with what explain takes
            require_kinds(found, (*EXPLAINABLE, *POD_TEMPLATES), "gpuop explain", [path])
        sourced.extend((shown, obj) for obj in found)
    wanted_ns = namespace or "default"
    for kind, name in ((POD, pod_name), (VMI, vmi_name), (VM, vm_name)):
        if name:
            sourced.append(("the cluster", _select(cluster, kind, name, wanted_ns)))
    if all_pending:
        for obj in pending_objects(cluster):
            if namespace is None or (text(obj, "metadata", "namespace") or "default") == namespace:
                sourced.append(("the cluster", obj))
    results = explain_objects(sourced, cluster, memory_overhead=memory_overhead)
    return results, all_pending or len(results) != 1


def explain_objects(
    sourced: Sequence[tuple[str, Mapping[str, Any]]],
    cluster: Sequence[Mapping[str, Any]],
    *,
    memory_overhead: str | None = None,
) -> list[Explained]:
    """Explain (source, object) pairs against the cluster's objects; no I/O.

    Raises :class:`InputError` (naming the source) for the first object that cannot be
    explained.
    """
    subjects = []
    for source, obj in sourced:
        try:
            subjects.append(subject_for(obj, cluster, memory_overhead=memory_overhead))
        except InputError as exc:
            raise InputError(f"{source}: {exc}") from None
    nodes = [obj for obj in cluster if obj.get("kind") == "Node"]
    pods = [obj for obj in cluster if obj.get("kind") == POD]
    return explain_subjects(subjects, nodes, pods)


@click.command("explain", cls=GreedyClusterCommand)
@click.argument("manifests", nargs=-1, metavar="[MANIFEST]...")
@filenames_option(
    "A workload to explain, as MANIFEST (file, directory or '-'); repeatable, or A,B."
)
@click.option("--pod", "pod_name", metavar="NAME", help="Explain this Pod of the cluster.")
@click.option("--vmi", "vmi_name", metavar="NAME", help="Explain this VMI of the cluster.")
@click.option("--vm", "vm_name", metavar="NAME", help="Explain this VirtualMachine of the cluster.")
@click.option(
    "-n", "--namespace", metavar="NS", help="Namespace for --pod/--vmi/--vm (default: default)."
)
@click.option(
    "--all-pending",
    is_flag=True,
    help="Explain every Pending pod (and waiting VMI) of the cluster.",
)
@live_options
@click.option(
    "--cluster",
    "cluster_files",
    multiple=True,
    metavar="FILE",
    help="A cluster dump: Node/Pod lists, `kubectl get nodes,pods -A -o json`, a `gpuop"
    " collect` bundle directory, or '-'. Repeatable, or A,B.",
)
@click.option(
    "--memory-overhead",
    metavar="QUANTITY",
    help="Add this to a rendered launcher pod's memory request (virt-launcher's overhead).",
)
@click.option("--all-nodes", is_flag=True, help="List every node even in large clusters.")
@output_option(
    "text",
    "wide",
    "json",
    "yaml",
    "name",
    help="Output format (json, yaml: the explainer's schema, a list when several pods;"
    " name: Kind/namespace/name of each workload that does not fit; wide: every node,"
    " lines not wrapped).",
)
def explain(
    manifests: tuple[str, ...],
    filenames: tuple[str, ...],
    pod_name: str | None,
    vmi_name: str | None,
    vm_name: str | None,
    namespace: str | None,
    all_pending: bool,
    live: bool,
    kubeconfig: str | None,
    context_name: str | None,
    cluster_files: tuple[str, ...],
    memory_overhead: str | None,
    all_nodes: bool,
    output: str,
) -> None:
    """Why is it Pending? Replay kube-scheduler's filters for a Pod, VMI or VM.

    \b
    Per node: fits, or the scheduler's reason (and the numbers behind it); then the
    scheduler's own FailedScheduling message. VMIs and VMs are explained through the
    virt-launcher pod KubeVirt creates for them; with a KubeVirt CR in the input, devices
    it does not permit are reported in KubeVirt's words. Deployments, ReplicaSets,
    StatefulSets, DaemonSets, Jobs and CronJobs are explained through their pod template.
    \b
      gpuop explain pod.yaml --cluster nodes.json --cluster pods.json
      kubectl get nodes,pods,kubevirts -A -o json > dump.json
      gpuop explain vmi.yaml --cluster dump.json -o json
      gpuop explain --cluster nodes.json,pods.json -f pod.yaml
      gpuop explain --pod trainer -n ml --live
      gpuop explain --all-pending --cluster ./bundle

    --cluster is repeatable and takes A,B; the older `MANIFEST --cluster A B` form still
    reads B as a cluster file when a MANIFEST (or --pod, --vmi, --vm, --all-pending) came
    first. With --live the text report names the cluster under its first line.

    Exit status: 0 every workload fits somewhere, 1 one does not, 2 unusable input.
    """

    def body() -> int:
        targets: list[LiveTarget] = []
        results, as_list = run_explain(
            input_paths(manifests, filenames),
            pod_name=pod_name,
            vmi_name=vmi_name,
            vm_name=vm_name,
            namespace=namespace,
            all_pending=all_pending,
            live=live,
            kubeconfig=kubeconfig,
            context=context_name,
            cluster_files=cluster_files,
            memory_overhead=memory_overhead,
            target_out=targets,
        )
        target = targets[0] if targets else None
        if output in ("json", "yaml"):
            named = {"cluster": target.to_dict()} if target is not None else {}
            documents = [{**r.to_dict(), **named} for r in results]
            data: Any = documents if as_list else documents[0]
            emit_data(data, output)
        elif output == "name":
            for result in results:
                if not result.fits:
                    sys.stdout.write(f"{result.subject.kind}/{result.subject.key}\n")
        elif not results:
            sys.stdout.write(with_cluster_line("no Pending pods or waiting VMIs\n", target))
        else:
            every = all_nodes or output == "wide"
            body_text = render_text(results, all_nodes=every)
            text_out = fit_lines(with_cluster_line(body_text, target), text_width(output))
            sys.stdout.write(printable(text_out))
        return EXIT_FITS if all(r.fits for r in results) else EXIT_UNSCHEDULABLE

    finish(guarded(body))
