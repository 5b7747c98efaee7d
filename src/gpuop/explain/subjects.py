"""What `gpuop explain` explains: the workloads (subjects) and the pod each stands for.

A Pod stands for itself (as the scheduler saw it before binding); a VirtualMachineInstance
or VirtualMachine for the virt-launcher pod KubeVirt creates for it (its live one when the
cluster holds it, else one rendered by :mod:`gpuop.kubevirt.launcher`); a workload
controller (Deployment, Job, CronJob, ...) for the Pod of its template. KubeVirt's refusals
(a device missing from `permittedHostDevices`, the HostDevices gate off) are kept with the
subject, since no launcher pod is created then. Every object that cannot be explained
raises :class:`SubjectError`, naming the object and the field. No I/O: the command reads
the inputs and prints.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from gpuop.api.labels import DRA_DRIVER_DEPLOY_LABEL, DRA_PLUGIN_NODE_LABEL
from gpuop.api.resources import KIND_CONFIG, RESOURCE_PREFIX, normalised
from gpuop.api.wording import value_kind
from gpuop.catalog.dra import dra_catalog
from gpuop.dra.model import DraInputError
from gpuop.explain import PodExplanation, explain_pod
from gpuop.explain.claims import DraCluster, pod_for_claim, read_dra
from gpuop.explain.engine import cluster_snapshot
from gpuop.explain.volumes import Storage, read_storage
from gpuop.kubevirt.launcher import (
    DeviceNotPermittedError,
    LauncherError,
    render_launcher_pod,
)
from gpuop.manifests import quantity_problem
from gpuop.manifests.fields import get, mapping, sequence, text
from gpuop.naming import classify_resource
from gpuop.planner.machine import (
    gpu_hardware,
    positive_quantity,
    shared_gpu_resources,
    unadvertised_gpus,
)

__all__ = [
    "EXPLAINABLE",
    "POD",
    "POD_TEMPLATES",
    "VM",
    "VMI",
    "Explained",
    "Subject",
    "SubjectError",
    "explain_objects",
    "explain_subjects",
    "pending_objects",
    "pod_from_template",
    "relevant_pods",
    "select_object",
    "subject_for",
    "subjects_from_objects",
    "validate_cluster",
    "validate_quantities",
    "workload_config_for",
]

POD: Final = "Pod"
VMI: Final = "VirtualMachineInstance"
VM: Final = "VirtualMachine"
CLAIM: Final = "ResourceClaim"
EXPLAINABLE: Final = (POD, VMI, VM, CLAIM)
_FINAL_PHASES: Final = ("Succeeded", "Failed")
_VMI_WAITING: Final = ("", "Pending", "Scheduling")

# Workload controllers and where their pod template is.
POD_TEMPLATES: Final = {
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


class SubjectError(ValueError):
    """An object that cannot be explained: the message names it and what is wrong."""


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
        raise SubjectError(f"{_describe(obj)}: {where} is {value_kind(raw)}, not a mapping")
    for name, quantity in raw.items():
        problem = quantity_problem(quantity)
        if problem is not None:
            raise SubjectError(f"{_describe(obj)}: {where}.{str(name)[:80]}: {problem}")


def validate_quantities(obj: Mapping[str, Any]) -> None:
    """Raise :class:`SubjectError` on the first resource quantity the API server would refuse."""
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
            raise SubjectError(f"{_describe(obj)}: spec.domain.memory.guest: {problem}")


def validate_cluster(cluster: Sequence[Mapping[str, Any]]) -> None:
    """Raise :class:`SubjectError` on a quantity in a Node or Pod of a dump the API would refuse."""
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


def _pod_from_template(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Pod a workload controller (Deployment, Job, CronJob, ...) would create."""
    kind = obj.get("kind")
    assert isinstance(kind, str) and kind in POD_TEMPLATES
    path = POD_TEMPLATES[kind]
    template: Any = obj
    for part in path:
        template = template.get(part) if isinstance(template, Mapping) else None
    where = ".".join(path)
    if not isinstance(template, Mapping):
        raise SubjectError(f"{_describe(obj)}: {where} is missing")
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        raise SubjectError(f"{_describe(obj)}: {where}.spec is missing")
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    template_metadata = template.get("metadata")
    labels = template_metadata.get("labels") if isinstance(template_metadata, Mapping) else None
    name = metadata.get("name") if isinstance(metadata.get("name"), str) else None
    namespace = metadata.get("namespace") if isinstance(metadata.get("namespace"), str) else None
    pod_metadata: dict[str, Any] = {
        "name": f"{name or kind.lower()}-pod",
        "namespace": namespace or "default",
    }
    if isinstance(labels, Mapping):
        pod_metadata["labels"] = copy.deepcopy(dict(labels))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_metadata,
        "spec": copy.deepcopy(dict(spec)),
    }


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
    """The subject for one manifest; raises :class:`SubjectError` for anything unusable."""
    kind = text(obj, "kind")
    if kind in POD_TEMPLATES:
        return _template_subject(obj, kind)
    if kind not in EXPLAINABLE:
        raise SubjectError(
            f"{_describe(obj)} is not a Pod, VirtualMachineInstance, VirtualMachine,"
            f" ResourceClaim or a workload controller ({', '.join(POD_TEMPLATES)})"
        )
    if kind == CLAIM:
        pod = pod_for_claim(obj)
        note = "explained through a pod that uses only this claim"
        namespace = text(pod, "metadata", "namespace")
        return Subject(kind, namespace, text(obj, "metadata", "name"), pod, notes=(note,))
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, Mapping):
        raise SubjectError(f"{_describe(obj)}: spec is {value_kind(spec)}, not a mapping")
    if kind == VM and not isinstance(get(obj, "spec", "template", "spec"), Mapping):
        raise SubjectError(f"{_describe(obj)}: spec.template.spec is missing")
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
        raise SubjectError(f"{_describe(obj)}: {exc}") from None
    pod.setdefault("metadata", {}).setdefault("namespace", namespace)
    if memory_overhead is None:
        notes.append(
            "launcher pod rendered by gpuop: virt-launcher's own memory overhead is not"
            " included (--memory-overhead adds an estimate)"
        )
    return Subject(kind, namespace, name, pod, "rendered", refusal, tuple(notes))


def select_object(
    cluster: Sequence[Mapping[str, Any]], kind: str, name: str, namespace: str
) -> Mapping[str, Any]:
    for obj in cluster:
        if (
            obj.get("kind") == kind
            and text(obj, "metadata", "name") == name
            and (text(obj, "metadata", "namespace") or "default") == namespace
        ):
            return obj
    raise SubjectError(f"{kind} {namespace}/{name} is not in the cluster input")


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
    """A subject per object; the first object that cannot be explained raises SubjectError."""
    return [
        subject_for(obj, cluster, memory_overhead=memory_overhead)
        for obj in _without_events(objects, lambda obj: obj)
    ]


_T = TypeVar("_T")


def _without_events(items: Sequence[_T], obj_of: Callable[[_T], Mapping[str, Any]]) -> list[_T]:
    """`items` less their Events, which are not subjects: `kubectl describe pod` output, the
    usual way a Pending pod is posted, carries the pod's Events after it. All of them when
    nothing else is there (then the Event is refused by name)."""
    return [item for item in items if obj_of(item).get("kind") != "Event"] or list(items)


@dataclass(frozen=True)
class Explained:
    """A subject and the engine's explanation of its pod."""

    subject: Subject
    explanation: PodExplanation
    #: For resources no node advertises: the workload config that would (None: none).
    advertised_by: dict[str, str | None] = field(default_factory=dict)
    #: Advertised names that differ only by case or punctuation from a missing request.
    near_misses: dict[str, list[str]] = field(default_factory=dict)
    #: Where an NVIDIA resource is advertised nowhere: the nodes whose machine has NVIDIA
    #: GPUs but that advertise none, as `node (the label that says so)`.
    silent_gpu_nodes: list[str] = field(default_factory=list)
    #: Where an NVIDIA resource is advertised nowhere: the nodes NVIDIA's DRA driver serves
    #: instead (its ResourceSlices, or the node labelled for its kubelet plugin), as
    #: `node (what says so)`: their GPUs are claimed, not requested by resource name.
    dra_gpu_nodes: list[str] = field(default_factory=list)
    #: Where an NVIDIA resource fits no node: the nodes that serve their GPUs under another
    #: vendor's sharing plugin's names instead (none of the NVIDIA resource asked for above
    #: 0), as `node (resource count, ...)`: ACK's sharing modes, Volcano, Tencent.
    shared_gpu_nodes: list[str] = field(default_factory=list)

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
        data["silent_gpu_nodes"] = list(self.silent_gpu_nodes)
        data["dra_gpu_nodes"] = list(self.dra_gpu_nodes)
        data["shared_gpu_nodes"] = list(self.shared_gpu_nodes)
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


# Labels that put a node's GPUs under NVIDIA's DRA driver: NVIDIA's install guide's, and
# the GPU Operator's GPUCluster deploy label for the kubelet plugin.
_DRA_NODE_LABELS: Final = (DRA_PLUGIN_NODE_LABEL, DRA_DRIVER_DEPLOY_LABEL)


def _dra_served(nodes: Sequence[Mapping[str, Any]], dra: DraCluster | None) -> dict[str, str]:
    """node -> what says NVIDIA's DRA driver serves its GPUs, for the nodes that advertise
    no NVIDIA resource: the driver's ResourceSlices of the node, or the node's label for its
    kubelet plugin (the GPU Operator's GPUCluster, NVIDIA's install guide)."""
    driver = dra_catalog().driver
    published = {
        s.node_name
        for s in (dra.slices if dra is not None else ())
        if s.node_name and s.driver == driver
    }
    found: dict[str, str] = {}
    for node in nodes:
        name = text(node, "metadata", "name")
        advertised = mapping(node, "status", "allocatable")
        if any(str(r).startswith(RESOURCE_PREFIX) and str(n) != "0" for r, n in advertised.items()):
            continue
        labels = mapping(node, "metadata", "labels")
        if name in published:
            found[name] = f"ResourceSlices of {driver}"
            continue
        for label in _DRA_NODE_LABELS:
            if labels.get(label) == "true":
                found[name] = f"{label}=true"
                break
    return found


def _silent_gpu_nodes(
    nodes: Sequence[Mapping[str, Any]], dra: DraCluster | None, served: Mapping[str, str]
) -> list[str]:
    """`node (why)` for each node whose machine has NVIDIA GPUs but that advertises no GPU
    resource (`planner.machine.unadvertised_gpus`) and that NVIDIA's DRA driver does not
    serve: no device plugin registered its GPUs (`gpuop check`'s GPU214 says why, per
    manager). `served`: the nodes NVIDIA's DRA driver serves (`_dra_served`)."""
    published = {s.node_name for s in (dra.slices if dra is not None else ()) if s.node_name}
    found = []
    for node in nodes:
        name = text(node, "metadata", "name")
        if name in published or name in served:
            continue
        resources = {*mapping(node, "status", "allocatable"), *mapping(node, "status", "capacity")}
        labels = {str(k): str(v) for k, v in mapping(node, "metadata", "labels").items()}
        silent = unadvertised_gpus(labels, map(str, resources), gpu_hardware(labels))
        if silent is not None:
            found.append(f"{name} ({silent[1]})")
    return found


def _sharing_nodes(nodes: Sequence[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    """(node, allocatable) of each node where another vendor's sharing plugin serves the
    cards (`planner.machine.shared_gpu_resources`): read once per run, as few nodes are."""
    return [
        (text(node, "metadata", "name"), allocatable)
        for node in nodes
        if shared_gpu_resources(allocatable := mapping(node, "status", "allocatable"))
    ]


def _shared_gpu_nodes(
    sharing: Sequence[tuple[str, Mapping[str, Any]]], wanted: Sequence[str]
) -> list[str]:
    """`node (resource count, ...)` for each of the `sharing` nodes (`_sharing_nodes`) that
    has none of the `wanted` NVIDIA resources above 0 (ACK's sharing modes set
    `nvidia.com/gpu` to 0; Volcano's and Tencent's plugins register none)."""
    found = []
    for name, allocatable in sharing:
        if any(positive_quantity(allocatable.get(resource)) for resource in wanted):
            continue
        shared = shared_gpu_resources(allocatable)
        listed_counts = ", ".join(f"{r} {shared[r]}" for r in sorted(shared))
        found.append(f"{name} ({listed_counts})")
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
    *,
    dra: DraCluster | None = None,
    budgets: Sequence[Mapping[str, Any]] = (),
    storage: Storage | None = None,
    on_each: Callable[[int], None] | None = None,
) -> list[Explained]:
    """Explain every subject against the same cluster state (its DRA objects,
    PodDisruptionBudgets and claims, volumes and storage classes)."""
    advertised = _advertised(nodes)
    pods = relevant_pods(nodes, pods)
    by_form: dict[str, list[str]] = {}
    for resource in advertised:
        by_form.setdefault(normalised(resource), []).append(resource)
    results = []
    snapshot = cluster_snapshot(nodes, pods, budgets=budgets, storage=storage)
    silent: list[str] | None = None
    by_dra: list[str] = []
    sharing = _sharing_nodes(nodes)
    for subject in subjects:
        explanation = explain_pod(subject.pod, (), (), dra=dra, snapshot=snapshot)
        advertised_by = {r: workload_config_for(r) for r in explanation.never_fits_anywhere}
        near = {
            r: sorted(by_form[normalised(r)])
            for r in explanation.never_fits_anywhere
            if by_form.get(normalised(r))
        }
        missing_nvidia = [
            r for r in explanation.never_fits_anywhere if r.startswith(RESOURCE_PREFIX)
        ]
        if missing_nvidia and silent is None:
            served = _dra_served(nodes, dra)
            silent = _silent_gpu_nodes(nodes, dra, served)
            by_dra = [f"{node} ({why})" for node, why in served.items()]
        quiet = list(silent or []) if missing_nvidia else []
        claimed = list(by_dra) if missing_nvidia else []
        wanted = [name for name, _ in explanation.requests if name.startswith(RESOURCE_PREFIX)]
        shared = (
            _shared_gpu_nodes(sharing, wanted) if wanted and not explanation.schedulable else []
        )
        results.append(Explained(subject, explanation, advertised_by, near, quiet, claimed, shared))
        if on_each is not None:
            on_each(len(results))
    return results


def explain_objects(
    sourced: Sequence[tuple[str, Mapping[str, Any]]],
    cluster: Sequence[Mapping[str, Any]],
    *,
    memory_overhead: str | None = None,
    on_each: Callable[[int], None] | None = None,
) -> list[Explained]:
    """Explain (source, object) pairs against the cluster's objects; no I/O. `on_each`
    hears how many are explained as the count grows.

    Raises :class:`SubjectError` (naming the source) for the first object that cannot be
    explained.
    """
    subjects = []
    for source, obj in _without_events(sourced, lambda pair: pair[1]):
        try:
            subjects.append(subject_for(obj, cluster, memory_overhead=memory_overhead))
        except SubjectError as exc:
            raise SubjectError(f"{source}: {exc}") from None
    nodes = [obj for obj in cluster if obj.get("kind") == "Node"]
    pods = [obj for obj in cluster if obj.get("kind") == POD]
    # A ResourceClaim given to explain joins the cluster's claims when the dump lacks it.
    known = {_claim_id(o) for o in cluster if o.get("kind") == CLAIM}
    given = [o for _, o in sourced if o.get("kind") == CLAIM and _claim_id(o) not in known]
    try:
        dra = read_dra([*cluster, *given], [text(n, "metadata", "name") for n in nodes])
        budgets = [obj for obj in cluster if obj.get("kind") == "PodDisruptionBudget"]
        storage = read_storage(cluster, pods)
        return explain_subjects(
            subjects, nodes, pods, dra=dra, budgets=budgets, storage=storage, on_each=on_each
        )
    except DraInputError as exc:
        raise SubjectError(str(exc)) from None


def _claim_id(obj: Mapping[str, Any]) -> tuple[str, str]:
    return (text(obj, "metadata", "namespace") or "default", text(obj, "metadata", "name"))
