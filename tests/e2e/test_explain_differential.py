"""`gpuop explain` against the real kube-scheduler v1.37.2 of the session cluster.

Differential test: a seeded corpus (`kit.explain_corpus`, isolated cases that share the
cluster) is created in batches of 40 cases: nodes first (posted Ready; kwok keeps their
lease), and only once the node lifecycle controller has lifted the
`node.kubernetes.io/not-ready` taint admission put on them; then the pods already running
on them (bound by `nodeName`, so kwok runs them), then the pods to place.
When every pod is bound or has `PodScheduled=False`, `gpuop explain --live` (which reads
nodes and pods back from the API server: admission and controllers change them) explains
each pod as it was before binding. Agreement: the bound node is in the explainer's
feasible set, or the set is empty and its summary is the scheduler's condition message,
character for character.

The three-mode test places the seed's workloads on one node per workload config: a
container pod, a passthrough VMI's launcher and a vGPU VMI's launcher each fit exactly
their own node, per `gpuop explain` and per the scheduler, and every cross request (a
workload pinned to another mode's node) fits nowhere, for the same reason.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Node, PersistentVolume, PersistentVolumeClaim, Pod
from lightkube.resources.policy_v1 import PodDisruptionBudget
from lightkube.resources.resource_v1 import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimStatus,
    ResourceSlice,
)
from lightkube.resources.scheduling_v1 import PriorityClass
from lightkube.resources.storage_v1 import CSIDriver, CSINode, StorageClass

from gpuop.cli.explain import explain
from gpuop.kubevirt.launcher import render_launcher_pod
from gpuop.kubevirt.permitted import vmi_example
from kit.explain_corpus import Case, generate_case
from kit.extended_corpus import ExtendedCase, device_class
from kit.extended_corpus import generate_case as generate_extended_case
from kit.preemption_corpus import PreemptionCase, priority_classes
from kit.preemption_corpus import generate_case as generate_preemption_case
from kit.volume_corpus import VolumeCase, csi_drivers, storage_classes
from kit.volume_corpus import generate_case as generate_volume_case
from kit.waiting import wait_for

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("GPUOP_EXPLAIN_SEED", "1129"))
BATCHES = int(os.environ.get("GPUOP_EXPLAIN_BATCHES", "8"))
SPREAD_SEED = int(os.environ.get("GPUOP_EXPLAIN_SPREAD_SEED", "1206"))
SPREAD_BATCHES = int(os.environ.get("GPUOP_EXPLAIN_SPREAD_BATCHES", "13"))
EXTENDED_SEED = int(os.environ.get("GPUOP_EXPLAIN_EXTENDED_SEED", "1208"))
EXTENDED_BATCHES = int(os.environ.get("GPUOP_EXPLAIN_EXTENDED_BATCHES", "5"))
VOLUME_SEED = int(os.environ.get("GPUOP_EXPLAIN_VOLUME_SEED", "1209"))
VOLUME_BATCHES = int(os.environ.get("GPUOP_EXPLAIN_VOLUME_BATCHES", "6"))
PREEMPTION_SEED = int(os.environ.get("GPUOP_EXPLAIN_PREEMPTION_SEED", "1210"))
PREEMPTION_BATCHES = int(os.environ.get("GPUOP_EXPLAIN_PREEMPTION_BATCHES", "4"))
FEATURES_SEED = int(os.environ.get("GPUOP_EXPLAIN_FEATURES_SEED", "1207"))
FEATURES_BATCHES = int(os.environ.get("GPUOP_EXPLAIN_FEATURES_BATCHES", "6"))
CASES_PER_BATCH = 40
#: The cluster-scoped kinds a series shares, by kind.
SHARED_KINDS: dict[str, Any] = {
    "StorageClass": StorageClass,
    "CSIDriver": CSIDriver,
    "DeviceClass": DeviceClass,
    "PriorityClass": PriorityClass,
}
PAUSE = "registry.k8s.io/pause:3.10"
LAUNCHER_IMAGE = "quay.io/kubevirt/virt-launcher:v1.5.0"
SYSTEM_TAINT_PREFIX = "node.kubernetes.io/"
GPU = "nvidia.com/gpu"
A10 = "nvidia.com/GA102GL_A10"
A10_12Q = "nvidia.com/NVIDIA_A10-12Q"


def as_dict(obj: Any) -> dict[str, Any]:
    data = obj.to_dict()
    assert isinstance(data, dict)
    return data


def create_all(client: Client, objects: Iterable[Mapping[str, Any]]) -> None:
    def create(obj: Mapping[str, Any]) -> None:
        client.create(from_dict(dict(obj)))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(create, objects))


def delete_nodes(client: Client, names: Iterable[str]) -> None:
    def delete(name: str) -> None:
        with contextlib.suppress(ApiError):
            client.delete(Node, name)

    wanted = set(names)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(delete, wanted))
    wait_for(
        lambda: not wanted & {n.metadata.name for n in client.list(Node) if n.metadata},
        "the nodes to be deleted",
        every=1.0,
    )


def delete_pods(client: Client, namespace: str, names: Iterable[str]) -> None:
    def delete(name: str) -> None:
        with contextlib.suppress(ApiError):
            client.delete(Pod, name, namespace=namespace, grace_period=0)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(delete, names))


def ready(node: Mapping[str, Any]) -> dict[str, Any]:
    """The node with a Ready condition already in the status it is created with.

    kwok would set it a moment later (it manages every node and keeps the lease); setting
    it at creation spares that round trip, and the node lifecycle controller then lifts the
    `not-ready` taint that admission added as soon as it sees the node.
    """
    result = copy.deepcopy(dict(node))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    result["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
    ]
    return result


def settled(node: Mapping[str, Any]) -> bool:
    """Ready, and the controllers' startup taints gone (a cordon's taint may stay)."""
    conditions = node.get("status", {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = node.get("spec", {}).get("taints") or []
    startup = [
        t
        for t in taints
        if t.get("key", "").startswith(SYSTEM_TAINT_PREFIX)
        and t.get("key") != "node.kubernetes.io/unschedulable"
    ]
    return ready and not startup


def wait_nodes_settled(client: Client, names: Iterable[str]) -> None:
    wanted = set(names)

    def all_settled() -> bool:
        done = {
            node.metadata.name
            for node in client.list(Node)
            if node.metadata and settled(as_dict(node) if node.metadata.name in wanted else {})
        }
        return wanted <= done

    wait_for(all_settled, f"{len(wanted)} nodes to be Ready without startup taints", 240, 2.0)


def scheduled_state(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    """("bound", node) or ("pending", message) once the scheduler has decided; else None."""
    node = pod.get("spec", {}).get("nodeName")
    if node:
        return "bound", node
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return "pending", condition.get("message") or ""
    return None


def pods_by_name(client: Client, namespace: str) -> dict[str, dict[str, Any]]:
    return {
        p.metadata.name: as_dict(p)
        for p in client.list(Pod, namespace=namespace)
        if p.metadata and p.metadata.name
    }


def wait_decided(client: Client, namespace: str, names: Sequence[str]) -> dict[str, Any]:
    def decided() -> dict[str, Any] | None:
        pods = pods_by_name(client, namespace)
        states = {n: scheduled_state(pods[n]) for n in names if n in pods}
        if len(states) == len(names) and all(states.values()):
            return pods
        return None

    return wait_for(decided, f"the scheduler to decide on {len(names)} pods", 180, 1.0)


def as_submitted(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as the scheduler got it: admission's changes kept, binding and status dropped."""
    result = copy.deepcopy(dict(pod))
    result.pop("status", None)
    result["metadata"].pop("managedFields", None)
    result["spec"].pop("nodeName", None)
    return result


def run_explain(kubeconfig: Path, manifest: Path, *extra: str) -> tuple[int, Any]:
    result = CliRunner().invoke(
        explain,
        [str(manifest), "--live", "--kubeconfig", str(kubeconfig), "-o", "json", *extra],
    )
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def write_list(path: Path, items: Sequence[Mapping[str, Any]]) -> Path:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    return path


def outcome(name: str, pod: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """The scheduler's decision on the pod beside explain's, and whether they agree: the
    bound node among the feasible ones, or none feasible and the very same message."""
    verdict, detail = scheduled_state(pod) or ("?", "")
    if verdict == "bound":
        agree = detail in result["feasible"]
    else:
        agree = not result["feasible"] and result["summary"] == detail
    return {
        "pod": name,
        "scheduler": verdict,
        "detail": detail,
        "feasible": result["feasible"],
        "summary": result["summary"],
        "agree": agree,
    }


@pytest.fixture
def node_cleanup(kube_client: Client) -> Iterator[set[str]]:
    """Names of nodes a test made: deleted afterwards, whatever happens."""
    made: set[str] = set()
    yield made
    if made:
        delete_nodes(kube_client, made)


class Phases:
    """Seconds per phase of a batch, for the test's output."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.spent: list[tuple[str, float]] = []

    def __call__(self, phase: str) -> None:
        now = time.monotonic()
        self.spent.append((phase, now - self.last))
        self.last = now

    def report(self) -> str:
        return ", ".join(f"{phase} {seconds:.1f}s" for phase, seconds in self.spent)


def _batch(
    client: Client,
    kubeconfig: Path,
    namespace: str,
    cases: Sequence[Case | ExtendedCase | VolumeCase],
    tmp: Path,
    made: set[str],
    *,
    prepare: Callable[[], None] | None = None,
    clean: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """Nodes, then what `prepare` makes (once the nodes are Ready), the running pods, the
    pods to place; their outcomes; then the batch's objects deleted (`clean` first)."""
    clock = Phases()
    nodes = [ready(node) for case in cases for node in case.nodes]
    made.update(node["metadata"]["name"] for node in nodes)
    create_all(client, nodes)
    clock("create nodes")
    wait_nodes_settled(client, made)
    clock("nodes ready")
    if prepare is not None:
        prepare()
        clock("prepared")
    # Pods already on the nodes: bound by nodeName, so the scheduler's cache has them as soon
    # as its pod informer sees them, which is before it sees the pods created after them.
    running = [pod for case in cases for pod in case.existing_pods]
    create_all(client, running)
    running_names = [pod["metadata"]["name"] for pod in running]
    clock("existing pods")
    create_all(client, [case.pod for case in cases])
    names = [case.pod["metadata"]["name"] for case in cases]
    wait_decided(client, namespace, names)
    clock("scheduled")
    time.sleep(2)  # let any retry triggered by the last events land
    pods = wait_decided(client, namespace, names)
    manifest = write_list(tmp / "pods.json", [as_submitted(pods[n]) for n in names])
    _, explained = run_explain(kubeconfig, manifest)
    clock("explained")
    outcomes = [
        outcome(name, pods[name], result) for name, result in zip(names, explained, strict=True)
    ]
    # Clean up before the next batch: its "0/N nodes" must not count these nodes.
    delete_pods(client, namespace, [*running_names, *names])
    if clean is not None:
        clean()
    delete_nodes(client, made)
    made.clear()
    clock("cleaned up")
    print(clock.report())
    return outcomes


def _series(
    client: Client,
    kubeconfig: Path,
    namespace: str,
    tmp: Path,
    made: set[str],
    *,
    seed: int,
    batches: int,
    plugins: Sequence[tuple[bool, bool]] = ((False, False),),
    features: bool = False,
) -> list[dict[str, Any]]:
    """`batches` batches of the series `seed`, each case with its outcome; batch `i` draws
    topology spread and pod affinity as `plugins[i % len(plugins)]` says, and node
    declared features with `features`."""
    prefix = f"gx{uuid.uuid4().hex[:4]}"
    outcomes: list[dict[str, Any]] = []
    started = time.monotonic()
    for batch in range(batches):
        batch_start = time.monotonic()
        spread, interpod = plugins[batch % len(plugins)]
        cases = [
            generate_case(
                seed,
                index,
                prefix=prefix,
                namespace=namespace,
                isolate=True,
                existing_pods=True,
                spread=spread,
                interpod=interpod,
                features=features,
            )
            for index in range(batch * CASES_PER_BATCH, (batch + 1) * CASES_PER_BATCH)
        ]
        found = _batch(client, kubeconfig, namespace, cases, tmp, made)
        for case, outcome in zip(cases, found, strict=True):
            outcome["hard_spread"] = any(
                c["whenUnsatisfiable"] == "DoNotSchedule"
                for c in case.pod["spec"].get("topologySpreadConstraints", [])
            )
            outcome["pod_affinity"] = bool(
                {"podAffinity", "podAntiAffinity"} & set(case.pod["spec"].get("affinity", {}))
            )
        outcomes += found
        print(
            f"batch {batch}: {len(cases)} cases, {sum(len(c.nodes) for c in cases)} nodes,"
            f" {sum(1 for o in outcomes if o['agree'])}/{len(outcomes)} agree so far"
            f" ({time.monotonic() - batch_start:.0f}s)"
        )
    bound = sum(1 for o in outcomes if o["scheduler"] == "bound")
    pending = sum(1 for o in outcomes if o["scheduler"] == "pending")
    agree = sum(1 for o in outcomes if o["agree"])
    print(
        f"\nexplain vs kube-scheduler (seed {seed}):"
        f" {len(outcomes)} cases, {bound} bound, {pending} pending, {agree} agree"
        f" ({agree / len(outcomes):.1%}) in {time.monotonic() - started:.0f}s"
    )
    for disagreement in [o for o in outcomes if not o["agree"]][:10]:
        print(json.dumps(disagreement, indent=1))
    return outcomes


def _assert_agreement(outcomes: list[dict[str, Any]], at_least: int) -> None:
    disagreements = [o for o in outcomes if not o["agree"]]
    assert len(outcomes) >= at_least
    bound = sum(1 for o in outcomes if o["scheduler"] == "bound")
    pending = sum(1 for o in outcomes if o["scheduler"] == "pending")
    assert bound > 50 and pending > 50  # both outcomes are exercised
    assert not disagreements, f"{len(disagreements)} disagreements, first: {disagreements[:3]}"


@pytest.mark.timeout(1800)  # a few minutes on 2 idle cores; far more when they are shared
def test_explain_agrees_with_kube_scheduler(
    kube_client: Client,
    kubeconfig_path: Path,
    namespace: str,
    tmp_path: Path,
    node_cleanup: set[str],
) -> None:
    outcomes = _series(
        kube_client, kubeconfig_path, namespace, tmp_path, node_cleanup, seed=SEED, batches=BATCHES
    )
    _assert_agreement(outcomes, 300)


@pytest.mark.timeout(2400)
def test_explain_agrees_on_topology_spread_and_pod_affinity(
    kube_client: Client,
    kubeconfig_path: Path,
    namespace: str,
    tmp_path: Path,
    node_cleanup: set[str],
) -> None:
    """PodTopologySpread and InterPodAffinity, each alone and together, with the filters
    before them: batches take turns at spread constraints over a job's pods (by zone, pool
    or host, with minDomains, node inclusion policies and matchLabelKeys), required pod
    affinity and anti-affinity over a group's pods (namespaces, namespace selectors,
    match/mismatchLabelKeys, running pods' own anti-affinity), and both."""
    outcomes = _series(
        kube_client,
        kubeconfig_path,
        namespace,
        tmp_path,
        node_cleanup,
        seed=SPREAD_SEED,
        batches=SPREAD_BATCHES,
        plugins=((True, False), (False, True), (True, True)),
    )
    held = {
        plugin: sum(
            1 for o in outcomes if o["scheduler"] == "pending" and words in str(o["detail"])
        )
        for plugin, words in (
            ("PodTopologySpread", "topology spread"),
            ("InterPodAffinity", "affinity rules"),
        )
    }
    spread = sum(1 for o in outcomes if o["hard_spread"])
    affinity = sum(1 for o in outcomes if o["pod_affinity"])
    both = sum(1 for o in outcomes if o["hard_spread"] and o["pod_affinity"])
    print(
        f"{spread} cases with a DoNotSchedule spread constraint, {affinity} with required pod"
        f" (anti-)affinity, {both} with both; pending by reason: {held}"
    )
    _assert_agreement(outcomes, 500)
    assert all(count >= 20 for count in held.values()), held


@pytest.mark.timeout(1200)
def test_explain_agrees_on_node_declared_features(
    kube_client: Client,
    kubeconfig_path: Path,
    namespace: str,
    tmp_path: Path,
    node_cleanup: set[str],
) -> None:
    """NodeDeclaredFeatures (GA in v1.37): pods that restart all their containers on an exit
    code go only to nodes whose status declares RestartAllContainersOnContainerExits, alone
    and after spread constraints and pod affinity."""
    outcomes = _series(
        kube_client,
        kubeconfig_path,
        namespace,
        tmp_path,
        node_cleanup,
        seed=FEATURES_SEED,
        batches=FEATURES_BATCHES,
        plugins=((False, False), (True, False), (False, True)),
        features=True,
    )
    held = sum(1 for o in outcomes if "required features" in str(o["detail"]))
    print(f"pending with node(s) that lack a required feature: {held}")
    _assert_agreement(outcomes, 240)
    assert held >= 20


def _in_batches(
    client: Client,
    shared: Sequence[dict[str, Any]],
    batches: int,
    run: Callable[[range], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """`run` over `batches` batches of cases, with the cluster-scoped objects every case
    uses made first (an existing one taken as it is) and deleted at the end."""
    for obj in shared:
        with contextlib.suppress(ApiError):
            client.create(from_dict(obj))
    outcomes: list[dict[str, Any]] = []
    try:
        for batch in range(batches):
            outcomes += run(range(batch * CASES_PER_BATCH, (batch + 1) * CASES_PER_BATCH))
            agree = sum(1 for o in outcomes if o["agree"])
            print(f"batch {batch}: {agree}/{len(outcomes)} agree so far")
    finally:
        for obj in shared:
            with contextlib.suppress(ApiError):
                client.delete(SHARED_KINDS[obj["kind"]], obj["metadata"]["name"])
    return outcomes


# ------------------------------------------------------- DRA-backed extended resources


def _extended_batch(
    client: Client,
    kubeconfig: Path,
    namespace: str,
    cases: Sequence[ExtendedCase],
    tmp: Path,
    made: set[str],
) -> list[dict[str, Any]]:
    """:func:`_batch` with the cases' ResourceSlices and held claims; each outcome says how
    the node the pod was bound to serves the resource."""

    def hold(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
        claim, status = pair
        client.create(from_dict(claim))
        meta = claim["metadata"]
        client.patch(
            ResourceClaimStatus, meta["name"], {"status": status}, namespace=meta["namespace"]
        )

    def prepare() -> None:
        create_all(client, [s for case in cases for s in case.slices])
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(hold, [pair for case in cases for pair in case.held]))

    def clean() -> None:
        for claim in client.list(ResourceClaim, namespace=namespace):
            with contextlib.suppress(ApiError):
                client.delete(ResourceClaim, claim.metadata.name, namespace=namespace)
        for found in [s for case in cases for s in case.slices]:
            with contextlib.suppress(ApiError):
                client.delete(ResourceSlice, found["metadata"]["name"])

    outcomes = _batch(client, kubeconfig, namespace, cases, tmp, made, prepare=prepare, clean=clean)
    kinds = {name: kind for case in cases for name, kind in case.kinds.items()}
    for found in outcomes:
        found["bound_by"] = kinds.get(found["detail"], "") if found["scheduler"] == "bound" else ""
    return outcomes


@pytest.mark.timeout(1200)
def test_explain_agrees_on_dra_backed_extended_resources(
    kube_client: Client,
    kubeconfig_path: Path,
    namespace: str,
    tmp_path: Path,
    node_cleanup: set[str],
) -> None:
    """DRAExtendedResource (GA in v1.37): a pod asking for an extended resource that a
    DeviceClass backs fits nodes whose device plugin advertises it and nodes whose
    ResourceSlices have free devices of that class (the scheduler's special claim, init
    containers reusing devices), and nowhere else, in the scheduler's words."""
    prefix = f"xr{uuid.uuid4().hex[:4]}"

    def batch(cases: range) -> list[dict[str, Any]]:
        made = [
            generate_extended_case(EXTENDED_SEED, i, prefix=prefix, namespace=namespace)
            for i in cases
        ]
        return _extended_batch(
            kube_client, kubeconfig_path, namespace, made, tmp_path, node_cleanup
        )

    outcomes = _in_batches(kube_client, [device_class()], EXTENDED_BATCHES, batch)
    by_device = {
        way: sum(1 for o in outcomes if o["bound_by"] == way)
        for way in ("plugin", "dra", "both", "plugin-0")
    }
    pending = sum(1 for o in outcomes if o["scheduler"] == "pending")
    short_of_devices = sum(1 for o in outcomes if "cannot allocate all claims" in o["detail"])
    agree = sum(1 for o in outcomes if o["agree"])
    print(
        f"\nexplain vs kube-scheduler on DRA-backed extended resources (seed {EXTENDED_SEED}):"
        f" {len(outcomes)} cases, bound by node kind {by_device}, {pending} pending"
        f" ({short_of_devices} with nodes short of devices), {agree} agree"
    )
    for disagreement in [o for o in outcomes if not o["agree"]][:5]:
        print(json.dumps(disagreement, indent=1))
    assert len(outcomes) >= 200
    assert by_device["plugin"] > 10 and by_device["dra"] + by_device["plugin-0"] > 10
    assert pending > 10 and short_of_devices > 10
    assert agree == len(outcomes)


# --------------------------------------------------------------------------- volumes


def _volume_batch(
    client: Client,
    kubeconfig: Path,
    namespace: str,
    cases: Sequence[VolumeCase],
    tmp: Path,
    made: set[str],
) -> list[dict[str, Any]]:
    """:func:`_batch` with the cases' volumes and claims, made once the nodes are Ready and
    settled before any pod: volumes Available, pre-bound pairs Bound."""
    volumes = [v for case in cases for v in case.volumes]
    claims = [c for case in cases for c in case.claims]

    def settled() -> bool:
        phases = {
            v.metadata.name: v.status.phase if v.status else None
            for v in client.list(PersistentVolume)
            if v.metadata
        }
        if any(phases.get(v["metadata"]["name"]) not in ("Available", "Bound") for v in volumes):
            return False
        bound = {
            c.metadata.name
            for c in client.list(PersistentVolumeClaim, namespace=namespace)
            if c.metadata and c.status and c.status.phase == "Bound"
        }
        return all(c["metadata"]["name"] in bound for c in claims if c["spec"].get("volumeName"))

    csi_nodes = [n for case in cases for n in case.csi_nodes]

    def prepare() -> None:
        create_all(client, csi_nodes)
        create_all(client, volumes)
        create_all(client, claims)
        wait_for(settled, "volumes Available and pre-bound claims Bound", 120, 1.0)

    def clean() -> None:
        for claim in claims:
            with contextlib.suppress(ApiError):
                client.delete(PersistentVolumeClaim, claim["metadata"]["name"], namespace=namespace)
        for volume in volumes:
            with contextlib.suppress(ApiError):
                client.delete(PersistentVolume, volume["metadata"]["name"])
        for csi_node in csi_nodes:
            with contextlib.suppress(ApiError):
                client.delete(CSINode, csi_node["metadata"]["name"])

    return _batch(client, kubeconfig, namespace, cases, tmp, made, prepare=prepare, clean=clean)


@pytest.mark.timeout(1500)
def test_explain_agrees_on_volumes(
    kube_client: Client,
    kubeconfig_path: Path,
    namespace: str,
    tmp_path: Path,
    node_cleanup: set[str],
) -> None:
    """VolumeRestrictions, VolumeBinding and VolumeZone: pods whose claims wait for a local
    volume that fits the node, are bound to a volume in a zone, bind at once with nothing to
    bind, do not exist, are ReadWriteOncePod and in use, or could be provisioned only in a
    zone no node is in."""
    prefix = f"vx{uuid.uuid4().hex[:4]}"

    def batch(cases: range) -> list[dict[str, Any]]:
        made = [
            generate_volume_case(VOLUME_SEED, i, prefix=prefix, namespace=namespace) for i in cases
        ]
        return _volume_batch(kube_client, kubeconfig_path, namespace, made, tmp_path, node_cleanup)

    shared = [*storage_classes(), *csi_drivers()]
    outcomes = _in_batches(kube_client, shared, VOLUME_BATCHES, batch)
    reasons = {
        words: sum(1 for o in outcomes if words in o["detail"])
        for words in (
            "persistent volumes to bind",
            "volume zone",
            "unbound immediate",
            "not found",
            "ReadWriteOncePod",
            "PersistentVolume's node affinity",
            "max volume count",
            "CSI driver is not installed",
        )
    }
    bound = sum(1 for o in outcomes if o["scheduler"] == "bound")
    agree = sum(1 for o in outcomes if o["agree"])
    print(
        f"\nexplain vs kube-scheduler on volumes (seed {VOLUME_SEED}): {len(outcomes)} cases,"
        f" {bound} bound, pending by reason {reasons}, {agree} agree"
    )
    for disagreement in [o for o in outcomes if not o["agree"]][:5]:
        print(json.dumps(disagreement, indent=1))
    assert len(outcomes) >= 240 and bound > 30
    assert agree == len(outcomes)


# --------------------------------------------------------------------------- preemption


def _settled_after_preemption(pod: Mapping[str, Any]) -> bool:
    """Bound, or refused with no node nominated (a nominated pod waits for its victims)."""
    if pod.get("spec", {}).get("nodeName"):
        return True
    if pod.get("spec", {}).get("schedulingGates"):
        return False
    if pod.get("status", {}).get("nominatedNodeName"):
        return False
    return scheduled_state(pod) is not None


def _preemption_batch(
    client: Client,
    kubeconfig: Path,
    namespace: str,
    cases: Sequence[PreemptionCase],
    tmp: Path,
    made: set[str],
) -> list[dict[str, Any]]:
    """Nodes, running pods and budgets; the pods held by a gate are explained (gates
    stripped), then let go: the scheduler's evictions and bindings are compared."""
    clock = Phases()
    nodes = [ready(node) for case in cases for node in case.nodes]
    made.update(node["metadata"]["name"] for node in nodes)
    create_all(client, nodes)
    wait_nodes_settled(client, made)
    running = [pod for case in cases for pod in case.existing_pods]
    create_all(client, running)
    budgets = [b for case in cases for b in case.budgets]
    create_all(client, budgets)

    def budgets_observed() -> bool:
        seen = {
            b.metadata.name
            for b in client.list(PodDisruptionBudget, namespace=namespace)
            if b.metadata and b.status and b.status.observedGeneration
        }
        return all(b["metadata"]["name"] in seen for b in budgets)

    wait_for(budgets_observed, "the disruption controller to count the budgets", 120, 1.0)
    names = [case.pod["metadata"]["name"] for case in cases]
    create_all(client, [case.pod for case in cases])
    wait_for(lambda: set(names) <= set(pods_by_name(client, namespace)), "the gated pods", 60, 0.5)
    clock("cluster made")
    pods = pods_by_name(client, namespace)
    ungated = []
    for name in names:
        pod = as_submitted(pods[name])
        pod["spec"].pop("schedulingGates", None)
        ungated.append(pod)
    _, explained = run_explain(kubeconfig, write_list(tmp / "pods.json", ungated))
    clock("explained")

    def lift(name: str) -> None:
        client.patch(Pod, name, {"spec": {"schedulingGates": None}}, namespace=namespace)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lift, names))

    def settled() -> dict[str, dict[str, Any]] | None:
        found = pods_by_name(client, namespace)
        return found if all(_settled_after_preemption(found[n]) for n in names) else None

    wait_for(settled, "the scheduler to preempt and bind", 180, 1.0)
    time.sleep(3)  # victims going, nominations landing
    after = wait_for(settled, "the scheduler to preempt and bind", 180, 1.0)
    clock("scheduled")
    outcomes = []
    for case, name, result in zip(cases, names, explained, strict=True):
        gone = sorted(
            f"{namespace}/{p['metadata']['name']}"
            for p in case.existing_pods
            if p["metadata"]["name"] not in after
            or after[p["metadata"]["name"]]["metadata"].get("deletionTimestamp")
        )
        verdict, detail = scheduled_state(after[name]) or ("?", "")
        chosen = result["preemption"]["nominated_node"]
        victims = sorted(
            v
            for c in result["preemption"]["candidates"]
            if c["node"] == chosen
            for v in c["victims"]
        )
        if result["feasible"]:
            agree = verdict == "bound" and detail in result["feasible"] and not gone
        elif chosen:
            agree = verdict == "bound" and detail == chosen and gone == victims
        else:
            agree = verdict == "pending" and detail == result["summary"] and not gone
        outcomes.append(
            {
                "pod": name,
                "scheduler": verdict,
                "detail": detail,
                "evicted": gone,
                "feasible": result["feasible"],
                "nominated": chosen,
                "victims": victims,
                "summary": result["summary"],
                "budgets": len(case.budgets),
                "agree": agree,
            }
        )
    delete_pods(client, namespace, [*(p["metadata"]["name"] for p in running), *names])
    for budget in budgets:
        with contextlib.suppress(ApiError):
            client.delete(PodDisruptionBudget, budget["metadata"]["name"], namespace=namespace)
    delete_nodes(client, made)
    made.clear()
    clock("cleaned up")
    print(clock.report())
    return outcomes


@pytest.mark.timeout(1500)
def test_explain_agrees_on_preemption(
    kube_client: Client,
    kubeconfig_path: Path,
    namespace: str,
    tmp_path: Path,
    node_cleanup: set[str],
) -> None:
    """DefaultPreemption when resources, required anti-affinity or a spread constraint keep
    a pod out, with PodDisruptionBudgets: the node explain nominates is where the scheduler
    binds the pod, its victims are the pods the scheduler evicts."""
    prefix = f"px{uuid.uuid4().hex[:4]}"

    def batch(cases: range) -> list[dict[str, Any]]:
        made = [
            generate_preemption_case(PREEMPTION_SEED, i, prefix=prefix, namespace=namespace)
            for i in cases
        ]
        return _preemption_batch(
            kube_client, kubeconfig_path, namespace, made, tmp_path, node_cleanup
        )

    outcomes = _in_batches(kube_client, priority_classes(), PREEMPTION_BATCHES, batch)
    preempted = sum(1 for o in outcomes if o["evicted"])
    with_budgets = sum(1 for o in outcomes if o["evicted"] and o["budgets"])
    pending = sum(1 for o in outcomes if o["scheduler"] == "pending")
    agree = sum(1 for o in outcomes if o["agree"])
    print(
        f"\nexplain vs kube-scheduler on preemption (seed {PREEMPTION_SEED}): {len(outcomes)}"
        f" cases, {preempted} preempted ({with_budgets} under a budget), {pending} pending,"
        f" {agree} agree"
    )
    for disagreement in [o for o in outcomes if not o["agree"]][:5]:
        print(json.dumps(disagreement, indent=1))
    assert len(outcomes) >= 160 and preempted > 25
    assert agree == len(outcomes)


# --------------------------------------------------------------------------- three modes

THREE_MODES = {
    "container": ("container", {GPU: "2"}),
    "passthrough": ("vm-passthrough", {A10: "2"}),
    "vgpu": ("vm-vgpu", {A10_12Q: "4"}),
}
WANTS = {"container": GPU, "passthrough": A10, "vgpu": A10_12Q}


def _mode_node(name: str, group: str, workload: str, resources: Mapping[str, str]) -> Node:
    allocatable = {"cpu": "32", "memory": "128Gi", "pods": "110", **resources}
    return from_dict(  # type: ignore[return-value]
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "gpuop.test/three-modes": group,
                    "kubevirt.io/schedulable": "true",
                    "nvidia.com/gpu.workload.config": workload,
                },
            },
            "status": {"capacity": dict(allocatable), "allocatable": allocatable},
        }
    )


def _workload(mode: str, name: str, namespace: str, selector: dict[str, str]) -> dict[str, Any]:
    """The container pod, or a VMI asking for the mode's resource (vmi_example)."""
    if mode == "container":
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "nodeSelector": selector,
                "terminationGracePeriodSeconds": 0,
                "containers": [
                    {"name": "cuda", "image": PAUSE, "resources": {"limits": {GPU: "1"}}}
                ],
            },
        }
    vmi = vmi_example(name, WANTS[mode])
    vmi["metadata"]["namespace"] = namespace
    vmi["spec"]["nodeSelector"] = selector
    return vmi


def _pod_for_scheduler(workload: Mapping[str, Any]) -> dict[str, Any]:
    """What reaches the scheduler: the pod itself, or the launcher virt-controller would create."""
    if workload["kind"] == "Pod":
        return copy.deepcopy(dict(workload))
    launcher = render_launcher_pod(workload)
    launcher["spec"]["terminationGracePeriodSeconds"] = 0
    for container in launcher["spec"]["containers"]:
        container["image"] = LAUNCHER_IMAGE
    return launcher


def test_three_mode_placements(
    kube_client: Client,
    kubeconfig_path: Path,
    namespace: str,
    tmp_path: Path,
    node_cleanup: set[str],
) -> None:
    group = uuid.uuid4().hex[:6]
    nodes = {mode: f"tm-{group}-{mode}" for mode in THREE_MODES}
    node_cleanup.update(nodes.values())
    for mode, (config, resources) in THREE_MODES.items():
        kube_client.create(_mode_node(nodes[mode], group, config, resources))
    wait_nodes_settled(kube_client, nodes.values())
    in_group = {"gpuop.test/three-modes": group}

    own = {mode: _workload(mode, f"own-{mode}", namespace, in_group) for mode in THREE_MODES}
    cross = {
        (mode, other): _workload(
            mode,
            f"{mode}-on-{other}",
            namespace,
            {**in_group, "kubernetes.io/hostname": nodes[other]},
        )
        for mode in THREE_MODES
        for other in THREE_MODES
        if other != mode
    }
    unadvertised = _workload("container", "wants-24q", namespace, in_group)
    unadvertised["spec"]["containers"][0]["resources"]["limits"] = {
        "nvidia.com/NVIDIA_A10-24Q": "1"
    }
    workloads = [*own.values(), *cross.values(), unadvertised]
    scheduled = [_pod_for_scheduler(w) for w in workloads]
    names = [p["metadata"]["name"] for p in scheduled]

    # The explainer, before anything is created: pods from the manifests, VMIs rendered.
    manifest = tmp_path / "workloads.yaml"
    manifest.write_text(yaml.safe_dump_all(workloads))
    code, explained = run_explain(kubeconfig_path, manifest)
    assert code == 1  # the cross requests fit nowhere
    by_name = {e["subject"]["name"].split("/")[1]: e for e in explained}

    for mode, workload in own.items():
        result = by_name[workload["metadata"]["name"]]
        assert result["feasible"] == [nodes[mode]], result
        for verdict in result["nodes"]:
            if verdict["name"] in nodes.values() and verdict["name"] != nodes[mode]:
                assert verdict["reasons"] == [f"Insufficient {WANTS[mode]}"], verdict
    for (mode, other), workload in cross.items():
        result = by_name[workload["metadata"]["name"]]
        assert result["feasible"] == [], result
        target = next(v for v in result["nodes"] if v["name"] == nodes[other])
        assert target["reasons"] == [f"Insufficient {WANTS[mode]}"], target
        assert f"1 Insufficient {WANTS[mode]}" in result["summary"]
    never = by_name["wants-24q"]
    assert never["never_fits_anywhere"] == ["nvidia.com/NVIDIA_A10-24Q"]
    assert never["advertised_by"] == {"nvidia.com/NVIDIA_A10-24Q": "vm-vgpu"}

    # The scheduler, on the same workloads.
    create_all(kube_client, scheduled)
    pods = wait_decided(kube_client, namespace, names)
    time.sleep(1)
    pods = wait_decided(kube_client, namespace, names)
    for workload, pod in zip(workloads, scheduled, strict=True):
        name = pod["metadata"]["name"]
        verdict, detail = scheduled_state(pods[name]) or ("?", "")
        result = by_name[workload["metadata"]["name"]]
        if result["feasible"]:
            assert (verdict, detail) == ("bound", result["feasible"][0]), (name, verdict, detail)
        else:
            assert (verdict, detail) == ("pending", result["summary"]), (name, verdict, detail)
    for mode, workload in own.items():
        name = _pod_for_scheduler(workload)["metadata"]["name"]
        assert pods[name]["spec"]["nodeName"] == nodes[mode]
