"""`kubectl get daemonsets` tables as posted: DaemonSets with their counts and selectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuop.check import run_checks
from gpuop.check.release import detect_release
from gpuop.check.state import ClusterState
from gpuop.manifests import ManifestError, load_objects
from gpuop.manifests.daemonset_table import parse_daemonset_table

DATA = Path(__file__).resolve().parents[2] / "data" / "tables"
DAEMONSETS = (DATA / "gpu-operator-daemonsets.txt").read_text(encoding="utf-8")

# A v1.6 cluster's operands, `-A -o wide`: selected by nvidia.com/gpu.present, no deploy label.
WIDE_V1_6 = """\
NAMESPACE                NAME                                 DESIRED   CURRENT   READY   UP-TO-DATE   AVAILABLE   NODE SELECTOR                 AGE    CONTAINERS            IMAGES                                        SELECTOR
gpu-operator-resources   nvidia-driver-daemonset              1         1         1       1            1           nvidia.com/gpu.present=true   301d   nvidia-driver-ctr     nvcr.io/nvidia/driver:460.32.03-ubuntu18.04   app=nvidia-driver-daemonset
gpu-operator-resources   nvidia-container-toolkit-daemonset   1         1         1       1            1           nvidia.com/gpu.present=true   301d   nvidia-container-toolkit-ctr   nvcr.io/nvidia/k8s/container-toolkit:1.4.7-ubuntu18.04   app=nvidia-container-toolkit-daemonset
"""


def test_rows_become_daemonsets_with_their_counts() -> None:
    table = parse_daemonset_table(DAEMONSETS)
    assert table is not None and table.daemonsets == 8
    plugin = next(
        d for d in table.objects if d["metadata"]["name"] == "nvidia-device-plugin-daemonset"
    )
    assert plugin["metadata"]["namespace"] == "gpu-operator"  # the command line's -n
    assert plugin["status"] == {
        "desiredNumberScheduled": 2,
        "currentNumberScheduled": 2,
        "numberReady": 1,
        "updatedNumberScheduled": 2,
        "numberAvailable": 1,
        "numberUnavailable": 1,
    }
    assert plugin["spec"]["template"]["spec"]["nodeSelector"] == {
        "nvidia.com/gpu.deploy.device-plugin": "true"
    }
    nfd = next(d for d in table.objects if "node-feature" in d["metadata"]["name"])
    assert nfd["spec"]["template"]["spec"] == {}


def test_unavailable_operands_are_found() -> None:
    report = run_checks(load_objects(DAEMONSETS))
    found = sorted(f"{f.code} {f.kind}/{f.name}" for f in report.findings if f.severity != "info")
    assert found == [
        "GPU308 DaemonSet/nvidia-device-plugin-daemonset",
        "GPU308 DaemonSet/nvidia-operator-validator",
    ]


def test_wide_columns_and_an_old_release_selector() -> None:
    table = parse_daemonset_table(WIDE_V1_6)
    assert table is not None and table.daemonsets == 2
    driver = table.objects[0]
    assert driver["metadata"]["namespace"] == "gpu-operator-resources"
    assert driver["spec"]["template"]["spec"]["containers"] == [
        {"name": "nvidia-driver-ctr", "image": "nvcr.io/nvidia/driver:460.32.03-ubuntu18.04"}
    ]
    release = detect_release(ClusterState.from_objects(table.objects))
    assert release.candidates[-1] == "1.6"
    assert "selects nodes by nvidia.com/gpu.present=true" in release.source


def test_other_text_is_not_a_table() -> None:
    assert parse_daemonset_table("NAME DESIRED CURRENT, UP-TO-DATE in prose\n") is None
    broken = DAEMONSETS.replace("   2         2         1", "   two       2         1")
    table = parse_daemonset_table(broken)
    assert table is not None and table.daemonsets == 4  # the table ends at the bad row


def test_an_unread_table_names_the_ones_read() -> None:
    with pytest.raises(ManifestError, match="`get daemonsets`"):
        load_objects("NAME   DATA   AGE\nkube-root-ca.crt   1   9d\n")
