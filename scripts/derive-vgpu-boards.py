#!/usr/bin/env python3
"""Derive `src/gpuop/catalog/vgpu-boards.yaml` from NVIDIA's default vGPU devices config.

    .venv/bin/python scripts/derive-vgpu-boards.py CONFIGMAP.yaml PCI.IDS \
        > src/gpuop/catalog/vgpu-boards.yaml

CONFIGMAP.yaml is the GPU Operator's `default-vgpu-devices-config` ConfigMap (gpu-operator
`assets/state-vgpu-device-manager/0500_configmap.yaml`, Apache-2.0). Its named single-type
configs give every vGPU type and its maximum per GPU; its `default` config ties each PCI
device id to a type, and so to a type family (the type name less its size and series).
PCI.IDS (the copy the sandbox device plugin ships) names the boards, and its chip code
decides the mdev name prefix: `GRID ` for Maxwell to Turing chips, `NVIDIA ` after.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import yaml

from gpuop.naming import PciDatabase

TYPE = re.compile(
    r"^(?P<family>.+?)-(?:(?P<slices>[1-9][0-9]*)-)?(?P<gb>0|[1-9][0-9]*)(?P<series>[ABCQ])(?P<suffix>ME|NOME|MEALL|GFX)?$"
)
GRID_CHIPS = ("GM", "GP", "GV", "TU")


def main(configmap_path: str, pci_path: str) -> int:
    with open(configmap_path, encoding="utf-8") as handle:
        configmap = yaml.safe_load(handle)
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    with open(pci_path, encoding="utf-8", errors="replace") as handle:
        database = PciDatabase.parse(handle.read())
    names = database.devices
    version = database.version or "unknown"

    families: dict[str, dict[str, Any]] = {}
    for name, entries in config["vgpu-configs"].items():
        if name == "default":
            continue
        match = TYPE.match(name)
        if match is None or len(entries) != 1 or list(entries[0]["vgpu-devices"]) != [name]:
            raise SystemExit(f"unexpected config {name!r}")
        family = families.setdefault(match["family"], {"device_ids": [], "types": {}})
        family["types"][name] = int(entries[0]["vgpu-devices"][name])

    for entry in config["vgpu-configs"]["default"]:
        device_filter = entry["device-filter"].lower()
        device = device_filter[2:6]
        (default_type,) = entry["vgpu-devices"]
        match = TYPE.match(default_type)
        assert match is not None
        family = families[match["family"]]
        if device not in family["device_ids"]:
            family["device_ids"].append(device)
            family.setdefault("defaults", {})[device] = (
                default_type,
                int(entry["vgpu-devices"][default_type]),
            )

    out: list[str] = [
        "# vGPU type families: which PCI devices take which vGPU types, and how many per GPU.",
        "#",
        "# Derived by scripts/derive-vgpu-boards.py from NVIDIA's default vGPU devices config",
        "# (gpu-operator v26.7.0, assets/state-vgpu-device-manager/0500_configmap.yaml,",
        "# Apache-2.0): each named single-type config gives a type and its maximum per GPU; the",
        "# `default` config ties PCI device ids to a type family and gives each its default type",
        "# and count (a family can span boards of different sizes: DC-16Q is 6 per GPU on a",
        "# 96 GB board, 2 on 0x2C3A).",
        "# Board names are from pci.ids",
        f"# {version} (the sandbox device plugin's copy). mdev_prefix is the driver's mdev type",
        "# name prefix: `GRID` for Maxwell to Turing chips (GM/GP/GV/TU), `NVIDIA` after.",
        "# Families without device ids appear only in the config; gpuop names their resources",
        "# but cannot tie them to a PCI device.",
        "schema_version: 1",
        "families:",
    ]
    for family_name in sorted(families):
        family = families[family_name]
        devices = family["device_ids"]
        boards = [names.get(d, "(not in pci.ids)") for d in devices]
        prefix = "GRID" if any(b.startswith(GRID_CHIPS) for b in boards) else "NVIDIA"
        out.append(f"  {json.dumps(family_name)}:")
        out.append(f"    mdev_prefix: {prefix}")
        out.append("    devices:")
        for device, board in zip(devices, boards, strict=True):
            default, count = family["defaults"][device]
            out.append(
                f"      '{device}': {{board: {json.dumps(board)}, default_type: {default},"
                f" default_count: {count}}}"
            )
        out.append("    types:")
        ordered = sorted(family["types"].items(), key=lambda kv: (kv[1], kv[0]))
        for name, maximum in ordered:
            out.append(f"      {name}: {maximum}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
