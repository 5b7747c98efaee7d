"""What the rest of a cluster does, played on a `FakeKube`: the DaemonSet controller and
kubelets that make and run operand pods.

`settle_daemonsets` is one step of it: every DaemonSet gets a ControllerRevision for its
pod template, one Ready pod (of that revision) on each node its node selector matches,
and the status the DaemonSet controller would write. `play_daemonsets` repeats that step
in the background.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from functools import partial
from typing import Any

from gpuop.api.labels import REVISION_LABEL
from kit.fake_kube import FakeKube


def _template_hash(template: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


def _selected(node: dict[str, Any], selector: dict[str, str]) -> bool:
    labels = node["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _pod(ds: dict[str, Any], node: str, digest: str) -> dict[str, Any]:
    template = ds["spec"]["template"]
    name, namespace = ds["metadata"]["name"], ds["metadata"]["namespace"]
    labels = {**(template.get("metadata") or {}).get("labels", {}), REVISION_LABEL: digest}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{node}",
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name, "controller": True}
            ],
        },
        "spec": {**template.get("spec", {}), "nodeName": node},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": c.get("name"), "ready": True, "restartCount": 0}
                for c in template.get("spec", {}).get("containers") or []
            ],
        },
    }


def _set_status(obj: dict[str, Any], status: dict[str, Any]) -> None:
    obj["status"] = status


def settle_daemonsets(fake: FakeKube, namespace: str) -> None:
    """One step of the DaemonSet controller and the kubelets (writes only what differs)."""
    nodes = fake.objects_of("Node")
    pods = fake.objects_of("Pod", namespace)
    revisions = fake.objects_of("ControllerRevision", namespace)
    for name, ds in fake.objects_of("DaemonSet", namespace).items():
        template = ds["spec"]["template"]
        digest = _template_hash(template)
        if f"{name}-{digest}" not in revisions:
            number = 1 + sum(
                1 for r in revisions.values() if r["metadata"]["ownerReferences"][0]["name"] == name
            )
            fake.put(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ControllerRevision",
                    "metadata": {
                        "name": f"{name}-{digest}",
                        "namespace": namespace,
                        "labels": {REVISION_LABEL: digest},
                        "ownerReferences": [{"kind": "DaemonSet", "name": name}],
                    },
                    "revision": number,
                }
            )
        selector = (template.get("spec") or {}).get("nodeSelector") or {}
        wanted = {n for n, node in nodes.items() if _selected(node, selector)}
        for node in sorted(wanted):
            pod = pods.get(f"{name}-{node}")
            if pod is None or pod["metadata"]["labels"].get(REVISION_LABEL) != digest:
                fake.put(_pod(ds, node, digest))
        for pod_name, pod in pods.items():
            owner = pod["metadata"].get("ownerReferences") or [{}]
            if owner[0].get("name") == name and pod["spec"].get("nodeName") not in wanted:
                fake.remove("Pod", pod_name, namespace)
        count = len(wanted)
        status = {
            "currentNumberScheduled": count,
            "desiredNumberScheduled": count,
            "numberAvailable": count,
            "numberReady": count,
            "updatedNumberScheduled": count,
            "numberMisscheduled": 0,
            "observedGeneration": ds["metadata"].get("generation", 1),
        }
        if ds.get("status") != status:
            fake.modify("DaemonSet", name, partial(_set_status, status=status), namespace)


async def play_daemonsets(fake: FakeKube, namespace: str, every: float = 0.02) -> None:
    """`settle_daemonsets` again and again, until cancelled."""
    while True:
        settle_daemonsets(fake, namespace)
        await asyncio.sleep(every)
