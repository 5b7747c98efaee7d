"""The GPU Operator version matrix (`versions.yaml`), typed and loaded once.

The YAML beside this module holds the facts (releases, their default operand versions and
platform ranges, CUDA's driver minimums, driver branch lifecycles); this module only types
them and answers lookups. Judging a cluster's versions is `gpuop.check.versions`'s business.
Unknown facts are `None`, as `null` in the file, and stay unknown.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from gpuop.catalog import CatalogModel, load_data_file

ReleaseStatus = Literal["supported", "deprecated", "end_of_support"]
BranchType = Literal["long_term_support", "production", "new_feature"]

# "1.32", "4.18", "22.04", "7": the versions ranges and OS lists hold.
Minor = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)?$")]
ReleaseName = Annotated[str, StringConstraints(pattern=r"^[0-9]{2}\.[0-9]{1,2}\.[0-9]+$")]
LineName = Annotated[str, StringConstraints(pattern=r"^[0-9]{2}\.[0-9]{1,2}$")]
DriverVersion = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+){1,2}$")]
Day = Annotated[str, StringConstraints(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
Month = Annotated[str, StringConstraints(pattern=r"^[0-9]{4}-[0-9]{2}$")]
OsId = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9]*$")]


class MinorRange(CatalogModel):
    """An inclusive major.minor range (Kubernetes, containerd)."""

    min: Minor
    max: Minor


class OsRange(CatalogModel):
    """One row of a platform table: OS versions and the Kubernetes range they support."""

    os: OsId
    versions: tuple[Minor, ...]
    min: Minor
    max: Minor


class KubernetesSupport(CatalogModel):
    """The widest range over every OS row, and the rows themselves."""

    min: Minor
    max: Minor
    by_os: tuple[OsRange, ...]


class Components(CatalogModel):
    """Default image version per operand, keyed like `operands.yaml`'s `image.version_key`."""

    driver: str | None
    container_toolkit: str | None
    device_plugin: str | None
    gpu_feature_discovery: str | None
    dcgm: str | None
    dcgm_exporter: str | None
    mig_manager: str | None
    vgpu_device_manager: str | None
    sandbox_device_plugin: str | None
    kata_sandbox_device_plugin: str | None
    vfio_manager: str | None
    kata_manager: str | None
    cc_manager: str | None
    validator: str | None

    def get(self, key: str) -> str | None:
        """The version for a version key; None for an unknown key or a missing operand."""
        value = getattr(self, key, None) if key in Components.model_fields else None
        return value if isinstance(value, str) else None

    def items(self) -> tuple[tuple[str, str | None], ...]:
        return tuple((key, self.get(key)) for key in Components.model_fields)


class Release(CatalogModel):
    """One operator release: what it ships and the platform it was documented for."""

    version: ReleaseName
    line: LineName
    date: Day
    status: ReleaseStatus
    platform_approximate: bool = False
    components: Components
    documented_drivers: tuple[DriverVersion, ...] | None
    kubernetes: KubernetesSupport
    operating_systems: dict[OsId, tuple[Minor, ...]]
    containerd: MinorRange | None


class LineDocs(CatalogModel):
    """A release line's newest documentation (NVIDIA edits it after the release)."""

    date: Day
    approximate: bool = False
    kubernetes: KubernetesSupport
    operating_systems: dict[OsId, tuple[Minor, ...]]
    containerd: MinorRange | None


class ReleaseLine(CatalogModel):
    line: LineName
    status: ReleaseStatus
    releases: tuple[ReleaseName, ...]
    latest_docs: LineDocs


class CudaFamily(CatalogModel):
    """Minor-version compatibility: this CUDA major runs on drivers from this branch on."""

    cuda_major: int
    min_driver_branch: int
    min_driver: DriverVersion | None


class CudaMinor(CatalogModel):
    """The driver packaged with a CUDA minor's GA release (its full feature set needs it)."""

    cuda: Minor
    min_driver: DriverVersion | None
    secondary_source: bool = False


class CudaTable(CatalogModel):
    families: tuple[CudaFamily, ...]
    minors: tuple[CudaMinor, ...]

    def family(self, major: int) -> CudaFamily | None:
        return next((f for f in self.families if f.cuda_major == major), None)

    def minor(self, cuda: str) -> CudaMinor | None:
        return next((m for m in self.minors if m.cuda == cuda), None)


class DriverBranch(CatalogModel):
    branch: int
    type: BranchType | None
    end_of_life: Month | None
    in_lifecycle_tables: bool
    cuda_major: int | None

    @property
    def name(self) -> str:
        return f"R{self.branch}"


class VersionMatrix(CatalogModel):
    schema_version: int
    as_of: Day
    upgrade_rule: str
    releases: tuple[Release, ...]
    lines: tuple[ReleaseLine, ...]
    cuda: CudaTable
    driver_branches: tuple[DriverBranch, ...] = Field(min_length=1)

    def release(self, version: str) -> Release | None:
        return next((r for r in self.releases if r.version == version), None)

    def line(self, name: str) -> ReleaseLine | None:
        return next((line for line in self.lines if line.line == name), None)

    def branch(self, number: int) -> DriverBranch | None:
        return next((b for b in self.driver_branches if b.branch == number), None)

    @property
    def newest(self) -> Release:
        return self.releases[-1]

    @property
    def release_names(self) -> tuple[str, ...]:
        return tuple(release.version for release in self.releases)


@cache
def version_matrix() -> VersionMatrix:
    """The matrix from `versions.yaml` (validated; raises on a malformed file)."""
    return VersionMatrix.model_validate(load_data_file("versions.yaml"))


__all__ = [
    "BranchType",
    "Components",
    "CudaFamily",
    "CudaMinor",
    "CudaTable",
    "DriverBranch",
    "KubernetesSupport",
    "LineDocs",
    "MinorRange",
    "OsRange",
    "Release",
    "ReleaseLine",
    "ReleaseStatus",
    "VersionMatrix",
    "version_matrix",
]
