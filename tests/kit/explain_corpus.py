"""Random but reproducible scheduling cases, for checking against kube-scheduler.

:func:`generate_cases` draws small clusters (3 to 6 nodes) and one pod to
place on them, from a seeded :class:`random.Random`, so the same seed
always gives the same cases.  The nodes mix taints, labels, cordons,
capacities (cpu, memory, pod slots, and the GPU resources
``nvidia.com/gpu``, ``nvidia.com/GA102GL_A10`` and
``nvidia.com/NVIDIA_A10-12Q``, sometimes advertised at 0); the pod mixes
``nodeSelector``, required node affinity (all label operators, and
``metadata.name`` pins), tolerations, requests and limits (extended
resources as limits only or as equal requests and limits, as the API
requires), init and sidecar containers.  Optionally a few pods already
run on the nodes (all priority 0, tolerating every taint) to exercise
pod slots, host ports and used resources.

Everything the generator writes passes API validation, and names are DNS
labels: ``<prefix>-<seed>-<index>`` for a case, ``<case>-n<j>`` for its
nodes, ``<case>-pod`` for the pod.

Using a case against a real control plane (the differential test):

1. create the nodes (a Node's ``status`` may be set on create), then the
   existing pods, then the pod.  The TaintNodesByCondition admission
   plugin gives every new node ``node.kubernetes.io/not-ready:NoSchedule``:
   with a fake kubelet (kwok) and kube-controller-manager it goes away once
   the node is Ready; without them, patch ``spec.taints`` back to the
   case's taints;
2. wait until the pod is bound or has a ``PodScheduled=False`` condition;
3. read the nodes and pods back from the API server and give *those* to
   :func:`gpuop.explain.explain_pod`: controllers and admission plugins
   change them (the cordon taint, default tolerations), and the
   explainer must see what the scheduler saw;
4. compare: bound node in ``feasible``, or ``feasible`` empty and
   ``summary`` equal to the condition message.

That procedure was run by hand against kube-scheduler v1.37.2 (etcd,
kube-apiserver and kube-scheduler, no kubelet): 80 cases of series 3 with
``existing_pods=True`` agreed, 25 bound to a feasible node and 55 pending
with the very same message.

Every node carries the label ``corpus.gpuop.dev/case=<case>``; with
``isolate=True`` the pod also selects it, so cases can share a cluster
with other nodes (the summary then counts those nodes too).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from gpuop.api.labels import GPU_PRESENT_LABEL, GPU_TAINT_KEY, HOSTNAME_LABEL, WORKLOAD_LABEL

__all__ = ["CASE_LABEL", "EXTENDED_RESOURCES", "Case", "generate_case", "generate_cases"]

CASE_LABEL: Final = "corpus.gpuop.dev/case"
EXTENDED_RESOURCES: Final = (
    "nvidia.com/gpu",
    "nvidia.com/GA102GL_A10",
    "nvidia.com/NVIDIA_A10-12Q",
)

_POOLS: Final = ("gpu", "vgpu", "passthrough", "cpu")
_ZONES: Final = ("a", "b", "c")
_WORKLOADS: Final = ("container", "vm-passthrough", "vm-vgpu")
_CPUS: Final = ("500m", "2", "4", "8", "16")
_MEMORIES: Final = ("2Gi", "8Gi", "32Gi", "128Gi")
_POD_SLOTS: Final = ("110", "110", "110", "4", "2", "1")
_CPU_REQUESTS: Final = ("50m", "250m", "250m", "1", "1500m", "3", "12")
_MEMORY_REQUESTS: Final = ("64Mi", "512Mi", "1Gi", "6Gi", "48Gi")
_IMAGE: Final = "registry.k8s.io/pause:3.10"


@dataclass(frozen=True)
class Case:
    """One cluster state and one pod to place on it."""

    name: str
    nodes: tuple[dict[str, Any], ...]
    pod: dict[str, Any]
    existing_pods: tuple[dict[str, Any], ...] = field(default=())

    def objects(self) -> list[dict[str, Any]]:
        """Everything to create, in creation order."""
        return [*self.nodes, *self.existing_pods, self.pod]


def _label_pool(rng: random.Random, gpus: Mapping[str, int]) -> dict[str, str]:
    labels: dict[str, str] = {}
    if rng.random() < 0.8:
        labels["gpuop.dev/pool"] = rng.choice(_POOLS)
    if rng.random() < 0.7:
        labels["gpuop.dev/zone"] = rng.choice(_ZONES)
    if rng.random() < 0.6:
        labels[WORKLOAD_LABEL] = rng.choice(_WORKLOADS)
    if rng.random() < 0.7:
        labels["gpuop.dev/gpu-count"] = str(sum(gpus.values()))
    if gpus.get("nvidia.com/gpu") and rng.random() < 0.8:
        labels[GPU_PRESENT_LABEL] = "true"
    return labels


def _taints(rng: random.Random) -> list[dict[str, str]]:
    pool: list[dict[str, str]] = [
        {"key": GPU_TAINT_KEY, "value": "present", "effect": "NoSchedule"},
        {
            "key": "gpuop.dev/dedicated",
            "value": rng.choice(("ml", "vdi")),
            "effect": rng.choice(("NoSchedule", "NoExecute", "PreferNoSchedule")),
        },
        {"key": "gpuop.dev/maintenance", "effect": "NoExecute"},
        {"key": "gpuop.dev/sla", "value": str(rng.choice((100, 500, 950))), "effect": "NoSchedule"},
    ]
    count = rng.choices((0, 1, 2), weights=(7, 3, 1))[0]
    return rng.sample(pool, count)


def _node(
    rng: random.Random, name: str, case: str, annotations: Mapping[str, str]
) -> dict[str, Any]:
    gpus: dict[str, int] = {}
    for resource in EXTENDED_RESOURCES:
        if rng.random() < 0.5:
            gpus[resource] = rng.choice((0, 1, 2, 4, 4, 8))
    capacity: dict[str, str] = {
        "cpu": rng.choice(_CPUS),
        "memory": rng.choice(_MEMORIES),
        "pods": rng.choice(_POD_SLOTS),
        **{resource: str(count) for resource, count in gpus.items()},
    }
    allocatable = dict(capacity)
    if rng.random() < 0.5 and capacity["cpu"] != "500m":
        allocatable["cpu"] = f"{int(capacity['cpu']) * 1000 - 100}m"
    labels = {HOSTNAME_LABEL: name, CASE_LABEL: case, **_label_pool(rng, gpus)}
    spec: dict[str, Any] = {}
    taints = _taints(rng)
    if taints:
        spec["taints"] = taints
    if rng.random() < 0.1:
        spec["unschedulable"] = True
    metadata: dict[str, Any] = {"name": name, "labels": labels}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": allocatable},
    }


def _resources(rng: random.Random, extended: bool) -> dict[str, Any]:
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    if rng.random() < 0.8:
        cpu = rng.choice(_CPU_REQUESTS)
        style = rng.random()
        if style < 0.6:
            requests["cpu"] = cpu
        elif style < 0.8:
            limits["cpu"] = cpu  # the request defaults to the limit
        else:
            requests["cpu"] = cpu
            limits["cpu"] = "16"
    if rng.random() < 0.7:
        memory = rng.choice(_MEMORY_REQUESTS)
        if rng.random() < 0.7:
            requests["memory"] = memory
        else:
            limits["memory"] = memory
    if extended:
        for resource in rng.sample(EXTENDED_RESOURCES, rng.choice((1, 1, 2))):
            count = str(rng.choice((1, 1, 1, 2, 3, 8)))
            limits[resource] = count
            if rng.random() < 0.5:
                requests[resource] = count
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return resources


def _requirement(rng: random.Random) -> dict[str, Any]:
    choice = rng.random()
    if choice < 0.25:
        return {"key": "gpuop.dev/pool", "operator": "In", "values": rng.sample(_POOLS, 2)}
    if choice < 0.4:
        return {"key": "gpuop.dev/zone", "operator": "NotIn", "values": [rng.choice(_ZONES)]}
    if choice < 0.55:
        return {
            "key": rng.choice((GPU_PRESENT_LABEL, "gpuop.dev/zone")),
            "operator": rng.choice(("Exists", "DoesNotExist")),
        }
    if choice < 0.8:
        return {
            "key": "gpuop.dev/gpu-count",
            "operator": rng.choice(("Gt", "Lt")),
            "values": [str(rng.choice((0, 1, 3, 8)))],
        }
    return {
        "key": WORKLOAD_LABEL,
        "operator": "In",
        "values": [rng.choice(_WORKLOADS)],
    }


def _affinity(rng: random.Random, node_names: list[str]) -> dict[str, Any]:
    terms: list[dict[str, Any]] = []
    for _ in range(rng.choice((1, 1, 2))):
        term: dict[str, Any] = {}
        if rng.random() < 0.15:
            term["matchFields"] = [
                {"key": "metadata.name", "operator": "In", "values": [rng.choice(node_names)]}
            ]
            if rng.random() < 0.5:
                term["matchExpressions"] = [_requirement(rng)]
        else:
            term["matchExpressions"] = [_requirement(rng) for _ in range(rng.choice((1, 1, 2)))]
        terms.append(term)
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }


def _tolerations(rng: random.Random, comparison_operators: bool) -> list[dict[str, Any]]:
    pool: list[dict[str, Any]] = [
        {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
        {"key": "gpuop.dev/dedicated", "operator": "Equal", "value": rng.choice(("ml", "vdi"))},
        {"key": "gpuop.dev/maintenance", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "gpuop.dev/sla", "operator": "Equal", "value": "500", "effect": "NoSchedule"},
    ]
    if rng.random() < 0.05:
        pool.append({"operator": "Exists"})
    if comparison_operators:
        pool.append(
            {
                "key": "gpuop.dev/sla",
                "operator": rng.choice(("Gt", "Lt")),
                "value": str(rng.choice((200, 600))),
                "effect": "NoSchedule",
            }
        )
    return rng.sample(pool, rng.choice((0, 1, 2, 2, 3)))


def _container(name: str, resources: Mapping[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": _IMAGE}
    if resources:
        container["resources"] = dict(resources)
    return container


def _pod(
    rng: random.Random,
    case: str,
    namespace: str,
    node_names: list[str],
    node_labels: list[dict[str, str]],
    *,
    isolate: bool,
    comparison_operators: bool,
    with_ports: bool,
) -> dict[str, Any]:
    containers = [_container("main", _resources(rng, extended=rng.random() < 0.75))]
    if rng.random() < 0.25:
        containers.append(_container("helper", _resources(rng, extended=False)))
    spec: dict[str, Any] = {"containers": containers, "terminationGracePeriodSeconds": 0}
    if rng.random() < 0.2:
        init = _container("init", _resources(rng, extended=rng.random() < 0.3))
        if rng.random() < 0.4:
            init["restartPolicy"] = "Always"  # a sidecar
        spec["initContainers"] = [init]
    if with_ports and rng.random() < 0.3:
        containers[0]["ports"] = [{"containerPort": 8080, "hostPort": 18080}]

    selector: dict[str, str] = {}
    if rng.random() < 0.4:
        labels = rng.choice(node_labels)
        keys = [k for k in labels if k not in (HOSTNAME_LABEL, CASE_LABEL)]
        for key in rng.sample(keys, min(len(keys), rng.choice((1, 1, 2)))):
            selector[key] = labels[key] if rng.random() < 0.8 else "other"
    if isolate:
        selector[CASE_LABEL] = case
    if selector:
        spec["nodeSelector"] = selector
    if rng.random() < 0.4:
        spec["affinity"] = _affinity(rng, node_names)
    tolerations = _tolerations(rng, comparison_operators)
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{case}-pod", "namespace": namespace, "labels": {CASE_LABEL: case}},
        "spec": spec,
    }


def _existing_pod(
    rng: random.Random, case: str, namespace: str, index: int, node: str, with_ports: bool
) -> dict[str, Any]:
    container = _container("main", _resources(rng, extended=rng.random() < 0.5))
    if with_ports and rng.random() < 0.4:
        container["ports"] = [{"containerPort": 8080, "hostPort": 18080}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{case}-running-{index}",
            "namespace": namespace,
            "labels": {CASE_LABEL: case},
        },
        "spec": {
            "nodeName": node,
            "containers": [container],
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 0,
        },
    }


def _alone(case: Case, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The pod's spec reduced to a small pod that tolerates every taint, held to its case's
    nodes: the rule under test alone (spread constraints already drawn are kept)."""
    alone: dict[str, Any] = {
        "containers": [_container("main", {"requests": {"cpu": "50m"}})],
        "terminationGracePeriodSeconds": 0,
        "nodeSelector": {CASE_LABEL: case.name},
        "tolerations": [{"operator": "Exists"}],
    }
    if "topologySpreadConstraints" in spec:
        alone["topologySpreadConstraints"] = spec["topologySpreadConstraints"]
    return alone


def _peer(
    case: Case,
    namespace: str,
    name: str,
    node: str,
    labels: Mapping[str, str],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A pod of the case already running on `node` (bound by name), tolerating every taint."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {CASE_LABEL: case.name, **labels},
        },
        "spec": {
            "nodeName": node,
            "containers": [_container("main", {})],
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 0,
            **(extra or {}),
        },
    }


_SPREAD_KEYS: Final = ("gpuop.dev/zone", HOSTNAME_LABEL, "gpuop.dev/pool")
_REVISIONS: Final = ("1", "2")


def _spread_constraint(rng: random.Random, job: str, key: str) -> dict[str, Any]:
    """One topology spread constraint over the case's job label (and sometimes its
    revision, through `matchLabelKeys`), every field the API takes drawn."""
    hard = rng.random() < 0.85
    constraint: dict[str, Any] = {
        "maxSkew": rng.choice((1, 1, 1, 2)),
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"gpuop.dev/job": job}},
    }
    if rng.random() < 0.2:
        constraint["labelSelector"]["matchExpressions"] = [
            {"key": "gpuop.dev/tier", "operator": "NotIn", "values": ["batch"]}
        ]
    if hard and rng.random() < 0.25:
        constraint["minDomains"] = rng.choice((2, 3, 4))
    if rng.random() < 0.3:
        constraint["nodeAffinityPolicy"] = rng.choice(("Honor", "Ignore"))
    if rng.random() < 0.3:
        constraint["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
    if rng.random() < 0.25:
        constraint["matchLabelKeys"] = ["gpuop.dev/revision"]
    return constraint


def _spread_labels(rng: random.Random, job: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    if rng.random() < 0.75:
        labels["gpuop.dev/job"] = job
    if rng.random() < 0.5:
        labels["gpuop.dev/revision"] = rng.choice(_REVISIONS)
    if rng.random() < 0.2:
        labels["gpuop.dev/tier"] = "batch"
    return labels


def _add_spread(rng: random.Random, case: Case) -> Case:
    """The case with a spread-constrained pod and 0 to 6 pods of its job already running
    (drawn from `rng`, its own stream, so the other series keep their cases)."""
    job = f"{case.name}-job"
    pod = dict(case.pod)
    pod["metadata"] = {**pod["metadata"], "labels": {**pod["metadata"]["labels"]}}
    pod["metadata"]["labels"].update(_spread_labels(rng, job))
    pod["metadata"]["labels"]["gpuop.dev/job"] = job
    spec = dict(pod["spec"])
    if rng.random() < 0.5:
        spec = _alone(case, spec)
    # The API refuses two constraints with one topologyKey and whenUnsatisfiable.
    spec["topologySpreadConstraints"] = [
        _spread_constraint(rng, job, key) for key in rng.sample(_SPREAD_KEYS, rng.choice((1, 1, 2)))
    ]
    pod["spec"] = spec
    node_names = [node["metadata"]["name"] for node in case.nodes]
    namespace = pod["metadata"]["namespace"]
    running = list(case.existing_pods)
    for index in range(rng.choice((0, 1, 2, 3, 4, 6))):
        labels = _spread_labels(rng, job)
        name = f"{case.name}-member-{index}"
        running.append(_peer(case, namespace, name, rng.choice(node_names), labels))
    return Case(case.name, case.nodes, pod, tuple(running))


_AFFINITY_KEYS: Final = ("gpuop.dev/zone", HOSTNAME_LABEL, "gpuop.dev/pool")
_ROLES: Final = ("leader", "worker", "serve")


def _pod_term(rng: random.Random, group: str, namespace: str) -> dict[str, Any]:
    """A required pod (anti-)affinity term over the case's group, by role."""
    term: dict[str, Any] = {
        "topologyKey": rng.choice(_AFFINITY_KEYS),
        "labelSelector": {
            "matchLabels": {"gpuop.dev/group": group, "gpuop.dev/role": rng.choice(_ROLES)}
        },
    }
    if rng.random() < 0.3:
        del term["labelSelector"]["matchLabels"]["gpuop.dev/role"]
        term["labelSelector"]["matchExpressions"] = [
            {"key": "gpuop.dev/role", "operator": "In", "values": rng.sample(_ROLES, 2)}
        ]
    choice = rng.random()
    if choice < 0.15:
        term["namespaces"] = [namespace]
    elif choice < 0.25:
        term["namespaceSelector"] = {}
    elif choice < 0.35:
        term["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    elif choice < 0.4:
        term["namespaces"] = ["elsewhere"]
    if rng.random() < 0.15:
        term["matchLabelKeys"] = ["gpuop.dev/revision"]
    elif rng.random() < 0.1:
        term["mismatchLabelKeys"] = ["gpuop.dev/revision"]
    return term


def _group_labels(rng: random.Random, group: str) -> dict[str, str]:
    labels = {"gpuop.dev/group": group, "gpuop.dev/role": rng.choice(_ROLES)}
    if rng.random() < 0.5:
        labels["gpuop.dev/revision"] = rng.choice(_REVISIONS)
    return labels


def _affinity_section(rng: random.Random, group: str, namespace: str) -> dict[str, Any]:
    section: dict[str, Any] = {}
    if rng.random() < 0.6:
        section["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _pod_term(rng, group, namespace) for _ in range(rng.choice((1, 1, 2)))
            ]
        }
    if rng.random() < 0.6 or not section:
        section["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _pod_term(rng, group, namespace) for _ in range(rng.choice((1, 1, 2)))
            ]
        }
    return section


def _add_interpod(rng: random.Random, case: Case) -> Case:
    """The case with a pod that has required pod affinity and anti-affinity over its group,
    and 0 to 5 pods of the group already running, some with anti-affinity of their own
    (drawn from `rng`, its own stream)."""
    group = f"{case.name}-g"
    pod = dict(case.pod)
    namespace = pod["metadata"]["namespace"]
    pod["metadata"] = {**pod["metadata"], "labels": {**pod["metadata"]["labels"]}}
    pod["metadata"]["labels"].update(_group_labels(rng, group))
    spec = dict(pod["spec"])
    if rng.random() < 0.5:
        spec = _alone(case, spec)
    affinity = dict(spec.get("affinity", {}))
    affinity.update(_affinity_section(rng, group, namespace))
    spec["affinity"] = affinity
    pod["spec"] = spec
    node_names = [node["metadata"]["name"] for node in case.nodes]
    running = list(case.existing_pods)
    for index in range(rng.choice((0, 1, 2, 3, 5))):
        node = rng.choice(node_names)
        extra: dict[str, Any] = {}
        if rng.random() < 0.3:
            extra["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        _pod_term(rng, group, namespace)
                    ]
                }
            }
        labels = _group_labels(rng, group)
        running.append(_peer(case, namespace, f"{case.name}-peer-{index}", node, labels, extra))
    return Case(case.name, case.nodes, pod, tuple(running))


# What kubelets of v1.37 declare (`status.declaredFeatures`, sorted, as the API wants it).
_DECLARED: Final = (
    ("RestartAllContainersOnContainerExits",),
    ("ExtendWebSocketsToKubelet", "RestartAllContainersOnContainerExits"),
    ("ExtendWebSocketsToKubelet",),
)


def _add_features(rng: random.Random, case: Case) -> Case:
    """The case with a pod that may restart all its containers on an exit code (which
    NodeDeclaredFeatures sends only to nodes that declare it) and nodes that may declare
    that feature (drawn from `rng`, its own stream)."""
    nodes = []
    for original in case.nodes:
        node = {**original, "status": dict(original["status"])}
        if rng.random() < 0.5:
            node["status"]["declaredFeatures"] = list(rng.choice(_DECLARED))
        nodes.append(node)
    pod = dict(case.pod)
    spec = dict(pod["spec"])
    if rng.random() < 0.3:
        spec = _alone(case, spec)
    if rng.random() < 0.7:
        first, *others = spec["containers"]
        restarting = {
            **first,
            "restartPolicy": "Never",
            "restartPolicyRules": [
                {
                    "action": "RestartAllContainers",
                    "exitCodes": {"operator": "In", "values": [rng.choice((1, 42, 137))]},
                }
            ],
        }
        spec["containers"] = [restarting, *others]
    pod["spec"] = spec
    return Case(case.name, tuple(nodes), pod, case.existing_pods)


def generate_case(
    seed: int,
    index: int,
    *,
    prefix: str = "gx",
    namespace: str = "default",
    isolate: bool = False,
    existing_pods: bool = False,
    comparison_operators: bool = False,
    node_annotations: Mapping[str, str] | None = None,
    spread: bool = False,
    interpod: bool = False,
    features: bool = False,
) -> Case:
    """Case ``index`` of the series ``seed`` (the same arguments, the same case).

    ``existing_pods`` adds 0 to 3 pods already bound to the nodes (and host
    ports); ``comparison_operators`` allows ``Gt``/``Lt`` tolerations (the
    API server refuses them unless the TaintTolerationComparisonOperators
    gate is on); ``node_annotations`` go on every node (for instance
    ``{"kwok.x-k8s.io/node": "fake"}``); ``spread`` gives the pod topology spread
    constraints over its job's pods, some of which already run on the nodes;
    ``interpod`` gives it required pod affinity and anti-affinity over its group's pods,
    some of them running with anti-affinity of their own; ``features`` gives the pod a
    container that restarts all containers on an exit code, which needs a node that
    declares the feature (NodeDeclaredFeatures), and half the nodes such a declaration.
    """
    if seed < 0 or index < 0:
        raise ValueError("seed and index must not be negative")
    rng = random.Random(seed * 1_000_003 + index)
    case = f"{prefix}-{seed}-{index}"
    node_names = [f"{case}-n{j}" for j in range(rng.randint(3, 6))]
    nodes = tuple(_node(rng, name, case, node_annotations or {}) for name in node_names)
    node_labels = [node["metadata"]["labels"] for node in nodes]
    pod = _pod(
        rng,
        case,
        namespace,
        node_names,
        node_labels,
        isolate=isolate,
        comparison_operators=comparison_operators,
        with_ports=existing_pods,
    )
    running: tuple[dict[str, Any], ...] = ()
    if existing_pods:
        running = tuple(
            _existing_pod(rng, case, namespace, i, rng.choice(node_names), with_ports=True)
            for i in range(rng.choice((0, 1, 2, 3)))
        )
    made = Case(case, nodes, pod, running)
    if spread:
        made = _add_spread(random.Random(seed * 7_919 + index + 17), made)
    if interpod:
        made = _add_interpod(random.Random(seed * 104_729 + index + 31), made)
    if features:
        made = _add_features(random.Random(seed * 130_363 + index + 47), made)
    return made


def generate_cases(
    seed: int,
    count: int,
    *,
    prefix: str = "gx",
    namespace: str = "default",
    isolate: bool = False,
    existing_pods: bool = False,
    comparison_operators: bool = False,
    node_annotations: Mapping[str, str] | None = None,
    spread: bool = False,
    interpod: bool = False,
    features: bool = False,
) -> list[Case]:
    """Cases ``0 .. count-1`` of the series ``seed``; options as for :func:`generate_case`."""
    return [
        generate_case(
            seed,
            index,
            prefix=prefix,
            namespace=namespace,
            isolate=isolate,
            existing_pods=existing_pods,
            comparison_operators=comparison_operators,
            node_annotations=node_annotations,
            spread=spread,
            interpod=interpod,
            features=features,
        )
        for index in range(count)
    ]
