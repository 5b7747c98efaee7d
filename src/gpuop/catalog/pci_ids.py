"""The pci.ids names gpuop ships: the NVIDIA section the KubeVirt GPU device plugin reads.

A passthrough resource name is the device's pci.ids name, so it depends on which pci.ids
the plugin's image carries, not on the host's (Debian's is years older and names the
newer cards differently or not at all). The file beside this module is the NVIDIA
section of the copy in the plugin's current default image, with its provenance and
licence (BSD-3-Clause) in its header; `scripts/pci_ids_nvidia.py` regenerates it.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

SHIPPED_PCI_IDS_VERSION = "2025.07.11"
SHIPPED_PCI_IDS_FILE = f"pci-ids-nvidia-{SHIPPED_PCI_IDS_VERSION}.ids"


@cache
def shipped_pci_ids() -> str:
    """The text of the shipped table (pci.ids format, NVIDIA vendor section only)."""
    shipped = resources.files("gpuop.catalog").joinpath(SHIPPED_PCI_IDS_FILE)
    return shipped.read_text(encoding="utf-8")
