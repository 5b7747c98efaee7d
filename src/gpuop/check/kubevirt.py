"""KubeVirt wiring: permittedHostDevices, feature gates and VMI device names (GPU5xx).

The three names of a GPU resource must agree exactly: what nodes advertise
(`status.allocatable`), what the KubeVirt CR permits
(`spec.configuration.permittedHostDevices.{pciHostDevices,mediatedDevices,usb}[].resourceName`)
and what VMIs ask for (`spec.domain.devices.{gpus,hostDevices}[].deviceName`). KubeVirt
checks a VMI's names when it renders the launcher pod, and only when
`permittedHostDevices` is set; its refusal reads
`GPU nvidia.com/X is not permitted in permittedHostDevices configuration`.
A `gpus[]` entry that names a ResourceClaim instead (`claimName`, `requestName`:
KubeVirt's `GPUsWithDRA`) has no resource name and needs no permitted entry, only the
feature gate on a KubeVirt before v1.9.

On OpenShift the HyperConverged CR (`hco.kubevirt.io`, `spec.permittedHostDevices`) owns
the KubeVirt CR's settings and overwrites them, so when it is in the input its
permittedHostDevices are the ones checked, and findings about them name it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpuop.api.resources import RESOURCE_PREFIX as NVIDIA_RESOURCE_PREFIX
from gpuop.api.resources import normalised
from gpuop.api.wording import listed
from gpuop.check.context import CheckContext, kind_of
from gpuop.check.model import Report
from gpuop.check.workloads import vmi_devices
from gpuop.kubevirt.permitted import hyperconverged_cr, kubevirt_cr, parse_version
from gpuop.manifests.fields import get, mapping, sequence, text
from gpuop.naming import NamingError, parse_pci_id, passthrough_resource, vgpu_resource

GPU_GATE_GA = (1, 4, 0)
# KubeVirt's gate for gpus[] entries that name a ResourceClaim, on by default from v1.9.
DRA_GATE = "GPUsWithDRA"
DRA_GATE_DEFAULT_ON = (1, 9, 0)
_SECTIONS = ("pciHostDevices", "mediatedDevices", "usb")
_FINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Permitted:
    section: str
    index: int
    resource: str
    selector: str
    external: Any


@dataclass(frozen=True)
class KubeVirtConfig:
    namespace: str
    name: str
    version: tuple[int, int, int] | None
    version_text: str
    gates: frozenset[str]
    permitted: tuple[Permitted, ...] | None
    mdev_configuration_enabled: Any
    kind: str = "KubeVirt"
    # Where permittedHostDevices lives in this CR, for hints.
    permitted_path: str = "spec.configuration.permittedHostDevices"

    @property
    def subject(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def read_permitted(raw: Any) -> tuple[Permitted, ...] | None:
    """The entries of a `permittedHostDevices` block; None when there is none."""
    permitted: tuple[Permitted, ...] | None = None
    if isinstance(raw, Mapping):
        entries = []
        for section in _SECTIONS:
            for index, entry in enumerate(sequence(raw, section)):
                resource = text(entry, "resourceName")
                if not resource:
                    continue
                selector = text(entry, "pciVendorSelector") or text(entry, "mdevNameSelector")
                external = (
                    entry.get("externalResourceProvider") if isinstance(entry, Mapping) else None
                )
                entries.append(Permitted(section, index, resource, selector, external))
        permitted = tuple(entries)
    return permitted


def read_kubevirt(obj: Mapping[str, Any]) -> KubeVirtConfig:
    configuration = mapping(obj, "spec", "configuration")
    version_text = text(obj, "status", "observedKubeVirtVersion") or text(
        obj, "status", "targetKubeVirtVersion"
    )
    gates = frozenset(
        gate
        for gate in sequence(configuration, "developerConfiguration", "featureGates")
        if isinstance(gate, str)
    )
    permitted = read_permitted(configuration.get("permittedHostDevices"))
    return KubeVirtConfig(
        namespace=text(obj, "metadata", "namespace"),
        name=text(obj, "metadata", "name"),
        version=parse_version(version_text) if version_text else None,
        version_text=version_text,
        gates=gates,
        permitted=permitted,
        mdev_configuration_enabled=get(configuration, "mediatedDevicesConfiguration", "enabled"),
    )


def read_hyperconverged(obj: Mapping[str, Any]) -> KubeVirtConfig:
    """OpenShift's HyperConverged CR: `spec.permittedHostDevices`, same shape as KubeVirt's.

    Its feature gates are HCO's own (a map of booleans), not KubeVirt's: only
    `disableMDevConfiguration` is carried over; the other gate checks read the KubeVirt CR
    that HCO writes.
    """
    spec = mapping(obj, "spec")
    disable_mdev = get(spec, "featureGates", "disableMDevConfiguration") is True
    return KubeVirtConfig(
        namespace=text(obj, "metadata", "namespace"),
        name=text(obj, "metadata", "name"),
        version=None,
        version_text="",
        gates=frozenset({"DisableMDEVConfiguration"} if disable_mdev else ()),
        permitted=read_permitted(spec.get("permittedHostDevices")),
        mdev_configuration_enabled=get(spec, "mediatedDevicesConfiguration", "enabled"),
        kind="HyperConverged",
        permitted_path="spec.permittedHostDevices",
    )


def _nodes_text(nodes: Mapping[str, int]) -> str:
    return listed(sorted(nodes), 3)


def check_kubevirt(ctx: CheckContext) -> None:
    advertised = ctx.advertised()
    sandbox = {r: nodes for r, nodes in advertised.items() if kind_of(r) in ("passthrough", "vgpu")}
    vmis = [vmi for vmi in ctx.state.vmis if text(vmi, "status", "phase") not in _FINAL_PHASES]
    hyperconverged = (
        read_hyperconverged(ctx.state.hyperconvergeds[0]) if ctx.state.hyperconvergeds else None
    )
    if not ctx.state.kubevirts and hyperconverged is None:
        if sandbox or vmis:
            ctx.skip(
                "kubevirt",
                "no KubeVirt CR in the input: permittedHostDevices and feature gates not checked",
            )
        return
    config: KubeVirtConfig | None = None
    if ctx.state.kubevirts:
        first, *others = ctx.state.kubevirts
        config = read_kubevirt(first)
        for other in others:
            ctx.add(
                "GPU509",
                "KubeVirt",
                text(other, "metadata", "name"),
                f"another KubeVirt CR ({config.subject}) is the one in use; this one is ignored",
                "keep one KubeVirt CR",
                namespace=text(other, "metadata", "namespace"),
            )
    # HCO overwrites the KubeVirt CR's permittedHostDevices with its own.
    permitting = hyperconverged or config
    assert permitting is not None
    _check_permitted(ctx, permitting, sandbox)
    if config is not None:
        _check_gates(ctx, config, vmis, advertised)
    else:
        ctx.skip(
            "kubevirt-gates",
            "no KubeVirt CR in the input (only the HyperConverged CR): feature gates not checked",
        )
    _check_vmis(ctx, permitting, vmis)


def _add(ctx: CheckContext, config: KubeVirtConfig, code: str, message: str, hint: str) -> None:
    ctx.add(code, config.kind, config.name, message, hint, namespace=config.namespace)


def _check_permitted(
    ctx: CheckContext, config: KubeVirtConfig, sandbox: Mapping[str, Mapping[str, int]]
) -> None:
    if config.permitted is None:
        if sandbox:
            _add(
                ctx,
                config,
                "GPU507",
                "no permittedHostDevices, while nodes advertise "
                + ", ".join(sorted(sandbox))
                + ": KubeVirt makes no check",
                f"list each of them under {config.permitted_path} of the {config.kind} CR"
                " with externalResourceProvider: true",
            )
        return
    names = {entry.resource for entry in config.permitted}
    by_form: dict[str, list[str]] = {}
    for name in names:
        by_form.setdefault(normalised(name), []).append(name)
    for resource, nodes in sorted(sandbox.items()):
        if resource in names:
            continue
        near = sorted(by_form.get(normalised(resource), []))
        if near:
            for permitted in near:
                _add(
                    ctx,
                    config,
                    "GPU502",
                    f"permits {permitted}, but nodes advertise {resource}"
                    f" ({_nodes_text(nodes)}): KubeVirt compares names exactly",
                    f"change resourceName {permitted} to {resource} in {config.permitted_path}"
                    f" of the {config.kind} CR, and request that name in the VMs",
                )
            continue
        section = "mediatedDevices" if kind_of(resource) == "vgpu" else "pciHostDevices"
        _add(
            ctx,
            config,
            "GPU501",
            f"nodes advertise {resource} ({_nodes_text(nodes)}), which permittedHostDevices"
            f" does not list: a VM asking for it fails with `GPU {resource} is not permitted in"
            " permittedHostDevices configuration`",
            f"add {{resourceName: {resource}, externalResourceProvider: true}} to"
            f" {config.permitted_path}.{section} of the {config.kind} CR",
        )
    nvidia_plugin = _nvidia_sandbox_plugin_runs(ctx)
    for entry in config.permitted:
        where = f"permittedHostDevices.{entry.section}[{entry.index}] ({entry.resource})"
        if not _nvidia_entry(entry):
            continue  # another provider's device (KubeVirt's own plugin, Intel, ...)
        if entry.external is not True and nvidia_plugin:
            shown = "absent" if entry.external is None else repr(entry.external)
            _add(
                ctx,
                config,
                "GPU503",
                f"{where}: externalResourceProvider is {shown}, so KubeVirt runs its own device"
                " plugin for a resource NVIDIA's plugin provides",
                f"set externalResourceProvider: true on {where}",
            )
        expected = _selector_resource(ctx, entry)
        if expected is not None and expected != entry.resource:
            _add(
                ctx,
                config,
                "GPU508",
                f"{where}: selector {entry.selector!r} is advertised by the NVIDIA plugin as"
                f" {expected}, not {entry.resource}",
                f"set resourceName to {expected}",
            )


def _nvidia_sandbox_plugin_runs(ctx: CheckContext) -> bool:
    """Whether NVIDIA's sandbox (KubeVirt GPU) plugin serves any node: the GPU Operator's,
    or NVIDIA's KubeVirt plugin installed alone. Without it, KubeVirt's own plugin is the
    one that serves the devices, as its permittedHostDevices say."""
    return not ctx.management or any(
        m.operator or "nvidia-kubevirt-gpu-device-plugin" in m.managers
        for m in ctx.management.values()
    )


def _nvidia_entry(entry: Permitted) -> bool:
    """Whether an entry is for a resource NVIDIA's sandbox device plugin advertises."""
    return entry.section != "usb" and entry.resource.startswith(NVIDIA_RESOURCE_PREFIX)


def _selector_resource(ctx: CheckContext, entry: Permitted) -> str | None:
    if not entry.selector:
        return None
    if entry.section == "pciHostDevices":
        try:
            vendor, device = parse_pci_id(entry.selector)
        except NamingError:
            return None
        if vendor != "10de":
            return None
        name = passthrough_resource(device, ctx.pci_db)
        return name.resource if name.pci_name is not None else None
    if entry.section == "mediatedDevices":
        try:
            return vgpu_resource(entry.selector)
        except ValueError:
            return None
    return None


def _vmi_subject(vmi: Mapping[str, Any]) -> str:
    namespace = text(vmi, "metadata", "namespace")
    name = text(vmi, "metadata", "name")
    return f"{namespace}/{name}" if namespace else name


def _check_gates(
    ctx: CheckContext,
    config: KubeVirtConfig,
    vmis: Sequence[Mapping[str, Any]],
    advertised: Mapping[str, Mapping[str, int]],
) -> None:
    host = [vmi for vmi in vmis if any(s == "hostDevices" for s, _ in vmi_devices(vmi))]
    gpus = [vmi for vmi in vmis if any(s == "gpus" for s, _ in vmi_devices(vmi))]
    if host and "HostDevices" not in config.gates:
        shown = ", ".join(_vmi_subject(vmi) for vmi in host[:3])
        _add(
            ctx,
            config,
            "GPU504",
            f"the HostDevices feature gate is off, but VMIs use hostDevices ({shown}): they are"
            " refused with `Host Devices feature gate is not enabled in kubevirt-config`",
            "add HostDevices to spec.configuration.developerConfiguration.featureGates",
        )
    if gpus and "GPU" not in config.gates:
        if config.version is None:
            ctx.skip(
                "kubevirt-gpu-gate",
                "the KubeVirt version is unknown (no status.observedKubeVirtVersion): whether"
                " the GPU gate is needed (before v1.4) was not checked",
            )
        elif config.version < GPU_GATE_GA:
            shown = ", ".join(_vmi_subject(vmi) for vmi in gpus[:3])
            _add(
                ctx,
                config,
                "GPU504",
                f"KubeVirt {config.version_text} needs the GPU feature gate for gpus[], but it is"
                f" off and VMIs use gpus ({shown}): `GPU feature gate is not enabled in"
                " kubevirt-config`",
                "add GPU to spec.configuration.developerConfiguration.featureGates, or upgrade"
                " KubeVirt to v1.4 or later",
            )
    _check_dra_gate(ctx, config, vmis)
    # Only the GPU Operator's vGPU device manager makes mdevs KubeVirt would fight over.
    operator_nodes = {name for name, m in ctx.management.items() if m.operator}
    vgpu_nodes = sorted(
        info.name
        for info in ctx.nodes
        if info.plan is not None
        and info.plan.gpu_node
        and info.plan.workload.config == "vm-vgpu"
        and info.name in operator_nodes
    )
    if not vgpu_nodes:
        vgpu_nodes = sorted(
            {
                node
                for r, nodes in advertised.items()
                if kind_of(r) == "vgpu"
                for node in nodes
                if node in operator_nodes
            }
        )
    disabled = (
        "DisableMDEVConfiguration" in config.gates or config.mdev_configuration_enabled is False
    )
    if vgpu_nodes and not disabled:
        modern = config.version is not None and config.version >= (1, 8, 0)
        fix = (
            "set spec.configuration.mediatedDevicesConfiguration.enabled: false"
            if modern
            else "add DisableMDEVConfiguration to"
            " spec.configuration.developerConfiguration.featureGates (or, from KubeVirt v1.8,"
            " set mediatedDevicesConfiguration.enabled: false)"
        )
        shown = listed(vgpu_nodes, 3)
        _add(
            ctx,
            config,
            "GPU505",
            f"vm-vgpu nodes ({shown}) have their mdev devices made by the vGPU device manager,"
            " but KubeVirt still manages mediated devices too",
            fix,
        )


def claim_gpus(vmi: Mapping[str, Any]) -> int:
    """How many `gpus[]` entries name a claim (`claimName`/`requestName`, no `deviceName`)."""
    return sum(
        1
        for entry in sequence(vmi, "spec", "domain", "devices", "gpus")
        if isinstance(entry, Mapping)
        and not text(entry, "deviceName")
        and (entry.get("claimName") is not None or entry.get("requestName") is not None)
    )


def _check_dra_gate(
    ctx: CheckContext, config: KubeVirtConfig, vmis: Sequence[Mapping[str, Any]]
) -> None:
    """GPUs by claim need `GPUsWithDRA` before v1.9; they never need permittedHostDevices."""
    users = [vmi for vmi in vmis if claim_gpus(vmi)]
    if not users or DRA_GATE in config.gates:
        return
    if config.version is None:
        ctx.skip(
            "kubevirt-dra-gate",
            "the KubeVirt version is unknown (no status.observedKubeVirtVersion): whether"
            f" VMIs' claim GPUs need the {DRA_GATE} gate (before v1.9) was not checked",
        )
        return
    if config.version >= DRA_GATE_DEFAULT_ON:
        return
    shown = ", ".join(_vmi_subject(vmi) for vmi in users[:3])
    _add(
        ctx,
        config,
        "GPU504",
        f"KubeVirt {config.version_text} needs the {DRA_GATE} feature gate for gpus that name"
        f" a claim, but it is off and VMIs use them ({shown}): `vmi.spec.domain.devices.gpus"
        " contains DRA enabled GPUs but feature gate is not enabled`",
        f"add {DRA_GATE} to spec.configuration.developerConfiguration.featureGates, or"
        " upgrade KubeVirt to v1.9 or later",
    )


def _check_vmis(
    ctx: CheckContext, config: KubeVirtConfig, vmis: Sequence[Mapping[str, Any]]
) -> None:
    if config.permitted is None:
        return
    names = {entry.resource for entry in config.permitted}
    for vmi in vmis:
        refused = []
        for section, device in vmi_devices(vmi):
            if device in names:
                continue
            what = "GPU" if section == "gpus" else "HostDevice"
            refused.append(
                f"{what} {device} is not permitted in permittedHostDevices configuration"
            )
        if not refused:
            continue
        phase = text(vmi, "status", "phase")
        state = (
            "its next launcher pod (restart, migration) will not be created"
            if phase in ("Running", "Scheduled")
            else "no launcher pod is created and it stays Pending"
        )
        ctx.add(
            "GPU506",
            "VirtualMachineInstance",
            text(vmi, "metadata", "name"),
            "failed to render launch manifest: " + " ".join(refused) + f" ({state})",
            f"permit the device in {config.kind} {config.subject} (permittedHostDevices), or"
            " change the VMI's deviceName to a permitted one",
            namespace=text(vmi, "metadata", "namespace"),
            node=text(vmi, "status", "nodeName") or None,
        )


#: Findings of `gpuop check` that are about KubeVirt's wiring.
_CHECK_CODES: Final = frozenset({"GPU004"})


def kubevirt_report(report: Report) -> Report:
    """Only the KubeVirt part of a `gpuop check` report (GPU5xx, and VMIs' GPU601)."""
    findings = tuple(
        f
        for f in report.findings
        if f.code.startswith("GPU5")
        or f.code in _CHECK_CODES
        or (f.kind == "VirtualMachineInstance" and f.code == "GPU601")
    )
    skipped = tuple(s for s in report.skipped if s.check.startswith("kubevirt"))
    return Report(findings, skipped, report.policy, report.objects, report.nodes)


def kubevirt_check_header(objects: Sequence[Mapping[str, Any]]) -> str:
    """The first line of `gpuop kubevirt check`: the CRs, nodes and VMIs it read."""
    nodes = sum(1 for obj in objects if obj.get("kind") == "Node")
    vmis = sum(1 for obj in objects if obj.get("kind") == "VirtualMachineInstance")
    cr = kubevirt_cr(objects)
    if cr is None:
        which = "no KubeVirt CR"
    else:
        config = read_kubevirt(cr)
        which = f"KubeVirt {config.subject}" + (
            f" ({config.version_text})" if config.version_text else ""
        )
    hco = hyperconverged_cr(objects)
    if hco is not None:
        which += f", HyperConverged {read_hyperconverged(hco).subject} (its permittedHostDevices)"
    return f"gpuop kubevirt check: {which}, {nodes} node(s), {vmis} VMI(s)\n"


__all__ = [
    "KubeVirtConfig",
    "Permitted",
    "check_kubevirt",
    "claim_gpus",
    "kubevirt_check_header",
    "kubevirt_report",
    "parse_version",
    "read_hyperconverged",
    "read_kubevirt",
    "read_permitted",
]
