"""Prometheus metrics of the operator: reconciles, errors, writes, nodes per workload config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge, Histogram

if TYPE_CHECKING:
    from gpuop.operator.reconcile import Actions

RECONCILES = Counter("gpuop_reconciliation_total", "Reconcile passes completed.")
RECONCILE_ERRORS = Counter("gpuop_reconciliation_failed_total", "Reconcile passes that failed.")
RECONCILE_SECONDS = Histogram("gpuop_reconciliation_seconds", "Time spent in one reconcile pass.")
WRITES = Counter("gpuop_api_writes_total", "Write requests sent to the API server.", ["kind"])
GPU_NODES = Gauge("gpuop_gpu_nodes_total", "GPU nodes, by workload config.", ["workload"])
OPERAND_READY_NODES = Gauge(
    "gpuop_operand_ready", "1 when the active ClusterPolicy is ready, else 0."
)


def observe_plans(actions: Actions) -> None:
    counts: dict[str, int] = {"container": 0, "vm-passthrough": 0, "vm-vgpu": 0}
    for plan in actions.plans.values():
        if plan.gpu_node and plan.workload.config:
            counts[plan.workload.config] = counts.get(plan.workload.config, 0) + 1
    for workload, count in counts.items():
        GPU_NODES.labels(workload=workload).set(count)
    OPERAND_READY_NODES.set(1 if actions.ready else 0)
