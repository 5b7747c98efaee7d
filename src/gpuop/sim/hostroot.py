"""Per-node host root directories: where a simulated node's host files live.

Each simulated node gets `<hosts-dir>/<node>/` with a stock containerd configuration, as a
fresh host would have. When the container toolkit takes effect on the node, the nvidia
runtime is registered there by `gpuop.toolkit.configure_runtime` (the same code as
`gpuop toolkit configure-runtime`); when it stops, the change is reverted.
"""

from __future__ import annotations

from pathlib import Path

from gpuop.toolkit.configuring import configure_runtime
from gpuop.toolkit.errors import ToolkitError
from gpuop.toolkit.reverting import has_state_record, revert_runtime

STOCK_CONTAINERD_CONFIG = """\
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
"""


def ensure_host_root(root: Path) -> Path:
    config = root / "etc" / "containerd" / "config.toml"
    if not config.exists():
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(STOCK_CONTAINERD_CONFIG, encoding="utf-8")
    return config


def configure_host_runtime(root: Path, enabled: bool) -> str | None:
    """Register (or take back) the nvidia runtime under `root`; the problem as text if any."""
    ensure_host_root(root)
    try:
        if enabled:
            configure_runtime(str(root))
        elif has_state_record(str(root)):
            revert_runtime(str(root))
    except ToolkitError as exc:
        return str(exc)
    return None
