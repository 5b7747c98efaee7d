"""The GPUs a node's machine has, against those its device plugin registers (GPU213, GPU214).

Cloud provisioners label a node with its machine's GPU count (Karpenter on AWS and Azure,
EKS Auto Mode, GKE: `catalog/instance-gpus.yaml`), and GKE's accelerator-optimized machine
types name it (`a3-highgpu-8g`); `gpuop.planner.machine` reads them. That count comes from
the cloud's catalogue, not from the node, so a plugin that registers fewer GPUs shows a GPU
the driver no longer sees (fallen off the bus) or one the plugin marked unhealthy (an XID
error): capacity counts every device the plugin registered, allocatable only the healthy
ones.

Where GPU feature discovery or gpuop's hint counts the cards, GPU205 and GPU206 compare
against that count instead; GKE's sharing and MIG pools are GKE's own check (GPU212).

A node whose machine has GPUs (by those labels, a cloud's accelerator label, or NFD's NVIDIA
PCI label) and that advertises no GPU resource at all has no working device plugin: none
runs there, or the one that runs found no GPU (GPU214). What manages the node says which
(`no_gpu_resource` in `catalog/managers.yaml`). The GPU Operator's nodes are its own rules'
(GPU207), and a node NVIDIA's DRA driver serves publishes ResourceSlices instead.
"""

from __future__ import annotations

from gpuop.api.resources import CONTAINER_RESOURCE, MIG_RESOURCE_PREFIX
from gpuop.catalog.managers import gke_contract, manager_catalog
from gpuop.check.context import CheckContext, NodeInfo, kind_of
from gpuop.check.managers import DRA_DRIVER, KUBEVIRT, Management
from gpuop.check.rule_types import Severity
from gpuop.planner.machine import unadvertised_gpus

# Inventory sources that count the cards themselves (GPU205/206 judge those nodes).
_COUNTED_SOURCES = ("gfd-labels", "annotation")
# The names one whole GPU is advertised under in containers (`.shared`: renameByDefault).
_CONTAINER_NAMES = (CONTAINER_RESOURCE, f"{CONTAINER_RESOURCE}.shared")


def _registered(info: NodeInfo, resource: str) -> int:
    raw = info.view.planned_capacity.get(resource, "")
    return int(raw) if raw.isdigit() else info.counts.get(resource, 0)


def check_machine_gpus(ctx: CheckContext, info: NodeInfo, found: tuple[int, str] | None) -> None:
    """GPU213 on the node, whose machine has the GPUs `machine_gpus` found (None: unknown)."""
    if found is None:
        return
    plan = info.plan
    if (
        plan is not None
        and plan.inventory.count_known
        and plan.inventory.source in _COUNTED_SOURCES
    ):
        return
    labels = info.view.labels
    gke = gke_contract().labels
    if gke.max_shared_clients in labels or gke.partition_size in labels:
        return
    if any(name.startswith(MIG_RESOURCE_PREFIX) for name in info.counts):
        return  # MIG's mixed strategy: whole GPUs and partitions are counted apart
    resources = [r for r in info.counts if r in _CONTAINER_NAMES or kind_of(r) == "passthrough"]
    healthy = sum(info.counts[r] for r in resources)
    gpus, why = found
    if healthy == 0 or healthy >= gpus:
        return  # none registered is GPU211's; more is sharing (time-slicing, MPS)
    registered = sum(_registered(info, r) for r in resources)
    shown = ", ".join(f"{r}: {info.counts[r]}" for r in sorted(resources))
    message = f"advertises {shown}, fewer than the {gpus} GPUs its machine has ({why})"
    if registered > healthy:
        unhealthy = registered - healthy
        message += (
            f": the device plugin registered {registered} and marks {unhealthy} unhealthy"
            " (capacity against allocatable)"
        )
        fix = (
            "the device plugin marks a GPU unhealthy on an XID error: `nvidia-smi -q` on"
            f" {info.name} shows which; reset or replace the GPU (or the node), then restart"
            " the device plugin"
        )
    else:
        fix = (
            f"the driver does not see every GPU: run `nvidia-smi -L` and `dmesg | grep -i"
            f" -e xid -e 'fallen off'` on {info.name}; replace the node if a GPU is gone"
        )
    ctx.add("GPU213", "Node", info.name, message, fix)


def check_gpus_unadvertised(
    ctx: CheckContext,
    info: NodeInfo,
    hardware: tuple[int | None, str] | None,
    management: Management,
) -> None:
    """GPU214 on a node whose machine has GPUs (`hardware`: its `gpu_hardware`, or NFD's
    label) and that advertises none (`planner.machine.unadvertised_gpus`), where no other
    rule or manager explains it."""
    if management.operator or {DRA_DRIVER, KUBEVIRT} & set(management.managers):
        # The operator's nodes are GPU207's; the DRA driver publishes slices, and
        # KubeVirt's plugin may name the cards outside nvidia.com/.
        return
    found = unadvertised_gpus(info.view.labels, info.view.resources, hardware)
    if found is None:
        return
    count, why = found
    gpus = "NVIDIA GPUs" if count is None else f"{count} NVIDIA GPU{'s' if count > 1 else ''}"
    message = f"its machine has {gpus} ({why}) but the node advertises no GPU resource"
    if info.view.taints:
        message += f" (tainted {', '.join(info.view.taints)})"
    catalog = manager_catalog()
    spec = catalog.managers.get(management.primary or "")
    fix = (spec.no_gpu_resource if spec is not None else "") or catalog.no_manager_no_gpu_resource
    severity: Severity | None = None
    if hardware is None and not management.managers:
        # NFD's label alone, nothing named on the node: NVIDIA's DRA driver may serve it
        # with neither its pod nor its ResourceSlices in the input.
        severity = "warning"
        fix += "; if NVIDIA's DRA driver serves the node, include its ResourceSlices"
    ctx.add("GPU214", "Node", info.name, message, fix, severity=severity)


__all__ = ["check_gpus_unadvertised", "check_machine_gpus"]
