"""`gpuop check` names passthrough devices from the shipped pci.ids unless given another."""

from __future__ import annotations

from typing import Any

import corpus_gen

from gpuop.api.labels import INVENTORY_ANNOTATION
from gpuop.check import run_checks
from gpuop.naming import PciDatabase
from gpuop.planner.inventory import GpuCard, encode_inventory


def b200_passthrough_node() -> list[Any]:
    """Two B200s (10de:2901, not in the GPU catalog) advertised as the plugin names them."""
    cluster = corpus_gen.Cluster(
        corpus_gen.policy_object(sandbox=True, default_workload="vm-passthrough")
    )
    node = cluster.node("hgx-1")
    cards = [GpuCard(0, "2901"), GpuCard(1, "2901")]
    node["metadata"]["annotations"][INVENTORY_ANNOTATION] = encode_inventory(cards)
    for part in ("capacity", "allocatable"):
        resources = node["status"][part]
        del resources["nvidia.com/GA102GL_A10"]
        resources["nvidia.com/GB100_B200"] = "2"
    return cluster.objects()


def naming_findings(objects: list[Any], database: PciDatabase | None) -> list[str]:
    report = run_checks(objects, pci_db=database)
    return [f.message for f in report.findings if f.code == "GPU209"]


def test_default_names_cards_outside_the_catalog() -> None:
    objects = b200_passthrough_node()
    assert naming_findings(objects, None) == []
    assert naming_findings(objects, PciDatabase.builtin()) == []


def test_another_pci_ids_changes_the_expected_name(pci_ids_excerpt: str) -> None:
    found = naming_findings(b200_passthrough_node(), PciDatabase.parse(pci_ids_excerpt))
    assert len(found) == 1 and "nvidia.com/2901" in found[0]
