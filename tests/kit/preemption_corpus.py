"""Random but reproducible cases where a pod can get in only by preempting others.

:func:`generate_case` draws 2 or 3 nodes of 4 cpus. One of them, the target, runs one to
three pods of distinct low priorities (so the scheduler's order of victims is never a
tie); the others are full of pods of the preemptor's own priority, or cordoned, so that
preemption has one node to choose and a deterministic answer. The pod to place asks for
cpu, and sometimes keeps away from (required anti-affinity) or spreads against (a
DoNotSchedule constraint over the host) pods of the target, so that affinity or spread,
not resources, is what victims must be evicted for. Sometimes a PodDisruptionBudget
(``maxUnavailable: 0``) covers some of the target's pods, which the scheduler then tries
to spare first.

The pod is created held by a scheduling gate; the test explains it (gates stripped), then
lifts the gate and watches what the scheduler evicts and where it binds the pod.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Final

from kit.fake_nodes import fake_node

__all__ = ["GATE", "PreemptionCase", "generate_case", "priority_classes"]

CASE_LABEL: Final = "corpus.gpuop.dev/case"
HOSTNAME: Final = "kubernetes.io/hostname"
PAUSE: Final = "registry.k8s.io/pause:3.10"
GATE: Final = "corpus.gpuop.dev/hold"
HIGH: Final = "corpus-high"
#: The target's pods' classes, least important first.
LOW: Final = ("corpus-low-1", "corpus-low-2", "corpus-low-3")


@dataclass(frozen=True)
class PreemptionCase:
    """One cluster state, its budgets and one pod to place on it."""

    name: str
    nodes: tuple[dict[str, Any], ...]
    existing_pods: tuple[dict[str, Any], ...]
    budgets: tuple[dict[str, Any], ...]
    pod: dict[str, Any]


def priority_classes() -> list[dict[str, Any]]:
    def priority_class(name: str, value: int) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }

    return [
        priority_class(HIGH, 1000),
        *(priority_class(n, 100 * (i + 1)) for i, n in enumerate(LOW)),
    ]


def _pod(
    name: str, namespace: str, cpu: str, priority: str, labels: dict[str, str], **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "containers": [
                {"name": "main", "image": PAUSE, "resources": {"requests": {"cpu": cpu}}}
            ],
            "priorityClassName": priority,
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 0,
            **spec,
        },
    }


def generate_case(
    seed: int, index: int, *, prefix: str = "px", namespace: str = "default"
) -> PreemptionCase:
    """Case ``index`` of the series ``seed`` (the same arguments, the same case)."""
    rng = random.Random(seed * 1_000_039 + index)
    case = f"{prefix}-{seed}-{index}"
    names = [f"{case}-n{j}" for j in range(rng.randint(2, 3))]
    target = rng.choice(names)
    nodes, running = [], []
    for name in names:
        allocatable = {"cpu": "4", "memory": "32Gi", "pods": "110"}
        spec: dict[str, Any] = {}
        if name != target and rng.random() < 0.3:
            spec["unschedulable"] = True
        nodes.append(fake_node(name, {CASE_LABEL: case, HOSTNAME: name}, allocatable, spec))
        if name != target and not spec:
            running.append(
                _pod(f"{name}-peer", namespace, "4", HIGH, {"role": "peer"}, nodeName=name)
            )
    roles = ["blocker", "member", "member"]
    rng.shuffle(roles)
    for i, priority in enumerate(rng.sample(LOW, rng.randint(1, 3))):
        cpu = str(rng.choice((1, 1, 2)))
        running.append(
            _pod(
                f"{target}-low{i}",
                namespace,
                cpu,
                priority,
                {"role": roles[i], "group": case},
                nodeName=target,
            )
        )
    want = rng.choice(("resources", "resources", "anti-affinity", "spread"))
    spec = {"nodeSelector": {CASE_LABEL: case}, "schedulingGates": [{"name": GATE}]}
    cpu = str(rng.randint(1, 4)) if want == "resources" else "1"
    if want == "anti-affinity":
        term = {
            "topologyKey": HOSTNAME,
            "labelSelector": {"matchLabels": {"role": "blocker", "group": case}},
        }
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
    elif want == "spread":
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": HOSTNAME,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"group": case}},
            }
        ]
    pod = _pod(f"{case}-pod", namespace, cpu, HIGH, {"group": case}, **spec)
    budgets = []
    if rng.random() < 0.4:
        budgets.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"{case}-pdb", "namespace": namespace},
                "spec": {
                    "maxUnavailable": 0,
                    "selector": {
                        "matchLabels": {"group": case, "role": rng.choice(("blocker", "member"))}
                    },
                },
            }
        )
    return PreemptionCase(case, tuple(nodes), tuple(running), tuple(budgets), pod)
