"""The container toolkit's change to a host: the NVIDIA runtime handlers in containerd's config.

Why this package exists: on every GPU node the toolkit registers the `nvidia` runtime handler
(and `nvidia-cdi`, `nvidia-legacy`) with containerd, which is the one lasting edit the GPU
operator makes to a host's configuration, and a frequent source of trouble (configs overwritten,
handlers lost, reverts that remove too much). This package does that edit so it can be reviewed,
repeated and undone: it keeps every other byte of the file, writes nothing when nothing needs to
change, writes atomically with a backup, and records what it did so `revert_runtime` undoes
exactly that.

Public API (the CLI and the simulator use only this)::

    from gpuop import toolkit
    result = toolkit.configure_runtime("/srv/nodes/gpu-1", toolkit.RuntimeOptions(enable_cdi=True))
    print(result.render_text())          # or result.to_json()
    toolkit.revert_runtime("/srv/nodes/gpu-1")

Module map: `configuring` (configuring, and the write order), `reverting` (undoing it), `options` (what to configure), `containerd` (what to change, pure),
`tomledit` (format-preserving TOML edits, pure), `imports` (containerd's import resolution),
`hostfs` (host-root paths, atomic all-or-nothing writes), `state` (the record beside the config),
`results` (typed outcome), `diffs` (dry-run diffs), `errors` (what can go wrong).
"""

from gpuop.toolkit.configuring import configure_runtime
from gpuop.toolkit.containerd import SUPPORTED_VERSIONS, runtime_handlers
from gpuop.toolkit.errors import (
    ConfigParseError,
    ConfigPathError,
    ConfigShapeError,
    ConfigVersionError,
    ConfigWriteError,
    StateError,
    ToolkitError,
)
from gpuop.toolkit.options import DEFAULT_CONFIG, DEFAULT_DROP_IN, ImportStyle, RuntimeOptions
from gpuop.toolkit.results import (
    Change,
    FileOutcome,
    Mode,
    RuntimeHandler,
    RuntimeResult,
)
from gpuop.toolkit.reverting import revert_runtime

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_DROP_IN",
    "SUPPORTED_VERSIONS",
    "Change",
    "ConfigParseError",
    "ConfigPathError",
    "ConfigShapeError",
    "ConfigVersionError",
    "ConfigWriteError",
    "FileOutcome",
    "ImportStyle",
    "Mode",
    "RuntimeHandler",
    "RuntimeOptions",
    "RuntimeResult",
    "StateError",
    "ToolkitError",
    "configure_runtime",
    "revert_runtime",
    "runtime_handlers",
]
