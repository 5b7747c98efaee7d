"""A DaemonSet whose selector changed is replaced, not left failing to apply."""

from __future__ import annotations

from lightkube import ApiError
from lightkube.models.meta_v1 import Status

from gpuop.kube.errors import KubeApiError, translated
from gpuop.operator.runtime import _immutable_selector

DAEMONSET = {"kind": "DaemonSet", "metadata": {"name": "nvidia-vfio-manager"}}
IMMUTABLE = (
    'DaemonSet.apps "nvidia-vfio-manager" is invalid: spec.selector: Invalid value: '
    "v1.LabelSelector{...}: field is immutable"
)


def _error(code: int, message: str) -> KubeApiError:
    return translated(ApiError(status=Status(code=code, message=message)))


def test_an_immutable_selector_error_asks_for_a_replace() -> None:
    assert _immutable_selector(DAEMONSET, _error(422, IMMUTABLE))


def test_other_errors_do_not() -> None:
    assert not _immutable_selector(DAEMONSET, _error(422, "spec.template: Invalid value"))
    assert not _immutable_selector(DAEMONSET, _error(409, IMMUTABLE))
    assert not _immutable_selector({"kind": "ConfigMap"}, _error(422, IMMUTABLE))
