"""The errors the control plane raises when the user (not the code) has something to fix.

Why this module exists: the control-plane package sits below the CLI in the import layers and
must not import it, yet every failure here (no Go toolchain, a busy port, a component that dies
at start) has to reach the user as one clear paragraph with a fix, never as a traceback. The CLI
catches :class:`ControlPlaneError` and turns it into its own ``UserError`` (exit code 2).
"""

from __future__ import annotations


class ControlPlaneError(Exception):
    """A failure the user can fix. ``str(exc)`` is the whole message, fix included."""


class ToolchainError(ControlPlaneError):
    """``go`` is missing or too old, or the Go module proxy cannot be reached."""


class BuildError(ControlPlaneError):
    """``go build`` failed for another reason; the message names the log file."""


class DownloadError(ControlPlaneError):
    """A release download failed or its checksum did not match (the caller falls back).

    ``unreachable`` says the server could not be reached at all, so trying the other
    components' downloads is pointless.
    """

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class PortInUseError(ControlPlaneError):
    """A port the user asked for is taken."""


class ComponentStartError(ControlPlaneError):
    """A component exited, or never became healthy, while the cluster was starting."""


class ClusterNotRunningError(ControlPlaneError):
    """An operation needs a running cluster and there is none."""
