"""Nodes and ClusterPolicies for the planner tests, built the way the cluster has them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from gpuop.api.labels import INVENTORY_ANNOTATION
from gpuop.catalog import gpu_catalog, operand_table
from gpuop.planner import NodePlan, plan
from gpuop.planner.inventory import GpuCard, encode_inventory
from gpuop.policy import ResolvedPolicy, default_policy_object, parse_cluster_policy

NFD = "feature.node.kubernetes.io/pci-10de.present"
NFD_0302 = "feature.node.kubernetes.io/pci-0302_10de.present"
NFD_0300 = "feature.node.kubernetes.io/pci-0300_10de.present"
PRESENT = "nvidia.com/gpu.present"
WORKLOAD = "nvidia.com/gpu.workload.config"
MIG_CONFIG = "nvidia.com/mig.config"
MIG_CAPABLE = "nvidia.com/mig.capable"
VGPU_CONFIG = "nvidia.com/vgpu.config"
OPERANDS_OFF = {"nvidia.com/gpu.deploy.operands": "false"}


def deploy(key: str) -> str:
    return operand_table().deploy_labels.prefix + key


def cards(model: str, count: int) -> list[GpuCard]:
    gpu = gpu_catalog().by_model(model)
    assert gpu is not None
    return [
        GpuCard(i, gpu.pci_device_id, model=gpu.model, memory_mib=gpu.memory_mib)
        for i in range(count)
    ]


def node(
    labels: Mapping[str, str] | None = None,
    *,
    gpus: tuple[str, int] | None = ("A10", 2),
    annotations: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str] | None = None,
    name: str = "node-1",
) -> dict[str, Any]:
    """A Node object; `gpus` writes the inventory annotation (None: no annotation)."""
    all_annotations = dict(annotations or {})
    if gpus is not None:
        all_annotations.setdefault(INVENTORY_ANNOTATION, encode_inventory(cards(*gpus)))
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {}), "annotations": all_annotations},
    }
    if allocatable is not None:
        obj["status"] = {"allocatable": dict(allocatable)}
    return obj


def gpu_node(labels: Mapping[str, str] | None = None, **kwargs: Any) -> dict[str, Any]:
    """A node NFD has seen an NVIDIA GPU on."""
    return node({NFD: "true", **(labels or {})}, **kwargs)


def make_policy(
    *,
    sandbox: bool = False,
    mode: str | None = None,
    default_workload: str | None = None,
    **blocks: dict[str, Any],
) -> ResolvedPolicy:
    """The default (Helm) ClusterPolicy, with sandbox settings and blocks merged in."""
    obj = copy.deepcopy(default_policy_object())
    spec = obj["spec"]
    spec["sandboxWorkloads"] = {"enabled": sandbox}
    if mode is not None:
        spec["sandboxWorkloads"]["mode"] = mode
    if default_workload is not None:
        spec["sandboxWorkloads"]["defaultWorkload"] = default_workload
    for block, value in blocks.items():
        spec[block] = {**spec.get(block, {}), **value}
    return parse_cluster_policy(obj)


def sandbox_policy(**kwargs: Any) -> ResolvedPolicy:
    return make_policy(sandbox=True, **kwargs)


def applied(obj: Mapping[str, Any], result: NodePlan) -> dict[str, Any]:
    """The node after the operator wrote the plan's label changes."""
    new = copy.deepcopy(dict(obj))
    labels = dict(new.get("metadata", {}).get("labels") or {})
    for key, value in result.label_changes.items():
        if value is None:
            labels.pop(key, None)
        else:
            labels[key] = value
    new.setdefault("metadata", {})["labels"] = labels
    return new


def final_labels(obj: Mapping[str, Any], result: NodePlan) -> dict[str, str]:
    labels = applied(obj, result)["metadata"]["labels"]
    assert isinstance(labels, dict)
    return labels


def deploy_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The `nvidia.com/gpu.deploy.*` labels, keyed without the prefix."""
    prefix = operand_table().deploy_labels.prefix
    return {k.removeprefix(prefix): v for k, v in labels.items() if k.startswith(prefix)}


def running(result: NodePlan) -> set[str]:
    return {op.name for op in result.running_operands()}


def status_of(result: NodePlan, name: str) -> str:
    return next(op.status for op in result.operands if op.name == name)


def plan_labels(
    policy: ResolvedPolicy, labels: Mapping[str, str], **kwargs: Any
) -> tuple[NodePlan, dict[str, str]]:
    """Plan a GPU-less-annotated node with these labels; the plan and the labels after it."""
    obj = node(labels, **kwargs)
    result = plan(policy, obj)
    return result, final_labels(obj, result)
