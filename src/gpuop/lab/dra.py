"""The lab's DRA step: containers and VMs on one node, and the race, measured.

`gpuop lab --dra` runs it after the lab's seven steps (or `gpuop lab dra` alone on a cluster
left up by `--keep`). On the running lab cluster, with the simulator playing NVIDIA's DRA
kubelet plugin:

1. the DRA DeviceClasses, one simulated 2x A10 node and its kubelet-plugin pod (as the
   GPUCluster's DaemonSet runs it, `PassthroughSupport` on): the node's ResourceSlices, one
   counter set per card consumed by each of the card's devices;
2. a CUDA pod claiming `gpu.nvidia.com` and a VM's launcher pod claiming
   `vfio.gpu.nvidia.com`, placed by the real kube-scheduler on different cards (the prepare
   writes each claim's device status with the card's role), and a third claim of each role
   left Pending with the scheduler's reason;
3. the race: a container claim and a VFIO claim for one card submitted together, round after
   round on 1-card nodes, against NVIDIA's two-faced publication and gpuop's race-free one;
   the double allocations of each (the same card, by PCI address, allocated to both).

The builders and the race are shared with the end-to-end tests.
"""

from __future__ import annotations

import contextlib
import html
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from gpuop.api.labels import SIM_LABEL
from gpuop.catalog import operand_table
from gpuop.catalog.dra import dra_catalog
from gpuop.dra.publish import DRIVER, PCI_BUS_ID_ATTRIBUTE, publish
from gpuop.kube import ops
from gpuop.kube.client import SyncKubeClient
from gpuop.kube.errors import NotFound
from gpuop.lab.stack import CUDA_IMAGE, lab_pod
from gpuop.sim.dra import PLUGIN_APP
from gpuop.sim.hardware import NodeSpec, cards_for, node_manifest
from gpuop.sim.registry import add_nodes

DRA_NAMESPACE = "lab-dra"
DRA_NODE = "a10-dra"
CONTAINER_CLASS = "gpu.nvidia.com"
VFIO_CLASS = "vfio.gpu.nvidia.com"
LAUNCHER_IMAGE = "quay.io/kubevirt/virt-launcher:v1.7.0"
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-dra-driver-gpu:v0.1.0"
# As upstream renders the kubelet plugin with passthrough support on.
PLUGIN_FEATURE_GATES = "AdminAccess=false,MPSSupport=true,PassthroughSupport=true"
RACE_DRIVER_VERSION = "580.95.05"
# kube-scheduler's reason when no node can satisfy a pod's claims.
CANNOT_ALLOCATE = "cannot allocate all claims"
RESET_PAUSE_SECONDS = 0.5
PUBLISH_PAUSE_SECONDS = 1.0

Say = Callable[[str], None]


def device_classes() -> list[dict[str, Any]]:
    """The GPU DeviceClasses a GPUCluster creates (catalog/dra.yaml, compute domains off)."""
    catalog = dra_catalog()
    return [c.manifest(catalog.api_version) for c in catalog.classes(compute_domains=False)]


def plugin_pod_manifest(node: str, namespace: str) -> dict[str, Any]:
    """The DRA kubelet-plugin pod the GPUCluster's DaemonSet runs on `node`."""
    labels = dict(operand_table().gpucluster_operand("dra-driver").pod_labels)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{PLUGIN_APP}-{node}", "namespace": namespace, "labels": labels},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "gpus",
                    "image": PLUGIN_IMAGE,
                    "env": [{"name": "FEATURE_GATES", "value": PLUGIN_FEATURE_GATES}],
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }


def claim_manifest(name: str, namespace: str, device_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}
        },
    }


def workload_pod(
    name: str, namespace: str, claim: str, node: str | None = None, vm: bool = False
) -> dict[str, Any]:
    """A CUDA pod, or a VM's virt-launcher pod (`vm`), using the ResourceClaim `claim`."""
    container: dict[str, Any] = {
        "name": "compute" if vm else "main",
        "image": LAUNCHER_IMAGE if vm else CUDA_IMAGE,
        "resources": {"claims": [{"name": "gpu"}]},
    }
    labels = {"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": name} if vm else {}
    spec: dict[str, Any] = {
        "containers": [container],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
        "terminationGracePeriodSeconds": 0,
    }
    return lab_pod({"name": name, "namespace": namespace, "labels": labels}, spec, node)


def _pci_by_device(slices: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(pool, device) -> PCI address, for the driver's devices."""
    found = {}
    for item in slices:
        spec = item.get("spec") or {}
        if spec.get("driver") != DRIVER:
            continue
        pool = str((spec.get("pool") or {}).get("name"))
        for device in spec.get("devices") or []:
            attr = (device.get("attributes") or {}).get(PCI_BUS_ID_ATTRIBUTE) or {}
            found[(pool, str(device.get("name")))] = str(attr.get("string", ""))
    return found


def claim_cards(
    claims: list[dict[str, Any]], slices: list[dict[str, Any]]
) -> dict[str, list[tuple[str, str, str]]]:
    """claim -> [(pool, device, PCI address)] of what it was allocated."""
    pci = _pci_by_device(slices)
    cards: dict[str, list[tuple[str, str, str]]] = {}
    for claim in claims:
        meta = claim.get("metadata") or {}
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            if result.get("driver") != DRIVER:
                continue
            pool, device = str(result.get("pool")), str(result.get("device"))
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            cards.setdefault(key, []).append((pool, device, pci.get((pool, device), "")))
    return cards


def double_allocations(
    claims: list[dict[str, Any]], slices: list[dict[str, Any]]
) -> dict[str, list[str]]:
    """PCI address -> claims, for every card allocated to more than one claim."""
    holders: dict[str, set[str]] = {}
    for claim, devices in claim_cards(claims, slices).items():
        for pool, _device, bus_id in devices:
            holders.setdefault(f"{pool}/{bus_id}", set()).add(claim)
    return {card: sorted(names) for card, names in holders.items() if len(names) > 1}


def pod_placement(pod: dict[str, Any]) -> tuple[str | None, str]:
    """(node, '') once bound, or (None, the scheduler's reason) while Pending."""
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        return str(node), ""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return None, str(cond.get("message") or cond.get("reason") or "")
    return None, ""


@dataclass
class RaceResult:
    publication: str
    nodes: int
    rounds: int
    trials: int
    double_allocations: int
    one_pending: int
    seconds: float
    refusals: dict[str, int]


def _wait(check: Callable[[], bool | str], timeout: float, what: str) -> None:
    """Until `check()` is True; a string is what it saw instead, for the timeout's message."""
    deadline = time.monotonic() + timeout
    while (seen := check()) is not True:
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}: {seen}")
        time.sleep(0.1)


def race(
    client: SyncKubeClient,
    *,
    shared_counters: bool,
    nodes: int,
    rounds: int,
    namespace: str,
    prefix: str,
    say: Say = lambda _line: None,
) -> RaceResult:
    """Container + VFIO claim pairs for one card, submitted together, `rounds` x `nodes` times.

    Each 1-card kwok node gets its slices straight from `gpuop.dra.publish` (the nodes are
    not simulated, so nothing prepares or republishes between the two allocations: exactly
    the window of the upstream race). Between rounds every pod and claim is deleted and the
    next round waits until the claims are gone, so every round starts from a free card. The
    cluster must hold no Pending claim that could land on these nodes: it would take a card.
    """
    publication = "race-free" if shared_counters else "two-faced"
    names = [f"{prefix}-{i:02d}" for i in range(nodes)]
    ops.ensure_namespace_sync(client, namespace)
    for name in names:
        ops.delete_node_sync(client, name)
        node = node_manifest(NodeSpec(name, "A10", 1))
        node["metadata"]["labels"].pop(SIM_LABEL, None)
        ops.create_object_sync(client, node)
        for manifest in publish(
            name,
            cards_for(NodeSpec(name, "A10", 1)),
            ("gpu", "vfio"),
            shared_counters=shared_counters,
            driver_version=RACE_DRIVER_VERSION,
        ):
            ops.apply_object_sync(client, manifest)
    # A pod tried before the scheduler's informers hold its node's slices is refused, and
    # waits in the unschedulable queue: let the new nodes and slices reach the scheduler.
    time.sleep(PUBLISH_PAUSE_SECONDS)
    started = time.monotonic()
    doubles = pending = 0
    refusals: dict[str, int] = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        for number in range(rounds):
            pairs = [(f"{n}-r{number}-cuda", f"{n}-r{number}-vm", n) for n in names]
            claims = [claim_manifest(c, namespace, CONTAINER_CLASS) for c, _v, _n in pairs]
            claims += [claim_manifest(v, namespace, VFIO_CLASS) for _c, v, _n in pairs]
            list(pool.map(lambda obj: ops.create_or_replace_sync(client, obj), claims))
            pods: list[dict[str, Any]] = []
            for cuda, vm, on in pairs:
                pods += [
                    workload_pod(cuda, namespace, cuda, on),
                    workload_pod(vm, namespace, vm, on, vm=True),
                ]
            list(pool.map(lambda obj: ops.create_or_replace_sync(client, obj), pods))

            _wait(
                partial(_pairs_settled, client, namespace, pairs),
                60,
                f"{publication} round {number + 1}: each pair bound, or one bound and one"
                f" refused for its claim",
            )
            placed = [pod_placement(p) for p in ops.list_pods_sync(client, namespace)]
            pending += sum(1 for node, _reason in placed if node is None)
            if not shared_counters:
                # Which claims the scheduler refused on a free card, and why.
                for bound_to, reason in placed:
                    if bound_to is None:
                        refusals[reason] = refusals.get(reason, 0) + 1
            claims_now = ops.list_dra_sync(client, "ResourceClaim", namespace)
            slices_now = ops.list_dra_sync(client, "ResourceSlice")
            doubles += len(double_allocations(claims_now, slices_now))
            _reset(client, namespace, pool)
    result = RaceResult(
        publication,
        nodes,
        rounds,
        nodes * rounds,
        doubles,
        pending,
        round(time.monotonic() - started, 1),
        refusals,
    )
    say(
        f"  {publication}: {result.trials} same-card pairs, {result.double_allocations} double"
        f" allocations, {result.one_pending} left one claim Pending ({result.seconds}s)"
    )
    for reason, count in sorted(refusals.items()):
        say(f"    refused {count}x on a free card: {reason}")
    for name in names:
        for item in ops.list_dra_sync(client, "ResourceSlice"):
            if (item.get("spec") or {}).get("nodeName") == name:
                ops.delete_object_sync(client, "ResourceSlice", item["metadata"]["name"])
        ops.delete_node_sync(client, name)
    return result


def _pairs_settled(
    client: SyncKubeClient, namespace: str, pairs: list[tuple[str, str, str]]
) -> bool | str:
    """Every pair is placed for good: both pods bound, or one bound and the other refused
    because its claim cannot be allocated. A pod the scheduler saw before its claim reached
    the scheduler's cache is Pending for another reason, and is retried: not settled yet."""
    placed = {
        p["metadata"]["name"]: pod_placement(p) for p in ops.list_pods_sync(client, namespace)
    }
    for cuda, vm, _node in pairs:
        seen = [placed.get(cuda, (None, "")), placed.get(vm, (None, ""))]
        bound = sum(1 for node, _reason in seen if node)
        refused = sum(1 for node, reason in seen if not node and CANNOT_ALLOCATE in reason)
        if bound + refused != 2 or bound == 0:
            return f"{cuda}: {seen[0][0] or seen[0][1] or 'not yet scheduled'}; {vm}: {seen[1][0] or seen[1][1] or 'not yet scheduled'}"
    return True


def _reset(client: SyncKubeClient, namespace: str, pool: ThreadPoolExecutor) -> None:
    pods = [p["metadata"]["name"] for p in ops.list_pods_sync(client, namespace)]
    list(pool.map(lambda n: _delete_pod(client, n, namespace), pods))
    claims = [c["metadata"]["name"] for c in ops.list_dra_sync(client, "ResourceClaim", namespace)]
    list(pool.map(lambda n: ops.delete_object_sync(client, "ResourceClaim", n, namespace), claims))
    _wait(
        lambda: (
            not ops.list_pods_sync(client, namespace)
            and not ops.list_dra_sync(client, "ResourceClaim", namespace)
        ),
        60,
        "the round's pods and claims to be gone",
    )
    # The scheduler learns of the deletions through its informers: give them a moment, so
    # the next round does not meet a card its cache still counts as allocated.
    time.sleep(RESET_PAUSE_SECONDS)


def _delete_pod(client: SyncKubeClient, name: str, namespace: str) -> None:
    with contextlib.suppress(NotFound):
        ops.delete_pod_sync(client, namespace, name, grace_period=0)


# --- the lab step -------------------------------------------------------------------------


class DraStepFailure(RuntimeError):
    """What the DRA step expected and what it saw."""


def _slices_of(client: SyncKubeClient, node: str) -> list[dict[str, Any]]:
    return [
        s
        for s in ops.list_dra_sync(client, "ResourceSlice")
        if (s.get("spec") or {}).get("nodeName") == node
    ]


def _describe_slices(slices: list[dict[str, Any]], say: Say) -> list[dict[str, Any]]:
    described = []
    for item in sorted(slices, key=lambda s: s["metadata"]["name"]):
        spec = item["spec"]
        if spec.get("sharedCounters"):
            sets = [c["name"] for c in spec["sharedCounters"]]
            say(f"  {item['metadata']['name']}: counter sets {', '.join(sets)}")
            described.append({"name": item["metadata"]["name"], "counter_sets": sets})
            continue
        devices = []
        for device in spec.get("devices") or []:
            uses = [u["counterSet"] for u in device.get("consumesCounters") or []]
            devices.append({"device": device["name"], "consumes": uses})
        say(
            f"  {item['metadata']['name']}: "
            + ", ".join(f"{d['device']} (consumes {', '.join(d['consumes'])})" for d in devices)
        )
        described.append({"name": item["metadata"]["name"], "devices": devices})
    return described


def _wait_for(what: str, check: Callable[[], tuple[bool, Any]], timeout: float, say: Say) -> Any:
    deadline = time.monotonic() + timeout
    shown = time.monotonic()
    while True:
        done, last = check()
        if done:
            return last
        if time.monotonic() > deadline:
            raise DraStepFailure(f"expected {what}; saw {last}")
        if time.monotonic() - shown > 3:
            say(f"  ... waiting for {what}: {last}")
            shown = time.monotonic()
        time.sleep(0.2)


def _claim_status(client: SyncKubeClient, namespace: str, name: str) -> dict[str, Any]:
    for claim in ops.list_dra_sync(client, "ResourceClaim", namespace):
        if claim["metadata"]["name"] == name:
            return dict(claim.get("status") or {})
    return {}


def run_step(
    client: SyncKubeClient,
    say: Say,
    race_nodes: int = 10,
    race_rounds: int = 2,
    namespace: str = DRA_NAMESPACE,
) -> dict[str, Any]:
    """The DRA step on a cluster whose simulator runs; its record for the report."""
    from gpuop.sim.registry import DEFAULT_NAMESPACE

    classes = device_classes()
    for obj in classes:
        ops.create_or_replace_sync(client, obj)
    names = ", ".join(c["metadata"]["name"] for c in classes)
    say(f"DeviceClasses {names} (as a GPUCluster creates them)")
    ops.ensure_namespace_sync(client, namespace)
    if ops.get_node(client, DRA_NODE) is None:
        add_nodes(client, [NodeSpec(DRA_NODE, "A10", 2)], DEFAULT_NAMESPACE)
    ops.create_or_replace_sync(client, plugin_pod_manifest(DRA_NODE, DEFAULT_NAMESPACE))
    say(f"node {DRA_NODE} (2x A10) with the DRA kubelet-plugin pod ({PLUGIN_FEATURE_GATES})")
    slices = _wait_for(
        f"the simulated DRA driver to publish {DRA_NODE}'s slices",
        lambda: (len(_slices_of(client, DRA_NODE)) == 3, len(_slices_of(client, DRA_NODE))),
        60,
        say,
    )
    del slices
    say("published race-free: one counter set per card, every role of a card consumes it")
    published = _describe_slices(_slices_of(client, DRA_NODE), say)

    workloads = [
        ("cuda", CONTAINER_CLASS, False),
        ("virt-launcher-vm-a", VFIO_CLASS, True),
        ("cuda-extra", CONTAINER_CLASS, False),
        ("virt-launcher-vm-extra", VFIO_CLASS, True),
    ]
    placements = []
    for name, device_class, vm in workloads[:2]:
        ops.create_or_replace_sync(client, claim_manifest(name, namespace, device_class))
        ops.create_or_replace_sync(client, workload_pod(name, namespace, name, vm=vm))

    def prepared(name: str) -> tuple[bool, Any]:
        devices = _claim_status(client, namespace, name).get("devices") or []
        return bool(devices), devices

    for name, device_class, _vm in workloads[:2]:
        entry = _wait_for(f"claim {name} prepared", partial(prepared, name), 60, say)[0]
        data = entry.get("data") or {}
        say(
            f"  {name}: {device_class} -> {entry['device']}, card {data.get('pciBusID')} as {data.get('role')}"
        )
        placements.append({"pod": name, "class": device_class, "device": entry["device"], **data})
    if placements[0]["pciBusID"] == placements[1]["pciBusID"]:
        raise DraStepFailure(f"expected two cards; both claims got {placements[0]['pciBusID']}")
    for name, device_class, vm in workloads[2:]:
        ops.create_or_replace_sync(client, claim_manifest(name, namespace, device_class))
        ops.create_or_replace_sync(client, workload_pod(name, namespace, name, DRA_NODE, vm=vm))
    pending = []
    for name, device_class, _vm in workloads[2:]:

        def unschedulable(n: str = name) -> tuple[bool, Any]:
            pod = next(
                (p for p in ops.list_pods_sync(client, namespace) if p["metadata"]["name"] == n), {}
            )
            node, reason = pod_placement(pod)
            return node is None and bool(reason), node or reason

        reason = _wait_for(f"{name} Pending with the scheduler's reason", unschedulable, 60, say)
        say(f"  {name} ({device_class}): Pending: {reason}")
        pending.append({"pod": name, "class": device_class, "reason": reason})

    # The step's workloads go first: a Pending claim would take a race node's card.
    for name, _class, _vm in workloads:
        _delete_pod(client, name, namespace)
        ops.delete_object_sync(client, "ResourceClaim", name, namespace)
    say(
        f"the race: container + VFIO claim for one card, together, {race_nodes} nodes x {race_rounds} rounds"
    )
    results = [
        race(
            client,
            shared_counters=shared,
            nodes=race_nodes,
            rounds=race_rounds,
            namespace=f"{namespace}-race",
            prefix=f"race-{'free' if shared else 'two'}",
            say=say,
        )
        for shared in (False, True)
    ]
    by_name = {r.publication: r for r in results}
    if by_name["race-free"].double_allocations:
        raise DraStepFailure(f"expected no double allocation race-free; saw {by_name['race-free']}")
    return {
        "node": DRA_NODE,
        "slices": published,
        "placements": placements,
        "pending": pending,
        "race": [asdict(r) for r in results],
    }


def lab_step(ctx: Any) -> dict[str, Any]:
    """`gpuop lab --dra`'s step on the lab's cluster (its simulator started if stopped)."""
    from gpuop.lab.runner import DRA_STEP, LabFailure, ensure_running

    ensure_running(ctx)
    try:
        return run_step(ctx.client(), ctx.say)
    except (DraStepFailure, TimeoutError) as exc:
        expected, _, seen = str(exc).removeprefix("expected ").partition("; saw ")
        raise LabFailure(DRA_STEP, expected, seen or "a timeout") from exc


def render_html(record: dict[str, Any]) -> str:
    """The report's DRA section (HTML)."""
    if not record:
        return ""
    items = "".join(
        f"<li><code>{html.escape(i['pod'])}</code> ({html.escape(i['class'])}):"
        f" <code>{html.escape(i['device'])}</code>, card {html.escape(str(i.get('pciBusID')))}"
        f" as {html.escape(str(i.get('role')))}</li>"
        for i in record.get("placements") or []
    )
    items += "".join(
        f"<li><code>{html.escape(i['pod'])}</code> ({html.escape(i['class'])}): Pending —"
        f" {html.escape(i['reason'])}</li>"
        for i in record.get("pending") or []
    )
    rows = "".join(
        f"<tr><td>{html.escape(r['publication'])}</td><td>{r['trials']}</td>"
        f"<td class={'bad' if r['double_allocations'] else 'ok'}>{r['double_allocations']}</td>"
        f"<td>{r['one_pending']}</td></tr>"
        for r in record.get("race") or []
    )
    return (
        f"<h2>Containers and VMs on one node (DRA): {html.escape(str(record.get('node')))}</h2>"
        f"<ul>{items}</ul><table><tr><th>publication</th><th>same-card pairs</th>"
        f"<th>double allocations</th><th>one claim Pending</th></tr>{rows}</table>"
    )


def render_markdown(record: dict[str, Any]) -> list[str]:
    """The report's DRA section (Markdown lines)."""
    if not record:
        return []
    lines = ["", "## Containers and VMs on one node (DRA)", ""]
    for item in record.get("placements") or []:
        lines.append(
            f"- `{item['pod']}` ({item['class']}): `{item['device']}`, card {item.get('pciBusID')} as {item.get('role')}"
        )
    for item in record.get("pending") or []:
        lines.append(f"- `{item['pod']}` ({item['class']}): Pending: {item['reason']}")
    lines += [
        "",
        "| publication | same-card pairs | double allocations | one claim Pending |",
        "|---|---|---|---|",
    ]
    for result in record.get("race") or []:
        lines.append(
            f"| {result['publication']} | {result['trials']} | {result['double_allocations']} | {result['one_pending']} |"
        )
    return lines


__all__ = [
    "DRA_NAMESPACE",
    "DraStepFailure",
    "RaceResult",
    "claim_cards",
    "claim_manifest",
    "device_classes",
    "double_allocations",
    "lab_step",
    "plugin_pod_manifest",
    "pod_placement",
    "race",
    "render_html",
    "render_markdown",
    "run_step",
    "workload_pod",
]
