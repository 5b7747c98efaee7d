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
* an entry that names a claim instead (``claimName`` and ``requestName``
  beside ``name``: KubeVirt's ``GPUsWithDRA`` / ``HostDevicesWithDRA``)
  asks for no extended resource: the pod gets the VMI's
  ``spec.resourceClaims`` as they are, and the ``compute`` container one
  ``resources.claims`` entry ``{name: claimName, request: requestName}``
  per such device (``WithGPUsDRA``, ``WithHostDevicesDRA``); a VMI
  KubeVirt's admission refuses (a claim not in ``spec.resourceClaims``,
  DRA and device-plugin GPUs mixed, both ``deviceName`` and a claim)
  raises :class:`VmiRejectedError` with the webhook's message;
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
Hyper-V node selectors.

When the KubeVirt CR's ``permittedHostDevices`` is given, every device
must be listed there, or rendering fails as virt-controller's does, with
:class:`DeviceNotPermittedError` carrying its exact message.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
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
    "VmiRejectedError",
    "claim_devices",
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


class VmiRejectedError(LauncherError):
    """A VMI KubeVirt's admission webhook refuses (its DRA device entries).

    ``problems`` are the webhook's messages, each after the field it names.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class ClaimDevice:
    """A ``gpus[]`` or ``hostDevices[]`` entry that takes its device through a claim."""

    section: str
    index: int
    name: str
    claim: str
    request: str


_DRA_SECTIONS: Final = (("gpus", "GPU"), ("hostDevices", "HostDevice"))


def _is_claim_entry(entry: Any) -> bool:
    """KubeVirt's ``IsGPUDRA``: no deviceName, and claimName or requestName set."""
    if not isinstance(entry, Mapping) or text(entry, "deviceName"):
        return False
    return entry.get("claimName") is not None or entry.get("requestName") is not None


def claim_devices(spec: Mapping[str, Any]) -> list[ClaimDevice]:
    """The DRA device entries of a VMI spec, checked as KubeVirt's admission checks them.

    Raises :class:`VmiRejectedError` with the webhook's messages (``pkg/virt-api/webhooks/
    validating-webhook/admitters/dra``) for a VMI it would refuse.
    """
    problems: list[str] = []
    found: list[ClaimDevice] = []
    claim_names = [text(rc, "name") for rc in sequence(spec, "resourceClaims")]
    for name in sorted({n for n in claim_names if claim_names.count(n) > 1}):
        problems.append(f'spec.resourceClaims: duplicate resourceClaims name "{name}"')
    for section, what in _DRA_SECTIONS:
        field_path = f"spec.domain.devices.{section}"
        entries = sequence(spec, "domain", "devices", section)
        for index, entry in enumerate(entries):
            if isinstance(entry, Mapping) and isinstance(entry.get("claimRequest"), Mapping):
                problems.append(
                    f"{field_path}[{index}]: claimRequest is not a KubeVirt field; claimName"
                    " and requestName sit beside name (the API inlines them)"
                )
        claim_entries = [(i, e) for i, e in enumerate(entries) if _is_claim_entry(e)]
        others = [e for e in entries if not _is_claim_entry(e)]
        if section == "gpus" and claim_entries and others:
            problems.append(
                "vmi.spec.domain.devices.gpus contains both DRA and non-DRA GPUs;"
                " each GPU must be either DRA or non-DRA"
            )
            continue
        for entry in others:
            if not text(entry, "deviceName") and not isinstance(
                mapping(entry).get("claimRequest"), Mapping
            ):
                problems.append(
                    f"vmi.spec.domain.devices.{section} contains {what}s without"
                    f" deviceName or claimRequest; each {what} must specify either a deviceName"
                    " or a claimRequest"
                )
            elif text(entry, "deviceName") and (
                mapping(entry).get("claimName") is not None
                or mapping(entry).get("requestName") is not None
            ):
                problems.append(
                    f"vmi.spec.domain.devices.{section} contains {what}s with both"
                    " deviceName and claimRequest"
                )
        pairs: set[tuple[str, str]] = set()
        for index, entry in claim_entries:
            claim, request = text(entry, "claimName"), text(entry, "requestName")
            if not claim:
                problems.append(
                    f"{field_path}[{index}].claimName: claimName is required for DRA {what}"
                )
            if not request:
                problems.append(
                    f"{field_path}[{index}].requestName: requestName is required for DRA {what}"
                )
            if not claim or not request:
                continue
            if (claim, request) in pairs:
                problems.append(
                    f"{field_path}[{index}]: duplicate claimName/requestName pair"
                    f' "{claim}/{request}"'
                )
            pairs.add((claim, request))
            found.append(ClaimDevice(section, index, text(entry, "name"), claim, request))
    if any(device.claim not in claim_names for device in found):
        problems.append(
            "vmi.spec.resourceClaims must specify all claims used in"
            " vmi.spec.domain.devices.gpus and vmi.spec.domain.devices.hostDevices"
        )
    if problems:
        raise VmiRejectedError(problems)
    return found


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
    claimed = claim_devices(spec)

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

    container_resources: dict[str, Any] = {
        key: value for key, value in (("requests", requests), ("limits", limits)) if value
    }
    if claimed:
        container_resources["claims"] = [
            {"name": device.claim, "request": device.request} for device in claimed
        ]
    pod_spec: dict[str, Any] = {
        "nodeSelector": node_selector,
        "containers": [{"name": "compute", "resources": container_resources}],
    }
    if sequence(spec, "resourceClaims"):
        pod_spec["resourceClaims"] = copy.deepcopy(list(sequence(spec, "resourceClaims")))
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
