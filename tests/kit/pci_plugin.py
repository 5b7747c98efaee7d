"""The KubeVirt GPU device plugin's reading of pci.ids, replayed in Python, and the script
that cuts the shipped NVIDIA table out of a full pci.ids.

The plugin (github.com/kubevirt/kubevirt-gpu-device-plugin, `getDeviceName`) scans to the
`10de` vendor line, then to the first `\t<device id>` line, and upper-cases the name with
`/`, `.` and whitespace runs as `_`. The naming tests hold gpuop's names to this replay.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from gpuop.catalog.pci_ids import shipped_pci_ids

REPO_ROOT = Path(__file__).resolve().parents[2]
DEVICE_IDS = re.findall(r"^\t([0-9a-f]{4})\s", shipped_pci_ids(), flags=re.MULTILINE)

# Go's RE2 `\s` is ASCII whitespace only; re.ASCII gives Python's the same meaning.
_GO_WHITESPACE_RUN = re.compile(r"\s+", re.ASCII)
_GO_NOT_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_.]+")


def plugin_device_name(pci_ids: list[str], device_id: str) -> str:
    """getDeviceName on the lines of a pci.ids: scan to the 10de vendor line, then to `\\t<id>`."""
    nvidia_vendor_found = False
    for line in pci_ids:
        if not nvidia_vendor_found:
            nvidia_vendor_found = line.startswith("10de")
            continue
        if line.startswith("#"):
            continue
        if not line.startswith("\t"):
            break
        if line.startswith("\t" + device_id):
            return _normalised(line[len(device_id) + 1 :])
    return ""


def _normalised(name: str) -> str:
    name = name.strip().upper().replace("/", "_").replace(".", "_")
    name = _GO_WHITESPACE_RUN.sub("_", name)
    return _GO_NOT_NAME_CHARS.sub("", name)


def plugin_device_names(pci_ids: list[str]) -> dict[str, str]:
    """`plugin_device_name` of every device in one scan instead of one scan a device: the
    same walk, keeping the first line of each id (where the plugin's scan stops)."""
    names: dict[str, str] = {}
    nvidia_vendor_found = False
    for line in pci_ids:
        if not nvidia_vendor_found:
            nvidia_vendor_found = line.startswith("10de")
            continue
        if line.startswith("#"):
            continue
        if not line.startswith("\t"):
            break
        names.setdefault(line[1:5], _normalised(line[5:]))
    return names


def plugin_resource(pci_ids: list[str], device_id: str) -> str:
    return "nvidia.com/" + (plugin_device_name(pci_ids, device_id) or device_id)


def plugin_resources(pci_ids: list[str]) -> dict[str, str]:
    """`plugin_resource` of every device in DEVICE_IDS, from one scan."""
    names = plugin_device_names(pci_ids)
    return {device: "nvidia.com/" + (names.get(device) or device) for device in DEVICE_IDS}


def load_script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "pci_ids_nvidia.py"
    spec = importlib.util.spec_from_file_location("pci_ids_nvidia", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
