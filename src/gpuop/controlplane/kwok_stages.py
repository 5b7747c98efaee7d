"""kwok's default "fast" Stages, written to the kwok controller's config file at start.

Why this module exists: the kwok controller binary has no built-in stages (kwokctl normally
writes them into its config); without them it refuses to start ("no stages found"). These are
kwok v0.8.0's defaults (``kwok-stages.yaml`` beside this module), copied verbatim from sigs.k8s.io/kwok ``kustomize/stage`` (Apache-2.0):
node-initialize (node/fast), node-heartbeat-with-lease, and pod-ready, pod-complete and
pod-delete (pod/fast). Node capacity and allocatable set at creation are kept, so a Node posted
with ``nvidia.com/gpu: 2`` stays that way.
"""

from __future__ import annotations

from importlib.resources import files


def kwok_config() -> str:
    """The whole ``--config`` file for the kwok controller (its options come as flags)."""
    text = files("gpuop.controlplane").joinpath("kwok-stages.yaml").read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))
