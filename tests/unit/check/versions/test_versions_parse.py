"""Reading version strings: strict shapes, clear refusals."""

from __future__ import annotations

import pytest

from gpuop.check.versions.parse import (
    OsInfo,
    VersionError,
    cuda_minor,
    driver_branch,
    driver_key,
    in_range,
    kubernetes_minor,
    looks_like_release,
    node_os,
    normalize_tag,
    os_version_matches,
    parse_runtime,
    release_name,
)


@pytest.mark.parametrize(
    ("text", "minor"),
    [
        ("1.31", (1, 31)),
        ("v1.31.4", (1, 31)),
        ("1.30.14", (1, 30)),
        ("v1.30.2-eks-1a2b3c4", (1, 30)),
        ("v1.33.1+k3s1", (1, 33)),
        ("v1.32.3-gke.1785003", (1, 32)),
        (" v1.36.0 ", (1, 36)),
    ],
)
def test_kubernetes_versions(text: str, minor: tuple[int, int]) -> None:
    assert kubernetes_minor(text) == minor


@pytest.mark.parametrize("text", ["", "1", "one.two", "v1", "1.31.4.5", "1.x", "v1.31 4", "latest"])
def test_malformed_kubernetes_versions_say_what_was_expected(text: str) -> None:
    with pytest.raises(VersionError, match="is not a Kubernetes version"):
        kubernetes_minor(text)


@pytest.mark.parametrize(
    ("text", "key"),
    [("595.91.07", (595, 91, 7)), ("570.26", (570, 26, 0)), ("1000.1.2", (1000, 1, 2))],
)
def test_driver_versions(text: str, key: tuple[int, int, int]) -> None:
    assert driver_key(text) == key
    assert driver_branch(text) == key[0]


@pytest.mark.parametrize("text", ["595", "r595.91", "595.91.07-ubuntu22.04", "latest", "5.9.1"])
def test_malformed_driver_versions(text: str) -> None:
    with pytest.raises(VersionError, match="NVIDIA driver version"):
        driver_key(text)


def test_cuda_and_release_versions() -> None:
    assert cuda_minor("12.8") == (12, 8)
    assert cuda_minor("13.0.1") == (13, 0)
    with pytest.raises(VersionError, match="CUDA"):
        cuda_minor("twelve")
    assert release_name("v26.7.0") == "26.7.0"
    assert release_name("25.10.1") == "25.10.1"
    for bad in ("26.7", "2026.7.0", "26.7.0.1", "v26", "latest"):
        assert not looks_like_release(bad)
        with pytest.raises(VersionError, match=r"YY\.MM\.PP"):
            release_name(bad)


def test_driver_ordering_is_numeric() -> None:
    assert driver_key("580.95.05") < driver_key("580.105.08")
    assert driver_key("570.26") < driver_key("570.124.06")


def test_in_range_compares_minors_only() -> None:
    assert in_range((1, 32, 9), "1.32", "1.36")
    assert in_range((1, 36), "1.32", "1.36")
    assert not in_range((1, 31), "1.32", "1.36")
    assert not in_range((1, 37), "1.32", "1.36")
    assert in_range((2, 0), "1.7", "2.2")


@pytest.mark.parametrize(
    ("tag", "normal"),
    [
        ("v1.17.8-ubuntu20.04", "1.17.8"),
        ("v0.17.0-ubi9", "0.17.0"),
        ("4.4.1-4.6.0-distroless", "4.4.1-4.6.0"),
        ("13.0.1-base-ubi9", "13.0.1-base"),
        ("v26.7.0", "26.7.0"),
        ("595.91.07-rhel9.4", "595.91.07"),
        ("sha256:abc", "sha256:abc"),
        ("vgpu", "vgpu"),
    ],
)
def test_normalize_tag(tag: str, normal: str) -> None:
    assert normalize_tag(tag) == normal


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("Ubuntu 22.04.4 LTS", OsInfo("ubuntu", "22.04", "status.nodeInfo.osImage")),
        ("Red Hat Enterprise Linux 9.4 (Plow)", OsInfo("rhel", "9.4", "status.nodeInfo.osImage")),
        (
            "Red Hat Enterprise Linux CoreOS 418.94.202410090804-0 (Plow)",
            OsInfo("rhcos", "4.18", "status.nodeInfo.osImage"),
        ),
        (
            "Red Hat Enterprise Linux CoreOS 9.6.20250701-0 (Plow)",
            OsInfo("rhcos", None, "status.nodeInfo.osImage"),
        ),
        ("Rocky Linux 9.7 (Blue Onyx)", OsInfo("rocky", "9.7", "status.nodeInfo.osImage")),
        ("CentOS Linux 7 (Core)", OsInfo("centos", "7", "status.nodeInfo.osImage")),
        ("Amazon Linux 2023.6.20250107", OsInfo("amzn", "2023", "status.nodeInfo.osImage")),
        ("Container-Optimized OS from Google", OsInfo("cos", None, "status.nodeInfo.osImage")),
        ("Something Else 1.0", None),
        ("", None),
    ],
)
def test_os_from_os_image(image: str, expected: OsInfo | None) -> None:
    assert node_os({}, image) == expected


def test_nfd_labels_win_over_the_os_image() -> None:
    labels = {
        "feature.node.kubernetes.io/system-os_release.ID": "rhel",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "9.4",
    }
    assert node_os(labels, "Ubuntu 22.04.4 LTS") == OsInfo("rhel", "9.4", "NFD os_release labels")
    odd = {**labels, "feature.node.kubernetes.io/system-os_release.VERSION_ID": "nine"}
    assert node_os(odd, "") == OsInfo("rhel", None, "NFD os_release labels")
    rhcos = {
        "feature.node.kubernetes.io/system-os_release.ID": "rhcos",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "9.6",
    }
    assert node_os(rhcos, "") == OsInfo("rhcos", None, "NFD os_release labels")


def test_os_version_matching() -> None:
    assert os_version_matches("22.04.4", "22.04")
    assert os_version_matches("7.9", "7")
    assert not os_version_matches("9.40", "9.4")
    assert not os_version_matches("9.4", "9.40")
    assert not os_version_matches("22", "22.04")
    assert not os_version_matches("x", "22.04")


def test_container_runtimes() -> None:
    runtime = parse_runtime("containerd://1.7.23-k3s2")
    assert runtime is not None and (runtime.name, runtime.minor) == ("containerd", (1, 7))
    crio = parse_runtime("cri-o://1.30.2")
    assert crio is not None and crio.name == "cri-o"
    odd = parse_runtime("containerd://main")
    assert odd is not None and odd.minor is None
    assert parse_runtime("") is None
    assert parse_runtime("containerd") is None
