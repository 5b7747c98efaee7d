"""Which operator release a ClusterPolicy runs, read from its operand image versions.

NVIDIA's operator names its own release where the input shows it: its image tag or its
Helm labels, read by `observed.detect_release`, win over the ClusterPolicy. Otherwise Helm
rendered every operand's default version into the ClusterPolicy, so the versions name the
release. The driver is left out of the match: picking a driver other than the release's
default is normal (each release documents several). A version no release uses
is unknown, not evidence. When several releases fit equally (only a shared version is
pinned, or the policy mixes releases) all of them are kept as candidates, and the checks
call a platform unsupported only when no candidate supports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from gpuop.catalog import Operand, operand_table
from gpuop.catalog.versions import Release, VersionMatrix
from gpuop.check.versions.parse import is_digest, normalize_tag
from gpuop.policy import ResolvedPolicy

if TYPE_CHECKING:  # observed reads pinned versions too
    from gpuop.check.release.observed import OperatorRelease

DetectionSource = Literal["option", "operator", "policy", "default", "none"]
DRIVER_KEY = "driver"


@dataclass(frozen=True)
class PinnedVersion:
    """An operand version set in the ClusterPolicy (`spec.<block>.version`)."""

    key: str
    block: str
    operands: tuple[str, ...]
    version: str

    @property
    def field(self) -> str:
        return f"spec.{self.block}.version"

    @property
    def label(self) -> str:
        return f"{'/'.join(self.operands)} {self.version}"


def _tag_of_image(image: str) -> str | None:
    """The tag of `registry/path/name:tag`; None without one (or with a digest)."""
    if "@" in image:
        return None
    name = image.rsplit("/", 1)[-1]
    _, sep, tag = name.rpartition(":")
    return tag if sep and tag else None


def policy_version(policy: ResolvedPolicy, operand: Operand) -> str | None:
    """The version the ClusterPolicy pins for an operand, or None when it leaves it unset."""
    component = policy.component(operand.spec_block)
    if component is None:
        return None
    if component.version:
        return component.version.strip()
    if component.image and not component.repository:
        return _tag_of_image(component.image)
    return None


def pinned_versions(policy: ResolvedPolicy) -> tuple[PinnedVersion, ...]:
    """Versions pinned for the operands the policy deploys, one per version key and block."""
    found: dict[tuple[str, str], PinnedVersion] = {}
    for operand in policy.enabled_operands():
        key = operand.image.version_key
        block = operand.spec_block
        version = policy_version(policy, operand)
        if key is None or block is None or not version:
            continue
        existing = found.get((key, block))
        operands = (*existing.operands, operand.name) if existing else (operand.name,)
        found[(key, block)] = PinnedVersion(key, block, operands, version)
    return tuple(found.values())


def releases_shipping(matrix: VersionMatrix, key: str, version: str) -> tuple[Release, ...]:
    """Releases whose default for `key` is `version` (tags compared without v and suffix)."""
    if is_digest(version):
        return ()
    wanted = normalize_tag(version)
    return tuple(
        release
        for release in matrix.releases
        if (shipped := release.components.get(key)) is not None and normalize_tag(shipped) == wanted
    )


def describe_releases(matrix: VersionMatrix, names: Sequence[str]) -> str:
    """`26.3.0–26.3.3`, `24.9.2, 25.3.0–25.3.1`: runs of consecutive releases joined."""
    order = {name: index for index, name in enumerate(matrix.release_names)}
    ordered = sorted(set(names), key=lambda name: order.get(name, -1))
    runs: list[list[str]] = []
    for name in ordered:
        if runs and order.get(runs[-1][-1], -9) + 1 == order.get(name, -99):
            runs[-1].append(name)
        else:
            runs.append([name])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs)


@dataclass(frozen=True)
class Detection:
    """The release(s) the checks use, and the evidence."""

    candidates: tuple[Release, ...]
    source: DetectionSource
    pinned: tuple[PinnedVersion, ...] = ()
    driver: PinnedVersion | None = None
    shipped_by: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    unknown: tuple[PinnedVersion, ...] = ()
    mixed: bool = False
    requested: str | None = None
    # Where NVIDIA's operator showed its release (source "operator").
    observed: str | None = None

    @property
    def known(self) -> bool:
        return bool(self.candidates)

    @property
    def single(self) -> Release | None:
        return self.candidates[0] if len(self.candidates) == 1 else None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(release.version for release in self.candidates)

    def describe(self, matrix: VersionMatrix) -> str:
        if not self.candidates:
            return "unknown"
        if len(self.candidates) == 1:
            return self.candidates[0].version
        return f"one of {describe_releases(matrix, self.names)}"

    def basis(self) -> str:
        """Where the release came from, in words."""
        if self.source == "option":
            return "--operator-release"
        if self.source == "operator":
            return str(self.observed)
        if self.source == "default":
            return "no operand versions pinned: gpuop's operator defaults"
        if self.source == "policy":
            return "the ClusterPolicy's operand versions" + (", mixed" if self.mixed else "")
        return "not determined"

    def shipping(self, pinned: PinnedVersion) -> tuple[str, ...]:
        return self.shipped_by.get((pinned.key, pinned.block), ())

    def mismatched(self) -> tuple[PinnedVersion, ...]:
        """Pinned versions that not every candidate ships."""
        names = set(self.names)
        return tuple(
            pinned
            for pinned in self.pinned
            if self.shipping(pinned) and not names <= set(self.shipping(pinned))
        )

    def to_dict(self, matrix: VersionMatrix) -> dict[str, object]:
        return {
            "release": self.single.version if self.single else None,
            "candidates": list(self.names),
            "source": self.source,
            "basis": self.basis(),
            "requested": self.requested,
            "mixed": self.mixed,
            "pinned": [
                {
                    "operands": list(pinned.operands),
                    "field": pinned.field,
                    "version": pinned.version,
                    "shipped_by": list(self.shipping(pinned)),
                }
                for pinned in self.pinned
            ],
            "driver": self.driver.version if self.driver else None,
        }


def gpuop_default_release(matrix: VersionMatrix) -> Release | None:
    """The release whose defaults gpuop's operator deploys (`operands.yaml`)."""
    name = operand_table().default_versions.get("release")
    return matrix.release(name) if name else None


def release_in_use(
    matrix: VersionMatrix,
    policy: ResolvedPolicy | None,
    requested: str | None = None,
    observed: OperatorRelease | None = None,
) -> Detection:
    """The release(s) in use: `requested` (already a well-formed name) wins, then the
    release NVIDIA's operator shows of itself (`observed`, from the checker's detector),
    then the policy's operand versions."""
    pinned_all = pinned_versions(policy) if policy is not None else ()
    driver = next((p for p in pinned_all if p.key == DRIVER_KEY), None)
    others = tuple(p for p in pinned_all if p.key != DRIVER_KEY)
    shipped_by = {
        (p.key, p.block): tuple(r.version for r in releases_shipping(matrix, p.key, p.version))
        for p in others
    }
    unknown = tuple(p for p in others if not shipped_by[(p.key, p.block)])
    known = tuple(p for p in others if shipped_by[(p.key, p.block)])

    def make(
        candidates: tuple[Release, ...], source: DetectionSource, mixed: bool = False
    ) -> Detection:
        return Detection(
            candidates,
            source,
            pinned=known,
            driver=driver,
            shipped_by=shipped_by,
            unknown=unknown,
            mixed=mixed,
            requested=requested,
        )

    if requested is not None:
        release = matrix.release(requested)
        if release is None:
            return make((), "none")
        mixed = any(release.version not in shipped_by[(p.key, p.block)] for p in known)
        return make((release,), "option", mixed)
    shown = matrix.release(observed.version) if observed and observed.version else None
    if observed is not None and observed.from_operator and shown is not None:
        mixed = any(shown.version not in shipped_by[(p.key, p.block)] for p in known)
        return replace(make((shown,), "operator", mixed), observed=observed.source)
    if policy is None:
        return make((), "none")
    if not known:
        default = None if unknown else gpuop_default_release(matrix)
        return make((default,), "default") if default else make((), "none")
    counts: dict[str, int] = {}
    for pinned in known:
        for name in shipped_by[(pinned.key, pinned.block)]:
            counts[name] = counts.get(name, 0) + 1
    best = max(counts.values())
    candidates = tuple(r for r in matrix.releases if counts.get(r.version) == best)
    return make(candidates, "policy", best < len(known))


__all__ = [
    "DRIVER_KEY",
    "Detection",
    "DetectionSource",
    "PinnedVersion",
    "describe_releases",
    "gpuop_default_release",
    "pinned_versions",
    "policy_version",
    "release_in_use",
    "releases_shipping",
]
