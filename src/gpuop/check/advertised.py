"""Advertised-resource rules: what a node advertises against its plan (GPU2xx).

The resources a node should advertise, and the ones it must not, come from `plan()`;
these rules compare them with the node's allocatable and name the workload config, the
GPU sharing (time-slicing, MPS, MIG) or the vGPU config that explains the difference.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuop.api.labels import (
    GPU_PRODUCT_LABEL,
    GPU_REPLICAS_LABEL,
    MIG_CONFIG_LABEL,
    VGPU_CONFIG_LABEL,
    VGPU_CONFIG_STATE_LABEL,
)
from gpuop.api.notices import NoticeCode
from gpuop.api.resources import KIND_CONFIG, MIG_RESOURCE_PREFIX, PLUGIN_KINDS, plugin_daemonset
from gpuop.check.context import CheckContext, NodeInfo, kind_of
from gpuop.planner import NodePlan
from gpuop.policy import ResolvedPolicy


def shown_counts(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in sorted(resources.items()))


def describe_workload(plan: NodePlan) -> str:
    """`vm-vgpu (from its label)` and the like."""
    decision = plan.workload
    config = decision.config or "none"
    reasons = {
        "label": "from its label",
        "default": "sandboxWorkloads.defaultWorkload",
        "ignored-sandbox-disabled": "sandbox workloads are off",
        "sandbox-disabled": "sandbox workloads are off",
        "invalid-label": "the label is invalid, so the default",
        "not-a-gpu-node": "no GPU",
    }
    return f"{config} ({reasons.get(decision.reason, decision.reason)})"


def describe_cards(plan: NodePlan) -> str:
    inventory = plan.inventory
    if not inventory.cards:
        return "no known GPUs"
    models = sorted({card.model or f"10de:{card.device_id}" for card in inventory.cards})
    count = f"{inventory.count}" if inventory.count_known else "?"
    return f"{count}× {'/'.join(models)}"


# The suffix the device plugin gives shared GPUs under `renameByDefault: true`.
SHARED_SUFFIX = ".shared"


# GPU216's fix: GFD given the plugin's sharing config.
GFD_CONFIG_HINT = (
    "give GFD the plugin's config (install it through the plugin's Helm chart with"
    " gfd.enabled=true, or hand it the same ConfigMap and config key), then restart the GFD"
    " pod on {node}"
)


def gfd_replicas(labels: Mapping[str, str]) -> int | None:
    """GPU feature discovery's `nvidia.com/gpu.replicas`: replicas per GPU, None if unset.

    GFD writes the configured time-slicing or MPS replicas, 1 when the GPUs are not shared,
    and 0 for the whole-GPU labels of MIG-enabled GPUs (and an invalid MIG `single`
    layout): such GPUs are not advertised as whole GPUs.
    """
    raw = labels.get(GPU_REPLICAS_LABEL, "")
    if raw.isascii() and raw.isdigit() and 0 < len(raw) < 4:
        return int(raw)
    return None


def _container_sharing(info: NodeInfo) -> tuple[int, bool]:
    """(replicas per GPU, MIG in use) from GPU feature discovery labels and resources."""
    labels = info.view.labels
    replicas = gfd_replicas(labels)
    mig = (
        replicas == 0
        or "-MIG-" in labels.get(GPU_PRODUCT_LABEL, "")
        or any(name.startswith(MIG_RESOURCE_PREFIX) for name in info.positive())
        or labels.get(MIG_CONFIG_LABEL, "all-disabled") not in ("all-disabled", "")
    )
    return (1 if replicas is None else max(replicas, 1)), mig


def _sharing_unknown_to_gfd(
    ctx: CheckContext, info: NodeInfo, plan: NodePlan, resource: str, count: int, planned: int
) -> bool:
    """GPU216 (and True) where the plugin shares the GPUs and GFD says they are not shared;
    True with no finding where the `.shared` name says they are and GFD says nothing."""
    labelled = gfd_replicas(info.view.labels)
    if not resource.endswith(SHARED_SUFFIX) or (labelled is not None and labelled > 1):
        # A plain name over the count may be cards the plugin sees and GFD does not (GPU205);
        # where GFD knows the replicas the count is judged against them.
        return False
    per_gpu, rest = divmod(count, planned) if planned > 0 else (0, 1)
    if labelled is None:
        return True  # `.shared` with no GFD: the replicas are not known here
    if count <= planned:
        return False
    cards = plan.inventory.count
    spread = f"{per_gpu} per GPU" if not rest else f"{count} devices"
    ctx.add(
        "GPU216",
        "Node",
        info.name,
        f"advertises {resource}: {count} on {cards} GPU{'s' if cards != 1 else ''}"
        f" ({describe_cards(plan)}): {spread}, as time-slicing or MPS replicas give, but GPU"
        f" feature discovery labels {GPU_REPLICAS_LABEL}={info.view.labels[GPU_REPLICAS_LABEL]}:"
        " it runs without the device plugin's sharing config",
        GFD_CONFIG_HINT.format(node=info.name),
    )
    return True


def check_advertised(
    ctx: CheckContext,
    info: NodeInfo,
    plan: NodePlan,
    policy: ResolvedPolicy,
    explained: bool,
    plugin_fix: str | None = None,
) -> bool:
    """Advertised resources against the plan; True when a name mismatch was reported.

    `plugin_fix` is what to do when the node's plugin, not the operator's, advertises
    nothing it should."""
    name = info.name
    own = info.own_kind(policy)
    expected = plan.advertises
    positive = info.positive()
    foreign = {
        r: n for r, n in positive.items() if kind_of(r) in PLUGIN_KINDS and kind_of(r) != own
    }
    mine = {r: n for r, n in positive.items() if kind_of(r) == own}
    unknown = {
        r: n for r, n in positive.items() if kind_of(r) not in PLUGIN_KINDS and r not in expected
    }
    reported = False
    # Cards the vGPU config does not list keep whatever vGPU devices they had.
    untouched = bool(plan.vgpu and plan.vgpu.result.untouched)

    if foreign:
        kinds = sorted({kind_of(r) for r in foreign})
        daemonsets = "/".join(sorted({plugin_daemonset(k) for k in kinds}))
        configs = "/".join(sorted({KIND_CONFIG[k] for k in kinds}))
        if mine:
            ctx.add(
                "GPU202",
                "Node",
                name,
                f"advertises {shown_counts(mine)} for {describe_workload(plan)} and also {shown_counts(foreign)}, which"
                f" {configs} nodes advertise: two resource kinds at once",
                f"the {configs} resource is left behind: make sure no {daemonsets} pod runs on"
                f" {name}, then restart its kubelet so the stale resource drops to 0",
            )
        else:
            wanted = (
                f"expects {shown_counts(expected)}"
                if expected
                else f"expects {own or 'no'} resources"
            )
            ctx.add(
                "GPU201",
                "Node",
                name,
                f"workload config {describe_workload(plan)} {wanted}, but the node advertises"
                f" {shown_counts(foreign)}, which {configs} nodes advertise",
                f"the {configs} device plugin still serves {name}: check that the operator"
                f" relabelled it (`gpuop plan`) and that no {daemonsets} pod runs there",
            )
        reported = True

    missing: list[str] = []
    # Names the node should advertise whose count cannot be known: missing only when the
    # node advertises none of them.
    uncounted = [r for r in plan.expected_names if r not in expected]
    if uncounted and not any(positive.get(r, 0) for r in plan.expected_names):
        missing.extend(uncounted)
    for resource, planned in sorted(expected.items()):
        count = positive.get(resource, 0)
        kind = kind_of(resource)
        if count == 0 and kind == "container" and positive.get(f"{resource}{SHARED_SUFFIX}"):
            # The sharing config's renameByDefault: the replicas go by `<name>.shared`.
            resource = f"{resource}{SHARED_SUFFIX}"
            count = positive[resource]
        if count == 0:
            # GFD's replicas 0: the GPUs are in MIG mode, none is advertised whole.
            mig_mode = kind == "container" and gfd_replicas(info.view.labels) == 0
            if planned > 0 and not mig_mode:
                missing.append(resource)
            continue
        if kind == "vgpu":
            if count != planned and not explained and not (untouched and count > planned):
                per_card = _vgpu_per_card(plan, resource)
                ctx.add(
                    "GPU204",
                    "Node",
                    name,
                    f"advertises {resource}: {count}, but {per_card} gives {planned}",
                    f"check {VGPU_CONFIG_STATE_LABEL} and the nvidia-vgpu-device-manager logs"
                    f" on {name}; relabel {VGPU_CONFIG_LABEL} to re-apply the config",
                )
            continue
        replicas, mig = (1, False)
        if kind == "container":
            replicas, mig = _container_sharing(info)
            if mig or _sharing_unknown_to_gfd(ctx, info, plan, resource, count, planned):
                continue
            shared_by_config = ctx.config_replicas.get(name, 1)
            if replicas == 1 and count == planned * shared_by_config:
                # GFD says unshared; the plugin's config in the input shares them so (GPU216).
                replicas = shared_by_config
        cards = plan.inventory.count
        limit = planned * replicas
        if count > limit:
            sharing = f" × {replicas} replicas" if replicas > 1 else ""
            fix = (
                f"check which functions are bound on {name} (`lspci -nnk -d 10de:`) and which"
                " device plugins run there"
            )
            if replicas == 1 and planned > 0 and count % planned == 0:
                fix += (
                    f"; if the plugin shares the GPUs by time-slicing or MPS ({count // planned}"
                    f" replicas), GPU feature discovery lacks its config ({GPU_REPLICAS_LABEL}"
                    " says 1): give GFD the plugin's config"
                )
            ctx.add(
                "GPU205",
                "Node",
                name,
                f"advertises {resource}: {count}, but the node has {cards} GPU"
                f"{'s' if cards != 1 else ''}{sharing} ({describe_cards(plan)})",
                fix,
            )
        elif count < limit:
            message = (
                f"advertises {resource}: {count} of the {limit} the node's GPUs give"
                f" ({describe_cards(plan)})"
            )
            fix = (
                f"check `lspci -nnk -d 10de:` on {name}: a card may be missing, held by a host"
                " driver or not bound to vfio-pci"
            )
            registered = info.view.planned_capacity.get(resource, "")
            if registered.isdigit() and int(registered) > count:
                # Capacity counts every device the plugin registered, allocatable the healthy.
                message += (
                    f": the device plugin registered {registered} and marks"
                    f" {int(registered) - count} unhealthy"
                )
                fix = (
                    "the device plugin marks a device unhealthy on an XID error: `nvidia-smi -q`"
                    f" on {name} shows which; reset or replace the GPU, then restart the plugin"
                )
            ctx.add("GPU206", "Node", name, message, fix)

    # A passthrough name that no device has in gpuop's pci.ids: the plugin's differs. (With
    # the sandbox plugin off nothing is expected, and a name pci.ids has is no mismatch.)
    unknown_names = {r: n for r, n in mine.items() if not ctx.pci_db.names_a_device(r)}
    if (
        not plan.expected_names
        and own in ("passthrough", "kata")
        and unknown_names
        and not explained
    ):
        reported = True
        ctx.add(
            "GPU209",
            "Node",
            name,
            f"advertises {shown_counts(unknown_names)}, a name no NVIDIA device has in gpuop's pci.ids,"
            " so the cards behind it are unknown",
            "the plugin's pci.ids differs from gpuop's: pass it with --pci-ids, and permit"
            " and request the name the node really advertises",
        )
    # Resources of the node's own kind under other names than planned.
    # (Not on container nodes: nvidia.com/gpu.shared and mig-* are sharing forms.)
    if plan.expected_names and own != "container":
        expected_names = set(plan.expected_names)
        odd = {r: n for r, n in mine.items() if r not in expected_names}
        odd.update({r: n for r, n in unknown.items() if r not in expected_names})
        if untouched and own == "vgpu":
            odd = {r: n for r, n in odd.items() if kind_of(r) != "vgpu"}
        if odd and not explained:
            reported = True
            if own == "vgpu":
                configured = ", ".join(sorted(expected_names))
                source = plan.vgpu.config_name if plan.vgpu else "the policy default"
                ctx.add(
                    "GPU203",
                    "Node",
                    name,
                    f"advertises {shown_counts(odd)}, but vGPU config {source} gives {configured}",
                    f"re-apply the config: relabel {VGPU_CONFIG_LABEL} on {name}, or check"
                    " that the vgpu-device-manager runs there",
                )
            else:
                wanted = ", ".join(sorted(expected_names))
                ctx.add(
                    "GPU209",
                    "Node",
                    name,
                    f"advertises {shown_counts(odd)} where gpuop's PCI database gives {wanted}",
                    "the plugin's pci.ids differs from gpuop's: pass it with --pci-ids, and"
                    " permit and request the name the node really advertises",
                )
    unreadable = {resource for resource, _ in info.bad_quantities}
    missing = [resource for resource in missing if resource not in unreadable]
    if missing and not reported and not explained:
        if own == "container" and any(kind_of(r) == "container" for r in positive):
            return reported
        daemonset = plugin_daemonset(own or "")
        context = [
            n.message
            for n in plan.notices
            if n.code in (NoticeCode.VFIO_MANAGER_NOT_RUNNING, NoticeCode.VGPU_MANAGER_NOT_RUNNING)
        ]
        extra = f" ({'; '.join(context)})" if context else ""
        ctx.add(
            "GPU207",
            "Node",
            name,
            f"workload config {describe_workload(plan)} should advertise"
            f" {_shown_expected(expected, missing)}, but the node advertises"
            f" {shown_counts(positive) if positive else 'no GPU resource'}{extra}",
            plugin_fix
            or f"check the {daemonset} pod on {name} and its validator init containers"
            " (include pods in the input to have them checked)",
        )
    return reported


def _shown_expected(expected: Mapping[str, int], names: list[str]) -> str:
    """`nvidia.com/gpu: 2`, or the bare name where the count cannot be known."""
    return ", ".join(f"{r}: {expected[r]}" if r in expected else r for r in sorted(names))


def _vgpu_per_card(plan: NodePlan, resource: str) -> str:
    if plan.vgpu is None:
        return "the vGPU config"
    types = [
        f"{count}× {vgpu_type}"
        for card in plan.vgpu.result.cards
        for vgpu_type, count in card.devices.items()
    ]
    per_card = sorted(set(types))
    cards = len(plan.vgpu.result.cards)
    what = "/".join(per_card) if per_card else "nothing"
    return f"vGPU config {plan.vgpu.config_name} ({what} per card on {cards} card{'s' if cards != 1 else ''})"


__all__ = [
    "GFD_CONFIG_HINT",
    "check_advertised",
    "describe_cards",
    "describe_workload",
    "gfd_replicas",
    "shown_counts",
]
