"""gpuop.kubevirt."""
