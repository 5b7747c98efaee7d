"""gpuop.kube."""
