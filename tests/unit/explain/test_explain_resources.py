"""What a pod requests, the way the scheduler adds it up."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from explain_builders import GPU, bound, container, node, pod

from gpuop.explain import explain_pod
from gpuop.explain.resources import (
    Resource,
    is_extended_resource_name,
    is_scalar_resource_name,
    pod_requests,
)


def requests_of(the_pod: dict[str, Any]) -> dict[str, str]:
    return dict(explain_pod(the_pod, [node("n")]).requests)


CASES: list[tuple[str, dict[str, Any], dict[str, str]]] = [
    (
        "upstream example: max(sum of containers, each init container)",
        pod(
            initContainers=[
                container("ic1", requests={"cpu": "2", "memory": "1G"}),
                container("ic2", requests={"cpu": "2", "memory": "3G"}),
            ],
            containers=[
                container("c1", requests={"cpu": "2", "memory": "1G"}),
                container("c2", requests={"cpu": "1", "memory": "1G"}),
            ],
        ),
        {"cpu": "3000m", "memory": "3000000000"},
    ),
    (
        "limits default requests, extended resources included",
        pod(limits={"cpu": "1", GPU: "2"}),
        {"cpu": "1000m", GPU: "2"},
    ),
    (
        "explicit requests win over limits",
        pod(requests={"cpu": "250m"}, limits={"cpu": "1", "memory": "1Gi"}),
        {"cpu": "250m", "memory": "1073741824"},
    ),
    (
        "sidecars run alongside the app containers",
        pod(
            initContainers=[container("side", requests={"cpu": "1"}, restart_policy="Always")],
            containers=[container("c", requests={"cpu": "2"})],
        ),
        {"cpu": "3000m"},
    ),
    (
        "an init container after a sidecar runs beside it",
        pod(
            initContainers=[
                container("side", requests={"cpu": "1"}, restart_policy="Always"),
                container("init", requests={"cpu": "3"}),
            ],
            containers=[container("c", requests={"cpu": "1"})],
        ),
        {"cpu": "4000m"},
    ),
    (
        "an init container before a sidecar does not",
        pod(
            initContainers=[
                container("init", requests={"cpu": "3"}),
                container("side", requests={"cpu": "1"}, restart_policy="Always"),
            ],
            containers=[container("c", requests={"cpu": "1"})],
        ),
        {"cpu": "3000m"},
    ),
    (
        "overhead is added",
        pod(requests={"cpu": "1"}, overhead={"cpu": "250m", "memory": "120Mi"}),
        {"cpu": "1250m", "memory": "125829120"},
    ),
    (
        "pod-level requests replace the container totals",
        pod(requests={"cpu": "1", GPU: "1"}, resources={"requests": {"cpu": "3"}}),
        {"cpu": "3000m", GPU: "1"},
    ),
    (
        "pod-level requests default to the containers' total",
        pod(requests={"memory": "1Gi"}, resources={"limits": {"memory": "2Gi"}}),
        {"memory": "1073741824"},
    ),
    (
        "pod-level requests default to pod-level limits when containers ask nothing",
        pod(resources={"limits": {"memory": "2Gi", "cpu": "1"}}),
        {"cpu": "1000m", "memory": "2147483648"},
    ),
    (
        "quantities are summed exactly, then rounded up",
        pod(
            containers=[
                container("a", requests={"cpu": "0.0005"}),
                container("b", requests={"cpu": "0.0005"}),
            ]
        ),
        {"cpu": "1m"},
    ),
    (
        "unquoted YAML numbers are quantities",
        pod(requests={"cpu": 2, "memory": 1.5}),
        {"cpu": "2000m", "memory": "2"},
    ),
]


@pytest.mark.parametrize(("the_pod", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_requests(the_pod: dict[str, Any], expected: dict[str, str]) -> None:
    assert requests_of(the_pod) == expected


def test_bad_quantities_are_warned_and_skipped() -> None:
    explanation = explain_pod(pod(requests={"cpu": "lots", "memory": "1Gi"}), [node("n")])
    assert dict(explanation.requests) == {"memory": "1073741824"}
    assert explanation.warnings == (
        "container main requests: cpu: quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (ignored)",
    )


def test_fractional_or_overcommitted_extended_resources_are_warned() -> None:
    warnings: list[str] = []
    pod_requests(pod(requests={GPU: "1.5"}), warnings)
    pod_requests(pod(requests={GPU: "1"}, limits={GPU: "2"}), warnings)
    assert any("whole number" in w for w in warnings)
    assert any("must equal its limit" in w for w in warnings)


def test_in_place_resize_counts_what_the_running_pod_holds() -> None:
    running = bound("resized", "n", requests={"cpu": "1"})
    running["status"]["containerStatuses"] = [
        {
            "name": "main",
            "resources": {"requests": {"cpu": "6"}},
            "allocatedResources": {"cpu": "6"},
        }
    ]
    verdict = explain_pod(pod(requests={"cpu": "4"}), [node("n")], [running]).nodes[0]
    assert verdict.reasons == ("Insufficient cpu",)


def test_in_place_resize_spec_counts_until_the_kubelet_catches_up() -> None:
    running = bound("growing", "n", requests={"cpu": "6"})
    running["status"]["containerStatuses"] = [
        {
            "name": "main",
            "resources": {"requests": {"cpu": "1"}},
            "allocatedResources": {"cpu": "1"},
        }
    ]
    assert pod_requests(running, [], use_status=True)["cpu"] == 6
    running["status"]["conditions"] = [
        {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
    ]
    assert pod_requests(running, [], use_status=True)["cpu"] == 1


def test_allocatable_defaults_to_capacity() -> None:
    the_node = node("n", extended={GPU: "1"})
    del the_node["status"]["allocatable"]
    assert explain_pod(pod(limits={GPU: 1}), [the_node]).feasible == ("n",)


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        ("nvidia.com/gpu", True, True),
        ("nvidia.com/GA102GL_A10", True, True),
        ("nvidia.com/NVIDIA_A10-12Q", True, True),
        ("cpu", False, False),
        ("hugepages-1Gi", False, True),
        ("attachable-volumes-aws-ebs", False, True),
        ("example.kubernetes.io/thing", False, True),
        ("requests.nvidia.com/gpu", False, False),
        ("nvidia.com/", False, False),
        ("nvidia.com/gpu/extra", False, False),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar


def test_resource_conversion_rounds_up() -> None:
    resource = Resource.of(
        {"cpu": Decimal("0.0001"), "memory": Decimal("0.5"), "pods": Decimal(3), GPU: Decimal(2)}
    )
    assert (resource.milli_cpu, resource.memory, resource.allowed_pods) == (1, 1, 3)
    assert resource.scalar == {GPU: 2}
