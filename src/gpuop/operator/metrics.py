"""Prometheus metrics of the operator: reconciles, errors, writes, nodes per workload config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Gauge, Histogram

if TYPE_CHECKING:
    from gpuop.operator.reconcile import Actions

RECONCILES = Counter("gpuop_reconciliation_total", "Reconcile passes completed.")
RECONCILE_ERRORS = Counter("gpuop_reconciliation_failed_total", "Reconcile passes that failed.")
RECONCILE_SECONDS = Histogram("gpuop_reconciliation_seconds", "Time spent in one reconcile pass.")
APPLY_REFUSED = Counter(
    "gpuop_apply_refused_total", "Applies the API server refused, by kind.", ["kind"]
)
WRITES = Counter("gpuop_api_writes_total", "Write requests sent to the API server.", ["kind"])
GPU_NODES = Gauge("gpuop_gpu_nodes_total", "GPU nodes, by workload config.", ["workload"])
OPERAND_READY_NODES = Gauge(
    "gpuop_operand_ready", "1 when the active ClusterPolicy is ready, else 0."
)

# client-go's leader election metric (controller-runtime exports it under this name).
LEADER = Gauge(
    "leader_election_master_status",
    "1 while this process leads under the Lease `name`, else 0.",
    ["name"],
)
LEADER_CHANGES = Counter(
    "gpuop_leader_changes_total", "Changes of the leader this process saw (itself included)."
)

AUTO_UPGRADE = Gauge(
    "gpu_operator_driver_auto_upgrade_enabled", "1 when automatic driver upgrades are on, else 0."
)
UPGRADES = Gauge(
    "gpu_operator_nodes_upgrades",
    "Nodes by driver upgrade progress (in_progress, done, failed, available, pending).",
    ["phase"],
)


def observe_plans(actions: Actions) -> None:
    counts: dict[str, int] = {"container": 0, "vm-passthrough": 0, "vm-vgpu": 0}
    for plan in actions.plans.values():
        if plan.gpu_node and plan.workload.config:
            counts[plan.workload.config] = counts.get(plan.workload.config, 0) + 1
    for workload, count in counts.items():
        GPU_NODES.labels(workload=workload).set(count)
    OPERAND_READY_NODES.set(1 if actions.ready else 0)
    AUTO_UPGRADE.set(1 if actions.upgrades_enabled else 0)
    upgrades = actions.upgrade_counts
    if upgrades is not None:
        for phase in ("in_progress", "done", "failed", "available", "pending"):
            UPGRADES.labels(phase=phase).set(getattr(upgrades, phase))
