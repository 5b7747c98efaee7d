"""One physical GPU, and the card-list format of the `gpuop.io/gpu-inventory` annotation.

Why this module exists: the planner reads the annotation as its most trusted inventory hint
and the simulator writes it on the nodes it plays; both share this one format (a JSON list of
`{"index", "pci": "VVVV:DDDD", "model", "memory_mib", "bdf"}`) without the simulator
importing the planner.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gpuop.api.labels import INVENTORY_ANNOTATION


def _plain_int(value: object) -> int | None:
    """An int that is not a bool (JSON `true` is not an index)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class GpuCard:
    """One physical GPU: its index on the node and its PCI identity (None when unknown)."""

    index: int
    device_id: str | None
    vendor_id: str = "10de"
    model: str | None = None
    memory_mib: int | None = None
    bdf: str | None = None

    @property
    def pci(self) -> str:
        return f"{self.vendor_id}:{self.device_id}" if self.device_id else "unknown PCI id"

    def describe(self) -> str:
        return self.model or (f"{self.vendor_id}:{self.device_id}" if self.device_id else "GPU")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "index": self.index,
            "pci": f"{self.vendor_id}:{self.device_id}" if self.device_id else None,
        }
        if self.model:
            data["model"] = self.model
        if self.memory_mib is not None:
            data["memory_mib"] = self.memory_mib
        if self.bdf:
            data["bdf"] = self.bdf
        return data


def encode_inventory(cards: list[GpuCard]) -> str:
    """The annotation value for a list of cards."""
    return json.dumps([card.to_dict() for card in cards], separators=(",", ":"))


def decode_cards(value: str) -> tuple[tuple[GpuCard, ...] | None, str | None]:
    """A JSON card list (the hint annotation's format) -> (cards, None) or (None, problem)."""
    try:
        raw = json.loads(value)
    except json.JSONDecodeError as exc:
        return None, f"{INVENTORY_ANNOTATION}: not JSON ({exc.msg})"
    except (ValueError, RecursionError):
        # Integers beyond Python's digit limit, or nesting deeper than the recursion limit.
        return None, f"{INVENTORY_ANNOTATION}: not usable JSON"
    if not isinstance(raw, list):
        return None, f"{INVENTORY_ANNOTATION}: expected a JSON list"
    cards = []
    for position, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("pci"), str):
            return None, f"{INVENTORY_ANNOTATION}[{position}]: expected {{'pci': ...}}"
        vendor, _, device = str(item["pci"]).lower().partition(":")
        if not re.fullmatch(r"[0-9a-f]{4}", vendor) or not re.fullmatch(r"[0-9a-f]{4}", device):
            return None, f"{INVENTORY_ANNOTATION}[{position}].pci: not VVVV:DDDD"
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
    return tuple(sorted(cards, key=lambda c: c.index)), None


__all__ = ["GpuCard", "decode_cards", "encode_inventory"]
