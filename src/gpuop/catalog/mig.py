"""MIG geometry per GPU model (`mig-profiles.yaml`): profiles, engines and placements.

NVIDIA's DRA driver with DynamicMIG publishes a device for every MIG profile and placement
a card offers, with the profile's engine counts as capacities and its memory slices as
counters. A simulated card has no NVML to ask, so the numbers NVML would report are kept
here as data, per model; this module only loads and types them.

How many instances of one profile fill a card is read from mig-parted's default layouts
(`mig-parted-config.yaml`, the `all-<profile>` entries), per PCI device id.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from gpuop.catalog import CatalogModel, load_data_file


class MigProfileSpec(CatalogModel):
    """One GPU instance profile as NVML describes it, with its possible placements."""

    name: str
    id: int
    multiprocessors: int
    copy_engines: int
    decoders: int
    encoders: int
    jpeg_engines: int
    ofa_engines: int
    memory_mib: int
    size: int
    placements: tuple[int, ...]


class MigCatalog(CatalogModel):
    schema_version: int
    models: dict[str, tuple[MigProfileSpec, ...]]

    def profiles(self, model: str) -> tuple[MigProfileSpec, ...]:
        """The model's MIG profiles (empty for a model without MIG geometry)."""
        wanted = model.strip().lower()
        for name, profiles in self.models.items():
            if name.lower() == wanted:
                return profiles
        return ()


@cache
def mig_catalog() -> MigCatalog:
    """The MIG geometry from `mig-profiles.yaml`."""
    return MigCatalog.model_validate(load_data_file("mig-profiles.yaml"))


@cache
def _mig_parted_layouts() -> dict[str, Any]:
    document = load_data_file("mig-parted-config.yaml")
    configs = document.get("mig-configs") if isinstance(document, dict) else None
    return configs if isinstance(configs, dict) else {}


def instances_filling_a_card(device_filter: str, profile: str) -> int | None:
    """How many `profile` instances mig-parted's `all-<profile>` layout makes on a card of
    the PCI device (`0x20B010DE`, device then vendor, as its device-filter spells it);
    None when no layout is for that card."""
    entries = _mig_parted_layouts().get(f"all-{profile}")
    if not isinstance(entries, list):
        return None
    wanted = device_filter.upper()
    generic = None
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        devices = entry.get("mig-devices")
        count = devices.get(profile) if isinstance(devices, dict) else None
        if not isinstance(count, int):
            continue
        filters = entry.get("device-filter")
        if filters is None:
            generic = count
        elif wanted in {
            str(f).upper() for f in (filters if isinstance(filters, list) else [filters])
        }:
            return count
    return generic
