"""vGPU device configs: parse them, and work out what applying one to a node's cards gives.

The format is the vGPU device manager's (`version: v1`, named `vgpu-configs`, entries with
`device-filter`, `devices` and `vgpu-devices`). `apply_vgpu_config` plays its apply loop
on an inventory of cards: which entry reaches which card, which types each card gets, and
the extended resources the sandbox device plugin will then advertise (two A10s with
`A10-12Q` give `nvidia.com/NVIDIA_A10-12Q: 4`). Infeasible configs come back as errors
with a message, the way the device manager fails with `nvidia.com/vgpu.config.state=failed`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuop.api.wording import value_kind
from gpuop.catalog import GpuModel, gpu_catalog, vgpu_families
from gpuop.naming import mdev_type_name, vgpu_resource

DEFAULT_CONFIG_NAME = "default"

_TIME_SLICED = re.compile(r"^[A-Z0-9]+(-[A-Za-z]+)*-(0|[1-9][0-9]*)[ABCQ]$")
_MIG_BACKED = re.compile(
    r"^[A-Z0-9]+(-[A-Za-z]+)*-[1-9][0-9]*-[1-9][0-9]*[ABCQ](ME|NOME|MEALL|GFX)?$"
)
_DEVICE_FILTER = re.compile(
    r"^0x([0-9a-fA-F]{4})([0-9a-fA-F]{4})(:0x([0-9a-fA-F]{4})([0-9a-fA-F]{4}))?$"
)


class VgpuConfigError(ValueError):
    """A vGPU config file that does not parse; `problems` name each path."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def vgpu_type_kind(name: str) -> Literal["time-sliced", "mig-backed"] | None:
    if _TIME_SLICED.match(name):
        return "time-sliced"
    if _MIG_BACKED.match(name):
        return "mig-backed"
    return None


class VgpuConfigEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    device_filter: str | list[str] | None = Field(default=None, alias="device-filter")
    devices: Literal["all"] | list[Annotated[int, Field(ge=0)]]
    vgpu_devices: dict[str, Annotated[int, Field(gt=0)]] = Field(alias="vgpu-devices")

    @field_validator("device_filter")
    @classmethod
    def _check_filter(cls, value: str | list[str] | None) -> str | list[str] | None:
        for item in [value] if isinstance(value, str) else value or []:
            if not _DEVICE_FILTER.match(item):
                raise ValueError(
                    f"{item!r} is not a device filter (expected 0xDDDDVVVV, e.g. 0x223610DE)"
                )
        return value

    @field_validator("vgpu_devices")
    @classmethod
    def _check_types(cls, value: dict[str, int]) -> dict[str, int]:
        kinds = set()
        for name in value:
            kind = vgpu_type_kind(name)
            if kind is None:
                raise ValueError(f"{name!r} is not a vGPU type name (e.g. A10-12Q, A100-1-5C)")
            kinds.add(kind)
        if len(kinds) > 1:
            raise ValueError("time-sliced and MIG-backed vGPU types cannot be mixed in one entry")
        return value

    def filters(self) -> list[tuple[str, str, str | None]]:
        """(device id, vendor id, subsystem or None) per filter, lower case."""
        items = [self.device_filter] if isinstance(self.device_filter, str) else self.device_filter
        parsed = []
        for item in items or []:
            match = _DEVICE_FILTER.match(item)
            assert match is not None
            subsystem = (match.group(4) + match.group(5)).lower() if match.group(3) else None
            parsed.append((match.group(1).lower(), match.group(2).lower(), subsystem))
        return parsed


class VgpuConfigFile(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    version: Literal["v1"]
    vgpu_configs: dict[str, Annotated[list[VgpuConfigEntry], Field(min_length=1)]] = Field(
        alias="vgpu-configs", min_length=1
    )


def parse_vgpu_config(obj: Any) -> VgpuConfigFile:
    """Validate a parsed vGPU config document; raise `VgpuConfigError` naming each path."""
    if not isinstance(obj, dict):
        raise VgpuConfigError([f"expected a mapping at the top level, got {value_kind(obj)}"])
    try:
        return VgpuConfigFile.model_validate(obj)
    except ValidationError as exc:
        problems = []
        for item in exc.errors(include_url=False):
            path = ".".join(
                str(p) for p in item["loc"] if not str(p).startswith(("literal", "list[", "str"))
            )
            message = "unknown field" if item["type"] == "extra_forbidden" else item["msg"]
            problems.append(f"{path or '(top level)'}: {message.removeprefix('Value error, ')}")
        raise VgpuConfigError(problems) from None


@dataclass(frozen=True)
class Card:
    """One physical GPU as the device manager sees it: its index and PCI identity."""

    index: int
    device_id: str
    vendor_id: str = "10de"
    subsystem: str | None = None
    model: str | None = None

    def catalog_model(self) -> GpuModel | None:
        if self.model:
            return gpu_catalog().by_model(self.model)
        matches = gpu_catalog().by_device_id(self.device_id)
        return matches[0] if matches else None

    def vgpu_types(self) -> tuple[str, dict[str, int]] | None:
        """(the board's name, vGPU type -> instances per GPU) or None when nothing is known.

        Types come from NVIDIA's default vGPU config (by PCI device id) and, for catalogued
        models, the A- and B-series types that config leaves out.
        """
        model = self.catalog_model()
        families = vgpu_families().for_device(self.device_id)
        wanted = (self.model or (model.model if model else "")).lower()
        family = next((f for f in families if f.name.lower() == wanted), None)
        if family is None and families:
            family = families[0]
        types: dict[str, int] = {}
        if model is not None:
            types.update({name: spec.max_per_gpu for name, spec in model.vgpu_types.items()})
        if family is not None:
            types.update(family.types)
        if not types:
            return None
        label = model.model if model else family.name if family else f"10de:{self.device_id}"
        return label, types


@dataclass(frozen=True)
class CardResult:
    index: int
    model: str | None
    devices: dict[str, int]
    entry: int | None


@dataclass(frozen=True)
class VgpuApplyResult:
    """What applying a named config to a node's cards gives, or why it fails."""

    config_name: str
    cards: tuple[CardResult, ...]
    errors: tuple[str, ...]
    totals: dict[str, int] = field(default_factory=dict)
    # Cards no entry of the config reaches: the device manager leaves their vGPU devices
    # as they are, so what they hold is not known from the config (`totals` omits them).
    untouched: tuple[int, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def state(self) -> Literal["success", "failed"]:
        return "success" if self.ok else "failed"

    def resources(self) -> dict[str, int]:
        """Extended resources the sandbox device plugin advertises after a successful apply."""
        if not self.ok:
            return {}
        return {vgpu_resource(mdev_type_name(name)): count for name, count in self.totals.items()}


def _entry_matches(entry: VgpuConfigEntry, card: Card, position: int) -> bool:
    if entry.devices != "all" and position not in entry.devices:
        return False
    filters = entry.filters()
    if not filters:
        return True
    for device, vendor, subsystem in filters:
        if device != card.device_id.lower() or vendor != card.vendor_id.lower():
            continue
        if subsystem is not None and subsystem != (card.subsystem or "").lower():
            continue
        return True
    return False


def _card_problem(card: Card, devices: dict[str, int]) -> str | None:
    known = card.vgpu_types()
    for name, count in devices.items():
        if known is None:
            return (
                f"GPU {card.index} (10de:{card.device_id}): no vGPU types are known for this"
                f" card, so {name} cannot be checked"
            )
        board, types = known
        maximum = types.get(name)
        if maximum is None:
            return f"vGPU type {name} is not supported on GPU {card.index} ({board})"
        if count > maximum:
            return (
                f"failed to create {count} {name} vGPU devices on GPU {card.index}:"
                f" {board} supports at most {maximum}"
            )
    if len(devices) > 1:
        return (
            f"GPU {card.index}: {', '.join(sorted(devices))} mix vGPU types on one card;"
            " cards run in equal-size mode, one type per card"
        )
    return None


def apply_vgpu_config(
    config: VgpuConfigFile, config_name: str, cards: Sequence[Card]
) -> VgpuApplyResult:
    """Play the device manager's apply loop for `config_name` on `cards` (in index order)."""
    entries = config.vgpu_configs.get(config_name)
    if entries is None:
        known = ", ".join(sorted(config.vgpu_configs)[:12])
        return VgpuApplyResult(
            config_name, (), (f"unknown vGPU config {config_name!r} (known: {known}, ...)",)
        )
    ordered = sorted(cards, key=lambda c: c.index)
    results: list[CardResult] = []
    errors: list[str] = []
    totals: dict[str, int] = {}
    untouched: list[int] = []
    for position, card in enumerate(ordered):
        desired: dict[str, int] | None = None
        chosen: int | None = None
        matched = False
        for number, entry in enumerate(entries):
            if not _entry_matches(entry, card, position):
                continue
            matched = True
            problem = _card_problem(card, entry.vgpu_devices)
            if problem is not None:
                errors.append(problem)
                break
            desired, chosen = dict(entry.vgpu_devices), number
        if not matched:
            untouched.append(card.index)
        board_types = card.vgpu_types()
        board = board_types[0] if board_types else card.model
        results.append(CardResult(card.index, board, desired or {}, chosen))
        for name, count in (desired or {}).items():
            totals[name] = totals.get(name, 0) + count
    return VgpuApplyResult(config_name, tuple(results), tuple(errors), totals, tuple(untouched))


@cache
def default_vgpu_config() -> VgpuConfigFile:
    """The GPU Operator's default vGPU config, rebuilt from gpuop's vGPU type families.

    `default` gives each PCI device its default type at its maximum (the first
    family wins where two share a device id, as A2 and A16 do), and each type `X` is also a
    config named `X` with `devices: all` at the type's maximum, so labelling a node
    `nvidia.com/vgpu.config=A10-4Q` works as with the upstream config.
    """
    return parse_vgpu_config(default_vgpu_config_object())


def default_vgpu_config_object() -> dict[str, Any]:
    configs: dict[str, list[dict[str, Any]]] = {DEFAULT_CONFIG_NAME: []}
    seen_filters: set[str] = set()
    for family in vgpu_families().families.values():
        for device_id, device in family.devices.items():
            device_filter = f"0x{device_id.upper()}10DE"
            if device_filter in seen_filters:
                continue
            seen_filters.add(device_filter)
            configs[DEFAULT_CONFIG_NAME].append(
                {
                    "device-filter": device_filter,
                    "devices": "all",
                    "vgpu-devices": {device.default_type: device.default_count},
                }
            )
        for name, maximum in family.types.items():
            configs.setdefault(name, []).append({"devices": "all", "vgpu-devices": {name: maximum}})
    return {"version": "v1", "vgpu-configs": configs}
