"""gpuop.controlplane."""
