"""gpuop.explain."""
