"""`check_versions`: table tests from the matrix's own facts, and dump-based cases."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from gpuop.catalog.versions import version_matrix
from gpuop.check.output import render_text
from gpuop.check.rules import VERSION_RULES
from gpuop.check.versions.driver import branch_findings, cuda_findings
from gpuop.check.versions.engine import check_versions
from gpuop.check.versions.report import VersionReport, render_versions_text, to_versions_sarif
from kit.versions_support import A100, L40S, TODAY, cluster_policy, cpu_node, gpu_node

MATRIX = version_matrix()


def run(*objects: dict[str, Any], **options: Any) -> VersionReport:
    options.setdefault("today", TODAY)
    return check_versions(list(objects), **options)


def codes_on(result: VersionReport, subject: str) -> set[str]:
    return {code for code, where in result.codes() if where == subject}


def message(result: VersionReport, code: str) -> str:
    found = [f.message for f in result.findings if f.code == code]
    assert found, f"no {code} in {[f.code for f in result.findings]}"
    return found[0]


# --- CUDA and drivers, straight from the matrix ------------------------------------------


@pytest.mark.parametrize(
    ("driver", "cuda", "code"),
    [
        ("570.26", "12.8", None),  # 12.8's packaged driver
        ("570.124.06", "12.8", None),
        ("550.54.15", "12.8", "VER204"),  # 12.x floor met, below 12.8's driver
        ("520.61.05", "12.8", "VER203"),  # below the 12.x family floor (525.60.13)
        ("525.60.12", "12.0", "VER203"),
        ("525.60.13", "12.0", None),
        ("570.124.06", "13.0", "VER203"),  # CUDA 13 needs branch 580
        ("580.65.06", "13.0", None),
        ("580.126.20", "13.2", "VER204"),
        ("595.91.07", "13.2", None),
        ("595.91.07", "12.4", None),  # newer drivers run older CUDA
        ("595.91.07", "13.4", "VER004"),  # 13.4's driver is not published: unknown
        ("595.91.07", "12.7", "VER004"),  # no CUDA 12.7 entry
        ("595.91.07", "14.0", "VER004"),  # no CUDA 14 family
        ("five", "12.0", "VER004"),
    ],
)
def test_cuda_against_the_driver(driver: str, cuda: str, code: str | None) -> None:
    found = [c for c, _, _ in cuda_findings(MATRIX, driver, cuda)]
    assert found == ([code] if code else [])


@pytest.mark.parametrize(
    ("driver", "today", "code"),
    [
        ("535.309.01", date(2026, 11, 29), "VER201"),  # R535 ended 2026-06
        ("535.309.01", date(2026, 6, 30), "VER202"),  # last day of its end-of-life month
        ("535.309.01", date(2026, 5, 1), "VER202"),
        ("535.309.01", date(2026, 1, 1), None),
        ("610.57.04", date(2026, 9, 1), "VER201"),  # a new feature branch, ended 2026-08
        ("580.173.02", date(2026, 11, 29), None),  # long-term support to 2028-06
        ("620.10.01", date(2026, 11, 29), None),
        ("570.211.01", date(2026, 11, 29), "VER201"),  # no longer in the lifecycle tables
        ("550.163.01", date(2024, 1, 1), "VER201"),  # (the tables are 2026's)
        ("545.23.08", date(2026, 11, 29), "VER004"),  # a branch gpuop has no facts for
        ("bad", date(2026, 11, 29), "VER004"),
    ],
)
def test_driver_branch_lifecycle(driver: str, today: date, code: str | None) -> None:
    found = [c for c, _, _ in branch_findings(MATRIX, today, driver)]
    assert found == ([code] if code else [])


def test_a_supported_combination_is_clean() -> None:
    result = run(
        cluster_policy("26.7.0"),
        gpu_node("gpu-1", kubelet="v1.34.2", os_version="24.04"),
        gpu_node("gpu-2", kubelet="v1.36.0", os_id="rhel", os_version="9.6"),
        gpu_node("gpu-3", product=L40S, kubelet="v1.33.5", os_version="22.04"),
        cpu_node("cpu-1", kubelet="v1.20.0", os_version="18.04"),  # not a GPU node: not checked
        kubernetes_version="v1.34.2",
    )
    assert result.findings == ()
    assert result.exit_code == 0
    assert result.detection.names == ("26.7.0",)


# --- Kubernetes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("release", "kubelet", "os_id", "os_version", "code"),
    [
        ("26.7.0", "v1.31.4", "ubuntu", "24.04", "VER101"),
        ("26.7.0", "v1.37.2", "ubuntu", "24.04", "VER101"),
        ("26.7.0", "v1.32.1", "ubuntu", "24.04", None),  # Ubuntu 24.04's row starts at 1.32
        ("26.7.0", "v1.32.1", "ubuntu", "22.04", "VER101"),  # every other row at 1.33
        ("26.7.0", "v1.33.0", "rhel", "9.4", None),
        ("26.3.3", "v1.32.0", "rhel", "9.4", None),
        ("25.10.1", "v1.31.2", "ubuntu", "22.04", None),
        ("25.10.1", "v1.35.0", "ubuntu", "22.04", "VER102"),  # added to 25.10's docs later
        ("23.3.2", "v1.27.3", "ubuntu", "20.04", None),
        ("23.3.2", "v1.27.3", "ubuntu", "18.04", "VER101"),  # 18.04 stops at 1.26
    ],
)
def test_kubernetes_against_the_release(
    release: str, kubelet: str, os_id: str, os_version: str, code: str | None
) -> None:
    driver = MATRIX.release(release).components.driver  # type: ignore[union-attr]
    result = run(
        cluster_policy(release),
        gpu_node("gpu-1", kubelet=kubelet, os_id=os_id, os_version=os_version, driver=driver),
        today=date(2024, 1, 1),
    )
    found = codes_on(result, "Node/gpu-1") & {"VER101", "VER102"}
    assert found == ({code} if code else set())


def test_kubernetes_1_31_on_26_7_0_names_the_range_and_the_releases_that_fit() -> None:
    result = run(cluster_policy("26.7.0"), gpu_node("gpu-1", kubelet="v1.31.4"))
    text = message(result, "VER101")
    assert "Kubernetes 1.31 (kubelet v1.31.4)" in text and "1.32–1.36 on ubuntu 24.04" in text
    hint = next(f.hint for f in result.findings if f.code == "VER101")
    assert "24.9.0–25.10.1" in hint
    assert result.exit_code == 1


def test_the_cluster_version_is_checked_against_the_widest_range() -> None:
    result = run(cluster_policy("26.7.0"), kubernetes_version="1.31")
    assert codes_on(result, "Cluster/control-plane") == {"VER101"}
    assert run(cluster_policy("26.7.0"), kubernetes_version="1.32").findings == ()


def test_openshift_nodes_are_checked_by_their_openshift_minor() -> None:
    node = gpu_node("ocp-1", os_id="rhcos", os_version="4.18", kubelet="v1.31.6")
    assert run(cluster_policy("26.7.0"), node).findings == ()
    old = gpu_node("ocp-2", os_id="rhcos", os_version="4.16", kubelet="v1.29.6")
    assert codes_on(run(cluster_policy("26.7.0"), old), "Node/ocp-2") == {"VER103"}


# --- OS and runtime ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("os_id", "os_version", "os_image", "code"),
    [
        ("ubuntu", "20.04", "", "VER103"),
        ("rhel", "9.5", "", "VER103"),  # 26.7 lists 9.2, 9.4, 9.6, 9.7, 9.8
        ("rhel", "9.4", "", None),
        ("rocky", "9.7", "", None),
        ("amzn", "2023", "", "VER103"),
        (None, None, "Ubuntu 22.04.4 LTS", None),  # read from the OS image
        (None, None, "Debian GNU/Linux 12 (bookworm)", "VER103"),
        (None, None, "Some Appliance 3", "VER004"),
        ("ubuntu", None, "", "VER004"),  # version unknown
    ],
)
def test_operating_systems(
    os_id: str | None, os_version: str | None, os_image: str, code: str | None
) -> None:
    node = gpu_node(
        "gpu-1", os_id=os_id, os_version=os_version, os_image=os_image, kubelet="v1.34.0"
    )
    found = codes_on(run(cluster_policy("26.7.0"), node), "Node/gpu-1")
    assert found == ({code} if code else set())


def test_an_unsupported_os_is_an_error_only_when_the_operator_builds_the_driver() -> None:
    node = gpu_node("gpu-1", os_version="20.04")
    container = run(cluster_policy("26.7.0"), node)
    assert [f.severity for f in container.findings if f.code == "VER103"] == ["error"]
    preinstalled = run(cluster_policy("26.7.0", spec={"driver": {"enabled": False}}), node)
    assert [f.severity for f in preinstalled.findings if f.code == "VER103"] == ["warning"]
    assert "releases that list ubuntu 20.04: 22.9.0–26.3.1" in next(
        f.hint for f in container.findings if f.code == "VER103"
    )


@pytest.mark.parametrize(
    ("release", "runtime", "code"),
    [
        ("26.7.0", "containerd://1.7.24", "VER104"),  # 26.7 validates 1.8–2.3
        ("26.7.0", "containerd://2.3.0", None),
        ("26.7.0", "containerd://2.1.4-k3s1", None),
        ("26.3.0", "containerd://2.3.1", "VER102"),  # 26.3's newer docs list up to 2.3
        ("26.7.0", "cri-o://1.34.1", "VER004"),  # no CRI-O ranges are published
        ("26.7.0", "docker://24.0.7", "VER104"),
        ("26.7.0", "containerd://main", "VER004"),
    ],
)
def test_container_runtimes(release: str, runtime: str, code: str | None) -> None:
    node = gpu_node("gpu-1", runtime=runtime, kubelet="v1.34.0", os_version="22.04")
    found = codes_on(run(cluster_policy(release), node, today=date(2026, 1, 1)), "Node/gpu-1")
    found -= {"VER205", "VER204"}
    assert found == ({code} if code else set())


def test_a_node_without_status_is_unknown_not_broken() -> None:
    node = gpu_node("gpu-1", node_info=False, os_id=None, os_version=None)
    result = run(cluster_policy("26.7.0"), node)
    assert codes_on(result, "Node/gpu-1") == {"VER004"}
    assert result.exit_code == 0


def test_a_malformed_kubelet_version_is_unknown() -> None:
    result = run(cluster_policy("26.7.0"), gpu_node("gpu-1", kubelet="banana"))
    assert codes_on(result, "Node/gpu-1") == {"VER004"}


# --- Drivers on nodes and in the policy ---------------------------------------------------


def test_node_drivers_past_end_of_life_and_cuda_too_new() -> None:
    nodes = [
        gpu_node("old", product=L40S, driver="535.309.01", cuda="12.8"),
        gpu_node("new", driver="595.91.07"),
    ]
    result = run(cluster_policy("26.7.0"), *nodes)
    assert codes_on(result, "Node/old") == {"VER201", "VER204"}
    assert codes_on(result, "Node/new") == set()


def test_legacy_gfd_labels_are_read() -> None:
    node = gpu_node(
        "gpu-1",
        driver=None,
        cuda=None,
        labels={
            "nvidia.com/cuda.driver.major": "535",
            "nvidia.com/cuda.driver.minor": "309",
            "nvidia.com/cuda.driver.rev": "01",
            "nvidia.com/cuda.runtime.major": "13",
            "nvidia.com/cuda.runtime.minor": "0",
        },
    )
    assert codes_on(run(cluster_policy("26.7.0"), node), "Node/gpu-1") == {"VER201", "VER203"}


def test_an_undocumented_driver_is_reported_with_the_documented_ones() -> None:
    node = gpu_node("gpu-1", driver="580.126.20")
    result = run(cluster_policy("26.7.0"), node)
    assert codes_on(result, "Node/gpu-1") == {"VER205"}
    assert "documented 580 drivers: 580.173.02" in message(result, "VER205")


def test_the_policys_driver_is_checked_too() -> None:
    policy = cluster_policy("26.7.0", versions={"driver": "535.309.01"})
    result = run(policy)
    assert codes_on(result, "ClusterPolicy/cluster-policy") == {"VER201"}
    bad = run(cluster_policy("26.7.0", versions={"driver": "latest"}))
    assert codes_on(bad, "ClusterPolicy/cluster-policy") == {"VER004"}


def test_driver_drift_within_a_pool() -> None:
    nodes = [
        gpu_node("march-1", driver="535.309.01"),
        gpu_node("august-1", driver="550.163.01"),
        gpu_node("august-2", driver="550.163.01"),
        gpu_node("l40s-1", product=L40S, driver="595.91.07"),
    ]
    result = run(cluster_policy("26.7.0"), *nodes, today=date(2026, 1, 1))
    drift = [f for f in result.findings if f.code == "VER301"]
    assert [f.name for f in drift] == ["march-1"]
    assert "2 other NVIDIA-A100-SXM4-80GB nodes run 550.163.01" in drift[0].message
    assert f"pool {A100}: 535.309.01 on 1, 550.163.01 on 2" in drift[0].message


def test_a_tie_in_a_pool_points_at_the_newest_driver() -> None:
    nodes = [gpu_node("a", driver="580.173.02"), gpu_node("b", driver="595.91.07")]
    drift = [f for f in run(cluster_policy("26.7.0"), *nodes).findings if f.code == "VER301"]
    assert [f.name for f in drift] == ["a"]


def test_different_gpus_may_run_different_drivers() -> None:
    nodes = [gpu_node("a", driver="580.173.02"), gpu_node("b", product=L40S)]
    assert "VER301" not in {code for code, _ in run(cluster_policy("26.7.0"), *nodes).codes()}


# --- The release --------------------------------------------------------------------------


def test_mixed_releases_name_which_operand_comes_from_where() -> None:
    policy = cluster_policy("26.7.0", versions={"devicePlugin": "v0.19.3", "toolkit": "v1.19.1"})
    result = run(policy, gpu_node("gpu-1"))
    assert codes_on(result, "ClusterPolicy/cluster-policy") == {"VER002"}
    text = message(result, "VER002")
    assert (
        "from 26.3.3: device-plugin/mps-control-daemon v0.19.3 (spec.devicePlugin.version)" in text
    )
    assert "from 26.3.2–26.3.3: container-toolkit v1.19.1 (spec.toolkit.version)" in text
    assert "from 26.7.0: operator-validator v26.7.0" in text
    assert result.exit_code == 0  # a warning


def test_a_requested_release_that_the_policy_does_not_match() -> None:
    result = run(cluster_policy("26.7.0"), operator_release="26.3.3")
    text = message(result, "VER002")
    assert "operator release 26.3.3 does not ship" in text
    assert "container-toolkit v1.20.0 (spec.toolkit.version)" in text
    assert codes_on(result, "ClusterPolicy/cluster-policy") == {"VER002", "VER005"}


def test_no_cluster_policy_means_the_release_is_unknown() -> None:
    result = run(gpu_node("gpu-1", kubelet="v1.20.0"))
    assert codes_on(result, "ClusterPolicy/(none)") == {"VER001"}
    assert any("operator release is unknown" in skip.reason for skip in result.report.skipped)
    assert codes_on(result, "Node/gpu-1") == set()  # no range to compare the 1.20 kubelet with
    with_release = run(gpu_node("gpu-1", kubelet="v1.20.0"), operator_release="26.7.0")
    assert codes_on(with_release, "Node/gpu-1") == {"VER101"}


def test_an_unknown_requested_release_is_reported_not_guessed() -> None:
    result = run(cluster_policy("26.7.0"), gpu_node("gpu-1"), operator_release="27.1.0")
    assert "operator release 27.1.0 is not in gpuop's version matrix" in message(result, "VER001")
    assert result.detection.names == ()


def test_a_policy_without_versions_assumes_gpuops_defaults() -> None:
    result = run(cluster_policy(), gpu_node("gpu-1", kubelet="v1.31.0"))
    assert codes_on(result, "ClusterPolicy/cluster-policy") == {"VER006"}
    assert codes_on(result, "Node/gpu-1") == {"VER101"}  # against 26.7.0


def test_unknown_operand_versions_are_info() -> None:
    result = run(cluster_policy("26.7.0", versions={"toolkit": "v1.20.1"}))
    assert codes_on(result, "ClusterPolicy/cluster-policy") == {"VER003"}
    assert [f.severity for f in result.findings] == ["info"]
    only_unknown = run(cluster_policy(versions={"toolkit": "v1.20.1"}))
    assert codes_on(only_unknown, "ClusterPolicy/cluster-policy") == {"VER001", "VER003"}


@pytest.mark.parametrize(
    ("release", "severity"), [("25.10.1", "warning"), ("26.3.3", "info"), ("26.7.0", None)]
)
def test_release_lifecycle(release: str, severity: str | None) -> None:
    found = [f.severity for f in run(cluster_policy(release)).findings if f.code == "VER005"]
    assert found == ([severity] if severity else [])


def test_a_cluster_policy_being_deleted_is_no_policy() -> None:
    policy = cluster_policy("26.7.0")
    policy["metadata"]["deletionTimestamp"] = "2026-11-01T00:00:00Z"
    result = run(policy, gpu_node("gpu-1", kubelet="v1.31.4"))
    assert codes_on(result, "ClusterPolicy/(none)") == {"VER001"}
    assert "no live ClusterPolicy in the input" in message(result, "VER001")
    assert codes_on(result, "ClusterPolicy/cluster-policy") == set()


def test_several_candidates_flag_only_what_none_supports() -> None:
    policy = cluster_policy(versions={"dcgm": "4.5.2-1"})  # 26.3.0–26.3.3
    fine = run(policy, gpu_node("gpu-1", kubelet="v1.36.0", os_version="22.04"))
    assert codes_on(fine, "Node/gpu-1") == set()  # 26.3.2 and 26.3.3 support 1.36
    bad = run(policy, gpu_node("gpu-1", kubelet="v1.31.0", os_version="22.04"))
    assert "outside the range of every candidate release" in message(bad, "VER101")


def test_unusable_items_and_extra_policies_are_reported_like_the_checker() -> None:
    second = cluster_policy("26.7.0", name="zz-second")
    second["metadata"]["creationTimestamp"] = "2026-06-01T00:00:00Z"
    result = run(cluster_policy("26.7.0"), second, {"kind": "Node", "metadata": {}})
    assert ("GPU002", "ClusterPolicy/zz-second") in result.codes()
    assert any(code == "GPU004" for code, _ in result.codes())


# --- Output -------------------------------------------------------------------------------


def test_text_json_and_sarif_use_the_checkers_format() -> None:
    result = run(cluster_policy("26.7.0"), gpu_node("gpu-1", kubelet="v1.31.4"))
    text = render_versions_text(result)
    assert text.startswith("gpuop versions check: 1 node (1 with GPUs)")
    assert "operator release 26.7.0 (the ClusterPolicy's operand versions)" in text
    assert "VER101" in text and "1 error, 0 warnings, 0 info" in text
    # The checker's own renderer takes the report unchanged.
    assert "VER101" in render_text(result.report)
    data = json.loads(json.dumps(result.to_dict()))
    assert list(data) == ["schema_version", "tool", "policy", "versions", "summary", "findings"]
    assert data["tool"]["name"] == "gpuop versions check"
    assert data["versions"]["release"] == "26.7.0"
    assert data["findings"][0]["title"] == VERSION_RULES["VER101"].title
    sarif = to_versions_sarif(result)
    run_ = sarif["runs"][0]
    assert run_["tool"]["driver"]["name"] == "gpuop versions check"
    rules = run_["tool"]["driver"]["rules"]
    for item in run_["results"]:
        assert rules[item["ruleIndex"]]["id"] == item["ruleId"]
    assert {rule["id"] for rule in rules} >= set(VERSION_RULES)


def test_a_1_x_operator_is_past_end_of_support() -> None:
    operator = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-operator", "namespace": "gpu-operator-resources"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v1.7.1"}
                    ]
                }
            }
        },
    }
    result = run(operator, gpu_node("gpu-1"))
    assert codes_on(result, "ClusterPolicy/(none)") == {"VER001", "VER005"}
    assert "v1.7.1 is past end of support" in message(result, "VER005")
    assert "v1.7.1 (from Deployment gpu-operator-resources/gpu-operator image" in message(
        result, "VER001"
    )
    assert "older than every release in gpuop's version matrix (22.9.0" in message(result, "VER001")
