"""Extended-resource names exactly as the device plugins make them.

A passthrough node advertises `nvidia.com/<PCI model name>` (kubevirt-gpu-device-plugin:
the pci.ids device name, upper-cased, `/` `.` and whitespace runs turned into `_`, anything
else outside `[A-Za-z0-9_.]` dropped, the raw device id when the name is unknown). A vGPU
node advertises `nvidia.com/<mdev type name>` with whitespace runs turned into `_` and
nothing else changed. A container node advertises `nvidia.com/gpu`.

Which pci.ids a plugin ships decides the name, so the database is a value: the table gpuop
ships (`PciDatabase.builtin()`, the plugin's current pci.ids) or any pci.ids text the caller
read (`PciDatabase.parse`); reading files is the caller's business.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from gpuop.api.resources import RESOURCE_PREFIX, ResourceKind
from gpuop.catalog import gpu_catalog, vgpu_families
from gpuop.catalog.pci_ids import shipped_pci_ids

NVIDIA_VENDOR_ID = "10de"

_WHITESPACE_RUN = re.compile(r"\s+")
_NOT_NAME_CHAR = re.compile(r"[^A-Za-z0-9_.]")
_DEVICE_ID = re.compile(r"^[0-9a-fA-F]{4}$")
# Kubernetes extended resource name: a DNS-1123 subdomain prefix, `/`, and a qualified name.
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_VGPU_RESOURCE = re.compile(
    r"^nvidia\.com/(NVIDIA|GRID)_[A-Za-z0-9]+(-[A-Za-z]+)*-(\d+-)?\d+[ABCQ](ME|NOME|MEALL|GFX)?$"
)


class NamingError(ValueError):
    """An input that cannot be turned into a name (bad PCI id, empty vGPU type)."""


@dataclass(frozen=True)
class PciDatabase:
    """The NVIDIA section of a pci.ids file: device id -> device name."""

    version: str | None
    devices: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> PciDatabase:
        """Read pci.ids the way kubevirt-gpu-device-plugin does.

        The vendor line is the first line starting with `10de`; device lines follow with
        one TAB; comments are skipped; the section ends at the first line without a TAB.
        """
        version = None
        devices: dict[str, str] = {}
        in_vendor = False
        for line in text.splitlines():
            if version is None and line.startswith("#") and "Version:" in line:
                version = line.split("Version:", 1)[1].strip()
            if not in_vendor:
                if line.startswith(NVIDIA_VENDOR_ID):
                    in_vendor = True
                continue
            if line.startswith("#"):
                continue
            if not line.startswith("\t"):
                break
            if line.startswith("\t\t"):
                continue
            body = line[1:]
            device_id, _, name = body.partition(" ")
            if _DEVICE_ID.match(device_id) and device_id.lower() not in devices:
                devices[device_id.lower()] = name.strip()
        return cls(version=version, devices=devices)

    @classmethod
    def builtin(cls) -> PciDatabase:
        """The table gpuop ships: every NVIDIA device of the plugin's pci.ids (2025.07.11)."""
        return _shipped_database()

    def name_of(self, device_id: str) -> str | None:
        return self.devices.get(device_id.lower())

    def names_a_device(self, resource: str) -> bool:
        """Whether some NVIDIA device of this database is advertised as `resource` by a
        passthrough plugin (KubeVirt's naming or the Kata plugin's)."""
        names = self.__dict__.get("_resources")
        if names is None:
            names = frozenset(
                RESOURCE_PREFIX + normalise(name)
                for name in self.devices.values()
                for normalise in (normalise_pci_name, normalise_pci_name_kata)
            )
            object.__setattr__(self, "_resources", names)  # computed once, on first use
        return resource in names


@cache
def _shipped_database() -> PciDatabase:
    return PciDatabase.parse(shipped_pci_ids())


ECHO_LIMIT = 64
"""The most characters of an input a message quotes back."""


def quoted(text: str, limit: int = ECHO_LIMIT) -> str:
    """`text` quoted for a message, cut to `limit` characters: bad input is not echoed whole."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def parse_pci_id(text: str) -> tuple[str, str]:
    """`10de:2236`, `10DE:2236`, `0x2236` or `2236` -> (`10de`, `2236`)."""
    value = text.strip().lower()
    if ":" in value:
        vendor, _, device = value.partition(":")
    else:
        vendor, device = NVIDIA_VENDOR_ID, value
    vendor = vendor.removeprefix("0x")
    device = device.removeprefix("0x")
    if not (_DEVICE_ID.match(vendor) and _DEVICE_ID.match(device)):
        raise NamingError(f"{quoted(text)} is not a PCI id (expected VVVV:DDDD, e.g. 10de:2236)")
    return vendor, device


def normalise_pci_name(name: str) -> str:
    """Apply kubevirt-gpu-device-plugin's normalisation: `GA102GL [A10]` -> `GA102GL_A10`."""
    value = name.upper().replace("/", "_").replace(".", "_")
    value = _WHITESPACE_RUN.sub("_", value)
    return _NOT_NAME_CHAR.sub("", value)


def normalise_pci_name_kata(name: str) -> str:
    """The Kata sandbox plugin's variant, which keeps `-`: `GA100 [A100-SXM-64GB]`."""
    value = name.upper().replace("/", "_").replace(".", "_")
    value = _WHITESPACE_RUN.sub("_", value)
    return re.sub(r"[^A-Za-z0-9_-]", "", value)


@dataclass(frozen=True)
class PassthroughName:
    """The resource a vfio-bound device is advertised as, and how the name came about."""

    pci_id: str
    pci_name: str | None
    resource: str
    valid: bool
    problem: str | None


def passthrough_resource(device_id: str, database: PciDatabase) -> PassthroughName:
    """The resource name for an NVIDIA device id; the raw id when pci.ids lacks it."""
    _, device = parse_pci_id(device_id)
    pci_name = database.name_of(device)
    suffix = normalise_pci_name(pci_name) if pci_name else device
    resource = RESOURCE_PREFIX + suffix
    problem = resource_name_problem(resource)
    if pci_name is None and problem is None:
        problem = (
            f"device {device} is not in the PCI database"
            f" ({database.version or 'unknown version'}); the plugin falls back to the raw id"
        )
    return PassthroughName(
        pci_id=f"{NVIDIA_VENDOR_ID}:{device}",
        pci_name=pci_name,
        resource=resource,
        valid=resource_name_problem(resource) is None,
        problem=problem,
    )


def vgpu_resource(mdev_type_name: str) -> str:
    """`NVIDIA A10-12Q` -> `nvidia.com/NVIDIA_A10-12Q` (whitespace runs to `_`, nothing else)."""
    value = mdev_type_name.strip("\r\n")
    if not value.strip():
        raise NamingError("empty vGPU type name")
    return RESOURCE_PREFIX + _WHITESPACE_RUN.sub("_", value)


def mdev_type_name(vgpu_type: str) -> str:
    """The mdev type name the driver shows for a vGPU type: `A10-12Q` -> `NVIDIA A10-12Q`."""
    family = vgpu_families().for_type(vgpu_type)
    model = None if family else gpu_catalog().model_for_vgpu_type(vgpu_type)
    prefix = family.mdev_prefix if family else model.vgpu_name_prefix if model else "NVIDIA"
    return f"{prefix} {vgpu_type}"


def vgpu_type_of_resource(resource: str) -> str | None:
    """`nvidia.com/NVIDIA_A10-12Q` -> `A10-12Q` (the vGPU device manager's spelling)."""
    if not _VGPU_RESOURCE.match(resource):
        return None
    return resource.removeprefix(RESOURCE_PREFIX).split("_", 1)[1]


def resource_name_problem(resource: str) -> str | None:
    """Why `resource` is not a valid Kubernetes extended resource name, or None."""
    prefix, slash, name = resource.partition("/")
    if not slash:
        return f"{quoted(resource)} has no domain prefix"
    if len(name) > 63:
        return f"{quoted(resource)}: the name part is longer than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            f"{quoted(resource)}: the name part must start and end with a letter or digit and"
            " contain only letters, digits, '-', '_' and '.'"
        )
    if prefix != "nvidia.com":
        return None
    return None


def classify_resource(resource: str) -> ResourceKind:
    """Which workload config advertises a resource name."""
    if not resource.startswith(RESOURCE_PREFIX):
        return "other"
    name = resource.removeprefix(RESOURCE_PREFIX)
    if name in ("gpu", "gpu.shared") or name.startswith("mig-"):
        return "container"
    if name in ("pgpu", "nvswitch"):
        return "kata"
    if _VGPU_RESOURCE.match(resource):
        return "vgpu"
    if re.fullmatch(r"[0-9a-f]{4}", name) or re.fullmatch(r"[A-Z0-9_]+", name):
        return "passthrough"
    return "other"


def is_gpu_resource(resource: str) -> bool:
    """Whether a resource name is one an NVIDIA device plugin advertises."""
    return classify_resource(resource) != "other"
