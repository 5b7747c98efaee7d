"""`gpuop lab`: the whole three-node scenario on a local cluster, narrated, with a report.

Steps (each can run alone with `gpuop lab step N` on a cluster left up by `--keep`):

1. control plane up (reused when running), CRD, RBAC, operator (as its ServiceAccount),
   node simulator, ClusterPolicy with sandbox workloads on;
2. three simulated 2x A10 nodes labelled container / vm-passthrough / vm-vgpu, converged;
3. per node: operands, deploy labels, what it advertises;
4. a container pod, a passthrough VM and a vGPU VM (as launcher pods) and three cross
   requests, placed by the real kube-scheduler, next to `gpuop explain`'s prediction; then
   a training job spread by host and an inference pair kept apart by host: the first of
   each lands, the second waits, each explained;
5. the vGPU node moves from A10-12Q to A10-4Q (its VM moved off first): 4 -> 12;
6. the silent trap: sandbox workloads off, labels ignored, Warning Events; then back on;
7. drift on purpose (kinds picked at random with a printed seed), the checker finds exactly
   the drifted nodes;
8. the report: JSON, Markdown and a self-contained HTML page.

A step that fails stops the lab with what was expected and what was seen, and leaves the
cluster up for inspection. A lab that passes stops what it started (:func:`teardown_for`):
the operator, the simulator and, unless it was running before the lab, the control plane.

Why one module of about 700 lines: every step restarts what a `--keep` run may have left
stopped (`_ensure_running`) through the same lifecycle functions `teardown_for` and
`finish` use, and the tests replace those functions on this module to run the steps
without a cluster; the shared parts that need no cluster are in `stack` and `report`.
"""

from __future__ import annotations

import contextlib
import enum
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuop.api.conditions import ConditionType
from gpuop.api.labels import (
    DEPLOY_LABEL_PREFIX,
    KUBEVIRT_SCHEDULABLE_LABEL,
    VGPU_CONFIG_LABEL,
    VGPU_CONFIG_STATE_LABEL,
    WORKLOAD_LABEL,
)
from gpuop.api.notices import NoticeCode
from gpuop.controlplane import COMPONENT_NAMES, DEFAULT_CLUSTER_NAME
from gpuop.controlplane import LocalCluster as Cluster
from gpuop.kube import ops, sync_client
from gpuop.kube.errors import KubeApiError
from gpuop.kubevirt.launcher import render_launcher_pod
from gpuop.kubevirt.permitted import kubevirt_merge_patch, permitted_host_devices, vmi_example
from gpuop.lab import stack
from gpuop.naming import is_gpu_resource
from gpuop.planner import plan
from gpuop.policy import parse_cluster_policy
from gpuop.sim.hardware import NodeSpec, node_manifest
from gpuop.sim.registry import add_nodes, hardware_of, register_hardware

LAB_NAMESPACE = "lab"
LAUNCHER_IMAGE = "quay.io/kubevirt/virt-launcher:v1.7.0"
NODES = {
    "a10-container": "container",
    "a10-passthrough": "vm-passthrough",
    "a10-vgpu": "vm-vgpu",
}
EXPECTED = {
    "a10-container": {"nvidia.com/gpu": 2},
    "a10-passthrough": {"nvidia.com/GA102GL_A10": 2},
    "a10-vgpu": {"nvidia.com/NVIDIA_A10-12Q": 4},
}
STEP_TITLES = {
    1: "Control plane, operator and simulator",
    2: "Three GPU nodes, one per workload config",
    3: "What each node runs and advertises",
    4: "Workloads placed by the real kube-scheduler",
    5: "vGPU profile change: A10-12Q -> A10-4Q",
    6: "The silent trap: sandbox workloads off",
    7: "Drift on purpose, found by the checker",
    8: "Report",
    9: "Containers and VMs on one node (DRA), and the race",
    10: "Every other manager of GPUs, checked live",
}
DRA_STEP = 9  # `gpuop lab --dra` (gpuop.lab.dra), after step 7
MANAGERS_STEP = 10  # `gpuop lab --managers` (gpuop.lab.managers), after step 7


class LabFailure(Exception):
    def __init__(self, step: int, expected: str, seen: str) -> None:
        self.step = step
        self.expected = expected
        self.seen = seen
        super().__init__(
            f"step {step} ({STEP_TITLES.get(step, '?')}): expected {expected}; saw {seen}"
        )


Say = Callable[[str], None]


@dataclass
class LabContext:
    cluster_name: str
    work_dir: Path
    say: Say
    seed: int
    kubeconfig: str = ""
    report: dict[str, Any] = field(default_factory=dict)
    processes: dict[str, stack.Process] = field(default_factory=dict)
    # Whether this run started the control plane (it was not running, or only partly), and
    # whether an earlier run's operator and simulator were running when this one began.
    started_cluster: bool = False
    found_background: bool = False

    def client(self) -> Any:
        return sync_client(self.kubeconfig)


def lab_work_dir(cluster_state_dir: Path) -> Path:
    """Where the lab keeps its kubeconfigs, logs and process records for one cluster."""
    return cluster_state_dir / "lab"


def _gpu_allocatable(node: dict[str, Any]) -> dict[str, int]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {
        k: int(v)
        for k, v in allocatable.items()
        if is_gpu_resource(k) and str(v).isdigit() and int(v) > 0
    }


def wait_for(
    ctx: LabContext,
    step: int,
    what: str,
    check: Callable[[], tuple[bool, str]],
    timeout: float = 60,
) -> str:
    """Poll `check` until it says done; fail the step with the last observation."""
    deadline = time.monotonic() + timeout
    last = ""
    shown = 0.0
    while time.monotonic() < deadline:
        done, last = check()
        if done:
            return last
        if time.monotonic() - shown > 3:
            ctx.say(f"  ... waiting for {what}: {last}")
            shown = time.monotonic()
        time.sleep(0.25)
    raise LabFailure(step, what, last)


def _process_state_file(ctx: LabContext) -> Path:
    return _state_file(ctx.work_dir)


def _state_file(work_dir: Path) -> Path:
    return work_dir / "lab-processes.json"


def _recorded(work_dir: Path) -> dict[str, int]:
    try:
        data = json.loads(_state_file(work_dir).read_text())
        return {str(name): int(entry["pid"]) for name, entry in data.items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def recorded_processes(cluster_state_dir: Path) -> dict[str, int]:
    """The operator and simulator pids a lab run recorded for a cluster (alive or not)."""
    return _recorded(lab_work_dir(cluster_state_dir))


def _background_running(ctx: LabContext) -> bool:
    from gpuop.controlplane import procs

    return any(procs.is_alive(pid) for pid in _recorded(ctx.work_dir).values())


def _save_processes(ctx: LabContext) -> None:
    data = {name: {"pid": p.popen.pid, "log": str(p.log_path)} for name, p in ctx.processes.items()}
    _process_state_file(ctx).write_text(json.dumps(data))


def stop_background(ctx: LabContext) -> None:
    """Stop the operator and simulator started by this or an earlier lab run."""
    import os
    import signal

    for process in ctx.processes.values():
        process.stop()
    ctx.processes.clear()
    path = _process_state_file(ctx)
    if path.exists():
        for entry in json.loads(path.read_text()).values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(entry["pid"]), signal.SIGTERM)
        path.unlink()


def _start_background(ctx: LabContext) -> None:
    operator_kubeconfig = ctx.work_dir / "operator.kubeconfig"
    if not operator_kubeconfig.exists():
        operator_kubeconfig = stack.install_operator_access(ctx.kubeconfig, ctx.work_dir)
    ctx.processes["operator"] = stack.start_operator(operator_kubeconfig, ctx.work_dir / "logs")
    simulator_kubeconfig = stack.install_simulator_access(ctx.kubeconfig, ctx.work_dir)
    ctx.processes["simulator"] = stack.start_simulator(
        str(simulator_kubeconfig), ctx.work_dir / "logs", ctx.work_dir / "sim-hosts"
    )
    _save_processes(ctx)


def ensure_cluster(ctx: LabContext) -> dict[str, Any]:
    """Start the control plane unless it runs; remember whether this run started it."""
    cluster = Cluster(ctx.cluster_name)
    if cluster.status().state != "running":
        ctx.say(
            "starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok)"
        )
    info = cluster.up(progress=lambda line: ctx.say(f"  {line}"))
    if info.already_running:
        ctx.say(f"cluster '{ctx.cluster_name}' was already running: using it, and leaving it so")
    else:
        ctx.started_cluster = True
    ctx.kubeconfig = str(cluster.kubeconfig_path)
    ctx.work_dir.mkdir(parents=True, exist_ok=True)
    return {
        "name": ctx.cluster_name,
        "state_dir": info.state_dir,
        "started_by_lab": ctx.started_cluster,
        "ports": info.ports,
        "pids": info.pids,
    }


class Teardown(enum.Enum):
    """What a lab run leaves behind when it ends."""

    KEEP = "keep"  # --keep: cluster, operator and simulator stay up
    INSPECT = "inspect"  # failed: everything stays as it is, for inspection
    STOP_ALL = "stop-all"  # passed, and this run started the cluster: stop all of it
    LEAVE_AS_FOUND = "leave-as-found"  # passed on a cluster that ran before: leave it so


def teardown_for(*, passed: bool, keep: bool, started_cluster: bool) -> Teardown:
    if not passed:
        return Teardown.INSPECT
    if keep:
        return Teardown.KEEP
    return Teardown.STOP_ALL if started_cluster else Teardown.LEAVE_AS_FOUND


def _stop_hint(ctx: LabContext) -> str:
    named = (
        "" if ctx.cluster_name == DEFAULT_CLUSTER_NAME else f" --cluster-name {ctx.cluster_name}"
    )
    return f"gpuop lab down{named}"


def finish(ctx: LabContext, teardown: Teardown) -> list[str]:
    """Leave behind what ``teardown`` says; return the lines that tell the user what runs."""
    name = ctx.cluster_name
    if teardown is Teardown.INSPECT:
        if not ctx.kubeconfig:
            return [
                f"cluster '{name}' did not start; stop whatever is left with: {_stop_hint(ctx)}"
            ]
        return [
            f"the cluster is left up for inspection: export KUBECONFIG={ctx.kubeconfig}",
            f"operator and simulator logs: {ctx.work_dir / 'logs'}",
            f"stop everything with: {_stop_hint(ctx)}",
        ]
    if teardown is Teardown.KEEP:
        if not ctx.processes:
            _start_background(ctx)
        return [
            f"cluster left running: export KUBECONFIG={ctx.kubeconfig}",
            f"stop everything with: {_stop_hint(ctx)}",
        ]
    if teardown is Teardown.LEAVE_AS_FOUND:
        stop_background(ctx)
        with_background = ""
        if ctx.found_background:
            _start_background(ctx)
            with_background = " with its operator and simulator"
        return [
            f"cluster '{name}' was already running before the lab, so it is left running"
            f"{with_background}: export KUBECONFIG={ctx.kubeconfig}",
            f"stop it with: {_stop_hint(ctx)}",
        ]
    started = time.monotonic()
    stop_background(ctx)
    notes = Cluster(name).down()
    seconds = time.monotonic() - started
    return [
        *notes,
        f"stopped everything the lab started in {seconds:.1f}s: the operator, the simulator and "
        f"cluster '{name}' ({', '.join(COMPONENT_NAMES)}); --keep leaves them running",
    ]


# -- steps --------------------------------------------------------------------------------


def step1(ctx: LabContext) -> dict[str, Any]:
    cluster = ensure_cluster(ctx)
    ctx.say("installing the ClusterPolicy CRD, the operator namespace and its RBAC")
    stack.install_crd(ctx.kubeconfig)
    stack.install_operator_access(ctx.kubeconfig, ctx.work_dir)
    if not ctx.processes:
        ctx.found_background = ctx.found_background or _background_running(ctx)
    stop_background(ctx)
    _start_background(ctx)
    ctx.say(
        "operator running as system:serviceaccount:gpu-operator:gpuop-operator; simulator running"
    )
    stack.apply_cluster_policy(ctx.kubeconfig, stack.lab_policy(sandbox=True))
    ctx.say("ClusterPolicy cluster-policy applied (sandboxWorkloads.enabled=true)")
    from gpuop.controlplane.access import server_version

    version = server_version(Path(ctx.kubeconfig)).get("gitVersion", "?")
    return {"kubernetes": version, "kubeconfig": ctx.kubeconfig, "cluster": cluster}


def ensure_running(ctx: LabContext) -> None:
    if not ctx.kubeconfig:
        ensure_cluster(ctx)
    if not ctx.processes:
        stop_background(ctx)
        _start_background(ctx)


def _converged(ctx: LabContext, expected: dict[str, dict[str, int]]) -> tuple[bool, str]:
    client = ctx.client()
    seen = {}
    for name in expected:
        node = ops.get_node(client, name)
        seen[name] = _gpu_allocatable(node) if node else None
    policy = stack.get_cluster_policy(ctx.kubeconfig, "cluster-policy") or {}
    state = (policy.get("status") or {}).get("state")
    ok = all(seen[n] == expected[n] for n in expected) and state == "ready"
    return ok, f"status={state}, " + "; ".join(f"{n}: {seen[n]}" for n in expected)


def step2(ctx: LabContext) -> dict[str, Any]:
    ensure_running(ctx)
    client = ctx.client()
    for name, workload in NODES.items():
        # KubeVirt's virt-handler marks the nodes it runs on; VM launcher pods select on it.
        labels = {WORKLOAD_LABEL: workload, KUBEVIRT_SCHEDULABLE_LABEL: "true"}
        if ops.get_node(client, name) is None:
            add_nodes(client, [NodeSpec(name, "A10", 2, labels)], stack.NAMESPACE)
            ctx.say(f"node {name}: 2x A10, {WORKLOAD_LABEL}={workload}")
        else:
            # A cluster kept from an earlier run: back to the labels the lab starts from.
            spec = NodeSpec(name, "A10", 2, labels)
            register_hardware(client, [spec], stack.NAMESPACE)
            fresh = node_manifest(spec)["metadata"]["labels"]
            ops.patch_node_sync(client, name, labels={**fresh, VGPU_CONFIG_LABEL: None})
            ctx.say(f"node {name}: kept from an earlier run, {WORKLOAD_LABEL}={workload}")
    started = time.monotonic()
    seen = wait_for(
        ctx,
        2,
        "all three nodes to advertise their resource and the policy to be ready",
        lambda: _converged(ctx, EXPECTED),
        120,
    )
    seconds = round(time.monotonic() - started, 2)
    ctx.say(f"converged in {seconds}s: {seen}")
    return {"converged_seconds": seconds}


def step3(ctx: LabContext) -> dict[str, Any]:
    ensure_running(ctx)
    client = ctx.client()
    policy = parse_cluster_policy(stack.get_cluster_policy(ctx.kubeconfig, "cluster-policy"))
    rows = []
    for name in NODES:
        node = ops.get_node(client, name)
        if node is None:
            raise LabFailure(3, f"node {name}", "no such node")
        node_plan = plan(policy, node)
        labels = (node.get("metadata") or {}).get("labels") or {}
        deploy = {k: v for k, v in sorted(labels.items()) if k.startswith(DEPLOY_LABEL_PREFIX)}
        advertised = _gpu_allocatable(node)
        operands = [op.name for op in node_plan.running_operands()]
        rows.append(
            {
                "name": name,
                "workload": node_plan.workload.config,
                "operands": operands,
                "deploy_labels": deploy,
                "advertises": advertised,
                "expected": node_plan.advertises,
            }
        )
        if advertised != node_plan.advertises:
            raise LabFailure(3, f"{name} to advertise {node_plan.advertises}", str(advertised))
        ctx.say(f"{name} [{node_plan.workload.config}]")
        ctx.say(f"  operands:   {', '.join(operands)}")
        ctx.say(f"  advertises: {', '.join(f'{k}={v}' for k, v in advertised.items())}")
    return {"nodes": rows}


def _placement(ctx: LabContext, name: str) -> tuple[str | None, str, str]:
    pod = ops.get_pod_sync(ctx.client(), name, LAB_NAMESPACE)
    node = (pod.get("spec") or {}).get("nodeName")
    phase = (pod.get("status") or {}).get("phase", "")
    message = ""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            message = cond.get("message", "")
    return node, phase, message


def step4(ctx: LabContext) -> dict[str, Any]:
    from gpuop.explain import explain_pod

    ensure_running(ctx)
    client = ctx.client()
    ops.ensure_namespace_sync(client, LAB_NAMESPACE)
    vmis = {
        "vm-passthrough": vmi_example("vm-passthrough", "nvidia.com/GA102GL_A10"),
        "vm-vgpu": vmi_example("vm-vgpu", "nvidia.com/NVIDIA_A10-12Q"),
    }
    nodes = [ops.get_node(client, n) for n in NODES]
    permitted = permitted_host_devices([n for n in nodes if n])
    workloads: list[tuple[str, str, dict[str, Any], str | None]] = [
        (
            "cuda-pod",
            "container",
            stack.gpu_pod("cuda-pod", "nvidia.com/gpu", namespace=LAB_NAMESPACE),
            "a10-container",
        ),
    ]
    for vmi_name, vmi in vmis.items():
        vmi["metadata"]["namespace"] = LAB_NAMESPACE
        launcher = render_launcher_pod(vmi, permitted_host_devices=permitted)
        launcher["metadata"]["namespace"] = LAB_NAMESPACE
        launcher["spec"].setdefault("terminationGracePeriodSeconds", 0)
        for container in launcher["spec"].get("containers", []):
            container.setdefault("image", LAUNCHER_IMAGE)
        target = "a10-passthrough" if vmi_name == "vm-passthrough" else "a10-vgpu"
        workloads.append((launcher["metadata"]["name"], vmi_name, launcher, target))
    workloads += [
        (
            "cross-container-asks-a10",
            "cross",
            stack.gpu_pod(
                "cross-container-asks-a10",
                "nvidia.com/GA102GL_A10",
                "a10-container",
                namespace=LAB_NAMESPACE,
            ),
            None,
        ),
        (
            "cross-passthrough-asks-vgpu",
            "cross",
            stack.gpu_pod(
                "cross-passthrough-asks-vgpu",
                "nvidia.com/NVIDIA_A10-12Q",
                "a10-passthrough",
                namespace=LAB_NAMESPACE,
            ),
            None,
        ),
        (
            "cross-vgpu-asks-gpu",
            "cross",
            stack.gpu_pod(
                "cross-vgpu-asks-gpu", "nvidia.com/gpu", "a10-vgpu", namespace=LAB_NAMESPACE
            ),
            None,
        ),
    ]
    all_nodes = [n for n in nodes if n]
    predictions = {}
    for name, _kind, manifest, _expected in workloads:
        predictions[name] = explain_pod(manifest, all_nodes, []).to_dict()
        try:
            ops.create_or_replace_sync(client, manifest)
        except KubeApiError as exc:
            raise LabFailure(4, f"pod {name} to be accepted", exc.detail) from exc
    results = []
    for name, kind, manifest, expected in workloads:

        def check(name: str = name, expected: str | None = expected) -> tuple[bool, str]:
            node, phase, message = _placement(ctx, name)
            if expected:
                return node == expected and phase == "Running", f"node={node} phase={phase}"
            return bool(message), f"node={node} phase={phase} {message}"

        wait_for(
            ctx,
            4,
            f"{name} to be {'Running on ' + expected if expected else 'judged by the scheduler'}",
            check,
            60,
        )
        node, phase, message = _placement(ctx, name)
        prediction = predictions[name]
        feasible = prediction.get("feasible", [])
        agrees = (node in feasible) if node else (not feasible)
        requests = (manifest["spec"]["containers"][0].get("resources") or {}).get("limits", {})
        gpu_requests = {k: v for k, v in requests.items() if is_gpu_resource(k)}
        results.append(
            {
                "name": name,
                "kind": kind,
                "requests": gpu_requests,
                "expected_node": expected,
                "scheduler": {"node": node, "phase": phase, "message": message},
                "explain": {"feasible": feasible, "summary": prediction.get("summary", "")},
                "agrees": agrees,
            }
        )
        where = f"-> {node} ({phase})" if node else f"Pending: {message}"
        ctx.say(f"{name:<32} {', '.join(gpu_requests)} {where}")
        ctx.say(f"{'':<32} explain: feasible={feasible or 'none'}")
        if not agrees:
            raise LabFailure(
                4, f"explain's prediction for {name} ({feasible}) to match the scheduler", where
            )
    rules = _scheduling_rules(ctx)
    return {
        "placements": results,
        "rules": rules,
        "kubevirt": {"vmis": list(vmis.values()), "patch": kubevirt_merge_patch(permitted)},
    }


def _rule_pod(name: str, labels: dict[str, str], **rules: Any) -> dict[str, Any]:
    pod = stack.gpu_pod(name, "nvidia.com/gpu", namespace=LAB_NAMESPACE)
    pod["metadata"]["labels"] = labels
    pod["spec"].update(rules)
    return pod


def _rule_pairs() -> list[tuple[str, list[dict[str, Any]]]]:
    """A training job spread one per host, and an inference pair kept apart by host: the
    first of each lands on a10-container, the second waits (the other two nodes have no
    `nvidia.com/gpu`, and the first holds the one left host to its rule)."""
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"job": "train"}},
        }
    ]
    apart = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app": "infer"}},
                }
            ]
        }
    }
    return [
        (
            "training job spread by host (topologySpreadConstraints, maxSkew 1)",
            [
                _rule_pod(f"train-{i}", {"job": "train"}, topologySpreadConstraints=spread)
                for i in range(2)
            ],
        ),
        (
            "inference pair kept apart by host (required podAntiAffinity)",
            [_rule_pod(f"infer-{i}", {"app": "infer"}, affinity=apart) for i in range(2)],
        ),
    ]


def _scheduling_rules(ctx: LabContext) -> list[dict[str, Any]]:
    """Pods that spread and keep apart, placed one at a time by the real kube-scheduler,
    each next to `gpuop explain`'s prediction against the cluster as it then is."""
    from gpuop.explain import explain_pod

    client = ctx.client()

    def delete(names: list[str]) -> None:
        for name in names:
            ops.delete_pod_sync(client, LAB_NAMESPACE, name, grace_period=0)

        def gone() -> tuple[bool, str]:
            left = {p["metadata"]["name"] for p in ops.list_pods_sync(client, LAB_NAMESPACE)}
            return not left & set(names), f"still there: {sorted(left & set(names))}"

        wait_for(ctx, 4, f"{', '.join(names)} to be gone", gone, 60)

    ctx.say("scheduling rules: freeing a10-container's GPUs (deleting cuda-pod)")
    delete(["cuda-pod"])
    results = []
    for title, pods in _rule_pairs():
        ctx.say(title)
        for pod in pods:
            name = pod["metadata"]["name"]
            nodes = [n for n in (ops.get_node(client, n) for n in NODES) if n]
            running = [
                p for p in ops.list_pods_sync(client, LAB_NAMESPACE) if p["spec"].get("nodeName")
            ]
            prediction = explain_pod(pod, nodes, running).to_dict()
            ops.create_or_replace_sync(client, pod)

            def decided(name: str = name) -> tuple[bool, str]:
                node, phase, message = _placement(ctx, name)
                return bool((node and phase == "Running") or message), f"node={node} phase={phase}"

            wait_for(ctx, 4, f"{name} to run or be judged by the scheduler", decided, 60)
            node, phase, message = _placement(ctx, name)
            feasible = prediction.get("feasible", [])
            summary = prediction.get("summary") or ""
            agrees = (node in feasible) if node else (not feasible and summary == message)
            where = f"-> {node} ({phase})" if node else f"Pending: {message}"
            ctx.say(f"{name:<32} {where}")
            ctx.say(f"{'':<32} explain: {feasible or summary}")
            results.append(
                {
                    "name": name,
                    "rule": title,
                    "scheduler": {"node": node, "phase": phase, "message": message},
                    "explain": {"feasible": feasible, "summary": summary},
                    "agrees": agrees,
                }
            )
            if not agrees:
                raise LabFailure(
                    4, f"explain's prediction for {name} ({feasible or summary}) to match", where
                )
        delete([pod["metadata"]["name"] for pod in pods])
    return results


def step5(ctx: LabContext) -> dict[str, Any]:
    ensure_running(ctx)
    client = ctx.client()
    ctx.say("moving the vGPU VM off the node first (deleting its launcher pod)")
    for pod in ops.list_pods_sync(client, LAB_NAMESPACE):
        limits: dict[str, Any] = {}
        for container in (pod.get("spec") or {}).get("containers") or []:
            limits.update((container.get("resources") or {}).get("limits") or {})
        if any(k.startswith("nvidia.com/NVIDIA_A10") for k in limits):
            ops.delete_pod_sync(client, LAB_NAMESPACE, pod["metadata"]["name"], grace_period=0)
    before = _gpu_allocatable(ops.get_node(client, "a10-vgpu") or {})
    ops.patch_node_sync(client, "a10-vgpu", labels={VGPU_CONFIG_LABEL: "A10-4Q"})
    ctx.say(f"labelled a10-vgpu {VGPU_CONFIG_LABEL}=A10-4Q")
    expected = {"nvidia.com/NVIDIA_A10-4Q": 12}

    def check() -> tuple[bool, str]:
        node = ops.get_node(client, "a10-vgpu") or {}
        state = ((node.get("metadata") or {}).get("labels") or {}).get(VGPU_CONFIG_STATE_LABEL)
        seen = _gpu_allocatable(node)
        return seen == expected and state == "success", f"{seen}, vgpu.config.state={state}"

    wait_for(ctx, 5, "a10-vgpu to advertise nvidia.com/NVIDIA_A10-4Q: 12", check, 60)
    after = _gpu_allocatable(ops.get_node(client, "a10-vgpu") or {})
    ctx.say(f"a10-vgpu: {before} -> {after}")
    return {"node": "a10-vgpu", "before": before, "after": after, "config": "A10-4Q"}


def _set_sandbox(ctx: LabContext, enabled: bool) -> None:
    ops.merge_patch_sync(
        ctx.client(),
        "ClusterPolicy",
        "cluster-policy",
        {"spec": {"sandboxWorkloads": {"enabled": enabled}}},
    )


def step6(ctx: LabContext) -> dict[str, Any]:
    ensure_running(ctx)
    client = ctx.client()
    ctx.say("removing the lab's GPU pods (a mode switch is held while GPU pods run)")
    for pod in ops.list_pods_sync(client, LAB_NAMESPACE):
        ops.delete_pod_sync(client, LAB_NAMESPACE, pod["metadata"]["name"], grace_period=0)
    _set_sandbox(ctx, False)
    ctx.say("sandboxWorkloads.enabled=false")

    def all_container() -> tuple[bool, str]:
        seen = {}
        for name in NODES:
            seen[name] = _gpu_allocatable(ops.get_node(client, name) or {})
        ok = all(v == {"nvidia.com/gpu": 2} for v in seen.values())
        return ok, str(seen)

    wait_for(ctx, 6, "every node to become a container node", all_container, 90)
    events: list[dict[str, str]] = []

    def warned() -> tuple[bool, str]:
        events.clear()
        for event in ops.list_events_sync(client, "default"):
            involved = event.get("involvedObject") or {}
            if (
                event.get("reason") == NoticeCode.WORKLOAD_LABEL_IGNORED
                and involved.get("name") in NODES
            ):
                events.append(
                    {
                        "node": involved["name"],
                        "type": event.get("type") or "",
                        "message": event.get("message") or "",
                    }
                )
        nodes = {e["node"] for e in events}
        return nodes == {"a10-passthrough", "a10-vgpu"}, f"warnings on {sorted(nodes)}"

    wait_for(ctx, 6, "Warning events on a10-passthrough and a10-vgpu", warned, 30)
    for event in events:
        ctx.say(f"  {event['type']} {event['node']}: {event['message']}")
    policy = stack.get_cluster_policy(ctx.kubeconfig, "cluster-policy") or {}
    condition: dict[str, Any] = next(
        (
            c
            for c in (policy.get("status") or {}).get("conditions") or []
            if c.get("type") == ConditionType.WORKLOAD_LABELS_IGNORED
        ),
        {},
    )
    ctx.say(
        f"  ClusterPolicy condition {ConditionType.WORKLOAD_LABELS_IGNORED}={condition.get('status')}: {condition.get('message', '')}"
    )
    _set_sandbox(ctx, True)
    ctx.say("sandboxWorkloads.enabled=true again")
    restored = {**EXPECTED, "a10-vgpu": {"nvidia.com/NVIDIA_A10-4Q": 12}}
    wait_for(
        ctx,
        6,
        "the three nodes to return to their workload configs",
        lambda: _converged(ctx, restored),
        120,
    )
    return {"warnings": events, "condition": condition, "restored": True}


def step7(ctx: LabContext) -> dict[str, Any]:
    from gpuop.check.engine import run_checks
    from gpuop.sim.drift import applicable_kinds, drift_patch

    ensure_running(ctx)
    client = ctx.client()
    rng = random.Random(ctx.seed)
    ctx.say(f"drift seed {ctx.seed} (rerun with --seed {ctx.seed} to get the same drift)")
    ctx.say("stopping the operator and the simulator, so the drift stays")
    stop_background(ctx)
    targets = rng.sample(sorted(NODES), 2)
    injected: list[dict[str, str]] = []
    machines = hardware_of(client, stack.NAMESPACE)
    for name in targets:
        node = ops.get_node(client, name) or {}
        # too-many-devices shows only against a hardware description, which real nodes
        # (and so the simulator's) do not carry.
        kinds = [
            k
            for k in applicable_kinds(node)
            if (k != "non-gpu-advertising" or len(injected) == 0) and k != "too-many-devices"
        ]
        kind = rng.choice(kinds)
        patch = drift_patch(kind, node, machines.get(name, ()), rng=rng)
        ops.patch_node_sync(
            client, name, labels=patch.labels or None, resources=patch.resources or None
        )
        injected.append({"node": name, "kind": kind, "imitates": patch.description})
        ctx.say(f"  drifted {name}: {kind}")
    dump: list[dict[str, Any]] = [ops.get_node(client, n) or {} for n in NODES]
    policy = stack.get_cluster_policy(ctx.kubeconfig, "cluster-policy")
    if policy:
        dump.append(policy)
    (ctx.work_dir / "drift-dump.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": dump}, indent=1)
    )
    report = run_checks(dump)
    findings = [
        f
        for f in report.to_dict()["findings"]
        if f["severity"] in ("error", "warning") and f.get("kind") == "Node"
    ]
    found = sorted({f["name"] for f in findings})
    for finding in findings:
        ctx.say(
            f"  {finding['severity']:<7} {finding['code']} {finding['name']}: {finding['message']}"
        )
    exact = found == sorted(targets)
    if not exact:
        raise LabFailure(7, f"findings on exactly {sorted(targets)}", str(found))
    ctx.say(f"the checker found exactly the drifted nodes: {', '.join(found)}")
    return {
        "seed": ctx.seed,
        "injected": injected,
        "findings": findings,
        "found_nodes": found,
        "exact": exact,
    }


STEPS: dict[int, Callable[[LabContext], dict[str, Any]]] = {
    1: step1,
    2: step2,
    3: step3,
    4: step4,
    5: step5,
    6: step6,
    7: step7,
}
