"""The simulated machines' hardware spreads over several ConfigMaps: a ConfigMap holds at
most 1 MiB, about 5,000 two-card machines, and the simulator is run at 10,000 nodes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

from gpuop.sim import registry
from gpuop.sim.hardware import HARDWARE_CONFIGMAP, NodeSpec

CONFIGMAP_LIMIT = 1024 * 1024
NS = "gpu-operator"


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, str]]:
    """ConfigMap name -> data, standing in for the API server."""
    configmaps: dict[str, dict[str, str]] = {}

    def merge(_client: Any, name: str, _ns: str, data: Mapping[str, str | None]) -> None:
        current = configmaps.setdefault(name, {})
        for key, value in data.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value

    async def read(_client: Any, name: str, _ns: str) -> dict[str, str] | None:
        return configmaps.get(name)

    monkeypatch.setattr(registry.ops, "merge_configmap_data_sync", merge)
    monkeypatch.setattr(registry.ops, "ensure_namespace_sync", lambda *_: None)
    monkeypatch.setattr(registry.ops, "configmap_data_sync", lambda _c, n, _ns: configmaps.get(n))
    monkeypatch.setattr(registry.ops, "configmap_data", read)
    return configmaps


def test_ten_thousand_machines_fit_and_read_back(store: dict[str, dict[str, str]]) -> None:
    specs = [NodeSpec(f"bench-{i:05d}", "A10", 2) for i in range(10_000)]
    registry.register_hardware(object(), specs, NS)
    assert set(store) == set(registry.hardware_configmaps())
    assert HARDWARE_CONFIGMAP in store
    for name, data in store.items():
        size = len(json.dumps(data))
        assert size < CONFIGMAP_LIMIT / 2, f"{name} holds {size} bytes"
    machines = registry.hardware_of(object(), NS)
    assert len(machines) == 10_000 and all(len(c) == 2 for c in machines.values())
    assert asyncio.run(registry.read_hardware(object(), NS)) == machines
    registry.forget_hardware(object(), [s.name for s in specs[:10]], NS)
    assert len(registry.hardware_of(object(), NS)) == 9_990


def test_a_machine_always_lands_in_the_same_configmap() -> None:
    assert registry.hardware_configmap("gpu-a") == registry.hardware_configmap("gpu-a")
    assert {registry.hardware_configmap(f"n{i}") for i in range(500)} == set(
        registry.hardware_configmaps()
    )
