"""gpuop: a GPU operator for Kubernetes, and the tools that tell what a GPU cluster really does."""

__version__ = "0.1.0"
