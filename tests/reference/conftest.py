"""The checks of gpuop's shipped data against the upstream files it was derived from.

Those files (the full pci.ids the KubeVirt GPU device plugin ships, NVIDIA's default vGPU
device config) are not part of this repository: gpuop ships what it derived from them
(`catalog/pci-ids-nvidia-*.ids`, `catalog/vgpu-boards.yaml`, `catalog/vgpu` defaults),
with their provenance. Point `GPUOP_REFERENCE_DATA` at a folder holding `pci.ids` and
`default-vgpu-devices-config.yaml` to check the derivations again:

    GPUOP_REFERENCE_DATA=../shared/reference/data .venv/bin/pytest tests/reference

Without it these tests are not collected at all, so no run reports them as skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

collect_ignore_glob = [] if os.environ.get("GPUOP_REFERENCE_DATA") else ["test_*.py"]


@pytest.fixture
def reference_data() -> Path:
    return Path(os.environ["GPUOP_REFERENCE_DATA"]).resolve()
