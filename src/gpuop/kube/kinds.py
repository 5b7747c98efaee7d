"""One table of the kinds gpuop reads, watches and writes, and the API resource of each.

Every part of `gpuop.kube` (the informers, the operator's writes, the readers of `check`,
`collect` and `explain`, the lab's DRA objects) looks a kind up here, and a kind's scope
(namespaced or cluster-wide) is read from its resource, so no second list of scopes can
disagree with the API's. The in-memory fake API of the tests names kinds the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from lightkube.core.resource import NamespacedResource
from lightkube.core.resource_registry import resource_registry
from lightkube.generic_resource import (
    GenericGlobalResource,
    GenericNamespacedResource,
    create_api_info,
    create_global_resource,
    create_namespaced_resource,
)
from lightkube.resources.admissionregistration_v1 import (
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
)
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.apps_v1 import ControllerRevision, DaemonSet, Deployment
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import (
    ConfigMap,
    Event,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Service,
    ServiceAccount,
)
from lightkube.resources.node_v1 import RuntimeClass
from lightkube.resources.policy_v1 import PodDisruptionBudget
from lightkube.resources.rbac_authorization_v1 import (
    ClusterRole,
    ClusterRoleBinding,
    Role,
    RoleBinding,
)
from lightkube.resources.resource_v1 import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from lightkube.resources.storage_v1 import CSIDriver, CSINode, StorageClass

from gpuop.kube import (
    ClusterPolicy,
    GPUCluster,
    HyperConverged,
    KubeVirt,
    VirtualMachineInstance,
)

__all__ = ["RESOURCES", "kind_of", "lean", "namespaced", "older_versions", "resource"]

VirtualMachine = create_namespaced_resource(
    group="kubevirt.io", version="v1", kind="VirtualMachine", plural="virtualmachines"
)
# Prometheus operator's kind: served only where its CRD is installed.
ServiceMonitor = create_namespaced_resource(
    "monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors"
)

#: kind -> its resource
RESOURCES: Final[Mapping[str, Any]] = {
    "Node": Node,
    "Namespace": Namespace,
    "Pod": Pod,
    "Event": Event,
    "ConfigMap": ConfigMap,
    "Service": Service,
    "ServiceAccount": ServiceAccount,
    "PersistentVolume": PersistentVolume,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "DaemonSet": DaemonSet,
    "Deployment": Deployment,
    "ControllerRevision": ControllerRevision,
    "Lease": Lease,
    "RuntimeClass": RuntimeClass,
    "PodDisruptionBudget": PodDisruptionBudget,
    "Role": Role,
    "RoleBinding": RoleBinding,
    "ClusterRole": ClusterRole,
    "ClusterRoleBinding": ClusterRoleBinding,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "CSIDriver": CSIDriver,
    "ResourceSlice": ResourceSlice,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
    "DeviceClass": DeviceClass,
    "ValidatingAdmissionPolicy": ValidatingAdmissionPolicy,
    "ValidatingAdmissionPolicyBinding": ValidatingAdmissionPolicyBinding,
    "CustomResourceDefinition": CustomResourceDefinition,
    "ClusterPolicy": ClusterPolicy,
    "GPUCluster": GPUCluster,
    "KubeVirt": KubeVirt,
    "HyperConverged": HyperConverged,
    "VirtualMachineInstance": VirtualMachineInstance,
    "VirtualMachine": VirtualMachine,
    "ServiceMonitor": ServiceMonitor,
}


# The same API resources without lightkube's typed models: their objects keep the server's
# JSON as it came (only `metadata` is parsed), so turning one into a dict costs a fifth of
# a model's. Used where gpuop only wants dicts and meets a fleet's worth of objects: list
# and watch answers of Nodes and Pods, and node patch answers.
def _lean_core(kind: str, plural: str, *, namespaced: bool) -> Any:
    """A core v1 resource without a typed model. lightkube registers it as the class of
    that kind, for its codecs too; where its typed model was registered first (something
    read such an object with `lightkube.codecs` before this module was imported), a second
    registration is refused, so the lean class is made unregistered: the client reads and
    writes through the class it is given either way."""
    registered = resource_registry.get("v1", kind)
    if registered is not None and not issubclass(
        registered, (GenericGlobalResource, GenericNamespacedResource)
    ):
        base = GenericNamespacedResource if namespaced else GenericGlobalResource
        return type(kind, (base,), {"_api_info": create_api_info("", "v1", kind, plural)})
    make = create_namespaced_resource if namespaced else create_global_resource
    return make(group="", version="v1", kind=kind, plural=plural)


_LEAN: Final[Mapping[str, Any]] = {
    "Node": _lean_core("Node", "nodes", namespaced=False),
    "Pod": _lean_core("Pod", "pods", namespaced=True),
}


def _dra(version: str, kind: str, plural: str, namespaced: bool) -> Any:
    make = create_namespaced_resource if namespaced else create_global_resource
    return make(group="resource.k8s.io", version=version, kind=kind, plural=plural)


# DRA before Kubernetes 1.34: 1.33 serves v1beta2 and v1beta1, 1.32 v1beta1 alone. Readers
# fall back to these, newest first, where `v1` is not served, and read the objects as v1
# (`gpuop.manifests.dra_versions`).
_OLDER: Final[Mapping[str, tuple[Any, ...]]] = {
    kind: tuple(_dra(version, kind, plural, scoped) for version in ("v1beta2", "v1beta1"))
    for kind, plural, scoped in (
        ("ResourceSlice", "resourceslices", False),
        ("ResourceClaim", "resourceclaims", True),
        ("ResourceClaimTemplate", "resourceclaimtemplates", True),
        ("DeviceClass", "deviceclasses", False),
    )
}


def older_versions(kind: str) -> tuple[Any, ...]:
    """The resources of `kind` in the API versions before the one `resource` names, newest
    first: what to list where the server does not serve that one (404)."""
    return _OLDER.get(kind, ())


def lean(kind: str) -> Any:
    """The resource of `kind` whose objects are plain JSON (`_LEAN`), else its resource."""
    return _LEAN.get(kind) or RESOURCES[kind]


def resource(kind: str) -> Any:
    """The API resource of `kind` (KeyError for a kind gpuop never touches)."""
    return RESOURCES[kind]


def namespaced(kind: str) -> bool:
    """Whether objects of `kind` live in a namespace."""
    return issubclass(RESOURCES[kind], NamespacedResource)


def kind_of(res: Any) -> str:
    """The kind a resource (or a subresource of one: `Pod/eviction`) names."""
    info = res._api_info
    kind = str(info.parent.kind if info.parent is not None else info.resource.kind)
    return f"{kind}/{info.action}" if info.action else kind
