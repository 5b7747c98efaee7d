"""Node rules: a node's labels and advertised resources against its plan (GPU1xx-GPU4xx).

Everything a node should carry comes from `plan()`: the workload decision, the label
changes the operator would make, the operands that run, what the node advertises and what
it must not. These rules only compare and explain; the advertised resources (GPU2xx) are
compared in `gpuop.check.advertised`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from gpuop.api.labels import (
    GPU_PRESENT_LABEL,
    MIG_CONFIG_LABEL,
    MIG_CONFIG_STATE_LABEL,
    NFD_NVIDIA_PCI_LABEL,
    UPGRADE_STATE_LABEL,
    VGPU_CONFIG_LABEL,
    VGPU_CONFIG_STATE_LABEL,
    WORKLOAD_LABEL,
)
from gpuop.api.notices import NoticeCode
from gpuop.api.resources import PLUGIN_KINDS, plugin_daemonset
from gpuop.api.wording import listed
from gpuop.catalog import WORKLOAD_CONFIGS, WorkloadConfig, operand_table
from gpuop.catalog.managers import DEVICE_PLUGIN, GPU_OPERATOR, manager_catalog
from gpuop.check.advertised import (
    check_advertised,
    describe_workload,
    gfd_replicas,
    shown_counts,
)
from gpuop.check.conditions import check_gpu_conditions
from gpuop.check.context import CheckContext, NodeInfo, kind_of
from gpuop.check.gke import check_gke_sharing
from gpuop.check.machine_gpus import check_gpus_unadvertised, check_machine_gpus
from gpuop.check.managers import DRA_DRIVER, GKE, UNMANAGED, Management
from gpuop.check.operands import operand_pods_on, operator_daemonset
from gpuop.check.release import detect_release
from gpuop.check.rules import rule
from gpuop.check.sharing import (
    CONFIG_LABEL,
    PluginSettings,
    SharingConfig,
    check_sharing,
    note_config_replicas,
    plugin_settings,
    sharing_configs,
)
from gpuop.check.state import PodView
from gpuop.manifests.fields import text
from gpuop.naming import classify_resource, resource_name_problem
from gpuop.planner import NodePlan
from gpuop.planner.machine import gpu_hardware, machine_gpus, shared_gpu_resources
from gpuop.policy import ResolvedPolicy

# Driver upgrade states that explain nothing: not started, done, or failed (GPU702).
_UPGRADE_AT_REST = frozenset({"", "upgrade-done", "upgrade-failed"})
# Planner notices that are findings of their own; the rest explain other findings.
_NOTICE_RULES = {
    NoticeCode.WORKLOAD_LABEL_IGNORED: "GPU101",
    NoticeCode.INVALID_WORKLOAD_LABEL: "GPU102",
    NoticeCode.BAD_INVENTORY: "GPU103",
    NoticeCode.UNKNOWN_INVENTORY: "GPU104",
    NoticeCode.VGPU_CONFIG_INFEASIBLE: "GPU105",
    NoticeCode.INVENTORY_CONFLICT: "GPU106",
    NoticeCode.PARTIAL_VGPU_CARDS: "GPU107",
    NoticeCode.INVALID_RESOURCE_NAME: "GPU208",
    NoticeCode.UNKNOWN_PCI_DEVICE: "GPU209",
}
# Notices about the GPU Operator's own labels: no finding where it does not manage the node.
_OPERATOR_NOTICES = frozenset({"GPU101", "GPU102", "GPU105", "GPU107"})
_CONTEXT_NOTICES = frozenset(
    {
        NoticeCode.VFIO_MANAGER_NOT_RUNNING,
        NoticeCode.VGPU_MANAGER_NOT_RUNNING,
        NoticeCode.OPERAND_HELD,
        NoticeCode.VGPU_CARDS_UNTOUCHED,
    }
)


def _configs_with_key(key: str, policy: ResolvedPolicy) -> list[str]:
    table = operand_table().deploy_labels
    return [
        config for config in WORKLOAD_CONFIGS if key in table.keys_for(config, policy.sandbox_mode)
    ]


def check_nodes(ctx: CheckContext, *, memo: bool = True) -> None:
    """Every node rule on every node.

    Node rules read only what the planning key holds (the node's NVIDIA and NFD PCI
    labels, inventory and NVIDIA resources) plus its resource counts, so a node of a shape
    already found healthy is healthy too and is not checked again. (Operand pods only add
    evidence to a GPU301 finding, which a healthy shape does not have.)
    """
    healthy: set[Any] = set()
    if ctx.release is None:
        ctx.release = detect_release(ctx.state)
    configs = sharing_configs(ctx)
    plugins = _standalone_plugins(ctx)
    pods = ctx.state.active_pods_by_node if len(plugins) > 1 else {}
    for info in ctx.nodes:
        management = ctx.management.get(info.name, UNMANAGED)
        plugin = _plugin_of(plugins, pods.get(info.name, ()))
        machine = machine_gpus(info.view.labels)
        hardware = gpu_hardware(info.view.labels)
        key = (
            info.view.plan_key,
            frozenset(info.counts.items()),
            tuple(info.bad_quantities),
            management.managers,
            info.view.labels.get(CONFIG_LABEL),
            plugin,
            machine,
            hardware,
            info.view.gpu_conditions,
            info.view.resources_known,
        )
        if memo and key in healthy:
            continue
        before = len(ctx.findings)
        _check_managers(ctx, info, management)
        check_gpu_conditions(ctx, info)
        policy = info.policy or ctx.policy
        if not info.view.resources_known:
            # Labels only: the operator's label rules hold, nothing about what it advertises.
            plan = info.plan
            if (
                plan is not None
                and policy is not None
                and management.operator
                and plan.gpu_node
                and not plan.on_dra_stack
            ):
                _check_states(ctx, info, plan)
                _check_labels(ctx, info, plan, policy)
            if info.policy is not None:
                _at_most_warnings(ctx, before)
            if len(ctx.findings) == before:
                healthy.add(key)
            continue
        _check_names(ctx, info)
        check_machine_gpus(ctx, info, machine)
        if info.plan is not None and policy is not None:
            _check_by_manager(ctx, info, management, policy, configs, plugin)
        if info.policy is not None:
            _at_most_warnings(ctx, before)
        if not any(finding.code == "GPU207" for finding in ctx.findings[before:]):
            check_gpus_unadvertised(ctx, info, hardware, management)
        if len(ctx.findings) == before:
            healthy.add(key)


def _check_by_manager(
    ctx: CheckContext,
    info: NodeInfo,
    management: Management,
    policy: ResolvedPolicy,
    configs: Mapping[str, SharingConfig],
    plugin: PluginSettings | None,
) -> None:
    """The rules of the node's manager's contract."""
    assert info.plan is not None
    if management.primary == DEVICE_PLUGIN and len(management.competing()) == 1:
        # The operator's device plugin is this plugin: its names and counts hold, the
        # operator's labels and workload configs do not.
        if info.plan.workload.config not in (None, "container"):
            _check_zero_devices(ctx, info, tuple(info.counts))
        else:
            if info.plan.gpu_node:
                note_config_replicas(ctx, info, configs, plugin)
                _check_gpu_node(ctx, info, info.plan, policy, operator=False)
            else:  # no NFD or GFD labels (AKS's node pools): only what it advertises
                _check_zero_devices(ctx, info, tuple(info.counts))
            check_sharing(ctx, info, configs, plugin=plugin)
    elif not management.operator:
        # The GPU Operator's contract (workload configs, deploy labels, operands, its
        # plugins' names) is not this node's: only what holds for any manager is checked.
        _check_zero_devices(ctx, info, tuple(info.counts))
        if management.primary == GKE:
            check_gke_sharing(ctx, info)
    elif not info.plan.gpu_node:
        _check_non_gpu(ctx, info, info.plan)
    else:
        container = info.plan.workload.config in (None, "container")
        if container:
            note_config_replicas(ctx, info, configs)
        _check_gpu_node(ctx, info, info.plan, policy, dra_served=_dra_served(info, management))
        if container:
            # An assumed policy's MIG strategy is the default's, not the cluster's.
            strategy = None if ctx.policy_assumed else policy.mig_strategy
            check_sharing(ctx, info, configs, operator_mig_strategy=strategy)


def _dra_served(info: NodeInfo, management: Management) -> bool:
    """Whether NVIDIA's DRA driver serves the node's cards in place of a device plugin: it
    manages the node (its kubelet plugin, its node label, its ResourceSlices) and the node
    advertises no device plugin resource. NVIDIA's guide for the driver beside the GPU
    Operator turns the operator's device plugin off."""
    return DRA_DRIVER in management.managers and not info.positive()


def _standalone_plugins(ctx: CheckContext) -> dict[str, PluginSettings]:
    """The standalone device plugin DaemonSets in the input (not the operator's), by name."""
    found = {}
    for daemonset in ctx.state.daemonsets:
        name = text(daemonset, "metadata", "name")
        if operator_daemonset(daemonset) is not None:
            continue
        settings = plugin_settings(daemonset)
        if settings is not None:
            found[name] = settings
    return found


def _plugin_of(
    plugins: Mapping[str, PluginSettings], pods: Iterable[PodView]
) -> PluginSettings | None:
    """The plugin DaemonSet serving a node: the one whose pod runs there, else the only one."""
    if len(plugins) == 1:
        return next(iter(plugins.values()))
    for pod in pods:
        for kind, owner in pod.owners:
            if kind == "DaemonSet" and owner in plugins:
                return plugins[owner]
    return None


def _at_most_warnings(ctx: CheckContext, since: int) -> None:
    """Findings planned under an assumed policy: what the node should run is not known."""
    for position in range(since, len(ctx.findings)):
        finding = ctx.findings[position]
        if finding.severity == "error":
            ctx.findings[position] = dataclasses.replace(
                finding,
                severity="warning",
                message=f"{finding.message} (assuming sandbox workloads are on: no ClusterPolicy"
                " in the input)",
            )


def _check_names(ctx: CheckContext, info: NodeInfo) -> None:
    for resource, why in info.bad_quantities:
        ctx.add(
            "GPU210",
            "Node",
            info.name,
            f"allocatable {resource} {why}",
            "regenerate the dump; on a live cluster restart the node's kubelet to rewrite its"
            " status",
        )
    for resource in sorted(info.counts):
        problem = resource_name_problem(resource)
        if problem is not None:
            ctx.add(
                "GPU208",
                "Node",
                info.name,
                f"advertises {resource}: {problem}",
                "the kubelet refuses such a name from a device plugin: check how the dump was"
                " produced or which plugin registered it",
            )


def _check_managers(ctx: CheckContext, info: NodeInfo, management: Management) -> None:
    competing = management.competing()
    if GPU_OPERATOR in competing and info.plan is not None and not _plugin_runs(info.plan):
        # Its device plugin is off (`devicePlugin.enabled: false`, as beside GKE's own plugin,
        # or the node's deploy label): the operator registers nothing there.
        competing = tuple(manager for manager in competing if manager != GPU_OPERATOR)
    if len(competing) < 2:
        return
    shown = "; ".join(
        f"{manager}: {signal}" for manager, signal in management.evidence if manager in competing
    )
    ctx.add(
        "GPU108",
        "Node",
        info.name,
        f"{' and '.join(competing)} both serve its GPUs ({shown})",
        "keep one: remove the other's DaemonSet or keep it off the node with a node selector,"
        f" or `kubectl label node {info.name} nvidia.com/gpu.deploy.operands=false` to keep"
        " the GPU Operator away",
    )


_ZERO_CAUSES = {
    "passthrough": (
        "no card is bound to vfio-pci",
        "check the vfio-manager (or your vfio-pci binding) and that IOMMU is on",
    ),
    "vgpu": (
        "no mediated device of the type exists",
        f"check the vgpu-device-manager and {VGPU_CONFIG_LABEL}, or create the mdevs",
    ),
}
_ZERO_DEFAULT = (
    "the plugin sees no device the driver serves",
    "check the driver (`nvidia-smi` on the node) and the device plugin's logs",
)


def _check_zero_devices(ctx: CheckContext, info: NodeInfo, resources: tuple[str, ...]) -> bool:
    """GPU211 for GPU resources of `resources` registered with 0 devices on a node that
    advertises no other; True when one is reported."""
    if info.positive():
        return False  # another resource is served: a zero one is a stale name (GPU202)
    if shared_gpu_resources(info.view.resources):
        return False  # another vendor's plugin serves the cards (ACK's sharing modes)
    capacity = info.view.planned_capacity
    # GPU feature discovery's gpu.replicas=0: MIG-enabled cards, no whole GPU to count.
    mig_only = gfd_replicas(info.view.labels) == 0
    zero = sorted(
        resource
        for resource in resources
        if info.counts.get(resource) == 0
        and capacity.get(resource, "0") in ("0", "")
        and classify_resource(resource) in ("container", "mig", "passthrough", "vgpu")
        and not (mig_only and classify_resource(resource) == "container")
    )
    for resource in zero:
        cause, fix = _ZERO_CAUSES.get(classify_resource(resource), _ZERO_DEFAULT)
        ctx.add(
            "GPU211",
            "Node",
            info.name,
            f"{resource} is registered with 0 devices: {cause}",
            fix,
        )
    return bool(zero)


def _gpu_evidence(ctx: CheckContext, info: NodeInfo) -> list[str]:
    """What shows a node without an NFD GPU label to have GPUs all the same."""
    evidence = []
    positive = info.positive()
    if positive:
        evidence.append(f"advertises {shown_counts(positive)}")
    if info.view.labels.get(GPU_PRESENT_LABEL) == "true":
        evidence.append(f"carries {GPU_PRESENT_LABEL}=true")
    plugins = {plugin_daemonset(kind) for kind in PLUGIN_KINDS}
    pods = sorted(pod.name for pod in operand_pods_on(ctx, info.name) if pod.daemonset in plugins)
    if pods:
        evidence.append(f"runs device plugin pod {', '.join(pods[:3])}")
    return evidence


def _check_non_gpu(ctx: CheckContext, info: NodeInfo, plan: NodePlan) -> None:
    if info.positive():
        ctx.add(
            "GPU401",
            "Node",
            info.name,
            f"{'; '.join(_gpu_evidence(ctx, info))}, so it has GPUs, but no NFD label marks it"
            " as a GPU node: NVIDIA's operator deploys no operands there",
            f"check that NFD runs on {info.name} and labels its NVIDIA PCI devices"
            f" ({NFD_NVIDIA_PCI_LABEL}=true); nothing to do if its GPUs"
            " are managed without the operator",
        )
    if plan.label_changes:
        present = sorted(
            key for key, value in plan.label_changes.items() if key in info.view.labels
        )
        if present:
            shown = listed(
                [f"{key}={info.view.labels[key]}" for key in present[:6]], 6, len(present)
            )
            ctx.add(
                "GPU402",
                "Node",
                info.name,
                f"has GPU labels {shown} but no NFD label marks it as a GPU node",
                "check NFD on the node; without its PCI labels the operator removes these"
                " labels and the operands leave the node",
            )


@cache
def _advertising_operands() -> frozenset[str]:
    return frozenset(op.name for op in operand_table().operands if op.advertises)


def _plugin_runs(plan: NodePlan) -> bool:
    """Whether an operand that advertises resources runs on the node."""
    advertising = _advertising_operands()
    return any(op.runs and op.name in advertising for op in plan.operands)


def _check_gpu_node(
    ctx: CheckContext,
    info: NodeInfo,
    plan: NodePlan,
    policy: ResolvedPolicy,
    *,
    operator: bool = True,
    dra_served: bool = False,
) -> None:
    """Every rule on a GPU node; without `operator`, those of its device plugin alone.

    `dra_served`: NVIDIA's DRA driver serves the node's cards, so advertising none is right."""
    name = info.name
    labels = info.view.labels
    pci_notice = False
    in_progress = _check_states(ctx, info, plan)
    for notice in plan.notices:
        if notice.code in _CONTEXT_NOTICES:
            continue
        code = _NOTICE_RULES.get(notice.code, "GPU100")
        if code == "GPU107" and in_progress:
            continue  # devices are being created: a partial count is expected meanwhile
        if code == "GPU101" and notice.severity == "info":
            continue  # `container` on a container node: ignored, and harmless
        if code == "GPU104" and not info.positive() and not _plugin_runs(plan):
            continue  # no plugin runs here (`gpu.deploy.operands=false`): nothing to name
        if not operator and code in _OPERATOR_NOTICES:
            continue
        if code == "GPU209":
            pci_notice = True
            continue  # reported below, unless a name mismatch says more
        ctx.add(
            code,
            "Node",
            name,
            notice.message,
            _notice_hint(code, info, policy),
            severity=(notice.severity if code == "GPU100" else None),
        )

    if operator and plan.on_dra_stack:
        _check_dra_stack(ctx, info, plan)
        return
    if operator:
        _check_labels(ctx, info, plan, policy)
        in_progress = _check_driver_upgrade(ctx, info, plan) or in_progress
    zero = not in_progress and _check_zero_devices(ctx, info, tuple(plan.advertises))
    plugin_fix = None if operator else manager_catalog().managers[DEVICE_PLUGIN].no_gpu_resource
    mismatch = check_advertised(
        ctx,
        info,
        plan,
        policy,
        explained=in_progress or zero or dra_served,
        plugin_fix=plugin_fix,
    )
    if pci_notice and not mismatch:
        for notice in plan.notices:
            if notice.code == NoticeCode.UNKNOWN_PCI_DEVICE:
                ctx.add(
                    "GPU209",
                    "Node",
                    name,
                    notice.message,
                    "pass the device plugin's pci.ids with --pci-ids to check the exact name",
                )
    upgrade = labels.get(UPGRADE_STATE_LABEL)
    if operator and upgrade == "upgrade-failed":
        ctx.add(
            "GPU702",
            "Node",
            name,
            f"{UPGRADE_STATE_LABEL}=upgrade-failed",
            f"read the driver pod's logs on {name}; after fixing the cause run"
            f" `kubectl label node {name} {UPGRADE_STATE_LABEL}=upgrade-required --overwrite`",
        )


def _labels_to_set(plan: NodePlan, keys: list[str]) -> str:
    """`key=value` of the first labels the plan sets, and how many more."""
    return listed([f"{key}={plan.label_changes[key]}" for key in keys[:6]], 6, len(keys))


def _check_dra_stack(ctx: CheckContext, info: NodeInfo, plan: NodePlan) -> None:
    """A node of the GPU Operator's DRA stack (GPUCluster): its deploy labels, and no
    device plugin resource (GPU803 says it where its cards are published as well)."""
    name = info.name
    labels = info.view.labels
    prefix = operand_table().deploy_labels.prefix
    removals = sorted(k for k, v in plan.label_changes.items() if v is None and k in labels)
    additions = sorted(k for k, v in plan.label_changes.items() if v is not None)
    if removals:
        shown = ", ".join(key.removeprefix(prefix) for key in removals)
        message = (
            f"the node runs the DRA stack (GPUCluster), but carries the device-plugin stack's"
            f" {prefix}* labels ({shown}), which its labelling removes"
        )
        if additions:
            missing = ", ".join(key.removeprefix(prefix) for key in additions)
            message += f"; the DRA stack's are missing ({missing})"
        ctx.add(
            "GPU301",
            "Node",
            name,
            message,
            "check that the operator runs and may patch nodes, or run"
            f" `kubectl label node {name} {' '.join(f'{key}-' for key in removals)}`",
        )
    elif additions:
        shown = _labels_to_set(plan, additions)
        ctx.add(
            "GPU302",
            "Node",
            name,
            f"the node runs the DRA stack (GPUCluster), but the operator has not set {shown}",
            "check that the operator runs and may patch nodes; `gpuop plan --no-cluster-policy"
            " --gpu-cluster default` shows every label it sets",
        )
    _check_zero_devices(ctx, info, ())
    advertised = {r: n for r, n in info.positive().items() if kind_of(r) in PLUGIN_KINDS}
    if advertised and name not in ctx.dra_published:
        ctx.add(
            "GPU201",
            "Node",
            name,
            f"the node runs the DRA stack (GPUCluster), whose cards the DRA driver publishes,"
            f" but it advertises {shown_counts(advertised)}: a device plugin still serves it",
            f"make sure no device plugin pod runs on {name}, then restart its kubelet so the"
            " stale resource drops to 0",
        )


def _notice_hint(code: str, info: NodeInfo, policy: ResolvedPolicy) -> str:
    name = info.name
    if code == "GPU101":
        return (
            f"set spec.sandboxWorkloads.enabled: true in ClusterPolicy {policy.name or '(default)'},"
            f" or remove the label: kubectl label node {name} {WORKLOAD_LABEL}-"
        )
    if code == "GPU102":
        return f"kubectl label node {name} {WORKLOAD_LABEL}=<container|vm-passthrough|vm-vgpu> --overwrite"
    if code == "GPU105":
        return (
            "choose a vGPU config the cards support (gpuop plan lists the types) and set"
            f" {VGPU_CONFIG_LABEL} on {name}"
        )
    fix = rule(code).fix.rstrip(".")
    return fix[:1].lower() + fix[1:]


def _check_driver_upgrade(ctx: CheckContext, info: NodeInfo, plan: NodePlan) -> bool:
    """GPU703; True when a driver upgrade under way explains the GPUs the node does not
    advertise: from `pod-restart-required` the driver pod is replaced, and the device
    plugin registers the GPUs again once the new driver is ready."""
    state = info.view.labels.get(UPGRADE_STATE_LABEL, "")
    if state in _UPGRADE_AT_REST:
        return False
    advertised = info.positive()
    missing = [r for r in plan.advertises if r not in advertised]
    if not plan.advertises or not missing:
        return False
    ctx.add(
        "GPU703",
        "Node",
        info.name,
        f"{UPGRADE_STATE_LABEL}={state}: the driver upgrade has not finished, and the node"
        f" does not advertise {', '.join(sorted(missing))} meanwhile",
        f"if it stays {state}, check the driver pod and nvidia-operator-validator on"
        f" {info.name}; the upgrade moves to upgrade-failed after 10 restarts or a 600 s"
        " validation timeout",
    )
    return True


def _check_states(ctx: CheckContext, info: NodeInfo, plan: NodePlan) -> bool:
    """GPU305/GPU306; True when a vGPU or MIG change explains missing devices."""
    labels = info.view.labels
    config = plan.workload.config
    label = VGPU_CONFIG_STATE_LABEL if config == "vm-vgpu" else MIG_CONFIG_STATE_LABEL
    if config not in ("vm-vgpu", "container"):
        return False
    state = labels.get(label)
    manager = "vgpu-device-manager" if config == "vm-vgpu" else "mig-manager"
    wanted = (
        (plan.vgpu.config_name if plan.vgpu else None)
        if config == "vm-vgpu"
        else labels.get(MIG_CONFIG_LABEL)
    )
    what = f" (config {wanted})" if wanted else ""
    if state == "failed":
        devices = info.positive()
        detail = (
            ""
            if not info.view.resources_known
            else f"; the node advertises {shown_counts(devices)}"
            if devices
            else "; it advertises no GPU devices"
        )
        ctx.add(
            "GPU305",
            "Node",
            info.name,
            f"{label}=failed{what}{detail}",
            f"read the nvidia-{manager} pod's logs on {info.name}, fix the config, then relabel"
            " the node to retry",
        )
        return True
    if state in ("pending", "rebooting"):
        ctx.add(
            "GPU306",
            "Node",
            info.name,
            f"{label}={state}{what}: the {manager} has not finished",
            f"if it stays {state}, check the nvidia-{manager} pod on {info.name} and the pods"
            " still using its GPUs",
        )
        return True
    return False


def _check_labels(
    ctx: CheckContext, info: NodeInfo, plan: NodePlan, policy: ResolvedPolicy
) -> None:
    name = info.name
    labels = info.view.labels
    prefix = operand_table().deploy_labels.prefix
    config: WorkloadConfig = plan.workload.config or "container"
    # The plan labels as the newest release does; keep what the dump's release does too.
    release = ctx.release or detect_release(ctx.state)
    expected = release.expectation(config, policy.sandbox_mode)
    removals = sorted(
        key
        for key, value in plan.label_changes.items()
        if value is None and key in labels and expected.removes(key)
    )
    additions = sorted(
        key
        for key, value in plan.label_changes.items()
        if value is not None and expected.requires(key, labels)
    )
    if removals:
        groups: dict[str, list[str]] = {}
        others: set[str] = set()
        for key in removals:
            short = key.removeprefix(prefix)
            owners = [c for c in _configs_with_key(short, policy) if c != config]
            others.update(owners)
            shown = short if labels[key] == "true" else f"{short}={labels[key]}"
            groups.setdefault("/".join(owners) or "no workload config", []).append(shown)
        carried = "; ".join(f"{owner}: {', '.join(keys)}" for owner, keys in sorted(groups.items()))
        message = (
            f"workload config {describe_workload(plan)}, but the node carries {prefix}* labels"
            f" of other configs ({carried})"
        )
        if len(others) == 1 and _has_true_keys_of(labels, config, policy):
            message += f": deploy labels of two configs, {config} and {next(iter(others))}"
        if additions:
            shown_missing = ", ".join(key.removeprefix(prefix) for key in additions)
            message += f"; {config}'s are missing ({shown_missing})"
        running = _stray_operand_pods(ctx, info, plan)
        if running:
            message += "; still running there: " + ", ".join(running)
        removal_args = " ".join(f"{key}-" for key in removals)
        ctx.add(
            "GPU301",
            "Node",
            name,
            message,
            f"if {config} is right, let the operator relabel the node or run"
            f" `kubectl label node {name} {removal_args}`; otherwise fix {WORKLOAD_LABEL}",
        )
    elif additions:
        shown = _labels_to_set(plan, additions)
        ctx.add(
            "GPU302",
            "Node",
            name,
            f"workload config {describe_workload(plan)}, but the operator has not set {shown}",
            "check that the gpuop (or NVIDIA) operator runs and may patch nodes; `gpuop plan`"
            " shows every label it sets",
        )
    for operand in plan.operands:
        if operand.status != "held" or operand.label_value is None:
            continue
        value = operand.label_value
        parked = value == VGPU_PARKED and operand.name == "vgpu-device-manager"
        if parked and _vgpu_devices_in_use(ctx, name):
            continue
        if "paused-for-" in value:
            ctx.add(
                "GPU303",
                "Node",
                name,
                f"{operand.deploy_label}={value}: {operand.name} does not run until the"
                " component that paused it restores the label",
                f"check the component behind {value}; if it is done, run `kubectl label node"
                f" {name} {operand.deploy_label}=true --overwrite`",
            )
        else:
            ctx.add(
                "GPU304",
                "Node",
                name,
                f"{operand.deploy_label}={value}: {operand.name} does not run on this node",
                f"set it to true if {operand.name} should run: `kubectl label node {name}"
                f" {operand.deploy_label}=true --overwrite`",
            )


def _has_true_keys_of(
    labels: Mapping[str, str], config: WorkloadConfig, policy: ResolvedPolicy
) -> bool:
    table = operand_table().deploy_labels
    own = set(table.keys_for(config, policy.sandbox_mode))
    shared = set.intersection(
        *(set(table.keys_for(c, policy.sandbox_mode)) for c in WORKLOAD_CONFIGS)
    )
    return any(labels.get(table.prefix + key) == "true" for key in own - shared)


# gpuop's operator parks the vGPU device manager with this value while pods use the node's
# vGPU devices (a config change would destroy them), and restores `true` when they are gone.
VGPU_PARKED = "paused-for-vgpu-change"


def _vgpu_devices_in_use(ctx: CheckContext, node: str) -> bool:
    return any(
        classify_resource(resource) == "vgpu"
        for pod in ctx.state.active_pods_by_node.get(node, ())
        for resource in pod.requests
    )


def _stray_operand_pods(ctx: CheckContext, info: NodeInfo, plan: NodePlan) -> list[str]:
    planned = {op.daemonset for op in plan.operands if op.runs}
    return sorted(
        pod.name for pod in operand_pods_on(ctx, info.name) if pod.daemonset not in planned
    )


__all__ = ["check_nodes"]
