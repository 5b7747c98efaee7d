"""The volume filters: VolumeRestrictions, VolumeBinding and VolumeZone.

A port of kube-scheduler v1.37.2's ``volumerestrictions``, ``volumebinding`` (with
``component-helpers/storage/volume``) and ``volumezone`` for pods whose volumes are
PersistentVolumeClaims (by name or generic ephemeral), given the cluster's claims,
PersistentVolumes and StorageClasses:

* PreFilter, in plugin order, rejects the pod everywhere (unresolvable) for a claim that
  does not exist (``persistentvolumeclaim "data" not found``; for an ephemeral volume, that
  the ephemeral volume controller has yet to make it), is lost, is being deleted or, for an
  ephemeral volume, belongs to another pod; for an unbound claim whose class binds at once
  (``pod has unbound immediate PersistentVolumeClaims``); and, VolumeZone, for a bound claim
  whose volume does not exist.
* VolumeRestrictions' Filter refuses every node while a ``ReadWriteOncePod`` claim of the
  pod is used by a running pod (``node(s) unavailable due to PersistentVolumeClaim with
  ReadWriteOncePod access mode already in-use by another pod``).
* VolumeBinding's Filter holds bound claims' volumes to their node affinity (``node(s)
  didn't match PersistentVolume's node affinity``, or ``node(s) unavailable due to one or
  more pvc(s) bound to non-existent pv(s)``) and, for claims that wait for their first
  consumer, looks for an available volume of their class that fits the node (capacity,
  access modes, volume mode, selector, node affinity; the smallest), else for a class that
  provisions there (a provisioner other than ``kubernetes.io/no-provisioner``, its
  ``allowedTopologies``): ``node(s) didn't find available persistent volumes to bind``.
* VolumeZone's Filter holds the zone and region labels of bound volumes to the node's
  (``node(s) had no available volume zone``).

* NodeVolumeLimits refuses a node whose CSINode lets a driver attach fewer volumes than
  its pods and this pod would have (``node(s) exceed max volume count``), or that lacks a
  CSIDriver marked ``preventPodSchedulingIfMissing`` the pod's volumes need.

Not modelled, said per pod: VolumeAttachments and in-tree volumes migrated to CSI (for
NodeVolumeLimits), inline disk conflicts (VolumeRestrictions' ``node(s) had no available
disk``) and storage capacity tracking.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from gpuop.explain.model import Code, Status
from gpuop.explain.selectors import NodeAffinity, node_affinity_of
from gpuop.explain.spread import label_selector
from gpuop.manifests import QuantityError, parse_quantity
from gpuop.manifests.fields import get, mapping, sequence, text

__all__ = [
    "STORAGE_KINDS",
    "PodVolumes",
    "Storage",
    "attachable_volumes",
    "claim_keys",
    "node_volume_limits",
    "pod_volumes",
    "read_storage",
    "volume_binding",
    "volume_notes",
    "volume_restrictions",
    "volume_zone",
]

STORAGE_KINDS: Final = (
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
    "CSIDriver",
)

REASON_RWOP: Final = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode"
    " already in-use by another pod"
)
REASON_NODE_CONFLICT: Final = "node(s) didn't match PersistentVolume's node affinity"
REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
REASON_PV_NOT_EXIST: Final = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)
REASON_ZONE: Final = "node(s) had no available volume zone"
REASON_MAX_VOLUMES: Final = "node(s) exceed max volume count"
UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"

BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
BETA_CLASS: Final = "volume.beta.kubernetes.io/storage-class"
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"
TOPOLOGY_LABELS: Final = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)
_GA_LABEL: Final = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}


@dataclass(frozen=True)
class Storage:
    """The cluster's claims (by ``namespace/name``), volumes and classes (by name), and the
    claims bound pods use."""

    claims: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    volumes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    classes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Claim (``namespace/name``) -> the bound pods (``namespace/name``) that use it.
    in_use: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: Whether the input holds any of them (a dump of nodes and pods alone says nothing
    #: of volumes, and then they are not judged).
    known: bool = False
    #: CSINode by node: each CSI driver there and how many volumes it may attach (None:
    #: no limit given).
    csi_nodes: Mapping[str, Mapping[str, int | None]] = field(default_factory=dict)
    #: CSIDrivers with ``preventPodSchedulingIfMissing``: nodes without them take none of
    #: their volumes.
    required_drivers: frozenset[str] = frozenset()


def _key(obj: Mapping[str, Any]) -> str:
    return f"{text(obj, 'metadata', 'namespace') or 'default'}/{text(obj, 'metadata', 'name')}"


def _claim_names(pod: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """The pod's claims in volume order: (name, whether generic ephemeral)."""
    found = []
    for volume in sequence(pod, "spec", "volumes"):
        if isinstance(get(volume, "persistentVolumeClaim"), Mapping):
            found.append((text(volume, "persistentVolumeClaim", "claimName"), False))
        elif isinstance(get(volume, "ephemeral"), Mapping):
            found.append((f"{text(pod, 'metadata', 'name')}-{text(volume, 'name')}", True))
    return found


def read_storage(objects: Iterable[Mapping[str, Any]], pods: Iterable[Any]) -> Storage:
    """The storage objects among `objects`, and the claims of the bound pods among `pods`."""
    claims: dict[str, Mapping[str, Any]] = {}
    volumes: dict[str, Mapping[str, Any]] = {}
    classes: dict[str, Mapping[str, Any]] = {}
    csi_nodes: dict[str, dict[str, int | None]] = {}
    required: set[str] = set()
    for obj in objects:
        kind = obj.get("kind")
        if kind == "PersistentVolumeClaim":
            claims[_key(obj)] = obj
        elif kind == "PersistentVolume":
            volumes[text(obj, "metadata", "name")] = obj
        elif kind == "StorageClass":
            classes[text(obj, "metadata", "name")] = obj
        elif kind == "CSINode":
            drivers = csi_nodes.setdefault(text(obj, "metadata", "name"), {})
            for driver in sequence(obj, "spec", "drivers"):
                count = get(driver, "allocatable", "count")
                limit = count if isinstance(count, int) and not isinstance(count, bool) else None
                drivers[text(driver, "name")] = limit
        elif kind == "CSIDriver" and get(obj, "spec", "preventPodSchedulingIfMissing") is True:
            required.add(text(obj, "metadata", "name"))
    in_use: dict[str, set[str]] = {}
    for pod in pods:
        if not isinstance(pod, Mapping) or not text(pod, "spec", "nodeName"):
            continue
        if text(pod, "status", "phase") in ("Succeeded", "Failed"):
            continue
        namespace = text(pod, "metadata", "namespace") or "default"
        user = f"{namespace}/{text(pod, 'metadata', 'name')}"
        for name, _ in _claim_names(pod):
            in_use.setdefault(f"{namespace}/{name}", set()).add(user)
    known = bool(claims or volumes or classes)
    users = {claim: frozenset(pods) for claim, pods in in_use.items()}
    return Storage(claims, volumes, classes, users, known, csi_nodes, frozenset(required))


def _claim_class(claim: Mapping[str, Any]) -> str:
    annotations = mapping(claim, "metadata", "annotations")
    if BETA_CLASS in annotations:
        return str(annotations[BETA_CLASS])
    return text(claim, "spec", "storageClassName")


def _volume_class(volume: Mapping[str, Any]) -> str:
    annotations = mapping(volume, "metadata", "annotations")
    if BETA_CLASS in annotations:
        return str(annotations[BETA_CLASS])
    return text(volume, "spec", "storageClassName")


def _storage(obj: Mapping[str, Any], *path: str) -> Decimal:
    try:
        return parse_quantity(get(obj, *path, "storage") or 0)
    except QuantityError:
        return Decimal(0)


def _affinity(volume: Mapping[str, Any]) -> NodeAffinity | None:
    required = get(volume, "spec", "nodeAffinity", "required")
    if required is None:
        return None
    as_pod = {
        "spec": {
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
            }
        }
    }
    return node_affinity_of(as_pod)


def _fits_node(volume: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity``: the volume's required node affinity, on labels alone."""
    affinity = _affinity(volume)
    return affinity is None or not affinity.mismatch({"metadata": {"labels": dict(labels)}})


@dataclass(frozen=True)
class PodVolumes:
    """What the volume PreFilters found of the pod's claims."""

    storage: Storage
    #: Bound claims and their volume (None: it does not exist).
    bound: tuple[tuple[Mapping[str, Any], Mapping[str, Any] | None], ...] = ()
    #: Unbound claims whose class waits for the first consumer.
    waiting: tuple[Mapping[str, Any], ...] = ()
    read_write_once_pod_in_use: bool = False
    #: Bound volumes' zone and region labels: (volume, label, values).
    zones: tuple[tuple[str, str, frozenset[str]], ...] = ()
    #: The CSI volumes the pod would attach: unique volume name -> driver.
    attachable: Mapping[str, str] = field(default_factory=dict)


def _reject(message: str) -> tuple[Status, None]:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,), ""), None


def pod_volumes(
    pod: Mapping[str, Any], storage: Storage
) -> tuple[Status | None, PodVolumes | None]:
    """The volume PreFilters: the pod's rejection, if any, else its claims as the Filters
    need them (None when it has no claims)."""
    names = _claim_names(pod)
    if not names or not storage.known:
        return None, None
    namespace = text(pod, "metadata", "namespace") or "default"
    myself = f"{namespace}/{text(pod, 'metadata', 'name')}"
    # VolumeRestrictions: claims by name must exist; ReadWriteOncePod claims in use.
    in_use = False
    for volume in sequence(pod, "spec", "volumes"):
        if not isinstance(get(volume, "persistentVolumeClaim"), Mapping):
            continue
        name = text(volume, "persistentVolumeClaim", "claimName")
        claim = storage.claims.get(f"{namespace}/{name}")
        if claim is None:
            return _reject(f'persistentvolumeclaim "{name}" not found')
        modes = [text(m) for m in sequence(claim, "spec", "accessModes")]
        # The pod itself, if bound already, is explained as if being placed now.
        users = storage.in_use.get(f"{namespace}/{name}", frozenset()) - {myself}
        if "ReadWriteOncePod" in modes and users:
            in_use = True
    # VolumeBinding: every claim there and usable; which are bound, which wait.
    bound: list[tuple[Mapping[str, Any], Mapping[str, Any] | None]] = []
    waiting: list[Mapping[str, Any]] = []
    immediate = False
    for name, ephemeral in names:
        claim = storage.claims.get(f"{namespace}/{name}")
        if claim is None:
            if ephemeral:
                return _reject(
                    "waiting for ephemeral volume controller to create the"
                    f' persistentvolumeclaim "{name}"'
                )
            return _reject(f'persistentvolumeclaim "{name}" not found')
        volume_name = text(claim, "spec", "volumeName")
        if text(claim, "status", "phase") == "Lost":
            return _reject(
                f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume'
                f' "{volume_name}"'
            )
        if get(claim, "metadata", "deletionTimestamp") is not None:
            return _reject(f'persistentvolumeclaim "{name}" is being deleted')
        if ephemeral and not _owned_by(claim, pod):
            return _reject(
                f"PVC {namespace}/{name} was not created for pod"
                f" {namespace}/{text(pod, 'metadata', 'name')} (pod is not owner)"
            )
        if volume_name and BIND_COMPLETED in mapping(claim, "metadata", "annotations"):
            bound.append((claim, storage.volumes.get(volume_name)))
            continue
        class_name = _claim_class(claim)
        storage_class = storage.classes.get(class_name) if class_name else None
        delayed = (
            storage_class is not None
            and text(storage_class, "volumeBindingMode") == "WaitForFirstConsumer"
        )
        if delayed and not volume_name:
            waiting.append(claim)
        else:
            immediate = True
    if immediate:
        return _reject(UNBOUND_IMMEDIATE)
    # VolumeZone: the bound volumes' topology labels.
    zones: list[tuple[str, str, frozenset[str]]] = []
    for claim, volume in bound:
        if volume is None:
            return _reject(f'persistentvolume "{text(claim, "spec", "volumeName")}" not found')
        labels = mapping(volume, "metadata", "labels")
        for label in TOPOLOGY_LABELS:
            if label in labels:
                values = frozenset(v for v in str(labels[label]).split("__") if v)
                zones.append((text(volume, "metadata", "name"), label, values))
    attachable = attachable_volumes(namespace, [name for name, _ in names], storage)
    return None, PodVolumes(storage, tuple(bound), tuple(waiting), in_use, tuple(zones), attachable)


def claim_keys(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """The pod's claims as ``namespace/name`` (for the volumes it holds on its node)."""
    namespace = text(pod, "metadata", "namespace") or "default"
    return tuple(f"{namespace}/{name}" for name, _ in _claim_names(pod))


def attachable_volumes(namespace: str, names: Iterable[str], storage: Storage) -> dict[str, str]:
    """``filterAttachableVolumes``: each CSI volume of these claims, by unique name, and its
    driver: the bound volume's ``spec.csi``, else (unbound) the class's provisioner with a
    handle of the claim's own. Claims that cannot be found or have no CSI driver (in-tree
    volumes, whose migration is not modelled) are not counted."""
    found: dict[str, str] = {}
    for name in names:
        claim = storage.claims.get(f"{namespace}/{name}")
        if claim is None:
            continue
        volume_name = text(claim, "spec", "volumeName")
        volume = storage.volumes.get(volume_name) if volume_name else None
        if volume is not None:
            driver = text(volume, "spec", "csi", "driver")
            handle = text(volume, "spec", "csi", "volumeHandle")
        else:
            storage_class = storage.classes.get(_claim_class(claim))
            driver = text(storage_class, "provisioner") if storage_class is not None else ""
            if driver.startswith("kubernetes.io/"):
                driver = ""  # an in-tree provisioner: counted only once migrated to CSI
            handle = f"claim-{namespace}/{name}"
        if driver and handle:
            found[f"{driver}/{handle}"] = driver
    return found


def node_volume_limits(
    volumes: PodVolumes | None, node_name: str, pods_claims: Iterable[tuple[str, ...]]
) -> Status | None:
    """NodeVolumeLimits (``CSILimits``): a required CSI driver missing from the node, or more
    volumes of a driver than its CSINode lets the node attach. VolumeAttachments are not
    read: only the volumes of the node's pods count as attached."""
    if volumes is None or not volumes.attachable:
        return None
    storage = volumes.storage
    drivers = storage.csi_nodes.get(node_name)
    for driver in sorted(set(volumes.attachable.values())):
        if driver in storage.required_drivers and (drivers is None or driver not in drivers):
            return Status(
                Code.UNSCHEDULABLE,
                (f"{driver} CSI driver is not installed on the node",),
                "NodeVolumeLimits",
            )
    limits = {d: n for d, n in (drivers or {}).items() if n is not None}
    if not limits:
        return None
    attached: dict[str, str] = {}
    for keys in pods_claims:
        for key in keys:
            namespace, name = key.split("/", 1)
            attached.update(attachable_volumes(namespace, [name], storage))
    in_use: dict[str, int] = {}
    for driver in attached.values():
        in_use[driver] = in_use.get(driver, 0) + 1
    new: dict[str, int] = {}
    for unique, driver in volumes.attachable.items():
        if unique not in attached:
            new[driver] = new.get(driver, 0) + 1
    for driver, count in sorted(new.items()):
        limit = limits.get(driver)
        if limit is not None and in_use.get(driver, 0) + count > limit:
            return Status(
                Code.UNSCHEDULABLE,
                (REASON_MAX_VOLUMES,),
                "NodeVolumeLimits",
                (
                    f"{driver}: {in_use.get(driver, 0)} volume(s) attached + {count} new"
                    f" > {limit} (its CSINode allocatable count)",
                ),
            )
    return None


_INLINE_DISKS: Final = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def volume_notes(pod: Mapping[str, Any], storage: Storage) -> list[str]:
    """What of the pod's volumes is not judged."""
    notes = []
    volumes = sequence(pod, "spec", "volumes")
    if _claim_names(pod):
        if not storage.known:
            notes.append(
                "volumes are not judged: the input has no PersistentVolumeClaims,"
                " PersistentVolumes or StorageClasses (VolumeBinding, VolumeZone)"
            )
        else:
            notes.append(
                "storage capacity, VolumeAttachments and in-tree volumes migrated to CSI are"
                " not modelled"
            )
    if any(isinstance(get(v, kind), Mapping) for v in volumes for kind in _INLINE_DISKS):
        notes.append("inline disk conflicts are not modelled (VolumeRestrictions)")
    return notes


def _owned_by(claim: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``ephemeral.VolumeIsForPod``: the pod is the claim's controller."""
    uid = text(pod, "metadata", "uid")
    for owner in sequence(claim, "metadata", "ownerReferences"):
        if get(owner, "controller") is True and text(owner, "kind") == "Pod":
            return not uid or text(owner, "uid") == uid
    return False


def volume_restrictions(volumes: PodVolumes | None) -> Status | None:
    if volumes is None or not volumes.read_write_once_pod_in_use:
        return None
    return Status(
        Code.UNSCHEDULABLE,
        (REASON_RWOP,),
        "VolumeRestrictions",
        ("a ReadWriteOncePod claim of the pod is mounted by a running pod",),
    )


def _matching_volume(
    claim: Mapping[str, Any],
    volumes: Iterable[Mapping[str, Any]],
    labels: Mapping[str, str],
    chosen: set[str],
) -> Mapping[str, Any] | None:
    """``FindMatchingVolume`` for a claim that waits for its first consumer, on a node."""
    wanted = _storage(claim, "spec", "resources", "requests")
    claim_class = _claim_class(claim)
    selector = get(claim, "spec", "selector")
    match = label_selector(selector) if selector is not None else None
    claim_mode = text(claim, "spec", "volumeMode") or "Filesystem"
    claim_vac = text(claim, "spec", "volumeAttributesClassName")
    modes = {text(m) for m in sequence(claim, "spec", "accessModes")}
    smallest: Mapping[str, Any] | None = None
    smallest_size = Decimal(0)
    for volume in volumes:
        name = text(volume, "metadata", "name")
        if name in chosen:
            continue
        ref = mapping(volume, "spec", "claimRef")
        bound_here = bool(ref) and (
            text(ref, "name") == text(claim, "metadata", "name")
            and (text(ref, "namespace") or "default")
            == (text(claim, "metadata", "namespace") or "default")
            and (not text(ref, "uid") or text(ref, "uid") == text(claim, "metadata", "uid"))
        )
        if ref and not bound_here:
            continue
        size = _storage(volume, "spec", "capacity")
        if size < wanted:
            continue
        if (text(volume, "spec", "volumeMode") or "Filesystem") != claim_mode:
            continue
        if text(volume, "spec", "volumeAttributesClassName") != claim_vac:
            continue
        if get(volume, "metadata", "deletionTimestamp") is not None:
            continue
        fits = _fits_node(volume, labels)
        if bound_here:
            return volume if fits else None
        if text(volume, "status", "phase") != "Available":
            continue
        if match is not None and not match.matches(mapping(volume, "metadata", "labels")):
            continue
        if _volume_class(volume) != claim_class or not fits:
            continue
        if not modes <= {text(m) for m in sequence(volume, "spec", "accessModes")}:
            continue
        if smallest is None or size < smallest_size:
            smallest, smallest_size = volume, size
    return smallest


def _provisions_here(
    claims: Iterable[Mapping[str, Any]], storage: Storage, labels: Mapping[str, str]
) -> bool:
    """``checkVolumeProvisions`` without capacity tracking: every claim's class provisions
    volumes on a node with these labels."""
    for claim in claims:
        storage_class = storage.classes.get(_claim_class(claim))
        if storage_class is None:
            return False
        provisioner = text(storage_class, "provisioner")
        if not provisioner or provisioner == NO_PROVISIONER:
            return False
        terms = sequence(storage_class, "allowedTopologies")
        if terms and not any(_topology_term_matches(term, labels) for term in terms):
            return False
    return True


def _topology_term_matches(term: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    for expression in sequence(term, "matchLabelExpressions"):
        key = text(expression, "key")
        if key not in labels or labels[key] not in {
            text(v) for v in sequence(expression, "values")
        }:
            return False
    return True


def volume_binding(
    volumes: PodVolumes | None, node_name: str, labels: Mapping[str, str]
) -> Status | None:
    """``FindPodVolumes``: every reason the node cannot serve the pod's claims."""
    if volumes is None:
        return None
    bound_ok, bound_found, waiting_ok = True, True, True
    details: list[str] = []
    for claim, volume in volumes.bound:
        if volume is None:
            bound_found = False
            details.append(f"claim {text(claim, 'metadata', 'name')}: its volume does not exist")
            break
        if not _fits_node(volume, labels):
            bound_ok = False
            details.append(
                f"claim {text(claim, 'metadata', 'name')}: volume"
                f" {text(volume, 'metadata', 'name')} is for other nodes (its node affinity)"
            )
            break
    if volumes.waiting:
        to_provision: list[Mapping[str, Any]] = []
        selected = [
            mapping(c, "metadata", "annotations").get(SELECTED_NODE) for c in volumes.waiting
        ]
        if any(s is not None and s != node_name for s in selected):
            waiting_ok = False
            details.append("a claim is being provisioned for another node")
        else:
            chosen: set[str] = set()
            matching = [c for c, s in zip(volumes.waiting, selected, strict=True) if s is None]
            to_provision = [
                c for c, s in zip(volumes.waiting, selected, strict=True) if s is not None
            ]
            by_size = sorted(matching, key=lambda c: _storage(c, "spec", "resources", "requests"))
            for claim in by_size:
                candidates = [
                    v
                    for v in volumes.storage.volumes.values()
                    if _volume_class(v) == _claim_class(claim)
                ]
                found = _matching_volume(claim, candidates, labels, chosen)
                if found is None:
                    to_provision.append(claim)
                    waiting_ok = False
                else:
                    chosen.add(text(found, "metadata", "name"))
            if to_provision:
                waiting_ok = _provisions_here(to_provision, volumes.storage, labels)
                if not waiting_ok:
                    names = ", ".join(text(c, "metadata", "name") for c in to_provision)
                    details.append(
                        f"claim(s) {names}: no available volume fits this node and their"
                        " class cannot provision one here"
                    )
    reasons = []
    if not bound_ok:
        reasons.append(REASON_NODE_CONFLICT)
    if not waiting_ok:
        reasons.append(REASON_BIND_CONFLICT)
    if not bound_found:
        reasons.append(REASON_PV_NOT_EXIST)
    if not reasons:
        return None
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons), "VolumeBinding", tuple(details)
    )


def volume_zone(volumes: PodVolumes | None, labels: Mapping[str, str]) -> Status | None:
    if volumes is None or not volumes.zones:
        return None
    if not any(label in labels for label in TOPOLOGY_LABELS):
        return None
    for volume, label, values in volumes.zones:
        value = labels.get(label)
        if value is None:
            value = labels.get(_GA_LABEL.get(label, label))
        if value is None or value not in values:
            return Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (REASON_ZONE,),
                "VolumeZone",
                (f"volume {volume} is in {label} {', '.join(sorted(values))}",),
            )
    return None
