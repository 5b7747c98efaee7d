"""NodeDeclaredFeatures: a pod that needs a node feature goes only where the node says it
has it.

A port of kube-scheduler v1.37.2's ``nodedeclaredfeatures`` plugin (GA in v1.37, in the
default profile after DynamicResources). PreFilter infers, from the pod's spec alone, the
features it needs (``k8s.io/component-helpers/nodedeclaredfeatures``, v0.37.2); a pod that
needs none skips the plugin. Filter rejects a node whose ``status.declaredFeatures`` does
not hold them all: ``node(s) didn't match Pod's required features``, unresolvable. The
features whose ``InferForScheduling`` can say yes in v1.37:

* ``RestartAllContainersOnContainerExits``: a container or init container with a
  ``restartPolicyRules`` action ``RestartAllContainers`` (its gate is beta and on);
* ``UserNamespacesHostNetworkSupport``: ``hostNetwork: true`` with ``hostUsers: false``
  (the API server takes it only with that alpha gate on);
* ``VolumeBindMountOptions``: a volume mount with ``bindMountOptions`` (alpha gate).

The kubelet declares what it supports; a node object without ``declaredFeatures`` (older
kubelets, simulated nodes) declares nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpuop.manifests.fields import get, sequence, text

__all__ = ["PLUGIN", "REASON_FEATURES", "declared_features", "required_features"]

PLUGIN: Final = "NodeDeclaredFeatures"
REASON_FEATURES: Final = "node(s) didn't match Pod's required features"

RESTART_ALL_CONTAINERS: Final = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK: Final = "UserNamespacesHostNetworkSupport"
VOLUME_BIND_MOUNT_OPTIONS: Final = "VolumeBindMountOptions"


def required_features(pod: Mapping[str, Any]) -> frozenset[str]:
    """``InferForPodScheduling``: the node features the pod's spec needs."""
    spec = get(pod, "spec")
    if not isinstance(spec, Mapping):
        return frozenset()
    needed: set[str] = set()
    for container in (*sequence(spec, "containers"), *sequence(spec, "initContainers")):
        if any(
            text(rule, "action") == "RestartAllContainers"
            for rule in sequence(container, "restartPolicyRules")
        ):
            needed.add(RESTART_ALL_CONTAINERS)
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        needed.add(USER_NAMESPACES_HOST_NETWORK)
    for container in (
        *sequence(spec, "containers"),
        *sequence(spec, "initContainers"),
        *sequence(spec, "ephemeralContainers"),
    ):
        if any(
            sequence(mount, "bindMountOptions") for mount in sequence(container, "volumeMounts")
        ):
            needed.add(VOLUME_BIND_MOUNT_OPTIONS)
    return frozenset(needed)


def declared_features(node: Mapping[str, Any]) -> frozenset[str]:
    """The features the node's kubelet declares (``status.declaredFeatures``)."""
    return frozenset(
        name
        for name in (text(item) for item in sequence(node, "status", "declaredFeatures"))
        if name
    )
