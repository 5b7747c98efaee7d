"""Dynamic Resource Allocation (resource.k8s.io/v1) for GPUs, as plain data.

What NVIDIA's DRA driver (`gpu.nvidia.com`) publishes, how the scheduler's structured
allocator would place a claim on it, and the readers both need: pure functions over API
dicts, shared by the simulator, the checkers and `explain`, with no I/O.
"""
