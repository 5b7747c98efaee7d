"""Random but reproducible cases of pods with PersistentVolumeClaims.

:func:`generate_case` draws a small cluster (2 to 4 nodes, most in one of two zones) with
local PersistentVolumes pinned to some of its nodes, and one pod whose one or two claims
are drawn from: a claim that waits for its first consumer (a local volume of enough size
must fit the node), a claim already bound to a volume in a zone (VolumeZone), a claim of a
class that binds at once with no volume to bind (``pod has unbound immediate
PersistentVolumeClaims``), a claim that does not exist, a ``ReadWriteOncePod`` claim a
running pod mounts, and a claim of a class that provisions only in a zone no node is in.
A few pods are also pinned to two nodes at once (NodeAffinity's PreFilter rejects them first).
Claims of CSI volumes meet CSINodes that let a node attach 0 to 2 of them, volumes other
pods already mount, and a CSIDriver that only nodes running it may take
(:func:`csi_drivers`).

The classes (:func:`storage_classes`) are shared by every case; nothing provisions, so the
scheduler never waits on a provisioner. Names: ``<prefix>-<seed>-<index>`` for a case,
``<case>-n<j>`` for nodes, ``<case>-pv<j>`` for volumes; every node carries
``corpus.gpuop.dev/case=<case>`` and the pod selects it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Final

from kit.fake_nodes import fake_node

__all__ = [
    "CSI_DRIVER",
    "IMMEDIATE",
    "LOCAL",
    "NOWHERE",
    "REQUIRED_DRIVER",
    "VolumeCase",
    "csi_drivers",
    "generate_case",
    "persistent_volume",
    "storage_classes",
    "volume_claim",
]

CASE_LABEL: Final = "corpus.gpuop.dev/case"
ZONE: Final = "topology.kubernetes.io/zone"
HOSTNAME: Final = "kubernetes.io/hostname"
PAUSE: Final = "registry.k8s.io/pause:3.10"
LOCAL: Final = "corpus-local"
IMMEDIATE: Final = "corpus-immediate"
NOWHERE: Final = "corpus-nowhere"
CSI_DRIVER: Final = "corpus.csi.example.com"
REQUIRED_DRIVER: Final = "corpus-required.csi.example.com"
_ZONES: Final = ("z-a", "z-b")
# The claims a pod's one or two are drawn from, as often as each is listed.
_CLAIM_KINDS: Final = (
    *("local", "local", "local", "zone", "zone", "immediate", "missing", "rwop", "nowhere"),
    *("csi", "csi", "csi"),
)


@dataclass(frozen=True)
class VolumeCase:
    """One cluster state and one pod to place on it."""

    name: str
    nodes: tuple[dict[str, Any], ...]
    #: Volumes and claims, created before the pods (pre-bound pairs bind at once).
    volumes: tuple[dict[str, Any], ...]
    claims: tuple[dict[str, Any], ...]
    existing_pods: tuple[dict[str, Any], ...]
    pod: dict[str, Any]
    #: CSINodes: how many volumes each node's CSI drivers may attach.
    csi_nodes: tuple[dict[str, Any], ...] = ()


def csi_drivers() -> list[dict[str, Any]]:
    """The CSIDriver whose volumes go only to nodes that run it."""
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": REQUIRED_DRIVER},
            "spec": {"attachRequired": True, "preventPodSchedulingIfMissing": True},
        }
    ]


def storage_classes() -> list[dict[str, Any]]:
    """Local volumes bound on first use, volumes bound at once, and a class that would
    provision only in a zone no node is in."""

    def storage_class(name: str, mode: str, provisioner: str, **extra: Any) -> dict[str, Any]:
        return {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": provisioner,
            "volumeBindingMode": mode,
            **extra,
        }

    nowhere = [{"matchLabelExpressions": [{"key": ZONE, "values": ["z-none"]}]}]
    return [
        storage_class(LOCAL, "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
        storage_class(IMMEDIATE, "Immediate", "kubernetes.io/no-provisioner"),
        storage_class(
            NOWHERE, "WaitForFirstConsumer", "corpus.example.com/none", allowedTopologies=nowhere
        ),
    ]


def persistent_volume(
    name: str,
    size: int,
    storage_class: str,
    *,
    node: str | None = None,
    zone: str | None = None,
    claim: tuple[str, str] | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    csi: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": f"{size}Gi"},
        "accessModes": list(modes),
        "storageClassName": storage_class,
        "persistentVolumeReclaimPolicy": "Retain",
    }
    if csi is not None:
        spec["csi"] = {"driver": csi, "volumeHandle": f"handle-{name}"}
    else:
        spec["hostPath"] = {"path": f"/mnt/{name}"}
    if node is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
                ]
            }
        }
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    meta: dict[str, Any] = {"name": name}
    if zone is not None:
        meta["labels"] = {ZONE: zone}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}


def volume_claim(
    name: str,
    namespace: str,
    size: int,
    storage_class: str,
    *,
    volume: str | None = None,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": list(modes),
        "resources": {"requests": {"storage": f"{size}Gi"}},
        "storageClassName": storage_class,
    }
    if volume is not None:
        spec["volumeName"] = volume
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _pod(name: str, namespace: str, claims: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [{"name": "main", "image": PAUSE}],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                for i, c in enumerate(claims)
            ],
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 0,
            **spec,
        },
    }


def generate_case(
    seed: int, index: int, *, prefix: str = "vx", namespace: str = "default"
) -> VolumeCase:
    """Case ``index`` of the series ``seed`` (the same arguments, the same case)."""
    rng = random.Random(seed * 1_000_037 + index)
    case = f"{prefix}-{seed}-{index}"
    nodes, volumes, claims, running = [], [], [], []
    names = [f"{case}-n{j}" for j in range(rng.randint(2, 4))]
    for name in names:
        labels = {CASE_LABEL: case, HOSTNAME: name}
        if rng.random() < 0.85:
            labels[ZONE] = rng.choice(_ZONES)
        allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110"}
        nodes.append(fake_node(name, labels, allocatable))
    csi_nodes = []
    for name in names:
        if rng.random() < 0.6:
            drivers: list[dict[str, Any]] = [
                {"name": CSI_DRIVER, "nodeID": name, "allocatable": {"count": rng.randint(0, 2)}}
            ]
            if rng.random() < 0.5:
                drivers.append({"name": REQUIRED_DRIVER, "nodeID": name})
            csi_nodes.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": name},
                    "spec": {"drivers": drivers},
                }
            )
    for j in range(rng.randint(0, 4)):
        volumes.append(
            persistent_volume(f"{case}-pv{j}", rng.randint(1, 8), LOCAL, node=rng.choice(names))
        )
    wanted: list[str] = []
    for k in range(rng.choice((1, 1, 2))):
        claim = f"{case}-c{k}"
        kind = rng.choice(_CLAIM_KINDS)
        size = rng.randint(1, 8)
        if kind == "local":
            claims.append(volume_claim(claim, namespace, size, LOCAL))
        elif kind == "zone":
            volume = f"{case}-zpv{k}"
            volumes.append(
                persistent_volume(
                    volume, size, IMMEDIATE, zone=rng.choice(_ZONES), claim=(namespace, claim)
                )
            )
            claims.append(volume_claim(claim, namespace, size, IMMEDIATE, volume=volume))
        elif kind == "immediate":
            claims.append(volume_claim(claim, namespace, size, IMMEDIATE))
        elif kind == "rwop":
            volume = f"{case}-rpv{k}"
            modes = ("ReadWriteOncePod",)
            volumes.append(
                persistent_volume(volume, size, IMMEDIATE, claim=(namespace, claim), modes=modes)
            )
            claims.append(
                volume_claim(claim, namespace, size, IMMEDIATE, volume=volume, modes=modes)
            )
            if rng.random() < 0.7:
                running.append(
                    _pod(f"{case}-user{k}", namespace, [claim], nodeName=rng.choice(names))
                )
        elif kind == "csi":
            driver = REQUIRED_DRIVER if rng.random() < 0.3 else CSI_DRIVER
            volume = f"{case}-cpv{k}"
            volumes.append(
                persistent_volume(volume, size, IMMEDIATE, claim=(namespace, claim), csi=driver)
            )
            claims.append(volume_claim(claim, namespace, size, IMMEDIATE, volume=volume))
            if rng.random() < 0.6:
                # Another claim of the driver, mounted on a node: one volume attached there.
                other, other_volume = f"{claim}-x", f"{volume}-x"
                volumes.append(
                    persistent_volume(
                        other_volume, 1, IMMEDIATE, claim=(namespace, other), csi=CSI_DRIVER
                    )
                )
                claims.append(volume_claim(other, namespace, 1, IMMEDIATE, volume=other_volume))
                running.append(
                    _pod(f"{case}-mounter{k}", namespace, [other], nodeName=rng.choice(names))
                )
        elif kind == "nowhere":
            claims.append(volume_claim(claim, namespace, size, NOWHERE))
        wanted.append(claim)  # "missing": no claim object is made
    spec: dict[str, Any] = {"nodeSelector": {CASE_LABEL: case}}
    if rng.random() < 0.06:
        # Pinned to two nodes at once: NodeAffinity's PreFilter rejects before the volumes'.
        pins = [{"key": "metadata.name", "operator": "In", "values": [name]} for name in names[:2]]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": pins}]
                }
            }
        }
    pod = _pod(f"{case}-pod", namespace, wanted, **spec)
    return VolumeCase(
        case, tuple(nodes), tuple(volumes), tuple(claims), tuple(running), pod, tuple(csi_nodes)
    )
