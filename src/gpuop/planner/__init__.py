"""What a node should run and advertise: `plan(policy, node) -> NodePlan`, pure and total.

This is gpuop's single source of truth. The operator writes the labels it computes, the
simulator plays the operands it lists, the checker compares a dump against it, and the
docs render it. It follows the upstream operator's node-labelling rules (v26.7.0):

* a node has GPUs when an NFD PCI label for vendor 10de is `true`;
* its workload config comes from `nvidia.com/gpu.workload.config` only when sandbox
  workloads are enabled, else every node is `container` (the label is ignored: the plan
  says so, as a warning, where upstream is silent);
* deploy labels of the config are set to `true` when absent or empty, other known keys are
  removed whatever their value, `nvidia.com/gpu.deploy.operands=false` removes them all;
* an operand runs where its DaemonSet exists (the policy enables it) and its deploy label
  is exactly `true`.

Two upstream defects are not copied: the default workload is not process-global state, and
the vm-passthrough label set does not depend on an earlier evaluation (see docs/planner.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from gpuop.api.labels import (
    GFD_TIMESTAMP_LABEL,
    GPU_PRESENT_LABEL,
    GPU_PRODUCT_LABEL,
    MIG_CAPABLE_LABEL,
    MIG_CONFIG_LABEL,
    NFD_GPU_LABELS,
    PLANNED_LABEL_PREFIXES,
    VGPU_CONFIG_LABEL,
    VGPU_HOST_DRIVER_LABEL,
    WORKLOAD_LABEL,
)
from gpuop.api.notices import NoticeCode
from gpuop.api.resources import CONTAINER_RESOURCE, KATA_RESOURCE, RESOURCE_PREFIX
from gpuop.catalog import (
    WORKLOAD_CONFIGS,
    Operand,
    operand_table,
)
from gpuop.naming import (
    PciDatabase,
    mdev_type_name,
    normalise_pci_name_kata,
    passthrough_resource,
    vgpu_resource,
)
from gpuop.planner.inventory import (
    GpuCard,
    Inventory,
    learn_inventory,
)
from gpuop.planner.model import (
    NodeFacts,
    NodePlan,
    Notice,
    OperandPlacement,
    OperandStatus,
    Severity,
    VgpuPlan,
    WorkloadDecision,
)
from gpuop.policy import ResolvedPolicy
from gpuop.vgpu import Card, VgpuConfigFile, apply_vgpu_config, default_vgpu_config

if TYPE_CHECKING:
    from gpuop.planner.stack import StackDecision


def applied(labels: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """The labels once `changes` are made (None removes a key)."""
    final = dict(labels)
    for key, value in changes.items():
        if value is None:
            final.pop(key, None)
        else:
            final[key] = value
    return final


def _deploy_key(key: str) -> str:
    return operand_table().deploy_labels.prefix + key


def gpu_detection(labels: Mapping[str, str]) -> str | None:
    """The NFD label that marks the node as a GPU node, or None."""
    for key in NFD_GPU_LABELS:
        if labels.get(key) == "true":
            return key
    return None


def mig_capable(labels: Mapping[str, str]) -> bool:
    """Upstream `hasMIGCapableGPU`."""
    if labels.get(VGPU_HOST_DRIVER_LABEL):
        return False
    if MIG_CAPABLE_LABEL in labels:
        return labels[MIG_CAPABLE_LABEL] == "true"
    product = labels.get(GPU_PRODUCT_LABEL, "").lower()
    return any(name in product for name in ("h100", "a100", "a30"))


def decide_workload(
    policy: ResolvedPolicy, labels: Mapping[str, str], gpu: bool
) -> WorkloadDecision:
    raw = labels.get(WORKLOAD_LABEL)
    if not gpu:
        return WorkloadDecision(None, "not-a-gpu-node", raw, "no NVIDIA GPU found by NFD")
    if not policy.sandbox_enabled:
        if raw is None:
            return WorkloadDecision(
                "container",
                "sandbox-disabled",
                None,
                "sandbox workloads are disabled: every GPU node is a container node",
            )
        return WorkloadDecision(
            "container",
            "ignored-sandbox-disabled",
            raw,
            f"{WORKLOAD_LABEL}={raw} is ignored because sandboxWorkloads.enabled is false;"
            " the node is provisioned for containers",
        )
    if raw is None:
        return WorkloadDecision(
            policy.default_workload,
            "default",
            None,
            f"no {WORKLOAD_LABEL} label: sandboxWorkloads.defaultWorkload"
            f" ({policy.default_workload}) applies",
        )
    if raw in WORKLOAD_CONFIGS:
        return WorkloadDecision(raw, "label", raw, f"{WORKLOAD_LABEL}={raw}")
    shown = "an empty value" if raw == "" else repr(raw)
    return WorkloadDecision(
        policy.default_workload,
        "invalid-label",
        raw,
        f"{WORKLOAD_LABEL} has {shown}, not one of {', '.join(WORKLOAD_CONFIGS)};"
        f" falling back to {policy.default_workload}",
    )


def _plan_labels(
    policy: ResolvedPolicy,
    labels: Mapping[str, str],
    detected: str | None,
    workload: WorkloadDecision,
) -> tuple[dict[str, str | None], dict[str, str]]:
    """(changes, desired managed labels) following upstream's add/remove rules."""
    table = operand_table().deploy_labels
    changes: dict[str, str | None] = {}
    present = labels.get(GPU_PRESENT_LABEL)
    known = sorted(table.known_keys)

    def remove_all() -> None:
        for key in known:
            if _deploy_key(key) in labels:
                changes[_deploy_key(key)] = None

    if detected is None:
        if present == "true":
            changes[GPU_PRESENT_LABEL] = "false"
        remove_all()
    else:
        if present != "true":
            changes[GPU_PRESENT_LABEL] = "true"
        assert workload.config is not None
        opted_out = labels.get(_deploy_key(table.opt_out_key)) == "false"
        capable = mig_capable(labels)
        if opted_out:
            remove_all()
        else:
            effective = set(table.keys_for(workload.config, policy.sandbox_mode))
            if workload.config == "container" and capable:
                effective.add(table.mig_manager_key)
            for key in known:
                full = _deploy_key(key)
                current = labels.get(full)
                if key in effective:
                    if key == table.mig_manager_key:
                        if full not in labels:
                            changes[full] = "true"
                    elif not current:
                        changes[full] = "true"
                elif full in labels:
                    keep_mig = key == table.mig_manager_key and workload.config == "container"
                    if not keep_mig:
                        changes[full] = None
        mig_manager = operand_table().operand("mig-manager")
        if (
            capable
            and policy.operand_enabled(mig_manager)
            and not labels.get(MIG_CONFIG_LABEL)
            and policy.mig_manager_default_config == "all-disabled"
        ):
            changes[MIG_CONFIG_LABEL] = "all-disabled"

    final = applied(labels, changes)
    managed_prefix = table.prefix
    desired = {
        key: value
        for key, value in sorted(final.items())
        if key in (GPU_PRESENT_LABEL, MIG_CONFIG_LABEL)
        or (key.startswith(managed_prefix) and key.removeprefix(managed_prefix) in table.known_keys)
    }
    return changes, desired


def _place_operands(
    policy: ResolvedPolicy, labels: Mapping[str, str], workload: WorkloadDecision
) -> tuple[OperandPlacement, ...]:
    placements: list[OperandPlacement] = []
    running: dict[str, Operand] = {}
    for operand in operand_table().operands:
        key = _deploy_key(operand.deploy_label)
        value = labels.get(key)
        extra_ok = all(labels.get(k) == v for k, v in operand.extra_node_selector.items())
        if not policy.operand_enabled(operand):
            status: OperandStatus = "disabled"
            detail = "not deployed by this ClusterPolicy"
        elif value is None:
            status = "not-for-workload"
            detail = f"{key} is not set for this workload config"
        elif value != "true":
            status = "held"
            detail = f"{key}={value}"
        elif not extra_ok:
            status = "not-for-workload"
            selector = ", ".join(f"{k}={v}" for k, v in operand.extra_node_selector.items())
            detail = f"also needs {selector}"
        else:
            status = "runs"
            detail = f"{key}=true"
            running[operand.name] = operand
        placements.append(
            OperandPlacement(
                operand.name, operand.daemonset, key, status, value, operand.waits_for, None, detail
            )
        )
    stages: dict[str, int] = {}

    def stage_of(name: str, trail: frozenset[str] = frozenset()) -> int:
        if name in stages:
            return stages[name]
        deps = [d for d in running[name].waits_for if d in running and d not in trail]
        value = 0 if not deps else 1 + max(stage_of(d, trail | {name}) for d in deps)
        stages[name] = value
        return value

    result = []
    for placement in placements:
        if placement.runs:
            deps = tuple(d for d in placement.waits_for if d in running)
            result.append(
                OperandPlacement(
                    placement.name,
                    placement.daemonset,
                    placement.deploy_label,
                    "runs",
                    placement.label_value,
                    deps,
                    stage_of(placement.name),
                    placement.detail,
                )
            )
        else:
            result.append(placement)
    return tuple(result)


def _passthrough_resources(
    cards: tuple[GpuCard, ...], pci_db: PciDatabase
) -> tuple[dict[str, int], list[Notice]]:
    counts: dict[str, int] = {}
    notices: list[Notice] = []
    for card in cards:
        if card.device_id is None:
            continue
        name = passthrough_resource(card.device_id, pci_db)
        counts[name.resource] = counts.get(name.resource, 0) + 1
        if name.problem and not any(n.message == name.problem for n in notices):
            code = (
                NoticeCode.INVALID_RESOURCE_NAME
                if not name.valid
                else NoticeCode.UNKNOWN_PCI_DEVICE
            )
            notices.append(Notice(code, "warning", name.problem))
    return counts, notices


def _kata_resources(cards: tuple[GpuCard, ...], pci_db: PciDatabase, alias: str) -> dict[str, int]:
    """The Kata sandbox plugin's names: `nvidia.com/<alias>`, or by model when it is empty.

    With `P_GPU_ALIAS=""` each device id registers under its pci.ids name, normalised as
    the kubevirt plugin does but keeping `-`; an unknown id is `UNKNOWN_DEVICE`.
    """
    if alias:
        return {RESOURCE_PREFIX + alias: len(cards)}
    counts: dict[str, int] = {}
    for card in cards:
        pci_name = pci_db.name_of(card.device_id) if card.device_id else None
        suffix = normalise_pci_name_kata(pci_name) if pci_name else "UNKNOWN_DEVICE"
        counts[RESOURCE_PREFIX + suffix] = counts.get(RESOURCE_PREFIX + suffix, 0) + 1
    return counts


def _other_kind_resources(
    cards: tuple[GpuCard, ...], pci_db: PciDatabase, keep: set[str]
) -> tuple[str, ...]:
    names = {CONTAINER_RESOURCE, KATA_RESOURCE}
    for card in cards:
        if card.device_id is None:
            continue
        names.add(passthrough_resource(card.device_id, pci_db).resource)
        known = Card(card.index, card.device_id, card.vendor_id, None, card.model).vgpu_types()
        for vgpu_type in known[1] if known else ():
            names.add(vgpu_resource(mdev_type_name(vgpu_type)))
    return tuple(sorted(names - keep))


def planning_key(facts: NodeFacts) -> tuple[Any, ...]:
    """What `plan` reads of a node, as one hashable value.

    Nodes with equal keys get equal plans but for the node's name, so a controller can plan
    a fleet of identical servers once. Labels outside `nvidia.com/` and NFD's
    `feature.node.kubernetes.io/` (hostnames, zones, roles) never change a plan, and nor
    does GPU feature discovery's per-node `nvidia.com/gfd.timestamp`.
    """
    return (
        tuple(
            sorted(
                kv
                for kv in facts.labels.items()
                if kv[0].startswith(PLANNED_LABEL_PREFIXES) and kv[0] != GFD_TIMESTAMP_LABEL
            )
        ),
        tuple(sorted(facts.annotations.items())),
        tuple(sorted(facts.allocatable.items())),
        tuple(sorted(facts.capacity.items())),
    )


def node_inventory(
    facts: NodeFacts,
    database: PciDatabase,
    vgpu_config: VgpuConfigFile | None,
    default_config: str,
) -> Inventory:
    """What the node says about its cards, with the vGPU config it is read against."""
    return learn_inventory(
        facts.labels,
        facts.annotations,
        facts.allocatable,
        capacity=facts.capacity,
        pci_db=database,
        vgpu_config=vgpu_config or default_vgpu_config(),
        default_vgpu_config=default_config,
    )


def not_a_gpu_node(
    facts: NodeFacts,
    workload: WorkloadDecision,
    changes: dict[str, str | None],
    desired: dict[str, str],
    inventory: Inventory,
    notices: list[Notice],
    stack: StackDecision | None = None,
) -> NodePlan:
    """The plan of a node NFD finds no NVIDIA GPU on: no operands, nothing advertised."""
    return NodePlan(
        facts.name,
        False,
        "no NFD label for an NVIDIA PCI device is true",
        workload,
        changes,
        desired,
        (),
        {},
        (CONTAINER_RESOURCE,),
        None,
        inventory,
        tuple(notices),
        stack=stack,
    )


def plan(
    policy: ResolvedPolicy,
    node: NodeFacts | Mapping[str, Any],
    *,
    pci_db: PciDatabase | None = None,
    vgpu_config: VgpuConfigFile | None = None,
) -> NodePlan:
    """The desired state of one node. Never raises for odd node contents."""
    facts = node if isinstance(node, NodeFacts) else NodeFacts.from_object(node)
    database = pci_db or PciDatabase.builtin()
    labels = facts.labels
    detected = gpu_detection(labels)
    workload = decide_workload(policy, labels, detected is not None)
    changes, desired = _plan_labels(policy, labels, detected, workload)
    final_labels = applied(labels, changes)
    inventory = node_inventory(facts, database, vgpu_config, policy.vgpu_default_config)
    notices: list[Notice] = []
    if workload.reason == "ignored-sandbox-disabled":
        severity: Severity = "info" if workload.label_value == "container" else "warning"
        notices.append(Notice(NoticeCode.WORKLOAD_LABEL_IGNORED, severity, workload.message))
    elif workload.reason == "invalid-label":
        notices.append(Notice(NoticeCode.INVALID_WORKLOAD_LABEL, "warning", workload.message))
    if inventory.problem:
        notices.append(Notice(NoticeCode.BAD_INVENTORY, "warning", inventory.problem))
    for problem in inventory.problems:
        code = (
            NoticeCode.INVENTORY_CONFLICT
            if problem.kind == "conflict"
            else NoticeCode.PARTIAL_VGPU_CARDS
        )
        notices.append(Notice(code, "warning", problem.message))

    if detected is None:
        return not_a_gpu_node(facts, workload, changes, desired, inventory, notices)

    if inventory.source == "none":
        notices.append(
            Notice(
                NoticeCode.UNKNOWN_INVENTORY,
                "info",
                "nothing on the node says which GPUs it has (no GPU feature discovery"
                " labels, no NFD device label, no resource that names a GPU model):"
                " resource names and counts cannot be predicted",
            )
        )
    operands = _place_operands(policy, final_labels, workload)
    running = {op.name for op in operands if op.runs}
    cards = inventory.cards
    advertises: dict[str, int] = {}
    # Names an operand here advertises, counted or not: never in must-not-advertise.
    expected: set[str] = set()
    # Names that may be advertised without being expected (cards a vGPU config leaves alone).
    allowed: set[str] = set()
    vgpu_plan = None
    config = workload.config
    if config == "container":
        if "device-plugin" in running:
            expected.add(CONTAINER_RESOURCE)
            if inventory.count_known:
                advertises[CONTAINER_RESOURCE] = len(cards)
    elif config == "vm-passthrough":
        if "sandbox-device-plugin" in running:
            counts, name_notices = _passthrough_resources(cards, database)
            notices.extend(name_notices)
            expected.update(counts)
            if inventory.count_known:
                advertises.update(counts)
            if "vfio-manager" not in running:
                notices.append(
                    Notice(
                        NoticeCode.VFIO_MANAGER_NOT_RUNNING,
                        "info",
                        "the VFIO manager does not run here: the cards must already be bound"
                        " to vfio-pci on the host",
                    )
                )
        elif "kata-sandbox-device-plugin" in running:
            counts = _kata_resources(cards, database, policy.kata_gpu_alias)
            expected.update(counts)
            if inventory.count_known:
                advertises.update(counts)
    elif config == "vm-vgpu":
        label_config = final_labels.get(VGPU_CONFIG_LABEL)
        config_name = label_config or policy.vgpu_default_config
        source: Literal["label", "default"] = "label" if label_config else "default"
        result = apply_vgpu_config(
            vgpu_config or default_vgpu_config(),
            config_name,
            [Card(c.index, c.device_id or "", c.vendor_id, None, c.model) for c in cards],
        )
        vgpu_plan = VgpuPlan(config_name, source, result)
        for error in result.errors:
            notices.append(
                Notice(NoticeCode.VGPU_CONFIG_INFEASIBLE, "error", f"{config_name}: {error}")
            )
        if result.untouched:
            shown = ", ".join(str(index) for index in result.untouched)
            notices.append(
                Notice(
                    NoticeCode.VGPU_CARDS_UNTOUCHED,
                    "info",
                    f"no entry of vGPU config {config_name} lists GPU {shown}: the vGPU device"
                    " manager leaves its vGPU devices as they are, so they are not predicted",
                )
            )
        if "sandbox-device-plugin" in running:
            expected.update(result.resources())
            if inventory.count_known:
                advertises.update(result.resources())
            for card in cards:
                if card.index in result.untouched:
                    # Whatever type it already holds may stay: never "must not advertise".
                    known = Card(card.index, card.device_id or "", model=card.model).vgpu_types()
                    for vgpu_type in known[1] if known else ():
                        allowed.add(vgpu_resource(mdev_type_name(vgpu_type)))
        if "vgpu-manager" not in running and "vgpu-device-manager" in running:
            notices.append(
                Notice(
                    NoticeCode.VGPU_MANAGER_NOT_RUNNING,
                    "info",
                    "the vGPU manager does not run here: the vGPU host driver must be"
                    " pre-installed",
                )
            )
    held = [op for op in operands if op.status == "held"]
    for op in held:
        notices.append(
            Notice(NoticeCode.OPERAND_HELD, "info", f"{op.name} does not run: {op.detail}")
        )
    must_not = _other_kind_resources(cards, database, set(advertises) | expected | allowed)
    if config != "container":
        must_not = tuple(sorted(set(must_not) | {CONTAINER_RESOURCE}))
    return NodePlan(
        facts.name,
        True,
        detected,
        workload,
        changes,
        desired,
        operands,
        advertises,
        must_not,
        vgpu_plan,
        inventory,
        tuple(notices),
        tuple(sorted(expected)),
    )


__all__ = [
    "GpuCard",
    "Inventory",
    "NodeFacts",
    "NodePlan",
    "Notice",
    "OperandPlacement",
    "WorkloadDecision",
    "applied",
    "decide_workload",
    "gpu_detection",
    "mig_capable",
    "node_inventory",
    "not_a_gpu_node",
    "plan",
    "planning_key",
]
