"""gpuop.lab."""
