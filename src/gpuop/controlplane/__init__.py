"""A local, real Kubernetes control plane for the end-to-end tests and the lab.

Why this package exists: the operator must be tested against real API semantics (admission,
RBAC, the real scheduler and controllers) on build machines with no container engine and no
internet. This package gets the binaries (cache, verified release download, or ``go build`` from
the wrapper modules in ``controlplane/``) and runs etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok as local processes on 127.0.0.1 with TLS and RBAC.

Typical use::

    from gpuop.controlplane import LocalCluster

    cluster = LocalCluster("dev")
    info = cluster.up(progress=print)      # builds binaries the first time (minutes)
    print(info.kubeconfig)                 # admin kubeconfig, never ~/.kube/config
    cluster.down()

Failures the user can fix raise :class:`ControlPlaneError` subclasses with a one-paragraph
message; the CLI turns them into its own error type.
"""

from gpuop.controlplane.access import (
    server_version,
    service_account_token,
    write_service_account_kubeconfig,
)
from gpuop.controlplane.binaries import Binaries, cached_binaries, ensure_binaries
from gpuop.controlplane.cluster import DEFAULT_CLUSTER_NAME, LocalCluster, local_clusters
from gpuop.controlplane.components import COMPONENT_NAMES
from gpuop.controlplane.errors import (
    BuildError,
    ClusterNotRunningError,
    ComponentStartError,
    ControlPlaneError,
    DownloadError,
    PortInUseError,
    ToolchainError,
)
from gpuop.controlplane.status import (
    ClusterInfo,
    ClusterOverview,
    ClusterStatus,
    ComponentStatus,
    ProcessUsage,
)
from gpuop.controlplane.versions import (
    COMPONENTS,
    ETCD_VERSION,
    HELM,
    HELM_VERSION,
    KUBERNETES_VERSION,
    KWOK_VERSION,
    TOOLS,
)

__all__ = [
    "COMPONENTS",
    "COMPONENT_NAMES",
    "DEFAULT_CLUSTER_NAME",
    "ETCD_VERSION",
    "HELM",
    "HELM_VERSION",
    "KUBERNETES_VERSION",
    "KWOK_VERSION",
    "TOOLS",
    "Binaries",
    "BuildError",
    "ClusterInfo",
    "ClusterNotRunningError",
    "ClusterOverview",
    "ClusterStatus",
    "ComponentStartError",
    "ComponentStatus",
    "ControlPlaneError",
    "DownloadError",
    "LocalCluster",
    "PortInUseError",
    "ProcessUsage",
    "ToolchainError",
    "cached_binaries",
    "ensure_binaries",
    "local_clusters",
    "server_version",
    "service_account_token",
    "write_service_account_kubeconfig",
]
