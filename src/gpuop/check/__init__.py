"""gpuop.check."""
