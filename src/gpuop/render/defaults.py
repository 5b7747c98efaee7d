"""Drop the values the API server fills in on its own, so two DaemonSets compare by intent.

Upstream's objects are read back from a cluster, with every default filled in; gpuop's are
rendered, without them. Stripping the defaults from both sides lets the differential test
(and `gpuop render --strip-defaults` readers) compare what each operator asked for.
"""

from __future__ import annotations

import copy
from typing import Any

_POD_DEFAULTS = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "schedulerName": "default-scheduler",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
}
_CONTAINER_DEFAULTS = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "resources": {},
}
_PROBE_DEFAULTS = {
    "successThreshold": 1,
    "failureThreshold": 3,
    "periodSeconds": 10,
    "timeoutSeconds": 1,
}
_PROBES = ("startupProbe", "livenessProbe", "readinessProbe")


def _drop(obj: dict[str, Any], defaults: dict[str, Any]) -> None:
    for key, value in defaults.items():
        if key in obj and obj[key] == value:
            del obj[key]


def _strip_container(container: dict[str, Any]) -> None:
    _drop(container, _CONTAINER_DEFAULTS)
    for probe in _PROBES:
        if probe in container:
            _drop(container[probe], _PROBE_DEFAULTS)
            handler = container[probe].get("httpGet")
            if handler:
                _drop(handler, {"scheme": "HTTP"})
    for port in container.get("ports") or []:
        _drop(port, {"protocol": "TCP"})
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef")
        if field_ref:
            _drop(field_ref, {"apiVersion": "v1"})


def strip_api_defaults(daemonset: dict[str, Any]) -> dict[str, Any]:
    """A copy of a DaemonSet without the fields the API server defaults."""
    ds = copy.deepcopy(daemonset)
    meta = ds.get("metadata") or {}
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"):
        meta.pop(key, None)
    (meta.get("annotations") or {}).pop("deprecated.daemonset.template.generation", None)
    ds.pop("status", None)
    spec = ds.get("spec") or {}
    _drop(spec, {"revisionHistoryLimit": 10})
    rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate")
    if rolling is not None:
        _drop(rolling, {"maxSurge": 0})
    pod = (spec.get("template") or {}).get("spec") or {}
    _drop(pod, _POD_DEFAULTS)
    if pod.get("serviceAccount") == pod.get("serviceAccountName"):
        pod.pop("serviceAccount", None)
    for container in [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]:
        _strip_container(container)
    for volume in pod.get("volumes") or []:
        host_path = volume.get("hostPath")
        if host_path is not None:
            _drop(host_path, {"type": ""})
        for source in ("configMap", "secret"):
            if source in volume:
                _drop(volume[source], {"defaultMode": 420})
    return ds
