"""What the operator keeps of the objects it watches: the few fields a pass reads.

Why this module exists: an informer stores each object reduced once per watch event, so the
reductions (Nodes, DaemonSets, ControllerRevisions) are small pure functions, shared by the
runtime and the tests that build snapshots the way it does.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from gpuop.api.labels import DRIVER_CONFIG_DIGEST_ENV, GPUOP_PREFIX, NVIDIA_PREFIX, REVISION_LABEL

_KEPT_ANNOTATION_PREFIXES = (GPUOP_PREFIX, NVIDIA_PREFIX)


def _interned(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A copy whose strings are shared with every other node's: a fleet's nodes repeat the
    same label keys and mostly the same values, and each decoded event brings new copies."""
    return {_intern(key): _intern(value) for key, value in mapping.items()}


def _intern(value: Any) -> Any:
    # Only plain strings can be interned (a StrEnum member, written by the fake API in
    # tests, is kept as it is).
    return sys.intern(value) if type(value) is str else value


def slim_node(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    status = body.get("status") or {}
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k.startswith(_KEPT_ANNOTATION_PREFIXES)
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
            "labels": _interned(meta.get("labels") or {}),
            "annotations": annotations,
        },
        "spec": {"unschedulable": bool((body.get("spec") or {}).get("unschedulable"))},
        "status": {
            # The container runtime decides the toolkit's settings (`render.container_runtime`).
            "nodeInfo": {
                "containerRuntimeVersion": _intern(
                    (status.get("nodeInfo") or {}).get("containerRuntimeVersion") or ""
                )
            },
            "allocatable": _interned(status.get("allocatable") or {}),
            "conditions": [
                {"type": "Ready", "status": c.get("status")}
                for c in status.get("conditions") or []
                if c.get("type") == "Ready"
            ],
        },
    }


def same_node(stored: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether two slim copies of a Node differ in their resourceVersion alone: a status
    heartbeat, which at ten thousand nodes would wake a pass many times a second."""
    old_meta, new_meta = stored["metadata"], new["metadata"]
    return bool(
        stored["spec"] == new["spec"]
        and stored["status"] == new["status"]
        and old_meta["labels"] == new_meta["labels"]
        and old_meta["annotations"] == new_meta["annotations"]
        and old_meta["uid"] == new_meta["uid"]
    )


def slim_daemonset(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    digest = next(
        (
            str(env.get("value") or "")
            for container in containers
            for env in container.get("env") or []
            if env.get("name") == DRIVER_CONFIG_DIGEST_ENV
        ),
        None,
    )
    return {
        "metadata": {
            "name": meta.get("name"),
            "resourceVersion": meta.get("resourceVersion"),
            "generation": meta.get("generation"),
            "annotations": dict(meta.get("annotations") or {}),
        },
        "spec": {"updateStrategy": dict(spec.get("updateStrategy") or {})},
        "status": dict(body.get("status") or {}),
        "configDigest": digest,
    }


def slim_revision(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """A DaemonSet's ControllerRevision: its owner, number and hash (None for others)."""
    meta = body.get("metadata") or {}
    owner = next(
        (o.get("name") for o in meta.get("ownerReferences") or [] if o.get("kind") == "DaemonSet"),
        None,
    )
    if owner is None:
        return None
    name = str(meta.get("name") or "")
    digest = (meta.get("labels") or {}).get(REVISION_LABEL) or name.removeprefix(f"{owner}-")
    return {"owner": owner, "revision": int(body.get("revision") or 0), "hash": digest}


def newest_revisions(revisions: list[dict[str, Any]]) -> dict[str, str]:
    """DaemonSet name -> the hash of its highest-numbered ControllerRevision."""
    newest: dict[str, tuple[int, str]] = {}
    for revision in revisions:
        owner = revision["owner"]
        if owner not in newest or revision["revision"] > newest[owner][0]:
            newest[owner] = (revision["revision"], revision["hash"])
    return {owner: digest for owner, (_, digest) in newest.items()}
