"""Every key is spelled once, validly, and the deploy prefix is the table's."""

from __future__ import annotations

import re

from gpuop.api import labels
from gpuop.catalog import operand_table

# A qualified label key: an optional DNS-subdomain prefix and a name of at most 63 chars.
_KEY = re.compile(
    r"^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


def _keys() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(labels).items()
        if name.endswith(("_LABEL", "_ANNOTATION", "_KEY", "NFD_OS_ID", "NFD_KERNEL"))
        and isinstance(value, str)
    }


def test_the_deploy_prefix_is_the_operand_tables() -> None:
    assert operand_table().deploy_labels.prefix == labels.DEPLOY_LABEL_PREFIX
    assert labels.deploy_label("device-plugin") == labels.DEVICE_PLUGIN_DEPLOY_LABEL


def test_every_key_is_a_valid_label_key() -> None:
    keys = _keys()
    assert len(keys) > 40
    for name, key in keys.items():
        assert _KEY.match(key), f"{name} = {key!r}"


def test_no_key_is_spelled_twice() -> None:
    keys = _keys()
    assert len(set(keys.values())) == len(keys), sorted(keys.values())


def test_grouped_keys_are_the_singles() -> None:
    assert labels.GPU_PRODUCT_LABEL in labels.GFD_LABELS
    assert labels.DRIVER_VERSION_LABEL in labels.GFD_LABELS
    assert labels.NFD_GPU_LABELS[0] == labels.NFD_NVIDIA_PCI_LABEL
    assert all(key.startswith(labels.NFD_PCI_PREFIX) for key in labels.NFD_GPU_LABELS)
    assert all(key.startswith(labels.NVIDIA_PREFIX) for key in labels.GFD_LABELS)
