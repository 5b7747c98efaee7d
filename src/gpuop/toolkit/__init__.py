"""gpuop.toolkit."""
