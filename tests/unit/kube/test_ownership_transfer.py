"""Taking over the fields NVIDIA's operator owns on an object gpuop applied (csaupgrade's idea)."""

from __future__ import annotations

from typing import Any

from gpuop.kube.ops import ownership_transfer


def _daemonset(*entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "DaemonSet",
        "metadata": {
            "name": "nvidia-driver-daemonset",
            "resourceVersion": "42",
            "managedFields": list(entries),
        },
    }


NVIDIA = {
    "manager": "gpu-operator",
    "operation": "Update",
    "apiVersion": "apps/v1",
    "fieldsV1": {
        "f:spec": {
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"nvidia-driver-ctr"}': {
                            "f:env": {'k:{"name":"FOO"}': {".": {}, "f:value": {}}}
                        }
                    }
                }
            }
        }
    },
}
GPUOP = {
    "manager": "gpuop",
    "operation": "Apply",
    "apiVersion": "apps/v1",
    "fieldsV1": {
        "f:spec": {
            "f:template": {
                "f:spec": {"f:containers": {'k:{"name":"nvidia-driver-ctr"}': {"f:image": {}}}}
            }
        }
    },
}
STATUS = {
    "manager": "kube-controller-manager",
    "operation": "Update",
    "subresource": "status",
    "fieldsV1": {"f:status": {"f:numberReady": {}}},
}


def test_gpuop_owns_what_nvidias_operator_owned_and_other_managers_keep_theirs() -> None:
    patch = ownership_transfer(_daemonset(NVIDIA, GPUOP, STATUS), "gpuop")
    assert patch is not None
    assert patch[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}
    entries = patch[1]["value"]
    assert [e["manager"] for e in entries] == ["gpuop", "kube-controller-manager"]
    driver = entries[0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"][
        'k:{"name":"nvidia-driver-ctr"}'
    ]
    assert set(driver) == {"f:image", "f:env"}
    assert entries[1] == STATUS


def test_nothing_to_do_without_the_previous_operators_fields_or_gpuops_apply() -> None:
    assert ownership_transfer(_daemonset(GPUOP, STATUS), "gpuop") is None
    assert ownership_transfer(_daemonset(NVIDIA, STATUS), "gpuop") is None
