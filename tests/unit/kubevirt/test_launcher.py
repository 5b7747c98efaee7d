"""The virt-launcher pod rendered from VMIs and VMs, and VMIs explained through it."""

from __future__ import annotations

from typing import Any

import pytest

from gpuop.explain import explain_pod
from gpuop.kubevirt.launcher import (
    DeviceNotPermittedError,
    LauncherError,
    UnsupportedKindError,
    VmiRejectedError,
    claim_devices,
    render_launcher_pod,
    schedulable_pod,
)

A10 = "nvidia.com/GA102GL_A10"
A10_12Q = "nvidia.com/NVIDIA_A10-12Q"


def vmi(
    *,
    gpus: list[dict[str, Any]] | None = None,
    host_devices: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    domain: dict[str, Any] = {
        "devices": {"gpus": gpus or [], "hostDevices": host_devices or []},
        "resources": {"requests": {"memory": "4Gi", "cpu": "2"}},
    }
    domain.update(spec.pop("domain", {}))
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "vm1", "namespace": "vms", "labels": {"app": "desk"}, "uid": "u-1"},
        "spec": {"domain": domain, **spec},
    }


def compute(pod: dict[str, Any]) -> dict[str, Any]:
    (container,) = pod["spec"]["containers"]
    assert container["name"] == "compute"
    resources: dict[str, Any] = container["resources"]
    return resources


def test_each_device_entry_adds_one_to_requests_and_limits() -> None:
    pod = render_launcher_pod(
        vmi(
            gpus=[{"name": "g1", "deviceName": A10}, {"name": "g2", "deviceName": A10}],
            host_devices=[{"name": "h1", "deviceName": A10_12Q}],
        )
    )
    resources = compute(pod)
    assert resources["limits"] == {A10: "2", A10_12Q: "1"}
    assert resources["requests"] == {"memory": "4Gi", "cpu": "2", A10: "2", A10_12Q: "1"}


def test_scheduling_fields_are_carried_over() -> None:
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
        }
    }
    pod = render_launcher_pod(
        vmi(
            nodeSelector={"nvidia.com/gpu.workload.config": "vm-passthrough"},
            tolerations=tolerations,
            affinity=affinity,
            priorityClassName="vms",
        )
    )
    spec = pod["spec"]
    assert spec["nodeSelector"] == {
        "nvidia.com/gpu.workload.config": "vm-passthrough",
        "kubevirt.io/schedulable": "true",
    }
    assert spec["tolerations"] == tolerations and spec["tolerations"] is not tolerations
    assert spec["affinity"] == affinity
    assert spec["priorityClassName"] == "vms"
    assert pod["metadata"]["name"] == "virt-launcher-vm1"
    assert pod["metadata"]["namespace"] == "vms"
    assert pod["metadata"]["labels"] == {
        "app": "desk",
        "kubevirt.io": "virt-launcher",
        "kubevirt.io/created-by": "u-1",
    }


def test_guest_memory_when_no_memory_request_and_overhead() -> None:
    source = vmi(domain={"resources": {}, "memory": {"guest": "8Gi"}})
    assert compute(render_launcher_pod(source))["requests"] == {"memory": "8Gi"}
    with_overhead = render_launcher_pod(source, memory_overhead="256Mi")
    assert compute(with_overhead)["requests"] == {"memory": "8448Mi"}


def test_limits_are_carried() -> None:
    source = vmi(
        domain={"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}}
    )
    assert compute(render_launcher_pod(source))["limits"] == {"cpu": "2", "memory": "1Gi"}


def test_a_nested_claim_request_is_refused_with_where_the_fields_go() -> None:
    source = vmi(gpus=[{"name": "g", "claimRequest": {"claimName": "c", "requestName": "r"}}])
    with pytest.raises(VmiRejectedError, match=r"gpus\[0\]: claimRequest is not a KubeVirt"):
        render_launcher_pod(source)


def test_virtual_machine_uses_its_template() -> None:
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm2", "namespace": "vms"},
        "spec": {
            "template": {
                "metadata": {"labels": {"x": "y"}},
                "spec": vmi(gpus=[{"name": "g", "deviceName": A10}])["spec"],
            }
        },
    }
    pod = render_launcher_pod(vm)
    assert pod["metadata"]["name"] == "virt-launcher-vm2"
    assert pod["metadata"]["namespace"] == "vms"
    assert pod["metadata"]["labels"]["x"] == "y"
    assert compute(pod)["limits"] == {A10: "1"}


def test_schedulable_pod_passes_pods_through() -> None:
    original = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}
    copy = schedulable_pod(original)
    assert copy == original and copy is not original


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {"kind": "Deployment", "metadata": {"name": "d"}},
            "Deployment 'd' is not a Pod, VirtualMachineInstance or VirtualMachine",
        ),
        ({"metadata": {}}, "an object without a kind is not a Pod"),
    ],
)
def test_other_kinds_are_refused(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedKindError, match=message):
        schedulable_pod(obj)
    with pytest.raises(
        LauncherError, match="Pod 'p' is not a VirtualMachineInstance or VirtualMachine"
    ):
        render_launcher_pod({"kind": "Pod", "metadata": {"name": "p"}})


PERMITTED = {
    "pciHostDevices": [
        {"pciVendorSelector": "10DE:2236", "resourceName": A10, "externalResourceProvider": True}
    ],
    "mediatedDevices": [],
}


def test_permitted_devices_render() -> None:
    pod = render_launcher_pod(
        vmi(gpus=[{"name": "g", "deviceName": A10}]), permitted_host_devices=PERMITTED
    )
    assert compute(pod)["limits"] == {A10: "1"}


def test_devices_not_permitted_fail_like_virt_controller() -> None:
    source = vmi(
        gpus=[{"name": "g", "deviceName": "nvidia.com/TU104GL_Tesla_T4"}],
        host_devices=[{"name": "h", "deviceName": A10_12Q}],
    )
    with pytest.raises(DeviceNotPermittedError) as caught:
        render_launcher_pod(source, permitted_host_devices=PERMITTED)
    assert caught.value.message == (
        "GPU nvidia.com/TU104GL_Tesla_T4 is not permitted in permittedHostDevices configuration "
        "HostDevice nvidia.com/NVIDIA_A10-12Q is not permitted in permittedHostDevices configuration"
    )
    assert caught.value.condition_message.startswith("failed to render launch manifest: GPU ")


def test_without_permitted_host_devices_nothing_is_checked() -> None:
    source = vmi(gpus=[{"name": "g", "deviceName": "nvidia.com/anything"}])
    assert compute(render_launcher_pod(source))["limits"] == {"nvidia.com/anything": "1"}


def node(name: str, labels: dict[str, str], extended: dict[str, str]) -> dict[str, Any]:
    allocatable = {"cpu": "16", "memory": "64Gi", "pods": "110", **extended}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": allocatable},
    }


def test_vmi_explained_as_its_launcher_pod() -> None:
    schedulable = {"kubevirt.io/schedulable": "true"}
    nodes = [
        node("a", schedulable, {A10: "1"}),
        node("b", schedulable, {A10: "0"}),
        node("c", {}, {A10: "4"}),
    ]
    pod = render_launcher_pod(
        vmi(gpus=[{"name": "g1", "deviceName": A10}, {"name": "g2", "deviceName": A10}])
    )
    explanation = explain_pod(pod, nodes)
    assert explanation.pod == "vms/virt-launcher-vm1"
    assert explanation.filter_summary == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 Insufficient nvidia.com/GA102GL_A10."
    )


# --------------------------------------------------------------------------- GPUs by claim

CLAIMS = [
    {"name": "gpus", "resourceClaimTemplateName": "vm1-gpus"},
    {"name": "nic", "resourceClaimName": "shared-nic"},
]


def test_claim_gpus_become_pod_claims_and_container_claims() -> None:
    source = vmi(
        gpus=[
            {"name": "gpu1", "claimName": "gpus", "requestName": "gpu1"},
            {"name": "gpu2", "claimName": "gpus", "requestName": "gpu2"},
        ],
        host_devices=[{"name": "nic", "claimName": "nic", "requestName": "vf"}],
        resourceClaims=CLAIMS,
    )
    pod = render_launcher_pod(source, permitted_host_devices=PERMITTED)
    assert pod["spec"]["resourceClaims"] == CLAIMS
    assert pod["spec"]["resourceClaims"] is not source["spec"]["resourceClaims"]
    resources = compute(pod)
    assert resources["claims"] == [
        {"name": "gpus", "request": "gpu1"},
        {"name": "gpus", "request": "gpu2"},
        {"name": "nic", "request": "vf"},
    ]
    # no extended resource for a claimed device, and no permittedHostDevices check
    assert "limits" not in resources
    assert resources["requests"] == {"memory": "4Gi", "cpu": "2"}


def test_claim_host_devices_beside_device_plugin_gpus() -> None:
    source = vmi(
        gpus=[{"name": "g", "deviceName": A10}],
        host_devices=[{"name": "h", "claimName": "nic", "requestName": "vf"}],
        resourceClaims=CLAIMS[1:],
    )
    resources = compute(render_launcher_pod(source))
    assert resources["limits"] == {A10: "1"}
    assert resources["claims"] == [{"name": "nic", "request": "vf"}]
    assert [d.section for d in claim_devices(source["spec"])] == ["hostDevices"]


def test_a_vmi_without_claims_has_no_claim_fields() -> None:
    pod = render_launcher_pod(vmi(gpus=[{"name": "g", "deviceName": A10}]))
    assert "resourceClaims" not in pod["spec"]
    assert "claims" not in compute(pod)


@pytest.mark.parametrize(
    ("gpus", "claims", "message"),
    [
        (
            [{"name": "g", "claimName": "other", "requestName": "gpu"}],
            CLAIMS,
            "vmi.spec.resourceClaims must specify all claims used in"
            " vmi.spec.domain.devices.gpus and vmi.spec.domain.devices.hostDevices",
        ),
        (
            [
                {"name": "g1", "claimName": "gpus", "requestName": "gpu1"},
                {"name": "g2", "deviceName": A10},
            ],
            CLAIMS,
            "vmi.spec.domain.devices.gpus contains both DRA and non-DRA GPUs; each GPU must be"
            " either DRA or non-DRA",
        ),
        (
            [{"name": "g", "claimName": "gpus"}],
            CLAIMS,
            "spec.domain.devices.gpus[0].requestName: requestName is required for DRA GPU",
        ),
        (
            [
                {"name": "g1", "claimName": "gpus", "requestName": "gpu1"},
                {"name": "g2", "claimName": "gpus", "requestName": "gpu1"},
            ],
            CLAIMS,
            'spec.domain.devices.gpus[1]: duplicate claimName/requestName pair "gpus/gpu1"',
        ),
        (
            [{"name": "g", "deviceName": A10, "claimName": "gpus", "requestName": "gpu1"}],
            CLAIMS,
            "vmi.spec.domain.devices.gpus contains GPUs with both deviceName and claimRequest",
        ),
        (
            [{"name": "g"}],
            [],
            "vmi.spec.domain.devices.gpus contains GPUs without deviceName or claimRequest",
        ),
        (
            [{"name": "g", "claimName": "gpus", "requestName": "gpu1"}],
            [*CLAIMS, CLAIMS[0]],
            'spec.resourceClaims: duplicate resourceClaims name "gpus"',
        ),
    ],
)
def test_vmis_the_admission_webhook_refuses(
    gpus: list[dict[str, Any]], claims: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(VmiRejectedError) as caught:
        render_launcher_pod(vmi(gpus=gpus, resourceClaims=claims))
    assert message in caught.value.problems[0] or message in str(caught.value)
    assert isinstance(caught.value, LauncherError)
