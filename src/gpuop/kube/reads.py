"""Read what `gpuop explain` and `gpuop kubevirt` need from a live cluster, as plain dicts.

`read_cluster(client)` lists every Node and every Pod (all namespaces: the scheduler counts
all of them), the KubeVirt CRs, the VirtualMachineInstances and, when asked, the
VirtualMachines and OpenShift's HyperConverged CRs, through `gpuop.kube.reading`. Kinds
whose CRD is not installed, or that the account may not list, are reported as skipped;
Nodes and Pods are required, so failing to list them is a `ReadError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from gpuop.kube.reading import ClusterRead, Lister, ReadError, read_kinds

__all__ = [
    "DEFAULT_KINDS",
    "REQUIRED_KINDS",
    "ClusterRead",
    "Lister",
    "ReadError",
    "read_cluster",
]

#: Kinds the explainer cannot do without: failing to list them fails the read.
REQUIRED_KINDS: Final = frozenset({"Node", "Pod"})
DEFAULT_KINDS: tuple[str, ...] = ("Node", "Pod", "KubeVirt", "VirtualMachineInstance")


def read_cluster(client: Lister, kinds: Sequence[str] = DEFAULT_KINDS) -> ClusterRead:
    """List `kinds` (cluster-wide, all namespaces) from the cluster `client` talks to."""
    return read_kinds(client, kinds, required=REQUIRED_KINDS)
