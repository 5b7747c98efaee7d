"""GPU8xx: ResourceSlices, ResourceClaims and DeviceClasses as NVIDIA's DRA driver makes them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from claim_builders import (
    DRIVER,
    card_uuid,
    claim,
    gpu_device,
    node,
    nvidia_classes,
    nvidia_slices,
    resource_slice,
    vfio_device,
)

from gpuop.check import render_text, run_checks
from gpuop.check.claims import card_label, group_cards, published_devices
from gpuop.check.model import Finding

Obj = dict[str, Any]
DRA_NODE = {"nvidia.com/gpu.deploy.dra-driver": "true"}


def findings(objects: list[Obj], prefix: str = "GPU8") -> list[Finding]:
    report = run_checks(objects)
    assert not [f for f in report.findings if f.code == "GPU000"], report.findings
    return [f for f in report.findings if f.code.startswith(prefix)]


def codes(objects: list[Obj]) -> list[tuple[str, str]]:
    return sorted((f.code, f.subject) for f in findings(objects))


def cluster(*, shared_counters: bool, cards: int = 2) -> list[Obj]:
    return [
        node("gpu-a", labels=DRA_NODE),
        *nvidia_slices("gpu-a", cards, shared_counters=shared_counters),
        *nvidia_classes(),
    ]


# --- reading what the driver publishes ------------------------------------------------------


def test_devices_are_put_back_together_into_cards() -> None:
    devices = published_devices(nvidia_slices("gpu-a", 2))
    assert [(d.name, d.type) for d in devices] == [
        ("gpu-0", "gpu"),
        ("gpu-vfio-0", "vfio"),
        ("gpu-1", "gpu"),
        ("gpu-vfio-1", "vfio"),
    ]
    # the VFIO device has a uuid of its own: the PCI address ties it to its card
    assert devices[0].card == card_uuid("gpu-a", 0) != devices[1].card
    assert devices[0].pci == devices[1].pci == "0000:3b:00.0"
    assert devices[0].card_keys == (
        f"uuid {card_uuid('gpu-a', 0)}",
        "resource.kubernetes.io/pciBusID 0000:3b:00.0 on gpu-a",
    )
    assert devices[1].card_keys == ("resource.kubernetes.io/pciBusID 0000:3b:00.0 on gpu-a",)
    cards = group_cards(devices)
    assert [[d.name for d in card] for card in cards] == [
        ["gpu-0", "gpu-vfio-0"],
        ["gpu-1", "gpu-vfio-1"],
    ]
    assert card_label(cards[0]) == f"0000:3b:00.0 on gpu-a, {card_uuid('gpu-a', 0)}"


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old = resource_slice("gpu-a", [gpu_device("gpu-a", 0)], name="old", generation=1)
    new = resource_slice("gpu-a", [gpu_device("gpu-a", 1)], name="new", generation=2)
    assert [d.slice for d in published_devices([old, new])] == ["new"]


def test_a_mig_device_belongs_to_its_parent_card() -> None:
    mig = {
        "name": "gpu-0-mig-1g12gb-19-0",
        "attributes": {
            "type": {"string": "mig"},
            "uuid": {"string": "MIG-0e8b3c52-4f3a-5d91-b0a7-1e2f3a4b5c6d"},
            "parentUUID": {"string": card_uuid("gpu-a", 0)},
            "profile": {"string": "1g.12gb"},
        },
    }
    (device,) = published_devices([resource_slice("gpu-a", [mig])])
    assert device.card == card_uuid("gpu-a", 0) and not device.whole_card


# --- GPU810: two faces, no counters ----------------------------------------------------------


def test_nvidias_passthrough_publication_is_the_race() -> None:
    found = findings(cluster(shared_counters=False))
    assert [(f.code, f.name, f.node) for f in found] == [
        ("GPU810", "gpu-a-gpu.nvidia.com-x7k2q", "gpu-a"),
        ("GPU810", "gpu-a-gpu.nvidia.com-x7k2q", "gpu-a"),
    ]
    assert found[0].severity == "warning"
    assert "container and VM claims can race for this card" in found[0].message
    assert "dra-driver-nvidia-gpu#1330" in found[0].message
    assert any(
        f"card 0000:3b:00.0 on gpu-a, {card_uuid('gpu-a', 0)} is published as gpu-0, gpu-vfio-0"
        " (pool gpu-a)" in f.message
        for f in found
    )


def test_shared_counters_make_the_card_race_free() -> None:
    assert codes(cluster(shared_counters=True)) == []


def test_a_card_with_one_face_is_not_two_faced() -> None:
    objects = [node("gpu-a"), *nvidia_slices("gpu-a", 2, passthrough=False)]
    assert codes(objects) == []


# --- GPU801: one card, two claims -------------------------------------------------------------


def test_a_container_and_a_vm_claim_on_one_card() -> None:
    objects = [
        *cluster(shared_counters=False),
        claim("train", allocated=[("gpu-a", "gpu-0")]),
        claim(
            "vm-gpus", "vfio.gpu.nvidia.com", namespace="vms", allocated=[("gpu-a", "gpu-vfio-0")]
        ),
    ]
    found = [f for f in findings(objects) if f.code == "GPU801"]
    assert [(f.subject, f.node, f.severity) for f in found] == [
        ("ResourceClaim/ml/train", "gpu-a", "error"),
        ("ResourceClaim/vms/vm-gpus", "gpu-a", "error"),
    ]
    assert found[0].message == (
        "request gpu holds gpu-0 (pool gpu-a on gpu-a), the same card"
        f" (0000:3b:00.0 on gpu-a, {card_uuid('gpu-a', 0)}) as gpu-vfio-0 (pool gpu-a on gpu-a) allocated to"
        " claim vms/vm-gpus: the second prepare fails"
    )


def test_the_same_card_by_pci_address_alone() -> None:
    gpu, vfio = gpu_device("gpu-a", 0), vfio_device("gpu-a", 0)
    del gpu["attributes"]["uuid"], vfio["attributes"]["uuid"]
    objects = [
        node("gpu-a"),
        resource_slice("gpu-a", [gpu, vfio]),
        claim("a", allocated=[("gpu-a", "gpu-0")]),
        claim("b", allocated=[("gpu-a", "gpu-vfio-0")]),
    ]
    found = [f for f in findings(objects) if f.code == "GPU801"]
    assert len(found) == 2
    assert "the same card (0000:3b:00.0 on gpu-a) as" in found[0].message


def test_vfio_devices_at_one_address_on_two_nodes_are_two_cards() -> None:
    """The driver's VFIO uuid is a name-based UUID of the PCI address: equal across nodes."""
    objects = [
        node("gpu-a"),
        node("gpu-b"),
        *nvidia_slices("gpu-a", 1, shared_counters=True),
        *nvidia_slices("gpu-b", 1, shared_counters=True),
        claim("a", "vfio.gpu.nvidia.com", allocated=[("gpu-a", "gpu-vfio-0")]),
        claim("b", "vfio.gpu.nvidia.com", allocated=[("gpu-b", "gpu-vfio-0")]),
    ]
    assert codes(objects) == []


def test_one_pci_address_on_two_nodes_is_two_cards() -> None:
    a, b = gpu_device("gpu-a", 0), gpu_device("gpu-b", 0)
    del a["attributes"]["uuid"], b["attributes"]["uuid"]
    objects = [
        node("gpu-a"),
        node("gpu-b"),
        resource_slice("gpu-a", [a]),
        resource_slice("gpu-b", [b]),
        claim("a", allocated=[("gpu-a", "gpu-0")]),
        claim("b", allocated=[("gpu-b", "gpu-0")]),
    ]
    assert codes(objects) == []


def test_different_cards_and_admin_access_are_fine() -> None:
    admin = claim("monitor", allocated=[("gpu-a", "gpu-0")])
    admin["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = True
    objects = [
        *cluster(shared_counters=True),
        claim("train", allocated=[("gpu-a", "gpu-0")]),
        claim("vm", "vfio.gpu.nvidia.com", allocated=[("gpu-a", "gpu-vfio-1")]),
        admin,
    ]
    assert codes(objects) == []


def test_one_device_in_two_claims_unless_it_allows_it() -> None:
    objects = [
        *cluster(shared_counters=True),
        claim("a", allocated=[("gpu-a", "gpu-1")]),
        claim("b", allocated=[("gpu-a", "gpu-1")]),
    ]
    assert [c for c, _ in codes(objects)] == ["GPU801", "GPU801"]
    devices = objects[2]["spec"]["devices"]
    for device in devices:
        device["allowMultipleAllocations"] = True
    assert codes(objects) == []


def test_two_mig_devices_of_one_card_are_not_a_conflict() -> None:
    def mig(index: int) -> Obj:
        return {
            "name": f"gpu-0-mig-1g12gb-19-{index}",
            "attributes": {
                "type": {"string": "mig"},
                "uuid": {"string": f"MIG-{index}"},
                "parentUUID": {"string": card_uuid("gpu-a", 0)},
            },
        }

    objects = [
        node("gpu-a"),
        resource_slice("gpu-a", [gpu_device("gpu-a", 0), mig(0), mig(1)]),
        claim("a", "mig.nvidia.com", allocated=[("gpu-a", "gpu-0-mig-1g12gb-19-0")]),
        claim("b", "mig.nvidia.com", allocated=[("gpu-a", "gpu-0-mig-1g12gb-19-1")]),
    ]
    assert codes(objects) == []
    objects.append(claim("whole", allocated=[("gpu-a", "gpu-0")]))
    assert sorted(c for c, _ in codes(objects)) == ["GPU801"] * 4


# --- GPU802/803/804: both stacks, two pools ------------------------------------------------


def test_a_card_published_by_two_pools() -> None:
    objects = [
        node("gpu-a"),
        resource_slice("gpu-a", [gpu_device("gpu-a", 0)], name="new", pool="gpu-a"),
        resource_slice("gpu-a", [gpu_device("gpu-a", 0)], name="old", pool="gpu-a-legacy"),
    ]
    found = findings(objects)
    assert [(f.code, f.subject) for f in found] == [("GPU802", "ResourceSlice/old")]
    assert "which ResourceSlice new also publishes as gpu-0" in found[0].message


def test_a_node_advertised_by_the_device_plugin_and_published_by_dra() -> None:
    objects = [
        node("gpu-a", capacity={"nvidia.com/gpu": "2"}),
        *nvidia_slices("gpu-a", 2, passthrough=False),
    ]
    found = findings(objects)
    assert [(f.code, f.subject) for f in found] == [("GPU803", "Node/gpu-a")]
    assert found[0].message.startswith(
        "the device plugin advertises nvidia.com/gpu: 2 (status.capacity) while"
        " ResourceSlices of gpu.nvidia.com publish 2 card(s) of the node"
    )


def test_zero_device_plugin_resources_are_not_a_second_stack() -> None:
    objects = [
        node("gpu-a", capacity={"nvidia.com/gpu": "0"}),
        *nvidia_slices("gpu-a", 2, passthrough=False),
    ]
    assert codes(objects) == []


def _cluster_policy(device_plugin: bool) -> Obj:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {"devicePlugin": {"enabled": device_plugin}},
    }


def test_a_dra_node_with_the_device_plugin_deployed() -> None:
    labels = {**DRA_NODE, "nvidia.com/gpu.deploy.device-plugin": "true"}
    slices = nvidia_slices("gpu-a", 2, passthrough=False)
    found = findings([node("gpu-a", labels=labels), *slices, _cluster_policy(True)])
    assert [(f.code, f.severity) for f in found] == [("GPU804", "warning")]
    assert "labelled nvidia.com/gpu.deploy.device-plugin=true" in found[0].message
    # a leftover label on a node no DRA driver publishes is not a second stack
    assert findings([node("gpu-a", labels=labels), _cluster_policy(True)]) == []


def test_the_deploy_label_of_a_device_plugin_the_policy_turns_off_is_no_second_stack() -> None:
    """The operator sets `gpu.deploy.device-plugin` whether or not the plugin is enabled, and
    NVIDIA's guide for its DRA driver beside the operator turns the plugin off."""
    labels = {
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/dra-kubelet-plugin": "true",
    }
    slices = nvidia_slices("gpu-a", 2, passthrough=False)
    assert findings([node("gpu-a", labels=labels), *slices, _cluster_policy(False)]) == []
    # Nor without the ClusterPolicy: the node advertising nothing shows no plugin runs.
    assert findings([node("gpu-a", labels=labels), *slices]) == []


# --- GPU806: bad input -----------------------------------------------------------------------


def test_a_slice_for_a_node_that_is_gone() -> None:
    objects = [node("gpu-a"), *nvidia_slices("gpu-b", 1, passthrough=False)]
    found = findings(objects)
    assert [(f.code, f.subject) for f in found] == [
        ("GPU806", "ResourceSlice/gpu-b-gpu.nvidia.com-x7k2q")
    ]
    assert "spec.nodeName gpu-b is not a Node of the input" in found[0].message


def test_without_nodes_the_slices_nodes_are_not_checked() -> None:
    report = run_checks(nvidia_slices("gpu-b", 1, passthrough=False))
    assert not [f for f in report.findings if f.code.startswith("GPU8")]
    assert "dra-nodes" in [s.check for s in report.skipped]


@pytest.mark.parametrize(
    "broken",
    [
        {"kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": "devices"},
        {"kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": {"devices": [1, None]}},
        {
            "kind": "ResourceSlice",
            "metadata": {"name": "s"},
            "spec": {"driver": DRIVER, "pool": {"generation": "x"}, "devices": [{"name": 3}]},
        },
        {"kind": "ResourceClaim", "metadata": {"name": "c"}, "status": {"allocation": []}},
        {"kind": "DeviceClass", "metadata": {"name": "d"}, "spec": {"selectors": {}}},
    ],
)
def test_odd_objects_never_break_the_check(broken: Obj) -> None:
    report = run_checks([node("gpu-a"), *nvidia_slices("gpu-a", 1), broken])
    assert not [f for f in report.findings if f.code == "GPU000"]


# --- output -----------------------------------------------------------------------------------


def test_findings_in_text_and_json() -> None:
    objects = [
        *cluster(shared_counters=False),
        claim("train", allocated=[("gpu-a", "gpu-0")]),
        claim("vm", "vfio.gpu.nvidia.com", allocated=[("gpu-a", "gpu-vfio-0")]),
    ]
    report = run_checks(objects)
    data = json.loads(report.to_json())
    assert {f["code"] for f in data["findings"]} >= {"GPU801", "GPU810"}
    assert report.exit_code == 1
    text = render_text(report, color=False, width=100)
    assert "GPU801" in text and "Node gpu-a" in text


# --- GPU805/807/808/809: claims that cannot fit, and bad input --------------------------------


def test_a_claim_for_more_gpus_than_any_node_has() -> None:
    objects = [*cluster(shared_counters=True), claim("big", count=3)]
    found = findings(objects)
    assert [(f.code, f.subject) for f in found] == [("GPU805", "ResourceClaim/ml/big")]
    assert found[0].message.startswith("no node could allocate it even with every device free")
    assert "gpu-a: claim ml/big, request gpu: wants 3, 2 usable devices" in found[0].message


def test_a_claim_whose_selector_matches_no_device() -> None:
    wants_h100 = ["device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"]
    objects = [*cluster(shared_counters=True), claim("h100", selectors=wants_h100)]
    assert [c for c, _ in codes(objects)] == ["GPU805"]


def test_claims_that_fit_an_empty_node_are_not_reported_though_the_cards_are_taken() -> None:
    objects = [
        *cluster(shared_counters=True),
        claim("a", allocated=[("gpu-a", "gpu-0")]),
        claim("b", allocated=[("gpu-a", "gpu-1")]),
        claim("waits"),
        claim("vm", "vfio.gpu.nvidia.com", namespace="vms"),
    ]
    assert codes(objects) == []


def test_a_claim_for_an_unknown_device_class() -> None:
    objects = [*cluster(shared_counters=True), claim("typo", "gpu.nvidia.co")]
    found = findings(objects)
    assert [(f.code, f.subject) for f in found] == [("GPU807", "ResourceClaim/ml/typo")]
    assert "asks for DeviceClass gpu.nvidia.co, which the input does not have" in found[0].message


def test_without_device_classes_claims_are_not_judged() -> None:
    objects = [node("gpu-a"), *nvidia_slices("gpu-a", 1, shared_counters=True), claim("x")]
    report = run_checks(objects)
    assert not [f for f in report.findings if f.code.startswith("GPU8")]
    assert "dra-classes" in [s.check for s in report.skipped]


def test_invalid_cel_in_a_claim_and_in_a_class() -> None:
    broken_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "broken.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == "}}]},
    }
    objects = [
        *cluster(shared_counters=True),
        broken_class,
        claim("bad-cel", selectors=["device.attributes['gpu.nvidia.com'].uuid.startsWith("]),
        claim("via-broken", "broken.example.com"),
    ]
    found = findings(objects)
    assert [(f.code, f.subject) for f in found] == [
        ("GPU808", "DeviceClass/broken.example.com"),
        ("GPU808", "ResourceClaim/ml/bad-cel"),
    ]
    assert found[1].message.startswith("request gpu selectors[0]: CEL compile error in")


def test_a_selector_that_fails_on_every_device() -> None:
    missing = ["device.attributes['gpu.nvidia.com'].nosuch == 'x'"]
    found = findings([*cluster(shared_counters=True), claim("oops", selectors=missing)])
    assert [(f.code, f.subject) for f in found] == [("GPU808", "ResourceClaim/ml/oops")]
    assert "CEL runtime error" in found[0].message


def test_a_template_that_can_never_fit() -> None:
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "four-vfio", "namespace": "vms"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpus",
                            "exactly": {
                                "deviceClassName": "vfio.gpu.nvidia.com",
                                "allocationMode": "ExactCount",
                                "count": 4,
                            },
                        }
                    ]
                }
            }
        },
    }
    found = findings([*cluster(shared_counters=True), template])
    assert [(f.code, f.subject) for f in found] == [
        ("GPU805", "ResourceClaimTemplate/vms/four-vfio")
    ]


@pytest.mark.parametrize(
    ("broken", "subject"),
    [
        (
            {"kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": {"devices": "gpu-0"}},
            "ResourceSlice/s",
        ),
        (
            {
                "kind": "ResourceClaim",
                "metadata": {"name": "c", "namespace": "ml"},
                "spec": {"devices": {"requests": [{"name": "gpu"}]}},
            },
            "ResourceClaim/ml/c",
        ),
        (
            {"kind": "DeviceClass", "metadata": {"name": "d"}, "spec": {"selectors": [{}]}},
            "DeviceClass/d",
        ),
    ],
)
def test_unreadable_dra_objects_are_findings(broken: Obj, subject: str) -> None:
    found = findings([*cluster(shared_counters=True), broken])
    assert [(f.code, f.subject) for f in found] == [("GPU809", subject)]


# --- against the publication the simulator plays ----------------------------------------------


def _published(node_name: str, *, shared_counters: bool) -> list[Obj]:
    from gpuop.dra.publish import publish
    from gpuop.sim.hardware import NodeSpec, cards_for

    cards = cards_for(NodeSpec(node_name, "A10", 2))
    return publish(node_name, cards, shared_counters=shared_counters, driver_version="580.95.05")


@pytest.mark.parametrize("shared_counters", [False, True])
def test_the_simulated_driver_s_publication(shared_counters: bool) -> None:
    objects = [
        node("sim-a"),
        *_published("sim-a", shared_counters=shared_counters),
        *nvidia_classes(),
    ]
    expected = [] if shared_counters else ["GPU810", "GPU810"]
    assert [c for c, _ in codes(objects)] == expected
    devices = {d["name"] for s in objects[1:] for d in s.get("spec", {}).get("devices", [])}
    pool = "sim-a"
    objects += [
        claim("train", allocated=[(pool, "gpu-0")]),
        claim("desk", "vfio.gpu.nvidia.com", namespace="vms", allocated=[(pool, "gpu-vfio-0")]),
    ]
    assert {"gpu-0", "gpu-vfio-0"} <= devices
    assert [c for c, _ in codes(objects)].count("GPU801") == 2


# --- hostile input ------------------------------------------------------------------------------


@pytest.mark.fuzz
def test_mutated_dra_objects_become_findings_never_a_crash() -> None:
    import random

    from fuzzing import mutate, scaled

    rng = random.Random(20)
    base = [
        *cluster(shared_counters=False),
        *nvidia_slices("gpu-b", 2, shared_counters=True),
        claim("train", allocated=[("gpu-a", "gpu-0")]),
        claim("desk", "vfio.gpu.nvidia.com", namespace="vms", allocated=[("gpu-a", "gpu-vfio-0")]),
        claim(
            "big",
            count=3,
            selectors=["device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('20Gi'))"],
        ),
    ]
    for _ in range(scaled(300)):
        objects = mutate(base, rng, rng.randint(1, 6))
        report = run_checks(objects)
        crashed = [f for f in report.findings if f.code == "GPU000"]
        assert not crashed, (crashed, objects)


def test_a_claim_pinned_to_one_card_by_uuid_is_judged_per_device() -> None:
    """Selector results are shared by devices alike in what the expression reads, no more."""

    def pinned(uuid: str) -> list[str]:
        return [f"device.attributes['gpu.nvidia.com'].uuid == '{uuid}'"]

    objects = [
        *cluster(shared_counters=True),
        node("gpu-b"),
        *nvidia_slices("gpu-b", 2, shared_counters=True),
        claim("pinned", selectors=pinned(card_uuid("gpu-b", 1))),
        claim("nowhere", selectors=pinned(card_uuid("gpu-z", 0))),
        claim("by-size", selectors=["size(device.attributes['gpu.nvidia.com']) > 100"]),
    ]
    assert codes(objects) == [
        ("GPU805", "ResourceClaim/ml/by-size"),
        ("GPU805", "ResourceClaim/ml/nowhere"),
    ]
