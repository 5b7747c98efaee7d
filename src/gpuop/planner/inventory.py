"""What GPUs a node has, learned from what real nodes carry.

The planner needs the cards (PCI identity, count, memory) to name and count resources. No
single signal says it on every node: GPU feature discovery runs only on container nodes,
NVIDIA's default NFD configuration writes only `feature.node.kubernetes.io/pci-10de.present`
(no device id), and sandbox nodes say what they have only through what their device
plugin advertises. So every signal present is read, each into an `Evidence` that says
where it came from and what it implies:

* GPU feature discovery's labels: `nvidia.com/gpu.product`, `gpu.count`, `gpu.memory`
  (under MIG `single`, `gpu.count` counts MIG devices, not cards);
* the resources the node advertises: a passthrough name (`nvidia.com/GA102GL_A10`, or the
  raw id `nvidia.com/2236`) maps back to PCI device ids through the same pci.ids table the
  plugin names it from; a vGPU type (`nvidia.com/NVIDIA_A10-12Q`) to its card family and
  per-card count; `nvidia.com/pgpu` counts Kata cards. `status.capacity` counts every
  device a plugin registered, `allocatable` only the healthy ones;
* `nvidia.com/vgpu.config` when it names a vGPU type (`A10-12Q`), and NFD's per-device PCI
  labels in every variant (`pci-10de_2236.present`, `pci-0302_10de_2236.present`, with
  subsystem ids or without): the model, not the count;
* `gpuop.io/gpu-inventory`, gpuop's own optional hint (a JSON card list), when present.

The cards come from the most trusted source that gives a count (the hint, GPU feature
discovery, advertised resources); where no count can be known, one card per known model
stands for the node and `count_known` is false. Hints that disagree (the annotation says
2 cards, GPU feature discovery 3) and vGPU counts that are not a whole number of cards are
reported as problems, never raised; a hint that disagrees with an advertised count is
what the checker's count rules report (GPU205, GPU206).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuop.api.cards import GpuCard, decode_cards, encode_inventory
from gpuop.api.labels import (
    GPU_COUNT_LABEL,
    GPU_PRODUCT_LABEL,
    INVENTORY_ANNOTATION,
    NFD_PCI_PREFIX,
    VGPU_CONFIG_LABEL,
)
from gpuop.api.resources import KATA_RESOURCE, RESOURCE_PREFIX
from gpuop.catalog import gpu_catalog, vgpu_families
from gpuop.naming import (
    PciDatabase,
    classify_resource,
    normalise_pci_name,
    normalise_pci_name_kata,
    vgpu_type_of_resource,
)
from gpuop.vgpu import Card, VgpuConfigFile, apply_vgpu_config

# NFD's PCI device labels: `pci-[<class>_]<vendor>_<device>[_<subvendor>_<subdevice>].present`
# (which fields appear follows NFD's `deviceLabelFields`).
_NFD_DEVICE_LABEL = re.compile(
    rf"^{re.escape(NFD_PCI_PREFIX)}(?:[0-9a-f]{{2,4}}_)?10de_([0-9a-f]{{4}})"
    r"(?:_[0-9a-f]{4}_[0-9a-f]{4})?\.present$"
)
_RAW_DEVICE_ID = re.compile(r"^[0-9a-fA-F]{4}$")

InventorySource = Literal[
    "annotation",
    "gfd-labels",
    "advertised",
    "vgpu-config-label",
    "nfd-device-label",
    "none",
]
_SOURCE_TEXT: dict[str, str] = {
    "annotation": f"the {INVENTORY_ANNOTATION} annotation",
    "gfd-labels": "GPU feature discovery labels",
    "advertised": "the resources the node advertises",
    "vgpu-config-label": f"{VGPU_CONFIG_LABEL}",
    "nfd-device-label": "NFD's PCI device labels",
    "none": "nothing on the node",
}

# More GPUs than any node holds: a count above this is a typo or garbage, not an inventory.
MAX_GPUS_PER_NODE = 256
_COUNT = re.compile(r"[0-9]{1,4}")


def _plain_int(value: object) -> int | None:
    """An int that is not a bool (JSON `true` is not an index)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _count(text: str) -> int | None:
    """A label or quantity that is a plausible GPU count (ASCII digits, at most the maximum)."""
    if not _COUNT.fullmatch(text):
        return None
    count = int(text)
    return count if count <= MAX_GPUS_PER_NODE else None


def _device_count(text: str) -> int | None:
    """A device count as advertised (vGPU counts exceed the card limit)."""
    if not re.fullmatch(r"[0-9]{1,6}", text):
        return None
    return int(text)


@dataclass(frozen=True)
class Evidence:
    """One signal on the node and what it says about the cards."""

    source: InventorySource
    signal: str
    count: int | None = None
    device_ids: tuple[str, ...] = ()
    model: str | None = None
    note: str | None = None
    # For advertised resources: which plugin's kind (vgpu, passthrough, kata), and the
    # resources counted together in this one (several vGPU types or GPU models).
    plugin: str | None = None
    parts: tuple[Evidence, ...] = ()

    def implies(self) -> str:
        what = self.model or "/".join(f"10de:{d}" for d in self.device_ids) or "GPUs"
        count = f"{self.count}× " if self.count is not None else ""
        text = f"{count}{what}"
        return f"{text} ({self.note})" if self.note else text

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "signal": self.signal,
            "count": self.count,
            "pci": [f"10de:{d}" for d in self.device_ids],
            "model": self.model,
            "note": self.note,
        }


@dataclass(frozen=True)
class InventoryProblem:
    """A finding about the signals themselves: `conflict` or `partial-vgpu`."""

    kind: Literal["conflict", "partial-vgpu"]
    message: str


@dataclass(frozen=True)
class Inventory:
    cards: tuple[GpuCard, ...]
    source: InventorySource
    count_known: bool = True
    problem: str | None = None
    evidence: tuple[Evidence, ...] = ()
    problems: tuple[InventoryProblem, ...] = field(default=())

    @property
    def count(self) -> int:
        return len(self.cards)

    def describe_source(self) -> str:
        return _SOURCE_TEXT[self.source]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "source": self.source,
            "count": self.count if self.count_known else None,
            "cards": [card.to_dict() for card in self.cards],
            "evidence": [item.to_dict() for item in self.evidence],
        }
        if self.problem:
            data["problem"] = self.problem
        if self.problems:
            data["problems"] = [
                {"kind": item.kind, "message": item.message} for item in self.problems
            ]
        return data


def _gfd_evidence(labels: Mapping[str, str]) -> Evidence | None:
    product = labels.get(GPU_PRODUCT_LABEL)
    raw_count = labels.get(GPU_COUNT_LABEL)
    if not product and raw_count is None:
        return None
    count = _count(raw_count or "")
    signal = ", ".join(
        f"{key}={labels[key]}" for key in (GPU_PRODUCT_LABEL, GPU_COUNT_LABEL) if key in labels
    )
    model = gpu_catalog().by_product(product) if product else None
    name = model.model if model else (product or None)
    devices = (model.pci_device_id,) if model else ()
    if product and "-MIG-" in product:
        # MIG `single`: the count is of MIG devices; the cards behind them are not counted.
        base = product.split("-MIG-", 1)[0]
        model = gpu_catalog().by_product(base)
        return Evidence(
            "gfd-labels",
            signal,
            None,
            (model.pci_device_id,) if model else (),
            model.model if model else base,
            "MIG single: nvidia.com/gpu.count counts MIG devices",
        )
    note = None if model or not product else "a product outside gpuop's catalogue"
    return Evidence("gfd-labels", signal, count, devices, name, note)


def _resource_devices(database: PciDatabase) -> dict[str, tuple[str, ...]]:
    """Passthrough resource name -> the device ids the plugins give it (both spellings)."""
    cached = _REVERSE.get(id(database))
    if cached is not None and cached[0] is database:
        return cached[1]
    names: dict[str, list[str]] = {}
    for device_id, name in database.devices.items():
        for resource in {normalise_pci_name(name), normalise_pci_name_kata(name)}:
            names.setdefault(RESOURCE_PREFIX + resource, []).append(device_id)
    reverse = {name: tuple(sorted(ids)) for name, ids in names.items()}
    if len(_REVERSE) > 8:
        _REVERSE.clear()
    _REVERSE[id(database)] = (database, reverse)
    return reverse


_REVERSE: dict[int, tuple[PciDatabase, dict[str, tuple[str, ...]]]] = {}


def _per_card(
    vgpu_type: str, device_id: str, vgpu_config: VgpuConfigFile | None, config_name: str | None
) -> int | None:
    """How many `vgpu_type` devices one card of `device_id` gets (None: unknown)."""
    if vgpu_config is not None and config_name:
        result = apply_vgpu_config(vgpu_config, config_name, [Card(0, device_id)])
        count = result.totals.get(vgpu_type) if result.ok else None
        if count:
            return count
    family = vgpu_families().for_type(vgpu_type)
    if family is None:
        return None
    device = family.devices.get(device_id)
    if device is not None and device.default_type == vgpu_type:
        return device.default_count
    return family.types.get(vgpu_type)


def _advertised_evidence(
    capacity: Mapping[str, str],
    allocatable: Mapping[str, str],
    database: PciDatabase,
    labels: Mapping[str, str],
    vgpu_config: VgpuConfigFile | None,
    default_vgpu_config: str | None,
) -> tuple[list[Evidence], list[InventoryProblem]]:
    evidence: list[Evidence] = []
    problems: list[InventoryProblem] = []
    reverse = _resource_devices(database)
    names = sorted(r for r in set(capacity) | set(allocatable) if r.startswith(RESOURCE_PREFIX))
    for resource in names:
        held = _device_count(capacity.get(resource, "")) if resource in capacity else None
        free = _device_count(allocatable.get(resource, "")) if resource in allocatable else None
        total = max(c for c in (held, free, 0) if c is not None)
        where = "capacity" if held is not None and held == total else "allocatable"
        signal = f"{resource}: {total} ({where})"
        suffix = resource.removeprefix(RESOURCE_PREFIX)
        vgpu_type = vgpu_type_of_resource(resource)
        if total == 0:
            # Registered with no device: the name still says which cards the plugin serves.
            named = reverse.get(resource, ())
            family = vgpu_families().for_type(vgpu_type) if vgpu_type else None
            devices = family.device_ids if family else named
            if devices:
                model = family.name if family else _model_name(devices[0], database)
                evidence.append(Evidence("advertised", signal, None, devices, model, "no device"))
            continue
        if vgpu_type is not None:
            family = vgpu_families().for_type(vgpu_type)
            if family is None:
                evidence.append(Evidence("advertised", signal, None, (), None, "unknown vGPU type"))
                continue
            devices = family.device_ids
            config_name = labels.get(VGPU_CONFIG_LABEL) or default_vgpu_config
            device = devices[0] if devices else ""
            per_card = _per_card(vgpu_type, device, vgpu_config, config_name)
            model = family.name
            if per_card and total % per_card == 0:
                cards = total // per_card
                note = f"{per_card} {vgpu_type} per card"
                evidence.append(Evidence("advertised", signal, cards, devices, model, note, "vgpu"))
            else:
                problems.append(
                    InventoryProblem(
                        "partial-vgpu",
                        f"{resource}: {total} is not a whole number of {model} cards"
                        f" ({per_card} {vgpu_type} per card)",
                    )
                )
                evidence.append(
                    Evidence("advertised", signal, None, devices, model, "not whole cards")
                )
            continue
        if total > MAX_GPUS_PER_NODE:
            continue  # a whole-card resource: more than any node holds is garbage
        if resource == KATA_RESOURCE:
            evidence.append(
                Evidence("advertised", signal, total, (), None, "Kata passthrough", "kata")
            )
            continue
        if _RAW_DEVICE_ID.match(suffix):
            device = suffix.lower()
            evidence.append(
                Evidence(
                    "advertised",
                    signal,
                    total,
                    (device,),
                    _model_name(device, database),
                    "raw PCI id",
                    "passthrough",
                )
            )
            continue
        named = reverse.get(resource, ())
        if named:
            known = _model_name(named[0], database) if len(named) == 1 else None
            evidence.append(
                Evidence("advertised", signal, total, named, known, None, "passthrough")
            )
        elif classify_resource(resource) == "passthrough":
            note = f"a name no device has in pci.ids {database.version or ''}".rstrip()
            evidence.append(Evidence("advertised", signal, total, (), None, note, "passthrough"))
    return evidence, problems


_PCI_MODEL = re.compile(r"\[(?P<model>[^\]]+)\]")


def _model_name(device_id: str, database: PciDatabase | None = None) -> str | None:
    """The card's model: gpuop's GPU table's, else the model pci.ids gives in brackets
    (`GA100 [A100 SXM4 40GB]`), else its vGPU family's (which may name a sibling board)."""
    models = gpu_catalog().by_device_id(device_id)
    if models:
        return models[0].model
    named = _PCI_MODEL.search((database or PciDatabase.builtin()).name_of(device_id) or "")
    if named is not None:
        return named.group("model")
    families = vgpu_families().for_device(device_id)
    return families[0].name if families else None


def _label_evidence(labels: Mapping[str, str]) -> list[Evidence]:
    evidence: list[Evidence] = []
    config = labels.get(VGPU_CONFIG_LABEL)
    family = vgpu_families().for_type(config) if config else None
    if family is not None:
        evidence.append(
            Evidence(
                "vgpu-config-label",
                f"{VGPU_CONFIG_LABEL}={config}",
                None,
                family.device_ids,
                family.name,
                None,
            )
        )
    devices = sorted(
        {
            match.group(1)
            for key, value in labels.items()
            if value == "true" and (match := _NFD_DEVICE_LABEL.match(key))
        }
    )
    if devices:
        model = _model_name(devices[0]) if len(devices) == 1 else None
        signal = ", ".join(f"pci 10de:{d}" for d in devices)
        evidence.append(Evidence("nfd-device-label", signal, None, tuple(devices), model))
    return evidence


def _cards_from(evidence: Evidence, count: int) -> tuple[GpuCard, ...]:
    model = gpu_catalog().by_model(evidence.model) if evidence.model else None
    device = evidence.device_ids[0] if evidence.device_ids else None
    memory = model.memory_mib if model else None
    return tuple(GpuCard(i, device, model=evidence.model, memory_mib=memory) for i in range(count))


def _conflicts(counted: list[Evidence]) -> list[InventoryProblem]:
    """Counting signals that disagree on the number or the model of the cards."""
    problems: list[InventoryProblem] = []
    first = counted[0]
    for other in counted[1:]:
        if other.count != first.count:
            problems.append(
                InventoryProblem(
                    "conflict",
                    f"{_SOURCE_TEXT[first.source]} ({first.signal}) give {first.count} GPUs,"
                    f" but {other.signal} gives {other.count}",
                )
            )
        elif (
            first.device_ids
            and other.device_ids
            and not set(first.device_ids) & set(other.device_ids)
        ):
            problems.append(
                InventoryProblem(
                    "conflict",
                    f"{_SOURCE_TEXT[first.source]} ({first.signal}) say {first.implies()},"
                    f" but {other.signal} is {other.implies()}",
                )
            )
    return problems


def learn_inventory(
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    allocatable: Mapping[str, str],
    *,
    capacity: Mapping[str, str] | None = None,
    pci_db: PciDatabase | None = None,
    vgpu_config: VgpuConfigFile | None = None,
    default_vgpu_config: str | None = None,
) -> Inventory:
    """The node's cards from every signal it carries, the most trusted first."""
    database = pci_db or PciDatabase.builtin()
    evidence: list[Evidence] = []
    problems: list[InventoryProblem] = []
    problem: str | None = None
    hinted: tuple[GpuCard, ...] | None = None
    annotation = annotations.get(INVENTORY_ANNOTATION)
    if annotation is not None:
        hinted, problem = decode_cards(annotation)
        if hinted is not None:
            models = sorted({card.describe() for card in hinted})
            evidence.append(
                Evidence(
                    "annotation",
                    INVENTORY_ANNOTATION,
                    len(hinted),
                    tuple(sorted({c.device_id for c in hinted if c.device_id})),
                    "/".join(models) or None,
                )
            )
    gfd = _gfd_evidence(labels)
    if gfd is not None:
        evidence.append(gfd)
    advertised, advertised_problems = _advertised_evidence(
        capacity or {}, allocatable, database, labels, vgpu_config, default_vgpu_config
    )
    problems.extend(advertised_problems)
    configured = _types_on_every_card(labels, vgpu_config, default_vgpu_config)
    evidence.extend(_merge_advertised(advertised, configured))
    evidence.extend(_label_evidence(labels))

    counted = [item for item in evidence if item.count is not None]
    # Hints that disagree with each other; where a hint and an advertised resource
    # disagree, the count checks on the resource already say so.
    hints = [item for item in counted if item.source != "advertised"]
    if hints:
        # Counted cards make the vGPU count a plain count check (GPU204).
        problems = [item for item in problems if item.kind != "partial-vgpu"]
    if len(hints) > 1:
        problems.extend(_conflicts(hints))
    if hinted is not None:
        return Inventory(hinted, "annotation", True, problem, tuple(evidence), tuple(problems))
    if counted:
        best = counted[0]
        cards = _cards_of_evidence(best)
        return Inventory(cards, best.source, True, problem, tuple(evidence), tuple(problems))
    described = next((item for item in evidence if item.device_ids or item.model), None)
    if described is not None:
        return Inventory(
            _cards_from(described, 1),
            described.source,
            False,
            problem,
            tuple(evidence),
            tuple(problems),
        )
    return Inventory((), "none", False, problem, tuple(evidence), tuple(problems))


def _types_on_every_card(
    labels: Mapping[str, str], vgpu_config: VgpuConfigFile | None, default_config: str | None
) -> frozenset[str]:
    """The vGPU types the node's config gives, when it reaches every card (`devices: all`)."""
    name = labels.get(VGPU_CONFIG_LABEL) or default_config
    entries = vgpu_config.vgpu_configs.get(name or "") if vgpu_config is not None else None
    if not entries or any(entry.devices != "all" for entry in entries):
        return frozenset()
    return frozenset(t for entry in entries for t in entry.vgpu_devices)


def _merge_advertised(
    advertised: list[Evidence], configured: frozenset[str] = frozenset()
) -> list[Evidence]:
    """Advertised signals as evidence; the resources of one plugin count together.

    Each card holds one vGPU type (equal-size mode) and each passthrough name is one model,
    so several resources of one plugin are different cards and their counts add up. One
    plugin's resources against another's (a passthrough name beside a vGPU type left over)
    stay apart: each is evidence of its own.
    """
    groups: dict[str, list[Evidence]] = {}
    for item in advertised:
        if item.count is not None:
            groups.setdefault(item.plugin or "", []).append(item)
    leftovers: list[Evidence] = []
    vgpu = groups.get("vgpu", [])
    current = [item for item in vgpu if _vgpu_type_of(item) in configured]
    if current and len(vgpu) > len(current):
        # The config gives every card its types: other types are left over, not more cards.
        groups["vgpu"] = current
        leftovers = [
            dataclasses.replace(item, count=None, note="not what the config gives")
            for item in vgpu
            if item not in current
        ]
    merged: list[Evidence] = []
    for plugin, items in groups.items():
        if len(items) == 1:
            merged.append(items[0])
            continue
        total = sum(item.count or 0 for item in items)
        signal = ", ".join(item.signal for item in items)
        devices = tuple(sorted({d for item in items for d in item.device_ids}))
        models = {item.model for item in items}
        model = models.pop() if len(models) == 1 else None
        note = "several vGPU types" if plugin == "vgpu" else "several GPU models"
        merged.append(
            Evidence("advertised", signal, total, devices, model, note, plugin, tuple(items))
        )
    return merged + leftovers + [item for item in advertised if item.count is None]


def _vgpu_type_of(item: Evidence) -> str | None:
    resource = item.signal.split(":", 1)[0]
    return vgpu_type_of_resource(resource)


def _cards_of_evidence(evidence: Evidence) -> tuple[GpuCard, ...]:
    """The cards a counted signal stands for (one run of cards per part when merged)."""
    if not evidence.parts:
        return _cards_from(evidence, evidence.count or 0)
    cards: list[GpuCard] = []
    for part in evidence.parts:
        for card in _cards_from(part, part.count or 0):
            cards.append(
                GpuCard(len(cards), card.device_id, model=card.model, memory_mib=card.memory_mib)
            )
    return tuple(cards)


__all__ = [
    "MAX_GPUS_PER_NODE",
    "Evidence",
    "GpuCard",
    "Inventory",
    "InventoryProblem",
    "InventorySource",
    "decode_cards",
    "encode_inventory",
    "learn_inventory",
]
