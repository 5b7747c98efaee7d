"""`DRIVER_CONFIG_DIGEST` as NVIDIA's operator computes it, checked on what it wrote.

The reference driver DaemonSet (`tests/data/upstream-v26.7.0/daemonsets.json`) carries the
digest upstream computed for its pod spec; gpuop must compute the same number from the same
spec, or taking over would change the driver's pod template (a new revision, and on the
next upgrade a wrong choice between restarting and reinstalling the driver).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from gpuop.api.labels import DRIVER_CONFIG_DIGEST_ENV
from gpuop.render.operands import apply_driver_config_digest, driver_config_digest

DATA = Path(__file__).parents[2] / "data" / "upstream-v26.7.0"


def _upstream_driver_spec() -> dict[str, Any]:
    items = json.loads((DATA / "daemonsets.json").read_text())["items"]
    ds = next(d for d in items if d["metadata"]["name"] == "nvidia-driver-daemonset")
    return copy.deepcopy(ds["spec"]["template"]["spec"])


def _digests(spec: dict[str, Any]) -> dict[str, str]:
    return {
        container["name"]: env["value"]
        for container in [*spec.get("initContainers", []), *spec["containers"]]
        for env in container.get("env") or []
        if env["name"] == DRIVER_CONFIG_DIGEST_ENV
    }


def test_the_digest_is_upstreams_for_upstreams_spec() -> None:
    spec = _upstream_driver_spec()
    recorded = _digests(spec)
    assert recorded == {"k8s-driver-manager": "3745150944", "nvidia-driver-ctr": "3745150944"}
    assert driver_config_digest(spec) == "3745150944"


def test_apply_sets_it_on_the_driver_manager_and_the_driver_only() -> None:
    spec = _upstream_driver_spec()
    for container in [*spec["initContainers"], *spec["containers"]]:
        container["env"] = [e for e in container["env"] if e["name"] != DRIVER_CONFIG_DIGEST_ENV]
    apply_driver_config_digest(spec)
    assert _digests(spec) == {
        "k8s-driver-manager": "3745150944",
        "nvidia-driver-ctr": "3745150944",
    }
    assert spec["containers"][0]["env"][-1]["name"] == DRIVER_CONFIG_DIGEST_ENV


def test_install_settings_change_it_and_placement_does_not() -> None:
    base = driver_config_digest(_upstream_driver_spec())
    image = _upstream_driver_spec()
    image["containers"][0]["image"] = "nvcr.io/nvidia/driver:580.95.05-ubuntu24.04"
    env = _upstream_driver_spec()
    env["containers"][0]["env"].append({"name": "OPEN_KERNEL_MODULES_ENABLED", "value": "true"})
    placement = _upstream_driver_spec()
    placement["nodeSelector"] = {"somewhere": "else"}
    placement["tolerations"] = []
    placement["containers"][0]["env"].append(
        {"name": "FROM_FIELD", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    )
    assert driver_config_digest(image) != base
    assert driver_config_digest(env) != base
    assert driver_config_digest(placement) == base
