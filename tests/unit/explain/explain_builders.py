"""Small builders for Node and Pod dicts, shaped like ``kubectl get -o json`` output."""

from __future__ import annotations

from typing import Any

GPU = "nvidia.com/gpu"
A10 = "nvidia.com/GA102GL_A10"
A10_12Q = "nvidia.com/NVIDIA_A10-12Q"


def node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    extended: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extended or {})}
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }


def container(
    name: str = "main",
    *,
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    ports: list[dict[str, Any]] | None = None,
    restart_policy: str | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {"name": name, "image": "pause"}
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    if resources:
        result["resources"] = resources
    if ports:
        result["ports"] = ports
    if restart_policy:
        result["restartPolicy"] = restart_policy
    return result


def pod(
    name: str = "p",
    *,
    namespace: str = "default",
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    containers: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "containers": containers or [container(requests=requests, limits=limits)],
        **spec,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": body,
    }


def bound(
    name: str,
    node_name: str,
    *,
    requests: dict[str, Any] | None = None,
    priority: int | None = None,
    ports: list[dict[str, Any]] | None = None,
    phase: str = "Running",
) -> dict[str, Any]:
    result = pod(name, containers=[container(requests=requests, ports=ports)], nodeName=node_name)
    if priority is not None:
        result["spec"]["priority"] = priority
    result["status"] = {"phase": phase}
    return result


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    result: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        result["values"] = list(values)
    return result
