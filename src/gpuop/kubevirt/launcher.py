"""The virt-launcher pod a VMI turns into, as far as scheduling can tell.

KubeVirt does not schedule VMs itself: virt-controller renders a
``virt-launcher`` pod for each VirtualMachineInstance and kube-scheduler
places that pod.  :func:`render_launcher_pod` builds the parts of that pod
the scheduler reads (``pkg/virt-controller/services/template.go`` and
``renderresources.go``), so a VMI or VM can be explained as a pod:

* the ``compute`` container gets, for each ``spec.domain.devices.gpus[]``
  and ``hostDevices[]`` entry that has a ``deviceName``, one more of that
  resource in both ``limits`` and ``requests`` (two entries naming the same
  resource ask for 2);
* cpu and memory requests and limits come from ``spec.domain.resources``;
  with no memory request, the guest memory (``spec.domain.memory.guest``)
  is requested instead;
* ``nodeSelector`` is the VMI's plus ``kubevirt.io/schedulable: "true"``,
  the label virt-handler puts on nodes it serves;
* ``affinity``, ``tolerations``, ``priorityClassName``, ``schedulerName``
  and the labels are carried over.

Not reproduced: virt-launcher's own memory overhead (a few hundred MiB that
virt-controller adds to the memory request, depending on the VM; pass
``memory_overhead`` to include an estimate), hook sidecars, CPU-model and
Hyper-V node selectors, and ``claimRequest`` (DRA) devices.

When the KubeVirt CR's ``permittedHostDevices`` is given, every device
must be listed there, or rendering fails as virt-controller's does, with
:class:`DeviceNotPermittedError` carrying its exact message.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from gpuop.api.labels import (
    KUBEVIRT_CREATED_BY_LABEL,
    KUBEVIRT_DOMAIN_ANNOTATION,
    KUBEVIRT_LABEL,
    KUBEVIRT_SCHEDULABLE_LABEL,
)
from gpuop.manifests import QuantityError, format_quantity, parse_quantity
from gpuop.manifests.fields import mapping, sequence, text

__all__ = [
    "DeviceNotPermittedError",
    "LauncherError",
    "UnsupportedKindError",
    "render_launcher_pod",
    "schedulable_pod",
]

_VMI_KINDS: Final = ("VirtualMachineInstance", "VirtualMachine")


class LauncherError(ValueError):
    """A manifest that cannot be turned into a launcher pod."""


class UnsupportedKindError(LauncherError):
    """The manifest is not of a kind that can be turned into a pod to schedule."""

    def __init__(
        self,
        kind: str,
        name: str,
        accepted: tuple[str, ...] = ("Pod", "VirtualMachineInstance", "VirtualMachine"),
    ) -> None:
        self.kind = kind
        self.name = name
        self.accepted = accepted
        shown = f"{kind or 'an object without a kind'}" + (f" {name!r}" if name else "")
        kinds = (
            ", ".join(accepted[:-1]) + f" or {accepted[-1]}" if len(accepted) > 1 else accepted[0]
        )
        super().__init__(f"{shown} is not a {kinds}")


class DeviceNotPermittedError(LauncherError):
    """A device name missing from ``permittedHostDevices``.

    ``message`` is virt-controller's: ``GPU <name> is not permitted in
    permittedHostDevices configuration`` (``HostDevice`` for host
    devices), several joined by spaces.  ``condition_message`` is what the
    VMI's ``Synchronized=False`` condition then says.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        self.message = " ".join(problems)
        self.condition_message = f"failed to render launch manifest: {self.message}"
        super().__init__(self.message)


def _permitted_names(permitted: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for section in ("pciHostDevices", "mediatedDevices", "usb"):
        names.update(text(entry, "resourceName") for entry in sequence(permitted, section))
    return names


def _check_permitted(devices: list[tuple[str, str]], permitted: Mapping[str, Any]) -> None:
    allowed = _permitted_names(permitted)
    problems = [
        f"{'GPU' if kind == 'gpu' else 'HostDevice'} {name} is not permitted in "
        "permittedHostDevices configuration"
        for kind, name in devices
        if name not in allowed
    ]
    if problems:
        raise DeviceNotPermittedError(problems)


def _vmi_parts(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(metadata, spec) of the VMI, reading a VM's template."""
    if obj.get("kind") == "VirtualMachine":
        template = mapping(obj, "spec", "template")
        meta = dict(mapping(template, "metadata"))
        meta.setdefault("name", text(obj, "metadata", "name"))
        meta.setdefault("namespace", text(obj, "metadata", "namespace"))
        return meta, mapping(template, "spec")
    return mapping(obj, "metadata"), mapping(obj, "spec")


def _quantities(raw: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {name: raw[name] for name in names if name in raw}


def render_launcher_pod(
    vmi: Mapping[str, Any],
    *,
    permitted_host_devices: Mapping[str, Any] | None = None,
    memory_overhead: str | None = None,
) -> dict[str, Any]:
    """The launcher pod for a VirtualMachineInstance (or a VirtualMachine's template).

    ``permitted_host_devices`` is the KubeVirt CR's
    ``spec.configuration.permittedHostDevices``; None skips the check, as
    KubeVirt does when that field is absent.  ``memory_overhead`` (a
    quantity) is added to the memory request.
    """
    kind = text(vmi, "kind")
    if kind not in _VMI_KINDS:
        raise UnsupportedKindError(kind, text(vmi, "metadata", "name"), _VMI_KINDS)
    meta, spec = _vmi_parts(vmi)
    name = text(meta, "name")
    domain = mapping(spec, "domain")

    devices: list[tuple[str, str]] = []
    for kind_name, section in (("gpu", "gpus"), ("hostdevice", "hostDevices")):
        for entry in sequence(domain, "devices", section):
            device = text(entry, "deviceName")
            if device:
                devices.append((kind_name, device))
    if permitted_host_devices is not None:
        _check_permitted(devices, permitted_host_devices)

    resources = mapping(domain, "resources")
    requests: dict[str, Any] = _quantities(mapping(resources, "requests"), ("cpu", "memory"))
    limits: dict[str, Any] = _quantities(mapping(resources, "limits"), ("cpu", "memory"))
    guest = mapping(domain, "memory").get("guest")
    if "memory" not in requests and guest is not None:
        requests["memory"] = guest
    if memory_overhead is not None:
        try:
            base = parse_quantity(requests.get("memory", 0))
            requests["memory"] = format_quantity(
                base + parse_quantity(memory_overhead), binary=True
            )
        except QuantityError as exc:
            raise LauncherError(f"VMI {name}: memory: {exc}") from exc

    counts: dict[str, int] = {}
    for _, device in devices:
        counts[device] = counts.get(device, 0) + 1
    for device, count in counts.items():
        for target in (requests, limits):
            current = target.get(device, 0)
            try:
                total = parse_quantity(current) + Decimal(count)
            except QuantityError as exc:
                raise LauncherError(f"VMI {name}: {device}: {exc}") from exc
            target[device] = format_quantity(total)

    labels = {str(k): v for k, v in mapping(meta, "labels").items()}
    labels[KUBEVIRT_LABEL] = "virt-launcher"
    uid = text(meta, "uid")
    if uid:
        labels[KUBEVIRT_CREATED_BY_LABEL] = uid
    node_selector = {str(k): v for k, v in mapping(spec, "nodeSelector").items()}
    node_selector[KUBEVIRT_SCHEDULABLE_LABEL] = "true"

    pod_spec: dict[str, Any] = {
        "nodeSelector": node_selector,
        "containers": [
            {
                "name": "compute",
                "resources": {
                    key: value
                    for key, value in (("requests", requests), ("limits", limits))
                    if value
                },
            }
        ],
    }
    for field_name in ("affinity", "tolerations", "priorityClassName", "schedulerName"):
        if spec.get(field_name) is not None:
            pod_spec[field_name] = copy.deepcopy(spec[field_name])

    metadata: dict[str, Any] = {"name": f"virt-launcher-{name}", "labels": labels}
    namespace = text(meta, "namespace")
    if namespace:
        metadata["namespace"] = namespace
    metadata["annotations"] = {KUBEVIRT_DOMAIN_ANNOTATION: name}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": pod_spec}


def schedulable_pod(
    obj: Mapping[str, Any],
    *,
    permitted_host_devices: Mapping[str, Any] | None = None,
    memory_overhead: str | None = None,
) -> dict[str, Any]:
    """The pod to explain for ``obj``: a Pod as is, a VMI or VM as its launcher.

    The keyword arguments are :func:`render_launcher_pod`'s.  Any other
    kind raises :class:`UnsupportedKindError`.
    """
    kind = text(obj, "kind")
    if kind == "Pod":
        return copy.deepcopy(dict(obj))
    if kind not in _VMI_KINDS:
        raise UnsupportedKindError(kind, text(obj, "metadata", "name"))
    return render_launcher_pod(
        obj, permitted_host_devices=permitted_host_devices, memory_overhead=memory_overhead
    )
