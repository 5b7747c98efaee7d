"""The operand objects of a reconcile pass: render them, and say which to apply or delete.

Why this module exists: rendering is the costly part of a pass and the part that must not
change a byte between passes (an object is written only when its rendered hash differs
from the live one's), so it is cached by the versions it is made from and kept apart from
the node step and the status.
"""

from __future__ import annotations

from typing import Any

from gpuop.api.labels import HASH_ANNOTATION
from gpuop.catalog import Operand, operand_table
from gpuop.operator.model import Actions, PlanCache, Snapshot
from gpuop.policy import ResolvedPolicy
from gpuop.render import render_operand_daemonsets, render_runtime_classes, render_support_objects
from gpuop.render.support import SERVICE_MONITOR_KIND, object_key


def rendered_daemonsets(
    policy: ResolvedPolicy,
    policy_key: tuple[Any, ...],
    operands: tuple[Operand, ...],
    snapshot: Snapshot,
    cache: PlanCache | None,
    os_tag: str | None,
    kernels: dict[str, str],
    runtime: str = "containerd",
    openshift: bool = False,
) -> list[dict[str, Any]]:
    key = (
        "daemonsets",
        policy_key,
        snapshot.namespace,
        tuple(sorted(snapshot.operator_env.items())),
        os_tag,
        tuple(sorted(kernels.items())),
        tuple(sorted(snapshot.configmap_keys.items())),
        runtime,
        openshift,
    )
    cached = cache.get(key) if cache is not None else None
    if cached is None:
        cached = [
            ds
            for op in operands
            for ds in render_operand_daemonsets(
                policy,
                op,
                snapshot.namespace,
                snapshot.operator_env,
                os_tag,
                kernels,
                snapshot.configmap_keys,
                runtime,
                openshift,
            )
        ]
        if cache is not None:
            cache[key] = cached
    return [dict(ds) for ds in cached]


def supporting_objects(
    policy: ResolvedPolicy,
    policy_key: tuple[Any, ...],
    snapshot: Snapshot,
    cache: PlanCache | None,
    actions: Actions,
) -> None:
    """RuntimeClasses, and every enabled operand's ServiceAccount, RBAC, ConfigMaps and
    Services (with or without GPU nodes: they cost nothing, and a pod naming a missing
    ServiceAccount is never created); what gpuop made that is no longer wanted goes."""
    key = ("support", policy_key, snapshot.namespace, snapshot.service_monitors_served)
    wanted = cache.get(key) if cache is not None else None
    if wanted is None:
        wanted = [
            obj
            for obj in [
                *render_runtime_classes(policy),
                *render_support_objects(policy, policy.enabled_operands(), snapshot.namespace),
            ]
            if obj["kind"] != SERVICE_MONITOR_KIND or snapshot.service_monitors_served
        ]
        if cache is not None:
            cache[key] = wanted
    wanted_keys = set()
    for obj in wanted:
        obj_key = object_key(obj)
        wanted_keys.add(obj_key)
        if (
            snapshot.existing_objects.get(obj_key)
            != obj["metadata"]["annotations"][HASH_ANNOTATION]
        ):
            actions.apply.append(obj)
    actions.delete_objects = sorted(k for k in snapshot.existing_objects if k not in wanted_keys)


def daemonset_writes(
    snapshot: Snapshot,
    rendered: list[dict[str, Any]],
    gpu_nodes: int,
    actions: Actions,
    kept: tuple[str, ...] = (),
) -> None:
    """Apply the operand DaemonSets whose rendered hash changed; delete the unwanted ones.

    With no GPU node nothing is rendered, and the live DaemonSets are left as they are; so
    are those of the `kept` operands (`render.kept_on_openshift`), whatever their names.
    """
    for ds in rendered:
        live = snapshot.daemonsets.get(ds["metadata"]["name"])
        live_hash = ((live or {}).get("metadata") or {}).get("annotations", {}).get(HASH_ANNOTATION)
        if live is None or live_hash != ds["metadata"]["annotations"][HASH_ANNOTATION]:
            actions.apply.append(ds)
    if not gpu_nodes:
        return
    managed = {op.daemonset for op in operand_table().operands}
    driver_daemonset = operand_table().operand("driver").daemonset
    wanted = {ds["metadata"]["name"] for ds in rendered}
    table = operand_table()
    for name in sorted(snapshot.daemonsets):
        if kept and table.operand_for_daemonset(name) in kept:
            continue
        precompiled = name.startswith(f"{driver_daemonset}-")
        if (name in managed or precompiled) and name not in wanted:
            actions.delete_daemonsets.append(name)
