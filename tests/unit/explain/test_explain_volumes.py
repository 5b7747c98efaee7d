"""The volume filters: VolumeRestrictions, VolumeBinding and VolumeZone, with the claims,
volumes and classes of the input (the wordings are kube-scheduler v1.37.2's; the
differential test in tests/e2e holds them to the real scheduler)."""

from __future__ import annotations

from typing import Any

from explain_builders import node

from gpuop.explain.engine import cluster_snapshot, explain_pod
from gpuop.explain.volumes import read_storage
from kit.volume_corpus import (
    CSI_DRIVER,
    IMMEDIATE,
    LOCAL,
    NOWHERE,
    REQUIRED_DRIVER,
    csi_drivers,
    persistent_volume,
    storage_classes,
    volume_claim,
)

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
NODES = [
    node("a", labels={HOST: "a", ZONE: "z-a"}),
    node("b", labels={HOST: "b", ZONE: "z-b"}),
]


def _pod(*claims: str, name: str = "p", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "main", "image": "pause"}],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                for i, c in enumerate(claims)
            ],
            **spec,
        },
    }


def _available(volume: dict[str, Any]) -> dict[str, Any]:
    return {**volume, "status": {"phase": "Available"}}


def _bound(claim: dict[str, Any]) -> dict[str, Any]:
    meta = {**claim["metadata"], "annotations": {"pv.kubernetes.io/bind-completed": "yes"}}
    return {**claim, "metadata": meta, "status": {"phase": "Bound"}}


def _explain(the_pod: dict[str, Any], objects: list[dict[str, Any]], running: list[Any] = ()):  # type: ignore[no-untyped-def, assignment]
    storage = read_storage([*storage_classes(), *objects], running)
    snapshot = cluster_snapshot(NODES, running, storage=storage)
    return explain_pod(the_pod, (), (), snapshot=snapshot)


def test_a_missing_claim_rejects_everywhere_before_the_filters() -> None:
    result = _explain(_pod("gone"), [])
    assert result.summary == (
        '0/2 nodes are available: persistentvolumeclaim "gone" not found. not found'
    )
    assert not result.preemption.ran


def test_an_unbound_immediate_claim() -> None:
    result = _explain(_pod("data"), [volume_claim("data", "default", 1, IMMEDIATE)])
    assert result.summary == (
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
    )


def test_a_local_volume_that_waits_for_its_first_consumer() -> None:
    objects = [
        volume_claim("data", "default", 4, LOCAL),
        _available(persistent_volume("small-on-a", 2, LOCAL, node="a")),
        _available(persistent_volume("big-on-b", 8, LOCAL, node="b")),
    ]
    result = _explain(_pod("data"), objects)
    assert result.feasible == ("b",)
    (a,) = [v for v in result.nodes if v.name == "a"]
    assert (a.plugin, a.reasons) == (
        "VolumeBinding",
        ("node(s) didn't find available persistent volumes to bind",),
    )
    # Two claims cannot take one volume.
    objects.append(volume_claim("more", "default", 4, LOCAL))
    result = _explain(_pod("data", "more"), objects)
    assert result.feasible == ()


def test_a_class_that_provisions_only_elsewhere() -> None:
    result = _explain(_pod("data"), [volume_claim("data", "default", 1, NOWHERE)])
    assert result.feasible == ()
    assert result.summary is not None
    assert result.summary.startswith(
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."
    )


def test_a_bound_volume_holds_the_pod_to_its_zone_and_node() -> None:
    claim = _bound(volume_claim("data", "default", 1, IMMEDIATE, volume="zonal"))
    zonal = persistent_volume("zonal", 1, IMMEDIATE, zone="z-b", claim=("default", "data"))
    result = _explain(_pod("data"), [claim, zonal])
    assert result.feasible == ("b",)
    (a,) = [v for v in result.nodes if v.name == "a"]
    assert (a.plugin, a.reasons) == ("VolumeZone", ("node(s) had no available volume zone",))
    local = persistent_volume("zonal", 1, IMMEDIATE, node="a", claim=("default", "data"))
    result = _explain(_pod("data"), [claim, local])
    assert result.feasible == ("a",)
    (b,) = [v for v in result.nodes if v.name == "b"]
    assert b.reasons == ("node(s) didn't match PersistentVolume's node affinity",)
    result = _explain(_pod("data"), [claim])
    assert result.summary == (
        '0/2 nodes are available: persistentvolume "zonal" not found. not found'
    )


def test_a_read_write_once_pod_claim_in_use() -> None:
    modes = ("ReadWriteOncePod",)
    claim = _bound(volume_claim("data", "default", 1, IMMEDIATE, volume="v", modes=modes))
    volume = persistent_volume("v", 1, IMMEDIATE, claim=("default", "data"), modes=modes)
    user = _pod("data", name="user", nodeName="a")
    result = _explain(_pod("data"), [claim, volume], [user])
    assert result.feasible == ()
    assert {v.reasons for v in result.nodes} == {
        (
            "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access"
            " mode already in-use by another pod",
        )
    }
    # The user itself, explained again, is not in its own way.
    assert _explain(user, [claim, volume], [user]).feasible == ("a",)


def test_without_storage_objects_volumes_are_not_judged() -> None:
    result = explain_pod(_pod("data"), NODES)
    assert result.feasible == ("a", "b")
    assert any("volumes are not judged" in w for w in result.warnings)


def _csi_node(name: str, *drivers: tuple[str, int | None]) -> dict[str, Any]:
    entries = []
    for driver, count in drivers:
        entry: dict[str, Any] = {"name": driver, "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    return {"kind": "CSINode", "metadata": {"name": name}, "spec": {"drivers": entries}}


def test_csi_attach_limits_count_the_volumes_already_on_the_node() -> None:
    claims = [
        _bound(volume_claim(name, "default", 1, IMMEDIATE, volume=f"pv-{name}"))
        for name in ("data", "other")
    ]
    volumes = [
        persistent_volume(f"pv-{name}", 1, IMMEDIATE, claim=("default", name), csi=CSI_DRIVER)
        for name in ("data", "other")
    ]
    limits = [_csi_node("a", (CSI_DRIVER, 1)), _csi_node("b", (CSI_DRIVER, 2))]
    mounter = _pod("other", name="mounter", nodeName="a")
    mounter["status"] = {"phase": "Running"}
    result = _explain(_pod("data"), [*claims, *volumes, *limits], [mounter])
    assert result.feasible == ("b",)
    (a,) = [v for v in result.nodes if v.name == "a"]
    assert (a.plugin, a.reasons) == ("NodeVolumeLimits", ("node(s) exceed max volume count",))
    assert a.details == (
        f"{CSI_DRIVER}: 1 volume(s) attached + 1 new > 1 (its CSINode allocatable count)",
    )
    # The volume it mounts already is not counted twice.
    assert _explain(_pod("other"), [*claims, *volumes, *limits], [mounter]).feasible == ("a", "b")


def test_a_driver_that_must_run_on_the_node() -> None:
    claim = _bound(volume_claim("data", "default", 1, IMMEDIATE, volume="pv"))
    volume = persistent_volume("pv", 1, IMMEDIATE, claim=("default", "data"), csi=REQUIRED_DRIVER)
    objects = [claim, volume, *csi_drivers(), _csi_node("b", (REQUIRED_DRIVER, None))]
    result = _explain(_pod("data"), objects)
    assert result.feasible == ("b",)
    (a,) = [v for v in result.nodes if v.name == "a"]
    assert a.reasons == (f"{REQUIRED_DRIVER} CSI driver is not installed on the node",)
