"""What GPUs a node has, learned from what is written on the Node object.

The planner needs the cards (PCI identity, index, memory) to name and count resources.
Real discovery writes them in several places; this module reads them in order of trust:

1. the `gpuop.io/gpu-inventory` annotation (a JSON list written by hardware discovery,
   e.g. `gpuop sim`, or by hand);
2. GPU feature discovery's `nvidia.com/gpu.product` and `nvidia.com/gpu.count` labels;
3. a passthrough resource the node already advertises (`nvidia.com/GA102GL_A10: 2`),
   matched back to a catalogued model;
4. NFD's per-device PCI labels (`feature.node.kubernetes.io/pci-0302_10de_2236.present`),
   which give the model but not the count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gpuop.catalog import gpu_catalog
from gpuop.naming import RESOURCE_PREFIX, normalise_pci_name

INVENTORY_ANNOTATION = "gpuop.io/gpu-inventory"
_NFD_DEVICE_LABEL = re.compile(
    r"^feature\.node\.kubernetes\.io/pci-(?:030[02]_)?10de_([0-9a-f]{4})\.present$"
)

InventorySource = Literal["annotation", "gfd-labels", "advertised", "nfd-device-label", "none"]

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


@dataclass(frozen=True)
class GpuCard:
    """One physical GPU: its index on the node and its PCI identity."""

    index: int
    device_id: str
    vendor_id: str = "10de"
    model: str | None = None
    memory_mib: int | None = None
    bdf: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"index": self.index, "pci": f"{self.vendor_id}:{self.device_id}"}
        if self.model:
            data["model"] = self.model
        if self.memory_mib is not None:
            data["memory_mib"] = self.memory_mib
        if self.bdf:
            data["bdf"] = self.bdf
        return data


@dataclass(frozen=True)
class Inventory:
    cards: tuple[GpuCard, ...]
    source: InventorySource
    count_known: bool = True
    problem: str | None = None

    @property
    def count(self) -> int:
        return len(self.cards)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "source": self.source,
            "count": self.count if self.count_known else None,
            "cards": [card.to_dict() for card in self.cards],
        }
        if self.problem:
            data["problem"] = self.problem
        return data


def encode_inventory(cards: list[GpuCard]) -> str:
    """The annotation value for a list of cards."""
    return json.dumps([card.to_dict() for card in cards], separators=(",", ":"))


def _from_annotation(value: str) -> Inventory:
    try:
        raw = json.loads(value)
    except json.JSONDecodeError as exc:
        return Inventory((), "none", False, f"{INVENTORY_ANNOTATION}: not JSON ({exc.msg})")
    except (ValueError, RecursionError):
        # Integers beyond Python's digit limit, or nesting deeper than the recursion limit.
        return Inventory((), "none", False, f"{INVENTORY_ANNOTATION}: not usable JSON")
    if not isinstance(raw, list):
        return Inventory((), "none", False, f"{INVENTORY_ANNOTATION}: expected a JSON list")
    cards = []
    for position, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("pci"), str):
            return Inventory(
                (), "none", False, f"{INVENTORY_ANNOTATION}[{position}]: expected {{'pci': ...}}"
            )
        vendor, _, device = str(item["pci"]).lower().partition(":")
        if not re.fullmatch(r"[0-9a-f]{4}", vendor) or not re.fullmatch(r"[0-9a-f]{4}", device):
            return Inventory(
                (), "none", False, f"{INVENTORY_ANNOTATION}[{position}].pci: not VVVV:DDDD"
            )
        index = _plain_int(item.get("index"))
        cards.append(
            GpuCard(
                index=position if index is None else index,
                device_id=device,
                vendor_id=vendor,
                model=item.get("model") if isinstance(item.get("model"), str) else None,
                memory_mib=_plain_int(item.get("memory_mib")),
                bdf=item.get("bdf") if isinstance(item.get("bdf"), str) else None,
            )
        )
    return Inventory(tuple(sorted(cards, key=lambda c: c.index)), "annotation")


def _cards_of_model(model_name: str, count: int) -> tuple[GpuCard, ...]:
    model = gpu_catalog().by_model(model_name)
    if model is None:
        return ()
    return tuple(
        GpuCard(i, model.pci_device_id, model=model.model, memory_mib=model.memory_mib)
        for i in range(count)
    )


def learn_inventory(
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    allocatable: Mapping[str, str],
) -> Inventory:
    """The node's cards from the most trusted source present."""
    annotation = annotations.get(INVENTORY_ANNOTATION)
    if annotation is not None:
        return _from_annotation(annotation)

    product = labels.get("nvidia.com/gpu.product")
    count = _count(labels.get("nvidia.com/gpu.count", ""))
    if product and count is not None:
        model = gpu_catalog().by_product(product)
        if model is not None:
            return Inventory(_cards_of_model(model.model, count), "gfd-labels")

    for resource, quantity in allocatable.items():
        advertised = _count(str(quantity))
        if not resource.startswith(RESOURCE_PREFIX) or advertised is None:
            continue
        suffix = resource.removeprefix(RESOURCE_PREFIX)
        for model in gpu_catalog().gpus:
            if normalise_pci_name(model.pci_name) == suffix:
                return Inventory(_cards_of_model(model.model, advertised), "advertised")

    for key, value in labels.items():
        match = _NFD_DEVICE_LABEL.match(key)
        if match and value == "true":
            device = match.group(1)
            models = gpu_catalog().by_device_id(device)
            card = GpuCard(0, device, model=models[0].model if models else None)
            return Inventory((card,), "nfd-device-label", count_known=False)

    return Inventory((), "none", count_known=False)
