"""Taking over a cluster NVIDIA's GPU Operator v26.7.0 runs, and handing it back, on the real
control plane: no pod restarted, no revision made, no node label changed.

The cluster is laid out as NVIDIA's operator left it (`tests/data/upstream-v26.7.0-state/`,
recorded from the real operator): its CRDs only (no GPUCluster CRD), the nodes with the
labels it wrote, its ClusterPolicy, and every object it created, written by the field
manager `gpu-operator` with create/update as it writes them. The kube-controller-manager's
DaemonSet controller makes the operand pods and their ControllerRevisions; kwok runs them.
A GPU workload runs on the container node. Then gpuop's operator starts (as its
ServiceAccount, with the shipped RBAC) under the same ClusterPolicy, and must change no pod,
no revision, no node label and no node's schedulability, and go quiet. Last, NVIDIA's
DaemonSets are written back over gpuop's, as NVIDIA's operator would on its return: no new
revision either.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.config.kubeconfig import KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import ControllerRevision, DaemonSet
from lightkube.resources.core_v1 import ConfigMap, Event, Node, Pod
from lightkube.types import PatchType

from gpuop.api.labels import UPGRADE_STATE_LABEL
from gpuop.controlplane.audit import audit_mark, write_requests
from gpuop.kube import ClusterPolicy, ops, sync_client
from gpuop.lab import stack
from gpuop.policy.crd import crd_manifest
from gpuop.policy.gpucluster import gpu_cluster_crd_manifest
from kit.waiting import wait_until

pytestmark = pytest.mark.e2e

DATA = Path(__file__).parents[1] / "data" / "upstream-v26.7.0-state"
NS = stack.NAMESPACE
NVIDIA = "gpu-operator"  # NVIDIA's operator's field manager
OPERATOR_USER = f"system:serviceaccount:{NS}:{stack.OPERATOR_ACCOUNT}"
GPUCLUSTER_CRD = "gpuclusters.nvidia.com"
CLUSTERPOLICY_CRD = "clusterpolicies.nvidia.com"
# The quiet period after convergence; GPUOP_TAKEOVER_QUIET_SECONDS=600 makes it the
# ten-minute soak RELIABILITY.md reports (with pytest --timeout 1400).
QUIET_SECONDS = float(os.environ.get("GPUOP_TAKEOVER_QUIET_SECONDS", "30"))
# The order NVIDIA's operator's objects are written in: what a pod refers to comes first.
OBJECT_FILES = (
    "runtimeclasses",
    "serviceaccounts",
    "clusterroles",
    "clusterrolebindings",
    "roles",
    "rolebindings",
    "configmaps",
    "services",
    "daemonsets",
)


def _items(directory: Path, name: str) -> list[dict[str, Any]]:
    return list(json.loads((directory / f"{name}.json").read_text())["items"])


def _nvidia_client(kubeconfig: Path) -> Client:
    return Client(KubeConfig.from_file(kubeconfig), field_manager=NVIDIA, trust_env=False)


def _replace_crd(client: Client, manifest: dict[str, Any]) -> None:
    """Put this CRD in place of whatever is installed (an update, so nothing of the other
    one's schema lingers)."""
    name = manifest["metadata"]["name"]
    try:
        existing = client.get(CustomResourceDefinition, name)
    except ApiError as exc:
        if exc.status.code != 404:
            raise
        client.create(from_dict(manifest))
    else:
        body = copy.deepcopy(manifest)
        assert existing.metadata is not None
        body["metadata"]["resourceVersion"] = existing.metadata.resourceVersion
        client.replace(from_dict(body))
    wait_until(
        lambda: (ops.crd_established_sync(client, name), name), 60, f"the CRD {name} established"
    )


def _delete_crd(client: Client, name: str) -> None:
    try:
        client.delete(CustomResourceDefinition, name)
    except ApiError as exc:
        if exc.status.code != 404:
            raise

    def gone() -> tuple[bool, Any]:
        try:
            client.get(CustomResourceDefinition, name)
        except ApiError as exc:
            return exc.status.code == 404, exc.status.code
        return False, "still there"

    wait_until(gone, 60, f"the CRD {name} to go")


def _pods(client: Client) -> dict[str, tuple[str, str]]:
    """Operand pods by name: (uid, controller-revision-hash)."""
    found = {}
    for pod in client.list(Pod, namespace=NS):
        meta = pod.metadata
        assert meta is not None and meta.name is not None
        owners = meta.ownerReferences or []
        if not any(o.kind == "DaemonSet" for o in owners) or meta.deletionTimestamp:
            continue
        labels = meta.labels or {}
        found[meta.name] = (str(meta.uid), labels.get("controller-revision-hash", ""))
    return found


def _revisions(client: Client) -> set[str]:
    return {
        str(r.metadata.name)
        for r in client.list(ControllerRevision, namespace=NS)
        if r.metadata is not None
    }


def _node_state(client: Client, names: list[str]) -> dict[str, Any]:
    state = {}
    for name in names:
        node = client.get(Node, name)
        assert node.metadata is not None and node.spec is not None
        state[name] = {
            "labels": dict(node.metadata.labels or {}),
            "unschedulable": bool(node.spec.unschedulable),
        }
    return state


def _adopt(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpuop", "adopt", "--live", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _auto_upgrade(policy: dict[str, Any]) -> bool:
    upgrade = ((policy.get("spec") or {}).get("driver") or {}).get("upgradePolicy") or {}
    sandbox = ((policy.get("spec") or {}).get("sandboxWorkloads") or {}).get("enabled")
    return bool(upgrade.get("autoUpgrade")) and not sandbox


def _upgrade_moves(client: Client, nodes: list[str]) -> list[str]:
    """The messages of gpuop's driver upgrade Events on these nodes."""
    return [
        str(event.message)
        for event in client.list(Event, namespace="default")
        if event.reason == "GPUDriverUpgrade" and event.involvedObject.name in nodes
    ]


def _changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What differs per node: label -> (before, after), and schedulability."""
    changes: dict[str, Any] = {}
    for name, was in before.items():
        now = after[name]
        keys = set(was["labels"]) | set(now["labels"])
        diff = {
            k: (was["labels"].get(k), now["labels"].get(k))
            for k in sorted(keys)
            if was["labels"].get(k) != now["labels"].get(k)
        }
        if was["unschedulable"] != now["unschedulable"]:
            diff["unschedulable"] = (was["unschedulable"], now["unschedulable"])
        if diff:
            changes[name] = diff
    return changes


def _rolled_out(client: Client, expected: int) -> tuple[bool, Any]:
    sets = list(client.list(DaemonSet, namespace=NS))
    progress = {
        str(ds.metadata.name): (ds.status.numberReady, ds.status.desiredNumberScheduled)
        for ds in sets
        if ds.metadata is not None and ds.status is not None
    }
    pods = sum(ready for ready, _ in progress.values())
    done = len(sets) > 0 and all(r == d for r, d in progress.values()) and pods == expected
    return done, progress


def _lay_out_nvidias_cluster(
    kubeconfig: Path, directory: Path
) -> tuple[Client, dict[str, Any], list[str]]:
    """NVIDIA's operator's CRD, nodes, ClusterPolicy and objects, as it left them."""
    admin = sync_client(str(kubeconfig))
    nvidia = _nvidia_client(kubeconfig)
    _replace_crd(
        admin, yaml.safe_load((DATA / "crds" / "nvidia.com_clusterpolicies.yaml").read_text())
    )
    _delete_crd(admin, GPUCLUSTER_CRD)
    nodes = _items(directory, "nodes")
    names = [n["metadata"]["name"] for n in nodes]
    for node in nodes:
        ops.delete_node_sync(admin, node["metadata"]["name"])
        body = {k: v for k, v in node.items() if k != "labelWriters"}
        nvidia.create(from_dict(body))
        nvidia.patch(
            Node.Status,
            node["metadata"]["name"],
            {"status": node.get("status") or {}},
            patch_type=PatchType.MERGE,
        )
    policy = yaml.safe_load((directory / "cluster-policy.yaml").read_text())
    nvidia.create(from_dict(policy))
    created = nvidia.get(ClusterPolicy, policy["metadata"]["name"])
    uid = str(created.metadata.uid)
    recorded_status = _items(directory, "clusterpolicy")[0].get("status")
    if recorded_status:
        nvidia.patch(
            ClusterPolicy.Status,
            policy["metadata"]["name"],
            {"status": recorded_status},
            patch_type=PatchType.MERGE,
        )
    for name in OBJECT_FILES:
        for obj in _items(directory, name):
            obj = {k: v for k, v in obj.items() if k != "status"}
            for owner in obj["metadata"].get("ownerReferences") or []:
                owner["uid"] = uid
            nvidia.create(from_dict(obj))
    return admin, policy, names


@pytest.fixture
def operator_access(kubeconfig_path: Path, tmp_path: Path) -> Path:
    return stack.install_operator_access(str(kubeconfig_path), tmp_path)


@pytest.fixture
def restore_crds(kubeconfig_path: Path) -> Iterator[None]:
    yield
    client = sync_client(str(kubeconfig_path))
    _replace_crd(client, crd_manifest())
    _replace_crd(client, gpu_cluster_crd_manifest())


@pytest.mark.parametrize(
    ("dataset", "pods"),
    [
        pytest.param(DATA, 12, id="sandbox-on"),
        pytest.param(DATA / "sandbox-off", 18, id="chart-default"),
    ],
)
def test_gpuop_takes_over_and_hands_back_without_restarting_anything(
    kubeconfig_path: Path,
    audit_log_path: Path,
    operator_access: Path,
    restore_crds: None,
    tmp_path: Path,
    dataset: Path,
    pods: int,
) -> None:
    admin, policy, nodes = _lay_out_nvidias_cluster(kubeconfig_path, dataset)
    operator = None
    try:
        wait_until(lambda: _rolled_out(admin, pods), 120, "NVIDIA's operands to run")
        workload = stack.gpu_pod("takeover-workload", "nvidia.com/gpu", node="gpu-container")
        workload["metadata"]["namespace"] = "default"
        admin.create(from_dict(workload))
        before_pods, before_revisions = _pods(admin), _revisions(admin)
        before_nodes = _node_state(admin, nodes)
        assert len(before_pods) == pods and len(before_revisions) == len(
            _items(dataset, "daemonsets")
        )
        # The DaemonSet controller hashed NVIDIA's templates as it did where they were recorded.
        recorded = {
            p["metadata"]["labels"]["controller-revision-hash"] for p in _items(dataset, "pods")
        }
        assert {rev for _uid, rev in before_pods.values()} == recorded

        # Before the switch, read-only: nothing would roll; a ConfigMap deleted on purpose
        # is the one thing listed (gpuop makes it again; no pod restarts for it).
        clean = _adopt(kubeconfig_path)
        assert clean.returncode == 0, clean.stdout + clean.stderr
        assert "Nothing to change" in clean.stdout
        admin.delete(ConfigMap, "default-mig-parted-config", namespace=NS)
        changed = _adopt(kubeconfig_path, "-o", "json")
        assert changed.returncode == 1, changed.stderr
        preview = json.loads(changed.stdout)
        assert preview["created"] == [f"ConfigMap {NS}/default-mig-parted-config"]
        assert {d["action"] for d in preview["daemonsets"]} == {"unchanged"}

        operator = stack.start_operator(operator_access, tmp_path / "logs")

        def converged() -> tuple[bool, Any]:
            status = (
                stack.get_cluster_policy(str(kubeconfig_path), policy["metadata"]["name"]) or {}
            ).get("status") or {}
            log = operator.log_tail(200) if operator else ""
            return status.get("state") == "ready" and "ready: watching" in log, status

        wait_until(converged, 120, "gpuop to find the policy ready")
        time.sleep(5)  # a few passes after convergence
        mark = audit_mark(audit_log_path)
        time.sleep(QUIET_SECONDS)
        quiet = write_requests(audit_log_path, mark, OPERATOR_USER, leases=False)

        assert _revisions(admin) == before_revisions, "gpuop made a new ControllerRevision"
        assert _pods(admin) == before_pods, "gpuop restarted an operand pod"
        changes = _changes(before_nodes, _node_state(admin, nodes))
        # The one label NVIDIA's operator had not written yet when the state was recorded
        # (its upgrade controller's first pass waits for the rollout and requeues): a driver
        # node in sync with no upgrade state becomes `upgrade-done`, as upstream's
        # ProcessDoneOrUnknownNodes marks it too.
        for name in [
            n for n, c in changes.items() if c == {UPGRADE_STATE_LABEL: (None, "upgrade-done")}
        ]:
            del changes[name]
        assert changes == {}, "gpuop changed a node"
        running = admin.get(Pod, "takeover-workload", namespace="default")
        assert running.metadata is not None and running.metadata.deletionTimestamp is None
        upgrading = {
            name: state["labels"].get(UPGRADE_STATE_LABEL)
            for name, state in before_nodes.items()
            if state["labels"].get(UPGRADE_STATE_LABEL) not in (None, "upgrade-done")
        }
        assert upgrading == {}
        assert quiet == [], f"gpuop wrote while quiet under NVIDIA's CRD: {quiet[:10]}"
        # Nothing of the departed operator's field manager is left on what gpuop applied.
        lingering = {
            str(ds.metadata.name)
            for ds in admin.list(DaemonSet, namespace=NS)
            if ds.metadata is not None
            and any(e.manager == NVIDIA for e in ds.metadata.managedFields or [])
        }
        assert lingering == set(), f"fields still owned by {NVIDIA}: {sorted(lingering)}"

        operator.stop()
        operator = None
        # NVIDIA's operator comes back: it updates each DaemonSet to its own rendering.
        nvidia = _nvidia_client(kubeconfig_path)
        for ds in _items(dataset, "daemonsets"):
            current = admin.get(DaemonSet, ds["metadata"]["name"], namespace=NS)
            assert current.metadata is not None
            body = {k: v for k, v in ds.items() if k != "status"}
            body["metadata"]["resourceVersion"] = current.metadata.resourceVersion
            for owner in body["metadata"].get("ownerReferences") or []:
                owner["uid"] = str(
                    admin.get(ClusterPolicy, policy["metadata"]["name"]).metadata.uid
                )
            nvidia.replace(from_dict(body))
        time.sleep(3)
        assert _revisions(admin) == before_revisions, "handing back made a new revision"
        assert _pods(admin) == before_pods, "handing back restarted an operand pod"

        if not _auto_upgrade(policy):
            return
        # gpuop again, and now a real driver change: the full upgrade path (cordon, wait
        # for jobs, drain), never the restart-only one, for a driver that must reinstall.
        operator = stack.start_operator(operator_access, tmp_path / "logs-again")
        time.sleep(5)
        admin.patch(
            ClusterPolicy,
            policy["metadata"]["name"],
            {"spec": {"driver": {"version": "580.95.05"}}},
            patch_type=PatchType.MERGE,
        )
        moves = wait_until(
            lambda: (
                any("-> cordon-required" in m for m in _upgrade_moves(admin, nodes)),
                _upgrade_moves(admin, nodes),
            ),
            120,
            "a node to start the full driver upgrade",
        )
        assert not [m for m in moves if "only the pod changed" in m], moves
    finally:
        if operator is not None:
            print("operator log tail:\n" + operator.log_tail(60))
            operator.stop()
        with contextlib.suppress(ApiError):
            admin.delete(Pod, "takeover-workload", namespace="default", grace_period=0)
        stack.delete_cluster_policy(str(kubeconfig_path), policy["metadata"]["name"])
        for name in nodes:
            ops.delete_node_sync(admin, name)
