"""Dynamic resource allocation (resource.k8s.io/v1) for GPUs, read and replayed without a cluster.

GPUs published as DRA devices are allocated by kube-scheduler's structured allocator, and when
a claim does not fit the scheduler says only "cannot allocate all claims". This package holds
what is needed to say more, as pure functions over API dicts shared by the simulator, the
checkers and `explain`: :mod:`gpuop.dra.publish` says what a node's DRA driver publishes
(NVIDIA's two-faced slices, or gpuop's race-free counter sets), :mod:`gpuop.dra.model` reads
ResourceSlices, DeviceClasses, ResourceClaims and their templates into typed values,
:mod:`gpuop.dra.cel` evaluates device selectors the way the API server's CEL environment for
DRA does, and :mod:`gpuop.dra.allocate` replays the allocator on one node at a time and keeps,
per request and per device, the reason a device could not be used.
"""
