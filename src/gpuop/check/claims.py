"""DRA: what drivers publish (ResourceSlices) against what claims hold and nodes advertise (GPU8xx).

The scheduler sees devices, not cards. NVIDIA's DRA driver names a card's devices after its
roles: `gpu-<minor>` (`type: gpu`, for containers), with PassthroughSupport also
`gpu-vfio-<index>` (`type: vfio`, for VMs), and MIG devices (`type: mig`, with the card's
`parentUUID`). The `gpu` device carries the card's `uuid`, the `vfio` one a uuid of its own
(name-based, of the PCI address), and all of them the card's
`resource.kubernetes.io/pciBusID`: a uuid or a PCI address on one node ties a card's
devices together. These rules put the devices back together into cards and find:

* a card allocated to two claims through two of its devices (GPU801);
* a card in two pools (GPU802), or advertised by the device plugin on a node whose slices
  publish it too (GPU803), or a node set up for both stacks (GPU804);
* a node the driver's kubelet plugin runs on whose GPUs no slice publishes (GPU811);
* a card published two-faced with no counter set both faces consume (GPU810);
* claims that no node could ever satisfy (GPU805), invalid CEL (GPU808), and bad input:
  a slice for an unknown node (GPU806), an unknown DeviceClass (GPU807), objects that
  cannot be read (GPU809).

Devices are read from plain dicts here, tolerantly (a bad field costs one device, not the
check); the CEL selectors are `gpuop.dra`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from gpuop.api.labels import DRA_PLUGIN_NODE_LABEL, DRIVER_DEPLOY_LABEL, deploy_label
from gpuop.api.wording import listed
from gpuop.catalog import operand_table
from gpuop.catalog.dra import dra_catalog
from gpuop.check.claim_fit import check_claim_fit
from gpuop.check.context import CheckContext, kind_of, resource_count
from gpuop.check.managers import DRA_DRIVER
from gpuop.check.state import NodeView
from gpuop.dra.publish import PCI_BUS_ID_ATTRIBUTE
from gpuop.manifests.fields import mapping, sequence, text

__all__ = ["PublishedDevice", "card_label", "check_claims", "group_cards", "published_devices"]

NVIDIA_DRIVER: Final = dra_catalog().driver
"""The driver name of NVIDIA's DRA driver for GPUs (`gpu.nvidia.com`)."""

PCI_BUS_ID: Final = PCI_BUS_ID_ATTRIBUTE
# Device types that hold the whole card; MIG and vGPU devices share one card by design.
_WHOLE_CARD: Final = frozenset({"gpu", "vfio", ""})
# The device plugins' deploy labels, and their operands.
_DEVICE_PLUGIN_LABELS: Final = (
    (deploy_label("device-plugin"), "device-plugin"),
    (deploy_label("sandbox-device-plugin"), "sandbox-device-plugin"),
)
_PLUGIN_KINDS: Final = frozenset({"container", "passthrough", "vgpu", "kata"})


@dataclass(frozen=True)
class PublishedDevice:
    """One device of a ResourceSlice, with what says which card it is."""

    slice: str
    driver: str
    pool: str
    name: str
    node: str
    type: str
    # The card: the device's own uuid, or a MIG device's parentUUID.
    card: str
    pci: str
    counter_sets: frozenset[str]
    allow_multiple: bool

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)

    @property
    def card_keys(self) -> tuple[str, ...]:
        # A VFIO device's uuid is derived from its PCI address alone, so cards at the same
        # address on two nodes share it: only its PCI address on its node names its card.
        keys = [f"uuid {self.card}"] if self.card and self.type != "vfio" else []
        if self.pci and self.node:
            keys.append(f"{PCI_BUS_ID} {self.pci} on {self.node}")
        return tuple(keys)

    @property
    def whole_card(self) -> bool:
        return self.type in _WHOLE_CARD


def _attribute(attributes: Mapping[str, Any], driver: str, name: str) -> str:
    """A string attribute by its name in the driver's domain (qualified or not)."""
    for key in (name, f"{driver}/{name}"):
        raw = attributes.get(key)
        if isinstance(raw, Mapping):
            for kind in ("string", "version"):
                if isinstance(raw.get(kind), str):
                    return str(raw[kind])
    return ""


def _newest_generations(slices: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    newest: dict[tuple[str, str], int] = {}
    for obj in slices:
        key = (text(obj, "spec", "driver"), text(obj, "spec", "pool", "name"))
        generation = mapping(obj, "spec", "pool").get("generation")
        value = generation if isinstance(generation, int) else 0
        newest[key] = max(newest.get(key, value), value)
    return newest


def published_devices(slices: Iterable[Mapping[str, Any]]) -> list[PublishedDevice]:
    """The devices of the newest generation of each pool, read field by field."""
    chosen = list(slices)
    newest = _newest_generations(chosen)
    devices: list[PublishedDevice] = []
    for obj in chosen:
        spec = mapping(obj, "spec")
        driver, pool = text(spec, "driver"), text(spec, "pool", "name")
        generation = mapping(spec, "pool").get("generation")
        if (generation if isinstance(generation, int) else 0) < newest[(driver, pool)]:
            continue
        for raw in sequence(spec, "devices"):
            name = text(raw, "name")
            if not name:
                continue
            attributes = mapping(raw, "attributes")
            kind = _attribute(attributes, driver, "type")
            card = _attribute(attributes, driver, "parentUUID" if kind == "mig" else "uuid")
            pci = _attribute(attributes, driver, PCI_BUS_ID)
            devices.append(
                PublishedDevice(
                    slice=text(obj, "metadata", "name"),
                    driver=driver,
                    pool=pool,
                    name=name,
                    node=text(raw, "nodeName") or text(spec, "nodeName"),
                    type=kind,
                    card=card,
                    pci=pci,
                    counter_sets=frozenset(
                        text(use, "counterSet") for use in sequence(raw, "consumesCounters")
                    ),
                    allow_multiple=mapping(raw).get("allowMultipleAllocations") is True,
                )
            )
    return devices


def group_cards(devices: Iterable[PublishedDevice]) -> list[list[PublishedDevice]]:
    """The devices of each physical card: those linked by a uuid or a PCI address on a node.

    NVIDIA's driver gives a card's `gpu-vfio-<index>` device a uuid of its own (a name-based
    UUID of the PCI address), so it is the PCI address that ties it to `gpu-<minor>`.
    """
    parent: dict[int, int] = {}

    def root(index: int) -> int:
        while parent.setdefault(index, index) != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    chosen = list(devices)
    owner: dict[str, int] = {}
    for index, device in enumerate(chosen):
        root(index)
        for key in device.card_keys:
            if key in owner:
                parent[root(index)] = root(owner[key])
            else:
                owner[key] = index
    groups: dict[int, list[PublishedDevice]] = {}
    for index, device in enumerate(chosen):
        groups.setdefault(root(index), []).append(device)
    return list(groups.values())


def card_label(card: Iterable[PublishedDevice]) -> str:
    """How a finding names a card: its PCI address on its node, and the GPU's uuid."""
    devices = sorted(card, key=lambda d: (d.type != "gpu", d.type, d.name))
    where = next((f"{d.pci} on {d.node}" for d in devices if d.pci and d.node), "")
    uuid = next((d.card for d in devices if d.card), "")
    if where and uuid:
        return f"{where}, {uuid}"
    return where or uuid or devices[0].name


@dataclass(frozen=True)
class Allocation:
    """One allocated device of a claim (status.allocation.devices.results[])."""

    namespace: str
    claim: str
    request: str
    device: PublishedDevice

    @property
    def subject(self) -> str:
        return f"{self.namespace}/{self.claim}"


def _allocations(
    claims: Iterable[Mapping[str, Any]], by_key: Mapping[tuple[str, str, str], PublishedDevice]
) -> list[Allocation]:
    found: list[Allocation] = []
    for claim in claims:
        namespace = text(claim, "metadata", "namespace") or "default"
        name = text(claim, "metadata", "name")
        for result in sequence(claim, "status", "allocation", "devices", "results"):
            if mapping(result).get("adminAccess") is True:
                continue  # admin access sees devices without taking them
            key = (text(result, "driver"), text(result, "pool"), text(result, "device"))
            device = by_key.get(key)
            if device is not None:
                found.append(Allocation(namespace, name, text(result, "request"), device))
    return found


def _conflict(first: Allocation, second: Allocation) -> bool:
    """Whether two allocations of one card, to different claims, cannot both be prepared."""
    if first.device.key == second.device.key:
        return not first.device.allow_multiple
    return first.device.whole_card or second.device.whole_card


def _shown(device: PublishedDevice) -> str:
    where = f" on {device.node}" if device.node else ""
    return f"{device.name} (pool {device.pool}{where})"


def check_allocated_twice(
    ctx: CheckContext, devices: list[PublishedDevice], allocations: list[Allocation]
) -> None:
    """GPU801: two claims hold one card through two of its devices (or one, twice)."""
    card_of: dict[tuple[str, str, str], int] = {}
    labels: list[str] = []
    for index, card in enumerate(group_cards(devices)):
        labels.append(card_label(card))
        for device in card:
            card_of[device.key] = index
    by_card: dict[int, list[Allocation]] = {}
    for allocation in allocations:
        by_card.setdefault(card_of[allocation.device.key], []).append(allocation)
    for index, held in by_card.items():
        reported: set[tuple[str, str, str, str]] = set()
        for position, first in enumerate(held):
            for second in held[position + 1 :]:
                if first.subject == second.subject or not _conflict(first, second):
                    continue
                low, high = sorted((first.subject, second.subject))
                one, two = sorted((first.device.name, second.device.name))
                pair = (low, high, one, two)
                if pair in reported:
                    continue
                reported.add(pair)
                for this, other in ((first, second), (second, first)):
                    ctx.add(
                        "GPU801",
                        "ResourceClaim",
                        this.claim,
                        f"request {this.request} holds {_shown(this.device)}, the same card"
                        f" ({labels[index]}) as {_shown(other.device)} allocated to claim"
                        f" {other.subject}: the second prepare fails",
                        f"delete the pod of one of the claims ({low}, {high}) so it is"
                        " deallocated, and publish the card's devices with a shared counter set"
                        " so that it cannot happen again",
                        namespace=this.namespace,
                        node=this.device.node or None,
                    )


def check_card_in_two_pools(ctx: CheckContext, devices: list[PublishedDevice]) -> None:
    """GPU802: one card's whole-card devices in two pools."""
    for card in group_cards(d for d in devices if d.whole_card):
        by_pool: dict[tuple[str, str], PublishedDevice] = {}
        for device in card:
            by_pool.setdefault((device.driver, device.pool), device)
        if len(by_pool) < 2:
            continue
        (first, *others) = sorted(by_pool.values(), key=lambda d: (d.driver, d.pool, d.slice))
        for other in others:
            ctx.add(
                "GPU802",
                "ResourceSlice",
                other.slice,
                f"publishes card {card_label(card)} as {other.name} (driver {other.driver}, pool"
                f" {other.pool}), which ResourceSlice {first.slice} also publishes as"
                f" {first.name} (driver {first.driver}, pool {first.pool})",
                "remove the second DRA driver, or delete the stale pool's ResourceSlices",
                node=other.node or None,
            )


def _plugin_resources(view: NodeView) -> dict[str, int]:
    found: dict[str, int] = {}
    for resource, raw in view.planned_capacity.items():
        count, _ = resource_count(raw)
        if count and kind_of(resource) in _PLUGIN_KINDS:
            found[resource] = count
    return found


def _plugin_deployed(ctx: CheckContext, operand: str) -> bool:
    """Whether the ClusterPolicy in the input deploys the device plugin `operand`.

    The operator sets the deploy labels whether or not the plugin is enabled, and NVIDIA's
    guide for its DRA driver beside the operator turns the device plugin off; with no
    ClusterPolicy in the input, a node that advertises nothing shows no plugin either."""
    if ctx.policy is None or ctx.policy_assumed:
        return False
    return ctx.policy.operand_enabled(operand_table().operand(operand))


def check_both_stacks(ctx: CheckContext, devices: list[PublishedDevice]) -> None:
    """GPU803: the device plugin advertises a node's cards that its slices publish too.

    GPU804: the slices publish them and a device plugin is deployed to the node, not yet
    advertising (a leftover deploy label alone, with no slices, is not a second stack).
    """
    cards: dict[str, set[str]] = {}
    for card in group_cards(d for d in devices if d.driver == NVIDIA_DRIVER and d.node):
        cards.setdefault(card[0].node, set()).add(card_label(card))
    for view in ctx.state.nodes:
        plugin = _plugin_resources(view)
        published = cards.get(view.name, set())
        plugins = [
            label
            for label, operand in _DEVICE_PLUGIN_LABELS
            if view.labels.get(label) == "true" and _plugin_deployed(ctx, operand)
        ]
        if published and plugins and not plugin:
            ctx.add(
                "GPU804",
                "Node",
                view.name,
                f"ResourceSlices of {NVIDIA_DRIVER} publish {len(published)} card(s) of the node,"
                f" and it is labelled {plugins[0]}=true: once that device plugin runs, its cards"
                " are offered twice",
                f"leave one stack on the node: remove it from the ClusterPolicy's nodes (set"
                f" {plugins[0]}=false), or from the GPUCluster's",
            )
        if plugin and published:
            shown = ", ".join(f"{r}: {n}" for r, n in sorted(plugin.items()))
            ctx.add(
                "GPU803",
                "Node",
                view.name,
                f"the device plugin advertises {shown} (status.capacity) while ResourceSlices"
                f" of {NVIDIA_DRIVER} publish {len(published)} card(s) of the node: the"
                " scheduler can give one card to a device-plugin pod and to a claim",
                "run one stack on the node: the device plugin (ClusterPolicy) or the DRA"
                " driver (GPUCluster)",
            )


def check_two_faced(ctx: CheckContext, devices: list[PublishedDevice]) -> None:
    """GPU810: a card published as gpu and vfio with no counter set both consume."""
    for card in group_cards(d for d in devices if d.type in ("gpu", "vfio")):
        by_pool: dict[tuple[str, str], list[PublishedDevice]] = {}
        for device in card:
            by_pool.setdefault((device.driver, device.pool), []).append(device)
        for (_, pool), found in sorted(by_pool.items()):
            if {device.type for device in found} != {"gpu", "vfio"}:
                continue
            shared = frozenset.intersection(*(device.counter_sets for device in found)) - {""}
            if shared:
                continue
            vfio = next(device for device in found if device.type == "vfio")
            names = ", ".join(sorted(device.name for device in found))
            ctx.add(
                "GPU810",
                "ResourceSlice",
                vfio.slice,
                f"card {card_label(found)} is published as {names} (pool {pool}) with no"
                " counter set that both consume: container and VM claims can race for this"
                " card (the upstream PassthroughSupport race, dra-driver-nvidia-gpu#1330)",
                "publish a counter set per card that each of its devices consumes fully"
                " (KEP-4815, Kubernetes 1.36 and later), or give the node one role",
                node=vfio.node or None,
            )


def check_unpublished(ctx: CheckContext, devices: list[PublishedDevice]) -> None:
    """GPU811: the DRA driver's kubelet plugin runs on a node none of whose GPUs it publishes
    (checked where the input holds DRA objects, so missing slices are not a partial dump)."""
    # Where GPU allocation is off, the same plugin publishes ComputeDomain devices only.
    published = {device.node for device in devices if device.driver.endswith("nvidia.com")}
    for name, management in sorted(ctx.management.items()):
        if name in published:
            continue
        pods = management.plugin_pods(DRA_DRIVER)
        if not pods:
            continue
        ctx.add(
            "GPU811",
            "Node",
            name,
            f"pod {pods[0]} of NVIDIA's DRA driver runs on the node, but no"
            f" ResourceSlice of {NVIDIA_DRIVER} publishes its GPUs: claims cannot be"
            " allocated there",
            "read the log of the kubelet plugin's `gpus` container: it publishes once it finds"
            " the driver (`nvidia-smi` works on the node; the chart's nvidiaDriverRoot points"
            " at it) and its GPU allocation is enabled",
        )


def check_unknown_nodes(ctx: CheckContext) -> None:
    """GPU806: slices for nodes the input does not have (only when it has Nodes)."""
    if not ctx.state.nodes:
        if ctx.state.resource_slices:
            ctx.skip("dra-nodes", "no Nodes in the input: ResourceSlices' nodes not checked")
        return
    known = {view.name for view in ctx.state.nodes}
    for obj in ctx.state.resource_slices:
        node = text(obj, "spec", "nodeName")
        if node and node not in known:
            devices = len(sequence(obj, "spec", "devices"))
            ctx.add(
                "GPU806",
                "ResourceSlice",
                text(obj, "metadata", "name"),
                f"spec.nodeName {node} is not a Node of the input; the slice publishes"
                f" {devices} device(s) of driver {text(obj, 'spec', 'driver') or '?'}",
                f"delete the slice if node {node} is gone, or add the Node to the input",
            )


# The driver manager's setting that names the label of the nodes whose DRA kubelet plugin
# it evicts before reloading the driver (k8s-driver-manager's --node-label-for-gpu-pod-eviction).
EVICTION_ENV: Final = "NODE_LABEL_FOR_GPU_POD_EVICTION"


def check_driver_eviction(ctx: CheckContext) -> None:
    """GPU812: the GPU Operator installs the driver of nodes NVIDIA's DRA driver serves, and
    its driver manager is not told the label of those nodes, so a driver upgrade reloads the
    driver under the running kubelet plugin (NVIDIA's guide for the DRA driver beside the
    operator sets `driver.manager.env` NODE_LABEL_FOR_GPU_POD_EVICTION to the label the DRA
    chart's nodeSelector uses)."""
    policy = ctx.policy
    if policy is None or ctx.policy_assumed:
        return
    if not policy.operand_enabled(operand_table().operand("driver")):
        return  # the host's driver, or an NVIDIADriver's with its own manager settings
    driver = policy.policy.spec.driver
    manager = driver.manager if driver is not None else None
    label = next(
        (e.value for e in (manager.env if manager else None) or [] if e.name == EVICTION_ENV), None
    )
    nodes = []
    for info in ctx.nodes:
        management = ctx.management.get(info.name)
        if management is None or not management.operator or DRA_DRIVER not in management.managers:
            continue
        if info.on_dra_stack:
            continue  # GPUCluster's own stack
        if info.view.labels.get(DRIVER_DEPLOY_LABEL) != "true":
            continue
        if label and info.view.labels.get(label) == "true":
            continue
        nodes.append(info.name)
    if not nodes:
        return
    said = (
        f"driver.manager.env sets no {EVICTION_ENV}"
        if not label
        else f"driver.manager.env's {EVICTION_ENV} names {label}, which they do not carry as true"
    )
    ctx.add(
        "GPU812",
        "ClusterPolicy",
        policy.name or "(unnamed)",
        f"NVIDIA's DRA driver serves {listed(nodes, 3)}, whose driver the operator installs, and"
        f" {said}: a driver upgrade reloads the driver under the running DRA kubelet plugin",
        f"set driver.manager.env {EVICTION_ENV}=<the label the DRA chart's"
        " kubeletPlugin.nodeSelector uses> (nvidia.com/dra-kubelet-plugin in NVIDIA's guide),"
        " and label those nodes with it",
    )


def check_unserved(ctx: CheckContext) -> None:
    """GPU813: a node labelled for the DRA driver's kubelet plugin that runs none, while the
    input shows the plugin's pods on other nodes, and that neither publishes nor advertises
    its GPUs: nothing serves them."""
    with_plugin = {
        name for name, management in ctx.management.items() if management.plugin_pods(DRA_DRIVER)
    }
    if not with_plugin:
        return  # no plugin pod in the input: a dump without pods says nothing of them
    for info in ctx.nodes:
        if info.view.labels.get(DRA_PLUGIN_NODE_LABEL) != "true" or info.name in with_plugin:
            continue
        if info.name in ctx.dra_published or _plugin_resources(info.view):
            continue
        ctx.add(
            "GPU813",
            "Node",
            info.name,
            f"{DRA_PLUGIN_NODE_LABEL}=true, but no pod of NVIDIA's DRA kubelet plugin runs on the"
            f" node (it runs on {listed(sorted(with_plugin), 3)}), and nothing publishes or"
            " advertises its GPUs",
            "compare the DRA chart's kubeletPlugin.nodeSelector, affinity and tolerations with"
            f" the labels and taints of {info.name}; `kubectl describe daemonset` of the kubelet"
            " plugin says why it places no pod there",
        )


def check_claims(ctx: CheckContext) -> None:
    """Every GPU8xx rule over the input's ResourceSlices, ResourceClaims and DeviceClasses."""
    check_driver_eviction(ctx)
    check_unserved(ctx)
    state = ctx.state
    if not (
        state.resource_slices
        or state.resource_claims
        or state.resource_claim_templates
        or state.device_classes
    ):
        return
    devices = published_devices(state.resource_slices)
    by_key = {device.key: device for device in devices}
    check_allocated_twice(ctx, devices, _allocations(state.resource_claims, by_key))
    check_card_in_two_pools(ctx, devices)
    check_both_stacks(ctx, devices)
    check_unpublished(ctx, devices)
    check_two_faced(ctx, devices)
    check_unknown_nodes(ctx)
    check_claim_fit(ctx)
