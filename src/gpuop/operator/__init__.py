"""gpuop.operator."""
