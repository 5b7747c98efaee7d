"""The DRA stack's data (`dra.yaml`): driver name, device classes, per-node stack labels.

GPUCluster (nvidia.com/v1alpha1) runs NVIDIA's DRA driver instead of the device plugin.
What it creates and which node labels it sets are facts of the upstream release, kept in
one data file like the operand table; this module only loads and types them.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

from gpuop.catalog import CatalogModel, load_data_file

Stack = Literal["device-plugin", "dra"]


class DeviceClassSpec(CatalogModel):
    """One DeviceClass as upstream renders it."""

    name: str
    # `compute-domains`: only with spec.draDriver.computeDomains.enabled=true.
    when: Literal["always", "compute-domains"]
    selectors: tuple[str, ...]

    def manifest(self, api_version: str) -> dict[str, object]:
        """The DeviceClass object."""
        return {
            "apiVersion": api_version,
            "kind": "DeviceClass",
            "metadata": {"name": self.name},
            "spec": {"selectors": [{"cel": {"expression": expr}} for expr in self.selectors]},
        }


class DraCatalog(CatalogModel):
    schema_version: int
    driver: str
    compute_domain_driver: str
    api_version: str
    device_classes: tuple[DeviceClassSpec, ...]
    deploy_keys: tuple[str, ...]
    kept_on_dra_nodes: tuple[str, ...]
    plugin_deploy_key: str
    stack_label: str
    stacks: tuple[Stack, ...]

    def classes(self, *, compute_domains: bool) -> tuple[DeviceClassSpec, ...]:
        """The device classes a GPUCluster creates, in upstream's order."""
        return tuple(c for c in self.device_classes if c.when == "always" or compute_domains)

    def device_class(self, name: str) -> DeviceClassSpec:
        for device_class in self.device_classes:
            if device_class.name == name:
                return device_class
        raise KeyError(name)


@cache
def dra_catalog() -> DraCatalog:
    """The DRA stack's data from `dra.yaml`."""
    return DraCatalog.model_validate(load_data_file("dra.yaml"))
