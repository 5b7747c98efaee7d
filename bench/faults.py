"""Fault injection: crash the control plane and the operator while nodes converge.

With N simulated nodes (a mix of container, vm-passthrough and vm-vgpu) converging under
the operator (as its ServiceAccount) and the simulator, each round changes the workload
config of a few nodes, waits a random moment (seeded, printed), injects one fault and
changes a few more nodes right after it (so the restarted operator or the relisted watches
must act, not only a state that had already converged):

* ``kill-apiserver``: SIGKILL the kube-apiserver and start it again;
* ``kill-etcd``: SIGKILL etcd and start it again (same data directory);
* ``kill-operator``: SIGKILL the operator process and start a new one;
* ``expire-watches``: compact etcd to its current revision and restart the API server, so
  every watch resumed at an older resource version gets 410 Gone and must relist.

Three scenarios run among the faults:

* ``mode-switch``: a pod using a container node's GPU runs while the node is relabelled to
  vm-vgpu, and the API server and operator crash; the switch must be held
  (``WorkloadSwitchHeld``) as long as the pod runs, and proceed once it is gone;
* ``vgpu-change``: a vGPU node's ``nvidia.com/vgpu.config`` changes while the API server is
  killed; the node must end up advertising the new profile;
* ``conflicting-writers``: a user edits deploy labels and the ClusterPolicy (get + replace,
  retried on 409 Conflict) while the operator is killed; the user's last ClusterPolicy edit
  and the values users own (``false``) must survive.

After each fault the cluster must reconverge to the planner's desired state: every node's
labels as planned, no node with deploy labels of two workload configs, exactly the
DaemonSets of the enabled operands (none orphaned or duplicated), and a ClusterPolicy
status true to the nodes (``gpuNodes``, ``byWorkload``, ``ready``). Any breach is an
invariant violation; the run fails unless there are none.

Usage: python bench/faults.py [--nodes 500] [--faults 16] [--apiserver-kills 10] [--seed N]
                              [--timeout 300]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import json
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import DaemonSet
from lightkube.resources.core_v1 import Pod

from gpuop.api.resources import current_workload
from gpuop.controlplane import LocalCluster
from gpuop.controlplane.components import APISERVER, ETCD
from gpuop.controlplane.kubeconfig import TRANSPORT_ERRORS, api_request, http_request
from gpuop.kube import API_ERRORS as KUBE_API_ERRORS
from gpuop.kube import ClusterPolicy, ops, sync_client
from gpuop.lab import stack
from gpuop.naming import is_gpu_resource
from gpuop.planner import plan
from gpuop.policy import parse_cluster_policy
from gpuop.sim.hardware import NodeSpec, node_manifest
from gpuop.sim.registry import register_hardware

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from kit.waiting import retry_api as _retry_api

FAULTS = ("kill-apiserver", "kill-etcd", "kill-operator", "expire-watches")
# What a client call raises while the API server is down: gpuop's (`gpuop.kube.ops` calls),
# lightkube's (direct client calls; it ships its own HTTP library) and those of the control
# plane's own standard-library requests.
API_ERRORS = (*KUBE_API_ERRORS, *TRANSPORT_ERRORS)


def retry_api(action: Callable[[], Any], timeout: float = 60) -> Any:
    """Run one client call, retrying while the API server (or its transport) is down."""
    return _retry_api(action, timeout, API_ERRORS)


SCENARIOS = ("mode-switch", "vgpu-change", "conflicting-writers")
NODE_LABEL = "gpuop.test/faults"
WORKLOAD = "nvidia.com/gpu.workload.config"
DEPLOY = "nvidia.com/gpu.deploy."
POLICY = "cluster-policy"
HOLDER_POD = "faults-gpu-holder"
# Deploy keys that belong to exactly one workload config.
EXCLUSIVE_KEYS = {
    "container": {"driver", "device-plugin", "container-toolkit", "gpu-feature-discovery"},
    "vm-vgpu": {"vgpu-manager", "vgpu-device-manager"},
    "vm-passthrough": {"vfio-manager", "kata-sandbox-device-plugin"},
}


def say(message: str) -> None:
    print(f"[faults] {message}", file=sys.stderr, flush=True)


@dataclass
class Report:
    seed: int
    nodes: int
    injected: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)
    reconverge_seconds: list[float] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    conflicts_retried: int = 0
    injections: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        times = self.reconverge_seconds
        return {
            "seed": self.seed,
            "nodes": self.nodes,
            "faults_injected": len(self.injected),
            "faults_survived": len(self.survived),
            "reconverge_median_s": round(statistics.median(times), 2) if times else None,
            "reconverge_max_s": round(max(times), 2) if times else None,
            "invariant_violations": len(self.violations),
            "conflicts_retried": self.conflicts_retried,
            "injections": dict(sorted(self.injections.items())),
            "sequence": self.injected,
        }


class Stack:
    """The operator and the simulator on a LocalCluster, with nodes of this run."""

    def __init__(self, cluster: LocalCluster, work: Path, count: int, prefix: str) -> None:
        self.cluster = cluster
        self.kubeconfig = str(cluster.kubeconfig_path)
        self.work = work
        self.names = [f"{prefix}-{i:05d}" for i in range(count)]
        stack.install_crd(self.kubeconfig)
        self.operator_kubeconfig = stack.install_operator_access(self.kubeconfig, work)
        simulator_kubeconfig = stack.install_simulator_access(self.kubeconfig, work)
        self.operator = stack.start_operator(self.operator_kubeconfig, work / "logs")
        self.simulator = stack.start_simulator(
            str(simulator_kubeconfig), work / "logs", work / "hosts"
        )
        self.operator_restarts = 0
        self.injections: Counter[str] = Counter()

    def client(self) -> Client:
        return sync_client(self.kubeconfig)

    def create_nodes(self) -> None:
        client = self.client()

        register_hardware(client, [NodeSpec(n, "A10", 2) for n in self.names], stack.NAMESPACE)

        def make(index_name: tuple[int, str]) -> None:
            index, name = index_name
            workload = {0: "vm-passthrough", 1: "vm-vgpu"}.get(index % 10, "container")
            labels = {NODE_LABEL: "true", WORKLOAD: workload}
            ops.delete_node_sync(client, name)
            ops.create_object_sync(client, node_manifest(NodeSpec(name, "A10", 2, labels)))

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(make, enumerate(self.names)))

    def restart_operator(self) -> None:
        self.operator.kill()
        log = self.work / "logs" / "operator.log"
        with log.open("ab") as handle:
            handle.write(f"=== SIGKILL, restart {self.operator_restarts + 1}\n".encode())
        self.operator = stack.start_operator(self.operator_kubeconfig, self.work / "logs")
        self.operator_restarts += 1

    def stop(self) -> None:
        self.operator.stop()
        self.simulator.stop()
        client = self.client()
        with contextlib.suppress(ApiError):
            client.delete(Pod, HOLDER_POD, namespace="default", grace_period=0)
        stack.delete_cluster_policy(self.kubeconfig, POLICY)
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: ops.delete_node_sync(client, n), self.names))


# ----------------------------------------------------------------------------- invariants


def two_configs(labels: dict[str, str]) -> list[str]:
    """The workload configs whose exclusive deploy labels the node carries."""
    present = {k.removeprefix(DEPLOY) for k, v in labels.items() if k.startswith(DEPLOY)}
    return sorted(c for c, keys in EXCLUSIVE_KEYS.items() if present & keys)


@dataclass
class Observation:
    converged: bool
    violations: list[str]
    waiting: list[str]


def observe(run: Stack, allow_held: frozenset[str] = frozenset()) -> Observation:
    """Compare the cluster with the planner's desired state.

    ``violations`` are states that must never be seen once the operator has had its pass
    (they are only counted when they outlive the reconvergence timeout); ``waiting`` lists
    what is not converged yet.
    """
    client = run.client()
    raw_policy = stack.get_cluster_policy(run.kubeconfig, POLICY)
    if raw_policy is None:
        return Observation(False, [], ["no ClusterPolicy"])
    policy = parse_cluster_policy(raw_policy)
    wanted = set(run.names)
    nodes = [
        n
        for n in ops.list_nodes_sync(client, {NODE_LABEL: "true"})
        if n["metadata"]["name"] in wanted
    ]
    waiting: list[str] = []
    bad: list[str] = []
    by_workload: Counter[str] = Counter()
    gpu_nodes = 0
    for node in nodes:
        name = node["metadata"]["name"]
        labels = node["metadata"].get("labels") or {}
        configs = two_configs(labels)
        if len(configs) > 1:
            bad.append(f"{name} carries deploy labels of {configs}")
        node_plan = plan(policy, node)
        if node_plan.gpu_node:
            gpu_nodes += 1
            by_workload[current_workload(labels) or "none"] += 1
        if node_plan.label_changes and name not in allow_held:
            waiting.append(f"{name} labels differ: {node_plan.label_changes}")
    if len(nodes) != len(wanted):
        waiting.append(f"{len(nodes)} of {len(wanted)} nodes listed")
    expected_ds = {op.daemonset for op in policy.enabled_operands()}
    live = [
        ds
        for ds in client.list(
            DaemonSet, namespace=stack.NAMESPACE, labels={"app.kubernetes.io/managed-by": "gpuop"}
        )
        if ds.metadata and ds.metadata.name
    ]
    live_names = Counter(str(ds.metadata.name) for ds in live if ds.metadata)
    if set(live_names) != expected_ds:
        waiting.append(
            f"DaemonSets: missing {sorted(expected_ds - set(live_names))},"
            f" orphaned {sorted(set(live_names) - expected_ds)}"
        )
    for ds in live:
        owners = (ds.metadata.ownerReferences if ds.metadata else None) or []
        if not any(o.kind == "ClusterPolicy" and o.name == POLICY for o in owners):
            waiting.append(f"DaemonSet {ds.metadata.name if ds.metadata else '?'} not owned")
    status = raw_policy.get("status") or {}
    summary = status.get("nodes") or {}
    if summary.get("gpuNodes") != gpu_nodes:
        waiting.append(f"status gpuNodes {summary.get('gpuNodes')} != {gpu_nodes}")
    if summary.get("byWorkload") != dict(by_workload):
        waiting.append(f"status byWorkload {summary.get('byWorkload')} != {dict(by_workload)}")
    if not allow_held and status.get("state") != "ready":
        waiting.append(f"status state {status.get('state')}")
    converged = not waiting and not bad
    return Observation(converged, bad, waiting + bad)


def wait_converged(
    run: Stack, timeout: float, allow_held: frozenset[str] = frozenset()
) -> tuple[float | None, Observation]:
    started = time.monotonic()
    last = Observation(False, [], ["not observed"])
    while time.monotonic() - started < timeout:
        try:
            last = observe(run, allow_held)
        except API_ERRORS as exc:
            last = Observation(False, [], [f"API error: {exc}"])
        if last.converged:
            return time.monotonic() - started, last
        time.sleep(1.0)
    return None, last


# ----------------------------------------------------------------------------- faults


def compact_etcd(cluster: LocalCluster) -> int:
    """Compact etcd to its current revision (through its HTTP gateway); returns it."""
    info = cluster.require_running()
    base = f"http://127.0.0.1:{info.ports[ETCD]}"
    key = base64.b64encode(b"/registry/").decode()

    def post(path: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        return http_request(
            base + path, method="POST", body=data, headers=headers, timeout=10
        ).json()

    revision = int(post("/v3/kv/range", {"key": key, "limit": 1})["header"]["revision"])
    post("/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


def watch_status(cluster: LocalCluster, resource_version: int) -> int | None:
    """The status code a Node watch resumed at ``resource_version`` gets (410: expired)."""
    params = {"watch": "true", "resourceVersion": str(resource_version), "timeoutSeconds": "5"}
    # The watch ends by itself after timeoutSeconds; its first event says how it started.
    query = urllib.parse.urlencode(params)
    answer = api_request(cluster.kubeconfig_path, "GET", f"/api/v1/nodes?{query}", timeout=15)
    if answer.status_code != 200:
        return answer.status_code
    for line in answer.text.splitlines():
        if not line.strip():
            continue
        event = json.loads(line)
        if event.get("type") == "ERROR":
            return int(event["object"].get("code") or 0)
        return 200
    return None


def inject(run: Stack, fault: str) -> None:
    run.injections[fault] += 1
    if fault == "kill-apiserver":
        run.cluster.restart_component(APISERVER)
    elif fault == "kill-etcd":
        run.cluster.restart_component(ETCD)
        # The API server reconnects by itself; wait until it answers again.
        deadline = time.monotonic() + 60
        while not run.cluster.status().api_ready and time.monotonic() < deadline:
            time.sleep(0.3)
    elif fault == "kill-operator":
        run.restart_operator()
    elif fault == "expire-watches":
        revision = compact_etcd(run.cluster)
        say(f"  compacted etcd at revision {revision}")
        run.cluster.restart_component(APISERVER)
        code = watch_status(run.cluster, revision - 1)
        say(f"  a watch resumed at revision {revision - 1} now gets: {code}")
        if code != 410:
            raise RuntimeError(f"expire-watches: a watch at an old revision got {code}, not 410")
    else:
        raise ValueError(fault)


def perturb(run: Stack, rng: random.Random, count: int) -> None:
    """Change the workload config of a few nodes (no GPU pods on them: no hold)."""
    client = run.client()
    for name in rng.sample(run.names, min(count, len(run.names))):
        workload = rng.choice(["container", "vm-passthrough", "vm-vgpu"])
        retry_api(functools.partial(ops.patch_node_sync, client, name, labels={WORKLOAD: workload}))


def node_labels(client: Client, name: str) -> dict[str, str]:
    node = retry_api(lambda: ops.get_node(client, name)) or {}
    return dict((node.get("metadata") or {}).get("labels") or {})


def held_condition(run: Stack) -> bool:
    policy = retry_api(lambda: stack.get_cluster_policy(run.kubeconfig, POLICY)) or {}
    for cond in (policy.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "WorkloadSwitchHeld":
            return bool(cond.get("status") == "True")
    return False


def scenario_mode_switch(run: Stack, rng: random.Random, report: Report, timeout: float) -> None:
    client = run.client()
    candidates = [n for n in run.names if node_labels(client, n).get(WORKLOAD) == "container"]
    name = rng.choice(candidates)
    say(f"  mode-switch on {name} with a GPU pod running")
    pod = stack.gpu_pod(HOLDER_POD, "nvidia.com/gpu", name)
    ops.create_or_replace_sync(client, pod)
    deadline = time.monotonic() + 60
    while client.get(Pod, HOLDER_POD, namespace="default").status.phase != "Running":  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            report.violations.append(f"mode-switch: pod on {name} never ran")
            return
        time.sleep(0.3)
    ops.patch_node_sync(client, name, labels={WORKLOAD: "vm-vgpu"})
    stop = threading.Event()
    skipped: list[str] = []

    samples: list[str | None] = []

    def watch_hold() -> None:
        watcher = run.client()
        while not stop.is_set():
            try:
                node = ops.get_node(watcher, name) or {}
            except API_ERRORS:
                time.sleep(0.2)
                continue
            workload = current_workload((node.get("metadata") or {}).get("labels") or {})
            samples.append(workload)
            if workload not in ("container", None):
                skipped.append(f"{name} switched to {workload} with a GPU pod")
            time.sleep(0.2)

    thread = threading.Thread(target=watch_hold, daemon=True)
    thread.start()
    time.sleep(rng.uniform(0, 2))
    inject(run, "kill-apiserver")
    inject(run, "kill-operator")
    deadline = time.monotonic() + timeout
    while not held_condition(run):
        if time.monotonic() > deadline:
            report.violations.append(f"mode-switch: WorkloadSwitchHeld never reported for {name}")
            break
        time.sleep(0.5)
    time.sleep(3)
    stop.set()
    thread.join()
    if skipped:
        report.violations.append(f"safety hold skipped: {skipped[0]}")
    if len(samples) < 5:
        report.violations.append(f"mode-switch: the hold was observed only {len(samples)} times")
    say(f"  hold observed {len(samples)} times while the GPU pod ran")
    retry_api(lambda: client.delete(Pod, HOLDER_POD, namespace="default", grace_period=0))
    deadline = time.monotonic() + timeout
    while current_workload(node_labels(client, name)) != "vm-vgpu":
        if time.monotonic() > deadline:
            report.violations.append(f"mode-switch: {name} never switched after the pod left")
            return
        time.sleep(0.5)


def gpu_allocatable(client: Client, name: str) -> dict[str, int]:
    node = retry_api(lambda: ops.get_node(client, name)) or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {k: int(v) for k, v in allocatable.items() if is_gpu_resource(k) and int(v) > 0}


def scenario_vgpu_change(run: Stack, rng: random.Random, report: Report, timeout: float) -> None:
    client = run.client()
    candidates = [n for n in run.names if node_labels(client, n).get(WORKLOAD) == "vm-vgpu"]
    if not candidates:
        name = rng.choice(run.names)
        ops.patch_node_sync(client, name, labels={WORKLOAD: "vm-vgpu"})
    else:
        name = rng.choice(candidates)
    current = node_labels(client, name).get("nvidia.com/vgpu.config")
    target = "A10-4Q" if current != "A10-4Q" else "A10-12Q"
    expected = {
        "A10-4Q": {"nvidia.com/NVIDIA_A10-4Q": 12},
        "A10-12Q": {"nvidia.com/NVIDIA_A10-12Q": 4},
    }
    say(f"  vgpu-change on {name}: {current} -> {target}")
    ops.patch_node_sync(client, name, labels={"nvidia.com/vgpu.config": target})
    time.sleep(rng.uniform(0, 1))
    inject(run, "kill-apiserver")
    deadline = time.monotonic() + timeout
    while gpu_allocatable(client, name) != expected[target]:
        if time.monotonic() > deadline:
            report.violations.append(
                f"vgpu-change: {name} advertises {gpu_allocatable(client, name)}, not {expected[target]}"
            )
            return
        time.sleep(0.5)


def set_dcgm_exporter(client: Client, enabled: bool, report: Report, lock: threading.Lock) -> None:
    """A user's edit of the ClusterPolicy: get, change, replace, retried on 409 Conflict."""
    while True:
        obj = client.get(ClusterPolicy, POLICY)
        obj.spec["dcgmExporter"]["enabled"] = enabled
        try:
            client.replace(obj)
            return
        except ApiError as exc:
            if exc.status.code != 409:
                raise
            with lock:
                report.conflicts_retried += 1


def scenario_conflicting_writers(
    run: Stack, rng: random.Random, report: Report, timeout: float
) -> None:
    """A user edits deploy labels and the ClusterPolicy while the operator runs and crashes."""
    client = run.client()
    say("  conflicting-writers: user edits labels and the ClusterPolicy, operator killed")
    stop = threading.Event()
    last_dcgm: list[bool] = []
    opted_out: set[str] = set()
    lock = threading.Lock()
    user_rng = random.Random(rng.random())

    def user() -> None:
        writer = run.client()
        while not stop.is_set():
            name = user_rng.choice(run.names)
            edit = user_rng.randrange(4)
            try:
                if edit == 0:
                    ops.patch_node_sync(writer, name, labels={f"{DEPLOY}device-plugin": None})
                elif edit == 1:
                    ops.patch_node_sync(writer, name, labels={f"{DEPLOY}vgpu-manager": "true"})
                elif edit == 2:
                    ops.patch_node_sync(
                        writer, name, labels={f"{DEPLOY}node-status-exporter": "false"}
                    )
                    with lock:
                        opted_out.add(name)
                else:
                    enabled = user_rng.random() < 0.5
                    set_dcgm_exporter(writer, enabled, report, lock)
                    with lock:
                        last_dcgm.append(enabled)
            except API_ERRORS:
                pass
            time.sleep(0.1)

    threads = [threading.Thread(target=user, daemon=True) for _ in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(rng.uniform(1, 3))
    inject(run, "kill-operator")
    time.sleep(rng.uniform(1, 3))
    stop.set()
    for thread in threads:
        thread.join()
    # The user's last word, written once the API answers (a write cut off by a crash may or
    # may not have landed, so the check is on an edit known to have succeeded).
    final = not last_dcgm[-1] if last_dcgm else False

    retry_api(lambda: set_dcgm_exporter(client, final, report, lock), timeout)
    time.sleep(3)
    policy = retry_api(lambda: stack.get_cluster_policy(run.kubeconfig, POLICY)) or {}
    enabled = ((policy.get("spec") or {}).get("dcgmExporter") or {}).get("enabled")
    if enabled != final:
        report.violations.append(f"user's last ClusterPolicy edit lost: {enabled} != {final}")
    for name in sorted(opted_out):
        value = node_labels(client, name).get(f"{DEPLOY}node-status-exporter")
        labels = node_labels(client, name)
        if current_workload(labels) == "container" and value != "false":
            report.violations.append(f"user's opt-out on {name} lost: {value}")


SCENARIO_RUNNERS = {
    "mode-switch": scenario_mode_switch,
    "vgpu-change": scenario_vgpu_change,
    "conflicting-writers": scenario_conflicting_writers,
}


def run_faults(
    cluster: LocalCluster,
    work: Path,
    *,
    nodes: int,
    faults: int,
    seed: int,
    timeout: float,
    prefix: str = "faults",
    apiserver_kills: int = 0,
) -> Report:
    """The whole run on ``cluster``; leaves no nodes, pods or ClusterPolicy behind.

    ``faults`` random faults, of which at least ``apiserver_kills`` kill the API server.
    """
    rng = random.Random(seed)
    report = Report(seed=seed, nodes=nodes)
    kills = min(apiserver_kills, faults)
    plan_steps: list[str] = ["kill-apiserver"] * kills
    plan_steps += [rng.choice(FAULTS) for _ in range(faults - kills)]
    rng.shuffle(plan_steps)
    for scenario in SCENARIOS:
        plan_steps.insert(rng.randrange(len(plan_steps) + 1), scenario)
    say(f"seed {seed}: {nodes} nodes, sequence {plan_steps}")
    run = Stack(cluster, work, nodes, prefix)
    try:
        run.create_nodes()
        stack.apply_cluster_policy(run.kubeconfig, stack.lab_policy(sandbox=True))
        first, observation = wait_converged(run, timeout * 2)
        if first is None:
            report.violations.append(f"initial convergence: {observation.waiting[:5]}")
            return report
        say(f"initial convergence in {first:.1f}s")
        for step, name in enumerate(plan_steps, 1):
            report.injected.append(name)
            before = len(report.violations)
            try:
                if name in SCENARIO_RUNNERS:
                    SCENARIO_RUNNERS[name](run, rng, report, timeout)
                else:
                    perturb(run, rng, max(1, nodes // 20))
                    delay = rng.uniform(0, 2)
                    time.sleep(delay)
                    say(f"step {step}: {name} after {delay:.2f}s")
                    inject(run, name)
                    # Changes made right after the fault must be seen by the new watches.
                    perturb(run, rng, max(1, nodes // 20))
            except Exception as exc:  # a component that does not come back ends the run
                report.violations.append(f"{name}: {type(exc).__name__}: {exc}")
                say(f"step {step}: {name} FAILED: {exc}")
                break
            if not run.operator.alive():
                report.violations.append(f"operator died: {run.operator.log_tail(5)}")
                run.restart_operator()
            elapsed, observation = wait_converged(run, timeout)
            if elapsed is None:
                report.violations.append(f"{name}: not reconverged: {observation.waiting[:5]}")
                say(f"step {step}: {name} NOT reconverged: {observation.waiting[:3]}")
            else:
                report.reconverge_seconds.append(elapsed)
                say(f"step {step}: {name} reconverged in {elapsed:.1f}s")
            if elapsed is not None and len(report.violations) == before:
                report.survived.append(name)
    finally:
        report.injections = dict(run.injections)
        with contextlib.suppress(Exception):
            say("operator log tail:\n" + run.operator.log_tail(15))
        try:
            run.stop()
        except API_ERRORS as exc:
            say(f"cleanup failed (the API server is down?): {exc}")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--faults", type=int, default=16, help="faults besides the scenarios")
    parser.add_argument(
        "--apiserver-kills",
        type=int,
        default=10,
        help="how many of the faults are certainly API server kills (the others are drawn)",
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=300.0, help="per reconvergence (s)")
    parser.add_argument("--cluster-name", default="faults")
    parser.add_argument("--keep-cluster", action="store_true")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    print(f"seed: {seed}", flush=True)
    cluster = LocalCluster(args.cluster_name)
    cluster.up(progress=say)
    try:
        with tempfile.TemporaryDirectory(prefix="gpuop-faults-") as tmp:
            report = run_faults(
                cluster,
                Path(tmp),
                nodes=args.nodes,
                faults=args.faults,
                seed=seed,
                timeout=args.timeout,
                apiserver_kills=args.apiserver_kills,
            )
    finally:
        if not args.keep_cluster:
            cluster.down(progress=say)
    summary = report.summary()
    print(json.dumps(summary), flush=True)
    print(f"faults injected:      {summary['faults_injected']}")
    print(f"faults survived:      {summary['faults_survived']}")
    print(
        f"time to reconverge:   median {summary['reconverge_median_s']}s,"
        f" max {summary['reconverge_max_s']}s"
    )
    print(f"conflicts retried:    {summary['conflicts_retried']}")
    kills = ", ".join(f"{kind} x{count}" for kind, count in summary["injections"].items())
    print(f"process faults:       {kills} (scenarios included)")
    print(f"invariant violations: {summary['invariant_violations']}")
    for violation in report.violations:
        print(f"  - {violation}")
    sys.exit(1 if report.violations else 0)


if __name__ == "__main__":
    main()
