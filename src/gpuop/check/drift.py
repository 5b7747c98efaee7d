"""Drift between nodes that should match: driver versions on container nodes (GPU701).

Only where one driver version is the contract: the container nodes whose driver the GPU
Operator installs (it manages the node, `nvidia.com/gpu.deploy.driver=true`, its driver
pod runs there where the input has driver pods, and the ClusterPolicy in the input does not
turn the driver off). Drivers a host or a cloud image brings differ by node pool and image
by design, and an NVIDIADriver resource gives its own pool its own version: nodes are
compared within the pool of the NVIDIADriver that owns them
(`nvidia.com/gpu-operator.driver.owner`), the ClusterPolicy's driver being one pool.

The reference version is the one most of a pool's nodes run (ties go to the newest, the
likely upgrade target); every node of the pool on another version is reported. `drifted`
makes that choice for the version checks' driver pools too (VER301).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from gpuop.api.labels import DRIVER_DEPLOY_LABEL, DRIVER_VERSION_LABEL
from gpuop.catalog import operand_table
from gpuop.check.context import CheckContext
from gpuop.check.managers import UNMANAGED

# Which NVIDIADriver resource installs the node's driver (upstream's node labelling).
DRIVER_OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"

_PARTS = re.compile(r"\d+")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part[:9]) for part in _PARTS.findall(version)[:6])


def drifted(
    versions: Mapping[str, Sequence[str]], version_key: Callable[[str], tuple[int, ...]]
) -> tuple[str, list[tuple[str, str]]]:
    """The reference version, and (version, node) for each node on another one, in order.

    `versions` maps a version to the nodes that run it; the reference is the one most
    nodes run, ties going to the newest by `version_key`.
    """
    reference = max(versions, key=lambda v: (len(versions[v]), version_key(v), v))
    off = [
        (version, node)
        for version, nodes in sorted(versions.items())
        if version != reference
        for node in sorted(nodes)
    ]
    return reference, off


def _driver_pools(ctx: CheckContext) -> dict[str, dict[str, list[str]]]:
    """owner (an NVIDIADriver's name, "" for the ClusterPolicy's driver) -> version -> nodes."""
    pools: dict[str, dict[str, list[str]]] = {}
    policy = ctx.policy
    if policy is not None and not ctx.policy_assumed and not policy.block_enabled("driver", True):
        return pools
    driver = operand_table().operand("driver").daemonset
    with_pods = {
        node for node, pods in ctx.operand_pods.items() if any(p.daemonset == driver for p in pods)
    }
    for info in ctx.nodes:
        plan = info.plan
        if plan is None or not plan.gpu_node or plan.workload.config != "container":
            continue
        labels = info.view.labels
        if labels.get(DRIVER_DEPLOY_LABEL) != "true":
            continue
        if not ctx.management.get(info.name, UNMANAGED).operator:
            continue
        if with_pods and info.name not in with_pods:
            continue
        version = labels.get(DRIVER_VERSION_LABEL)
        if version:
            owner = labels.get(DRIVER_OWNER_LABEL, "")
            pools.setdefault(owner, {}).setdefault(version, []).append(info.name)
    return pools


def check_driver_drift(ctx: CheckContext) -> None:
    for owner, versions in sorted(_driver_pools(ctx).items()):
        if len(versions) < 2:
            continue
        reference, off = drifted(versions, _version_key)
        others = len(versions[reference])
        pool = f" of NVIDIADriver {owner}" if owner else ""
        for version, node in off:
            ctx.add(
                "GPU701",
                "Node",
                node,
                f"{DRIVER_VERSION_LABEL}={version}, while {others} other container node"
                f"{'s' if others != 1 else ''}{pool} run {reference}",
                f"check nvidia.com/gpu-driver-upgrade-state and the driver pod on {node};"
                " a finished upgrade leaves every node on one version",
            )


__all__ = ["check_driver_drift", "drifted"]
