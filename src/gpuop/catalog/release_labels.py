"""How each GPU Operator release labels nodes (`release_labels.yaml`), typed and loaded once.

The YAML beside this module holds the facts, read from each release's upstream code: the
deploy-label keys per workload config, the rules for their values, the chart defaults
that matter to node labels and the ClusterPolicy fields each release's CRD introduced.
This module only types them and answers lookups by release line; which releases a dump
may come from is the checker's business.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from gpuop.catalog import CatalogModel, SandboxMode, WorkloadConfig, load_data_file

# YY.MM, or 1.N for the releases before 22.9.
LineName = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,2}\.[0-9]{1,2}$")]
Removal = Literal["other-configs", "all-known"]


class PassthroughSets(CatalogModel):
    kubevirt: tuple[str, ...]
    # None: the release has no sandboxWorkloads.mode; every passthrough node gets kubevirt's.
    kata: tuple[str, ...] | None


class LabelDefaults(CatalogModel):
    mig_manager_config_default: str | None
    sandbox_mode: SandboxMode | None
    node_status_exporter_enabled: bool


class LabelEra(CatalogModel):
    """The label behaviour of one or more release lines."""

    lines: tuple[LineName, ...] = Field(min_length=1)
    source: str
    # False before v1.11.0: no workload configs, every GPU node gets the container set.
    sandbox_workloads: bool = True
    container: tuple[str, ...]
    vm_passthrough: PassthroughSets = Field(alias="vm-passthrough")
    vm_vgpu: tuple[str, ...] = Field(alias="vm-vgpu")
    other_keys: tuple[str, ...]
    fills_empty: bool
    removes: Removal
    default_mig_config: bool
    defaults: LabelDefaults
    operands: tuple[str, ...]

    @property
    def name(self) -> str:
        """`22.9`, `23.6-25.10`: the lines it covers."""
        return self.lines[0] if len(self.lines) == 1 else f"{self.lines[0]}-{self.lines[-1]}"

    @property
    def has_modes(self) -> bool:
        return self.vm_passthrough.kata is not None

    def keys_for(self, workload: WorkloadConfig, mode: SandboxMode) -> frozenset[str]:
        """The keys (without prefix) the release adds on a node of this config and mode."""
        if workload == "container":
            return frozenset(self.container)
        if workload == "vm-vgpu":
            return frozenset(self.vm_vgpu)
        if mode == "kata" and self.vm_passthrough.kata is not None:
            return frozenset(self.vm_passthrough.kata)
        return frozenset(self.vm_passthrough.kubevirt)

    @property
    def sets_deploy_labels(self) -> bool:
        """False before v1.7.0: the operator's DaemonSets selected nodes by other labels."""
        return bool(self.container)

    def known_keys(self, mig_manager_key: str) -> frozenset[str]:
        """Every deploy key the release manages (and so may remove)."""
        keys = set(self.container) | set(self.vm_vgpu) | set(self.vm_passthrough.kubevirt)
        keys |= set(self.vm_passthrough.kata or ())
        keys |= set(self.other_keys)
        if mig_manager_key in self.operands:
            keys.add(mig_manager_key)
        return frozenset(keys)


class ReleaseLabels(CatalogModel):
    schema_version: int
    prefix: str
    mig_manager_key: str
    eras: tuple[LabelEra, ...] = Field(min_length=1)
    policy_fields: dict[str, LineName]

    @property
    def lines(self) -> tuple[str, ...]:
        """Every release line the table covers, oldest first."""
        return tuple(line for era in self.eras for line in era.lines)

    def era(self, line: str) -> LabelEra | None:
        """The label behaviour of a release line (`25.10`), None for a line not listed."""
        return next((era for era in self.eras if line in era.lines), None)

    @property
    def newest(self) -> LabelEra:
        return self.eras[-1]

    @property
    def pre_deploy_lines(self) -> frozenset[str]:
        """The lines whose operator set no deploy labels (before v1.7.0)."""
        return frozenset(
            line for era in self.eras if not era.sets_deploy_labels for line in era.lines
        )


@cache
def release_labels() -> ReleaseLabels:
    """The table from `release_labels.yaml` (validated; raises on a malformed file)."""
    return ReleaseLabels.model_validate(load_data_file("release_labels.yaml"))


__all__ = [
    "LabelDefaults",
    "LabelEra",
    "PassthroughSets",
    "ReleaseLabels",
    "Removal",
    "release_labels",
]
