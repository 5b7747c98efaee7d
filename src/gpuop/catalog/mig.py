"""MIG geometry per GPU model (`mig-profiles.yaml`): profiles, engines and placements.

NVIDIA's DRA driver with DynamicMIG publishes a device for every MIG profile and placement
a card offers, with the profile's engine counts as capacities and its memory slices as
counters. A simulated card has no NVML to ask, so the numbers NVML would report are kept
here as data, per model; this module only loads and types them.
"""

from __future__ import annotations

from functools import cache

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
