"""GKE's own device plugin: the `nvidia.com/gpu` count its node pool's labels give (GPU212).

GKE labels the nodes of a pool with GPU time-sharing or MPS with the clients each GPU takes,
and a MIG pool with the partition every card is split into; its plugin presents each GPU,
or each partition, as that many devices (`catalog/gke.yaml`, with the sources; the
partitions a card holds are mig-parted's default layouts). A count
that is not a multiple of what one GPU gives, or that is not what the machine's GPUs give
(`gke-accelerator-count`, or the machine type: `check.machine_gpus`), is a node whose plugin did not apply its pool's config (or a GPU it lost).
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuop.api.resources import CONTAINER_RESOURCE
from gpuop.catalog.managers import gke_contract
from gpuop.check.context import CheckContext, NodeInfo
from gpuop.planner.machine import machine_gpus


def _devices_per_gpu(labels: Mapping[str, str]) -> tuple[int, list[str]] | None:
    """(devices one GPU gives, what says so), or None when the labels set no sharing."""
    names = gke_contract().labels
    per_gpu, why = 1, []
    partition = labels.get(names.partition_size)
    if partition:
        accelerator = labels.get(names.accelerator, "")
        partitions = gke_contract().partitions(accelerator, partition)
        if partitions is None:
            return None  # a card or profile not in the table: nothing to count against
        per_gpu *= partitions
        why.append(f"{partitions} {partition} partitions on each {accelerator}")
    clients = labels.get(names.max_shared_clients, "")
    if clients.isdigit() and int(clients) > 1:
        per_gpu *= int(clients)
        strategy = labels.get(names.sharing_strategy) or "sharing"
        why.append(f"{strategy} by {clients} clients")
    return (per_gpu, why) if why else None


def check_gke_sharing(ctx: CheckContext, info: NodeInfo) -> None:
    labels = info.view.labels
    found = _devices_per_gpu(labels)
    count = info.counts.get(CONTAINER_RESOURCE)
    if found is None or not count:
        return  # no sharing, or nothing advertised (GPU211 says that)
    per_gpu, why = found
    config = f"GKE's node pool config ({', '.join(why)}: {per_gpu} nvidia.com/gpu per GPU)"
    machine = machine_gpus(labels)
    if machine is not None:
        gpus, source = machine
        if count == gpus * per_gpu:
            return
        seen = f"{gpus} GPUs ({source}) give {gpus * per_gpu}"
    elif count % per_gpu == 0:
        return
    else:
        seen = f"{count} is not a multiple of {per_gpu}"
    ctx.add(
        "GPU212",
        "Node",
        info.name,
        f"{config}: the node advertises nvidia.com/gpu: {count}, but {seen}",
        "read the log of GKE's device plugin pod on the node (`kubectl -n kube-system get pods"
        f" -l k8s-app=nvidia-gpu-device-plugin --field-selector spec.nodeName={info.name}`):"
        " it applies the pool's config at start; a GPU it lost is an unhealthy device, so"
        " capacity shows more than allocatable",
    )


__all__ = ["check_gke_sharing"]
