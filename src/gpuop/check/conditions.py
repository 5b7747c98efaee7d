"""What the platform itself says is wrong with a node's GPUs (GPU215).

Managed platforms run a node problem detector that checks the GPUs (nvidia-smi's count,
XID errors in the kernel log, NVLink and InfiniBand links, the managed device plugin) and
sets a node condition to True when a check fails: AKS's `GPUMissing` or `XIDErrors`,
Nebius's `NebiusGPUError` (`catalog/gpu-conditions.yaml`, with the sources). Those come from
the node itself, so they are reported as they are, with what each means.
"""

from __future__ import annotations

from gpuop.catalog.managers import gpu_conditions
from gpuop.check.context import CheckContext, NodeInfo


def check_gpu_conditions(ctx: CheckContext, info: NodeInfo) -> None:
    """GPU215 for each GPU condition of the node that is True."""
    known = gpu_conditions().conditions
    for kind, reason, message in info.view.gpu_conditions:
        condition = known[kind]
        detail = "; ".join(part for part in (reason, message) if part and part != kind)
        ctx.add(
            "GPU215",
            "Node",
            info.name,
            f"{condition.platform} reports {kind}=True: {condition.says}"
            + (f" ({detail})" if detail else ""),
            condition.fix,
            severity=condition.severity,
        )


__all__ = ["check_gpu_conditions"]
