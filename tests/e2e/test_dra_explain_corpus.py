"""`gpuop explain` on DRA claims against the real kube-scheduler v1.37.2 of the session cluster.

A seeded corpus (`kit.dra_corpus`) of claim cases is run in batches: per case, kwok nodes with
ResourceSlices (race-free counters, two-faced, partitioned, a pool being updated), devices
already held by other claims (their `status.allocation` written as a scheduler leaves it) and
ResourceClaimTemplates. `gpuop explain --live` then explains each case's pod (the claims by
template, restricted to the case's nodes). Only then one probe pod per node, pinned to it and
with its own copies of the claims, measures what the scheduler does on that node: explain's
verdict per node must be the set of nodes whose probe was bound. Then, on fresh nodes, the
case's own pod (unpinned, claims by template) is created for every case whose scheduling cycle
explain says aborts (a CEL runtime error or an "All" request over a pool being updated, on one
node, ends the cycle for all) and for a sample of the others: Pending exactly when explain's
feasible set is empty, else bound to a node in it. Both rates are printed and must be 100%.

Nothing special is needed for kwok nodes: DRA is GA in 1.34 and partitionable devices are on
by default since 1.36, the scheduler allocates, and binding a pod with claims needs no kubelet
(the claims are reserved for it before it is bound).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from lightkube import Client
from lightkube.codecs import from_dict
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.resource_v1 import (
    ResourceClaimStatus,
    ResourceSlice,
)

from gpuop.cli.explain import explain
from gpuop.kube import ops  # its kind table first: lightkube's typed Node after
from kit.dra_corpus import DraCase, device_classes, generate_case
from kit.waiting import wait_for

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("GPUOP_DRA_SEED", "1202"))
CASES = int(os.environ.get("GPUOP_DRA_CASES", "320"))
CASES_PER_BATCH = 80
#: Besides the aborted cycles, every n-th case is also run unpinned.
UNPINNED_EVERY = 5


def in_parallel(action: Callable[[Any], None], items: Iterable[Any]) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(action, items))


def create_all(client: Client, objects: Iterable[Mapping[str, Any]]) -> None:
    in_parallel(lambda obj: client.create(from_dict(dict(obj))), objects)


def ensure_device_classes(client: Client) -> None:
    """NVIDIA's DeviceClasses (an existing one of the same name is taken as it is)."""
    for obj in device_classes():
        try:
            client.create(from_dict(obj))
        except ApiError as exc:
            if exc.status.code != 409:
                raise


def hold(client: Client, cases: Sequence[DraCase]) -> None:
    """Create the held claims and write their allocation, as a scheduler leaves it."""

    def one(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
        claim, status = pair
        client.create(from_dict(claim))
        meta = claim["metadata"]
        client.patch(
            ResourceClaimStatus, meta["name"], {"status": status}, namespace=meta["namespace"]
        )

    in_parallel(one, [pair for case in cases for pair in case.held])


def scheduled_state(pod: Mapping[str, Any]) -> str | None:
    """ "bound" or "pending" once the scheduler has decided; None before."""
    if pod.get("spec", {}).get("nodeName"):
        return "bound"
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return "pending"
    return None


def probe_states(
    client: Client, namespace: str, names: set[str]
) -> dict[str, tuple[str | None, str]]:
    found = {}
    for pod in client.list(Pod, namespace=namespace):
        data = pod.to_dict()
        name = data["metadata"]["name"]
        if name in names:
            message = next(
                (
                    c.get("message") or ""
                    for c in data.get("status", {}).get("conditions") or []
                    if c.get("type") == "PodScheduled"
                ),
                "",
            )
            found[name] = (scheduled_state(data), message)
    return found


def explain_live(kubeconfig: Path, manifest: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(
        explain, [str(manifest), "--live", "--kubeconfig", str(kubeconfig), "-o", "json"]
    )
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    return data if isinstance(data, list) else [data]


def node_fits(result: Mapping[str, Any], node: str) -> bool:
    """Whether explain says the claims fit on ``node`` taken alone (an aborted cycle aside)."""
    return any(n["name"] == node and n["fits"] for n in result["nodes"])


def lifecycle_settled(client: Client, names: set[str]) -> bool:
    """Whether none of the nodes `names` carries a `node.kubernetes.io/` taint."""
    for node in ops.list_nodes_sync(client):
        if node["metadata"]["name"] not in names:
            continue
        taints = (node.get("spec") or {}).get("taints") or []
        if any(str(t.get("key", "")).startswith("node.kubernetes.io/") for t in taints):
            return False
    return True


def run_batch(
    client: Client,
    kubeconfig: Path,
    namespace: str,
    cases: Sequence[DraCase],
    tmp: Path,
    *,
    unpinned: bool = False,
) -> list[dict[str, Any]]:
    """Set the cases up, explain them, then let the scheduler place their pods.

    Probes (the default): one pod per node, pinned; explain's per-node verdict must match
    which probes were bound. ``unpinned``: the case's own pod, as explained; the scheduler must
    leave it Pending exactly when explain's feasible set is empty, else bind it in that set.
    """
    clock = time.monotonic()
    spent: list[str] = []

    def phase(name: str) -> None:
        nonlocal clock
        spent.append(f"{name} {time.monotonic() - clock:.1f}s")
        clock = time.monotonic()

    create_all(client, [n for c in cases for n in c.nodes])
    # A new node carries the node lifecycle controller's taints (not-ready) until kwok
    # reports it Ready: explain must read the nodes the scheduler will see, not a moment
    # earlier (the cases themselves taint no node).
    wait_for(
        lambda: lifecycle_settled(client, {n["metadata"]["name"] for c in cases for n in c.nodes}),
        "the new nodes' lifecycle taints to clear",
        120,
        0.5,
    )
    create_all(client, [s for c in cases for s in c.slices])
    hold(client, cases)
    create_all(client, [t for c in cases for t in c.templates])
    phase("created")
    manifest = tmp / "pods.json"
    manifest.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [c.explain_pod for c in cases]})
    )
    explained = explain_live(kubeconfig, manifest)
    phase("explained")
    if unpinned:
        pods = {c.name: c.explain_pod for c in cases}
    else:
        create_all(client, [claim for c in cases for claim in c.probe_claims])
        pods = {f"{c.name}/{node}": pod for c in cases for node, pod in c.probes.items()}
    create_all(client, pods.values())
    names = {p["metadata"]["name"] for p in pods.values()}

    def decided() -> dict[str, tuple[str | None, str]] | None:
        states = probe_states(client, namespace, names)
        # Until the claim controller has made a pod's claims from their templates, the
        # scheduler leaves the pod Pending with "ResourceClaim not created yet": not a decision.
        done = all(s and "not created yet" not in m for s, m in states.values())
        return states if len(states) == len(names) and done else None

    wait_for(decided, f"the scheduler to decide on {len(names)} pods", 600, 2.0)
    time.sleep(3)  # a retry triggered by the last events may still bind a pod
    states = wait_for(decided, "the pods again", 120, 2.0)
    bound_to = {p["metadata"]["name"]: n for p, n in _bindings(client, namespace, names)}
    phase("scheduled")
    outcomes = []
    for case, result in zip(cases, explained, strict=True):
        if unpinned:
            name = case.explain_pod["metadata"]["name"]
            state, message = states[name]
            node = bound_to.get(name)
            agree = (node in result["feasible"]) if state == "bound" else not result["feasible"]
            scheduler: Any = node or "pending"
            predicted: Any = sorted(result["feasible"]) or "pending"
            messages = {"pod": message}
        else:
            scheduler = sorted(
                n for n, p in case.probes.items() if states[p["metadata"]["name"]][0] == "bound"
            )
            predicted = sorted(n for n in case.probes if node_fits(result, n))
            agree = scheduler == predicted
            messages = {n: states[p["metadata"]["name"]][1] for n, p in case.probes.items()}
        outcomes.append(
            {
                "case": case.name,
                "kind": "unpinned" if unpinned else "probes",
                "scheduler": scheduler,
                "explain": predicted,
                "explain_pending": not result["feasible"],
                "aborted": bool(result["summary"] and result["summary"].startswith("running")),
                "agree": agree,
                "messages": messages,
                "explain_summary": result["summary"],
                "claims": result.get("claims", []),
            }
        )
    # Free the scheduler of these pods and nodes before the next batch.
    in_parallel(lambda n: _delete(client, Pod, n, namespace), names)
    in_parallel(
        lambda n: _delete(client, Node, n["metadata"]["name"]), [n for c in cases for n in c.nodes]
    )
    in_parallel(
        lambda s: _delete(client, ResourceSlice, s["metadata"]["name"]),
        [s for c in cases for s in c.slices],
    )
    phase("cleaned up")
    print(", ".join(spent))
    return outcomes


def _bindings(client: Client, namespace: str, names: set[str]) -> list[tuple[dict[str, Any], str]]:
    found = []
    for pod in client.list(Pod, namespace=namespace):
        data = pod.to_dict()
        if data["metadata"]["name"] in names and data.get("spec", {}).get("nodeName"):
            found.append((data, data["spec"]["nodeName"]))
    return found


def _delete(client: Client, kind: Any, name: str, namespace: str | None = None) -> None:
    with contextlib.suppress(ApiError):
        if namespace:
            client.delete(kind, name, namespace=namespace, grace_period=0)
        else:
            client.delete(kind, name)


@pytest.mark.timeout(2400)
def test_explain_agrees_with_the_scheduler_on_claims(
    kube_client: Client, kubeconfig_path: Path, namespace: str, tmp_path: Path
) -> None:
    ensure_device_classes(kube_client)
    prefix = f"d{uuid.uuid4().hex[:4]}"
    cases = [generate_case(SEED, i, prefix=prefix, namespace=namespace) for i in range(CASES)]
    outcomes: list[dict[str, Any]] = []
    for start in range(0, len(cases), CASES_PER_BATCH):
        batch = cases[start : start + CASES_PER_BATCH]
        began = time.monotonic()
        outcomes += run_batch(kube_client, kubeconfig_path, namespace, batch, tmp_path)
        print(
            f"batch {start // CASES_PER_BATCH}: {len(batch)} cases,"
            f" {sum(len(c.nodes) for c in batch)} nodes, one probe pod each;"
            f" {sum(o['agree'] for o in outcomes)}/{len(outcomes)} agree so far"
            f" ({time.monotonic() - began:.0f}s)"
        )
    # The case's own pod, unpinned, for every case whose scheduling cycle explain says aborts
    # (an error on one node ends it for all) and a sample of the others: on fresh nodes.
    aborted = {o["case"] for o in outcomes if o["aborted"]}
    again = [
        generate_case(SEED, i, prefix=f"{prefix}u", namespace=namespace)
        for i, case in enumerate(cases)
        if case.name in aborted or i % UNPINNED_EVERY == 0
    ]
    began = time.monotonic()
    unpinned = run_batch(kube_client, kubeconfig_path, namespace, again, tmp_path, unpinned=True)
    print(
        f"unpinned: {len(again)} cases ({len(aborted)} aborted cycles);"
        f" {sum(o['agree'] for o in unpinned)}/{len(unpinned)} agree ({time.monotonic() - began:.0f}s)"
    )
    probed = len(outcomes)
    agree = sum(o["agree"] for o in outcomes)
    pending = sum(1 for o in outcomes if not o["scheduler"])
    probes = sum(len(o["messages"]) for o in outcomes)
    agree_unpinned = sum(o["agree"] for o in unpinned)
    print(
        f"\nexplain vs kube-scheduler on DRA claims (seed {SEED}): {probed} cases,"
        f" {probes} probe pods ({probed - pending} cases fit some node, {pending} none);"
        f" per-node agreement {agree}/{probed} = {agree / probed:.1%};"
        f" Pending-or-not of the unpinned pod {agree_unpinned}/{len(unpinned)}"
        f" = {agree_unpinned / len(unpinned):.1%}"
    )
    disagreements = [o for o in [*outcomes, *unpinned] if not o["agree"]]
    (tmp_path / "disagreements.json").write_text(json.dumps(disagreements, indent=1))
    assert not disagreements, json.dumps(disagreements[:3], indent=1)
