"""gpuop.sim."""
