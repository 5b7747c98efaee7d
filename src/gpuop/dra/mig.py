"""MIG partitions as NVIDIA's DRA driver publishes them with its DynamicMIG feature.

Why this module exists: a MIG-capable card offers, besides itself, one abstract device per
MIG profile and placement, and all of them share the card through one counter set
(KEP-4815 partitionable devices). The names, capacities and counters follow the driver
exactly (cmd/gpu-kubelet-plugin: mig.go `ToCanonicalName`, `CommonCapacitiesMig`,
`CommonAttributesMig`; partitions.go `PartSharedCounterSets`, `PartConsumesCounters`;
nvlib.go `inspectMigProfilesAndPlacements`):

- device `gpu-<minor>-mig-<profile>-<profile id>-<placement start>`, the profile name
  lower-cased without dots and with anything outside `[a-z0-9-]` a dash
  (`1g.5gb+me` -> `1g5gb-me`);
- capacities `multiprocessors`, `copyEngines`, `decoders`, `encoders`, `jpegEngines`,
  `ofaEngines` and `memory` (bytes) of the profile;
- counter set `gpu-<minor>-counter-set`: one counter per capacity, named in DNS style
  (`copy-engines`), at the largest value any profile has, plus `memory-slice-<i>` (1) for
  every memory slice (the largest placement's size);
- a partition consumes its capacities and the memory slices its placement covers; the
  full GPU consumes everything, so one partition blocks the card and the card blocks all.

This module computes the geometry in integers; gpuop.dra.publish writes the manifests.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpuop.catalog.mig import MigProfileSpec

CAPACITY_NAMES = (
    "multiprocessors",
    "copyEngines",
    "decoders",
    "encoders",
    "jpegEngines",
    "ofaEngines",
    "memory",
)
_NOT_DNS = re.compile(r"[^a-z0-9-.]")
_LOWER_UPPER = re.compile(r"([a-z0-9])([A-Z])")
_UPPER_RUN = re.compile(r"([A-Z]+)([A-Z][a-z])")


def rfc1123(name: str) -> str:
    """The driver's toRFC1123Compliant: lower case, odd characters dashes, no edge dashes."""
    return _NOT_DNS.sub("-", name.lower()).strip("-").removesuffix(".")[:253]


def counter_name(capacity: str) -> str:
    """A capacity's counter name, as the driver's camelToDNSName writes it."""
    return rfc1123(_UPPER_RUN.sub(r"\1-\2", _LOWER_UPPER.sub(r"\1-\2", capacity)))


def memory_slice_counter(index: int) -> str:
    return f"memory-slice-{index}"


def device_name(minor: int, profile: MigProfileSpec, start: int) -> str:
    """MigSpecTuple.ToCanonicalName."""
    return f"gpu-{minor}-mig-{rfc1123(profile.name.replace('.', ''))}-{profile.id}-{start}"


def capacities(profile: MigProfileSpec) -> dict[str, int]:
    """CommonCapacitiesMig: the profile's engines and its memory in bytes."""
    values = (
        profile.multiprocessors,
        profile.copy_engines,
        profile.decoders,
        profile.encoders,
        profile.jpeg_engines,
        profile.ofa_engines,
        profile.memory_mib << 20,
    )
    return dict(zip(CAPACITY_NAMES, values, strict=True))


def max_capacities(profiles: Sequence[MigProfileSpec]) -> dict[str, int]:
    """Per capacity, the largest value over all profiles (the full GPU's capacity)."""
    return {name: max(capacities(p)[name] for p in profiles) for name in CAPACITY_NAMES}


def memory_slice_count(profiles: Sequence[MigProfileSpec]) -> int:
    """The largest placement's size: the driver assumes the largest profile covers all."""
    return max(p.size for p in profiles)


def counters(capacity: dict[str, int], start: int, size: int) -> dict[str, int]:
    """Counters for `capacity` plus one per memory slice in [start, start + size)."""
    found = {counter_name(name): value for name, value in capacity.items()}
    found.update({memory_slice_counter(i): 1 for i in range(start, start + size)})
    return found


def whole_card(profiles: Sequence[MigProfileSpec]) -> dict[str, int]:
    """The card's counter set, and what the full GPU (or anything taking it all) consumes."""
    return counters(max_capacities(profiles), 0, memory_slice_count(profiles))


def placements(profiles: Sequence[MigProfileSpec]) -> list[tuple[MigProfileSpec, int]]:
    """Every (profile, placement start) the driver publishes a device for."""
    return [(p, start) for p in profiles for start in p.placements]


__all__ = [
    "CAPACITY_NAMES",
    "capacities",
    "counter_name",
    "counters",
    "device_name",
    "max_capacities",
    "memory_slice_count",
    "memory_slice_counter",
    "placements",
    "rfc1123",
    "whole_card",
]
