"""A VMI that takes its GPUs through a ResourceClaim instead of a device plugin resource.

With KubeVirt's ``GPUsWithDRA`` feature (alpha in v1.6, on by default from v1.9) a
``gpus[]`` entry names a claim and a request of it (``claimName``, ``requestName``,
inlined beside ``name``) instead of a ``deviceName``; the claim is listed in the VMI's
``spec.resourceClaims`` like a pod's, and virt-controller copies it to the launcher pod.
No ``permittedHostDevices`` entry is involved: the DeviceClass decides which devices fit.

:func:`claim_vmi_example` builds the pair to apply: a ResourceClaimTemplate asking for
whole GPUs for passthrough (NVIDIA's ``vfio.gpu.nvidia.com`` DeviceClass, as the DRA
driver's own ``gpu-test-vfiopci.yaml`` demo asks for them) and the VMI that uses it.
"""

from __future__ import annotations

from typing import Any, Final

from gpuop.catalog.dra import dra_catalog

__all__ = [
    "DRA_GATE",
    "DRA_GATE_DEFAULT_ON",
    "RESOURCE_API_VERSION",
    "VFIO_DEVICE_CLASS",
    "claim_vmi_example",
]

VFIO_DEVICE_CLASS: Final = dra_catalog().device_class("vfio.gpu.nvidia.com").name
"""NVIDIA's DRA driver's DeviceClass for whole GPUs bound to vfio-pci (PassthroughSupport)."""

RESOURCE_API_VERSION: Final = dra_catalog().api_version

DRA_GATE: Final = "GPUsWithDRA"
"""The KubeVirt feature gate for ``gpus[]`` entries that name a claim."""

DRA_GATE_DEFAULT_ON: Final = (1, 9, 0)
"""From KubeVirt v1.9 ``GPUsWithDRA`` is on without being listed."""


def claim_vmi_example(
    name: str,
    *,
    count: int = 1,
    memory: str = "8Gi",
    namespace: str | None = None,
    device_class: str = VFIO_DEVICE_CLASS,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(ResourceClaimTemplate, VirtualMachineInstance): a VM with ``count`` GPUs by claim.

    One request per GPU (``gpu1``, ``gpu2``...), each for one device, so that each
    ``gpus[]`` entry names its own request: KubeVirt refuses two entries with the same
    claimName/requestName pair.
    """
    template_name = f"{name}-gpus"
    claim = "gpus"
    requests = [f"gpu{i + 1}" for i in range(count)]
    metadata: dict[str, Any] = {"name": template_name}
    if namespace:
        metadata["namespace"] = namespace
    template = {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": metadata,
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": request, "exactly": {"deviceClassName": device_class}}
                        for request in requests
                    ]
                }
            }
        },
    }
    vmi_metadata: dict[str, Any] = {"name": name}
    if namespace:
        vmi_metadata["namespace"] = namespace
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": vmi_metadata,
        "spec": {
            "resourceClaims": [{"name": claim, "resourceClaimTemplateName": template_name}],
            "domain": {
                "resources": {"requests": {"memory": memory}},
                "devices": {
                    "gpus": [
                        {"name": request, "claimName": claim, "requestName": request}
                        for request in requests
                    ],
                    "disks": [{"name": "rootdisk", "disk": {"bus": "virtio"}}],
                },
            },
            "volumes": [
                {
                    "name": "rootdisk",
                    "containerDisk": {"image": "quay.io/containerdisks/ubuntu:24.04"},
                }
            ],
        },
    }
    return template, vmi
