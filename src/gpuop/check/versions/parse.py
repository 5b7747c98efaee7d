"""Reading version strings: Kubernetes, drivers, CUDA, operator releases, image tags, OSes.

Every parser here is strict about shape and says what it expected (`VersionError`), so a
version given on the command line is either understood or refused, never half-read. Values
read from a cluster go through the same parsers; the checks turn a refusal there into an
"unknown" finding instead of an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from gpuop.api.labels import NFD_OS_ID, NFD_OS_VERSION_ID

Key = tuple[int, ...]


class VersionError(ValueError):
    """A version string that does not have the expected shape."""


_KUBE = re.compile(r"^v?([0-9]{1,3})\.([0-9]{1,3})(?:\.([0-9]{1,6}))?(?:[-+][0-9A-Za-z._+-]*)?$")
_DRIVER = re.compile(r"^([0-9]{3,4})\.([0-9]{1,4})(?:\.([0-9]{1,4}))?$")
_CUDA = re.compile(r"^([0-9]{1,3})\.([0-9]{1,3})(?:\.([0-9]{1,4}))?$")
_RELEASE = re.compile(r"^v?([0-9]{2})\.([0-9]{1,2})\.([0-9]{1,3})$")
_DOTTED = re.compile(r"^[0-9]{1,6}(\.[0-9]{1,6})*$")
# Distro suffixes of operand image tags (`v1.17.8-ubuntu20.04`, `4.4.1-4.6.0-distroless`).
_DISTRO_SUFFIX = re.compile(
    r"-(ubuntu[0-9]+\.[0-9]+|ubi[0-9]+|rhel[0-9]+(\.[0-9]+)?|rhcos[0-9]+\.[0-9]+"
    r"|rocky[0-9]+|centos[0-9]+|sles[0-9.]+|distroless)$"
)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:60] + "...")


@lru_cache(maxsize=4096)
def dotted_key(text: str) -> Key:
    """`"1.32"` -> (1, 32), `"22.04"` -> (22, 4); VersionError for anything but dotted numbers."""
    if not _DOTTED.match(text):
        raise VersionError(f"{_shown(text)} is not a dotted version number")
    return tuple(int(part) for part in text.split("."))


def _matched(pattern: re.Pattern[str], text: str, expected: str) -> re.Match[str]:
    """`pattern` matched on `text` (stripped); VersionError saying `text` is not `expected`."""
    match = pattern.match(text.strip())
    if match is None:
        raise VersionError(f"{_shown(text)} is not {expected}")
    return match


def kubernetes_minor(text: str) -> tuple[int, int]:
    """The major.minor of a Kubernetes version (`v1.31.4`, `1.31`, `v1.30.2-eks-1a2b`)."""
    match = _matched(_KUBE, text, "a Kubernetes version (expected 1.31, v1.31.4 or v1.31.4-suffix)")
    return int(match.group(1)), int(match.group(2))


def driver_key(text: str) -> tuple[int, int, int]:
    """(branch, minor, patch) of an NVIDIA driver version (`595.91.07`, `570.26`)."""
    match = _matched(_DRIVER, text, "an NVIDIA driver version (expected 595.91.07 or 570.26)")
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def driver_branch(text: str) -> int:
    """The branch of a driver version: its first number (`595.91.07` -> 595)."""
    return driver_key(text)[0]


def cuda_minor(text: str) -> tuple[int, int]:
    """The major.minor of a CUDA version (`12.8`, `12.8.1`)."""
    match = _matched(_CUDA, text, "a CUDA version (expected 12.8 or 13.0.1)")
    return int(match.group(1)), int(match.group(2))


def release_key(text: str) -> tuple[int, int, int]:
    """(year, month, patch) of an operator release (`26.7.0`, `v25.10.1`)."""
    match = _matched(_RELEASE, text, "a GPU Operator release (expected YY.MM.PP, e.g. 26.7.0)")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def release_name(text: str) -> str:
    """An operator release as the matrix spells it (`v26.7.0` -> `26.7.0`)."""
    year, month, patch = release_key(text)
    return f"{year}.{month}.{patch}"


def looks_like_release(text: str) -> bool:
    return _RELEASE.match(text.strip()) is not None


def normalize_tag(tag: str) -> str:
    """An image tag compared across sources: no leading `v`, no distro suffix."""
    value = tag.strip()
    previous = None
    while previous != value:
        previous = value
        value = _DISTRO_SUFFIX.sub("", value)
    return value[1:] if value.startswith("v") and value[1:2].isdigit() else value


def is_digest(version: str) -> bool:
    return version.startswith("sha256:")


def in_range(value: Key, low: str, high: str) -> bool:
    """Whether a version key lies in the inclusive range [low, high] (compared by minor)."""
    return dotted_key(low) <= value[:2] <= dotted_key(high)


def minor_text(value: Key) -> str:
    return ".".join(str(part) for part in value[:2])


# --- Operating systems ---------------------------------------------------------------


_OS_IMAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^Red Hat Enterprise Linux CoreOS ([0-9])([0-9]{2})\.[0-9]"), "rhcos"),
    (re.compile(r"^Red Hat Enterprise Linux CoreOS\b"), "rhcos"),
    (re.compile(r"^Ubuntu ([0-9]+\.[0-9]+)"), "ubuntu"),
    (re.compile(r"^Red Hat Enterprise Linux(?: Server)? ([0-9]+(?:\.[0-9]+)?)"), "rhel"),
    (re.compile(r"^Rocky Linux ([0-9]+(?:\.[0-9]+)?)"), "rocky"),
    (re.compile(r"^CentOS(?: Linux| Stream)? ([0-9]+)"), "centos"),
    (re.compile(r"^SUSE Linux Enterprise Server ([0-9]+)"), "sles"),
    (re.compile(r"^Debian GNU/Linux ([0-9]+)"), "debian"),
    (re.compile(r"^Amazon Linux ([0-9]+)"), "amzn"),
    (re.compile(r"^Container-Optimized OS\b"), "cos"),
    (re.compile(r"^Flatcar Container Linux\b.*? ([0-9]+\.[0-9]+\.[0-9]+)"), "flatcar"),
    (re.compile(r"^Talos \(v?([0-9]+\.[0-9]+)"), "talos"),
)


@dataclass(frozen=True)
class OsInfo:
    """A node's OS: matrix id (`ubuntu`, `rhel`, `rhcos`...), version if known, and where from."""

    id: str
    version: str | None
    source: str

    def __str__(self) -> str:
        return f"{self.id} {self.version}" if self.version else f"{self.id} (version unknown)"


def _os_from_image(image: str) -> OsInfo | None:
    for pattern, os_id in _OS_IMAGES:
        match = pattern.match(image.strip())
        if match is None:
            continue
        if os_id == "rhcos":
            # RHCOS 4.x images read `418.94.2024...`: the OpenShift minor. Later ones carry
            # the RHEL version instead, which does not tell the OpenShift release.
            groups = match.groups()
            version = f"{groups[0]}.{int(groups[1])}" if len(groups) == 2 else None
            return OsInfo(os_id, version, "status.nodeInfo.osImage")
        version = match.group(1) if match.groups() else None
        return OsInfo(os_id, version, "status.nodeInfo.osImage")
    return None


def node_os(labels: Mapping[str, str], os_image: str) -> OsInfo | None:
    """The node's OS from NFD's os_release labels, else from `status.nodeInfo.osImage`."""
    os_id = labels.get(NFD_OS_ID, "").strip().lower()
    if os_id:
        version = labels.get(NFD_OS_VERSION_ID, "").strip() or None
        if version is not None and not _DOTTED.match(version):
            version = None
        if os_id == "rhcos" and version is not None and not version.startswith("4."):
            version = None
        return OsInfo(os_id, version, "NFD os_release labels")
    if os_image.strip():
        return _os_from_image(os_image)
    return None


def os_version_matches(version: str, listed: str) -> bool:
    """`22.04.4` matches `22.04`; `7.9` matches `7`; `9.4` does not match `9.40`."""
    try:
        have, want = dotted_key(version), dotted_key(listed)
    except VersionError:
        return False
    return have[: len(want)] == want


def os_listed(version: str, listed: Iterable[str]) -> bool:
    return any(os_version_matches(version, item) for item in listed)


# --- Container runtimes --------------------------------------------------------------


@dataclass(frozen=True)
class RuntimeInfo:
    """`containerd://1.7.24-k3s1` -> name containerd, version 1.7.24-k3s1, minor (1, 7)."""

    name: str
    version: str
    minor: tuple[int, int] | None


_RUNTIME_VERSION = re.compile(r"^v?([0-9]+)\.([0-9]+)")


def parse_runtime(text: str) -> RuntimeInfo | None:
    """The runtime of `status.nodeInfo.containerRuntimeVersion`; None when empty or odd."""
    name, sep, version = text.strip().partition("://")
    if not sep or not name:
        return None
    match = _RUNTIME_VERSION.match(version)
    minor = (int(match.group(1)), int(match.group(2))) if match else None
    return RuntimeInfo(name.lower(), version, minor)


__all__ = [
    "Key",
    "OsInfo",
    "RuntimeInfo",
    "VersionError",
    "cuda_minor",
    "dotted_key",
    "driver_branch",
    "driver_key",
    "in_range",
    "is_digest",
    "kubernetes_minor",
    "looks_like_release",
    "minor_text",
    "node_os",
    "normalize_tag",
    "os_listed",
    "os_version_matches",
    "parse_runtime",
    "release_key",
    "release_name",
]
