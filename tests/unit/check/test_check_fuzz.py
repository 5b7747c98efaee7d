"""Malformed and adversarial dumps never crash the checker: findings or exit 2, no traceback.

Wrong types in every field, huge strings, missing metadata, non-dict items, bad quantities
and invalid UTF-8 through the CLI. 1,750 examples in all (550 + 350 + 550 + 300) under the
`ci` Hypothesis profile, a tenth under `dev`, ten times under `deep`; they carry the `fuzz`
marker (`make unit` leaves them out, `make test` runs them). The planning projection's
property test takes the profile's own count and always runs.
"""

from __future__ import annotations

import json
from typing import Any

import corpus_gen
import pytest
import yaml
from click.testing import CliRunner
from fuzzing import scaled
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuop.api.labels import INVENTORY_ANNOTATION
from gpuop.check import render_text, run_checks, to_sarif
from gpuop.check.context import CheckContext
from gpuop.check.state import ClusterState
from gpuop.cli.check import check
from gpuop.naming import PciDatabase
from gpuop.planner import NodeFacts, plan
from gpuop.policy import default_policy

FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["true", "false", "", "2", "-1", "1.5", "1e3", "2Ki", "1e999", "0x10", "٣"]),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
# A value of the wrong type, cheaper to draw than arbitrary JSON.
_odd = st.one_of(_scalars, st.lists(_scalars, max_size=2), st.just({"a": {"b": [1]}}))
_huge = st.sampled_from(["x" * 70_000, "nvidia.com/" + "A" * 5000, "é" * 3000, "\x00\n\t"])
# Huge strings are one draw in ten: enough to hit every field, cheap enough to run often.
_rare_huge = st.integers(0, 9).flatmap(lambda n: _huge if n == 0 else st.text(max_size=12))

_LABEL_KEYS = [
    "feature.node.kubernetes.io/pci-10de.present",
    "feature.node.kubernetes.io/pci-0302_10de_2236.present",
    "nvidia.com/gpu.workload.config",
    "nvidia.com/gpu.present",
    "nvidia.com/gpu.deploy.device-plugin",
    "nvidia.com/gpu.deploy.sandbox-device-plugin",
    "nvidia.com/gpu.deploy.operands",
    "nvidia.com/gpu.deploy.driver",
    "nvidia.com/vgpu.config",
    "nvidia.com/vgpu.config.state",
    "nvidia.com/mig.config",
    "nvidia.com/mig.config.state",
    "nvidia.com/gpu.product",
    "nvidia.com/gpu.count",
    "nvidia.com/gpu.replicas",
    "nvidia.com/mig.capable",
    "nvidia.com/cuda.driver-version.full",
    "nvidia.com/gpu-driver-upgrade-state",
    "nvidia.com/mps.capable",
]
_LABEL_VALUES = [
    "true",
    "false",
    "",
    "container",
    "vm-passthrough",
    "vm-vgpu",
    "vm_passthrough",
    "paused-for-vgpu-change",
    "pending",
    "failed",
    "success",
    "A10-12Q",
    "A10-5Q",
    "all-1g.10gb",
    "NVIDIA-A10",
    "NVIDIA-A100-PCIE-40GB-MIG-1g.5gb",
    "2",
    "99999",
    "upgrade-failed",
    "595.91.07",
]
_RESOURCES = [
    "nvidia.com/gpu",
    "nvidia.com/GA102GL_A10",
    "nvidia.com/NVIDIA_A10-12Q",
    "nvidia.com/NVIDIA_A10-8Q",
    "nvidia.com/pgpu",
    "nvidia.com/2236",
    "nvidia.com/mig-1g.10gb",
    "nvidia.com/-bad-",
    "nvidia.com/TU104GL_Tesla_T4",
    "cpu",
]
_inventory = st.one_of(
    _odd.map(json.dumps),
    st.lists(
        st.fixed_dictionaries(
            {
                "pci": st.sampled_from(
                    ["10de:2236", "10de:26b5", "10DE:25B6", "8086:1234", "10de:zz"]
                )
            },
            optional={
                "index": st.one_of(
                    st.integers(-5, 300), st.booleans(), st.none(), st.text(max_size=3)
                ),
                "model": st.one_of(st.sampled_from(["A10", "A16", "T4", "nope"]), st.integers()),
                "memory_mib": _scalars,
            },
        ),
        max_size=5,
    ).map(json.dumps),
    _scalars,
)
_labels = st.one_of(
    st.dictionaries(
        st.one_of(st.sampled_from(_LABEL_KEYS), st.text(max_size=15)),
        st.one_of(st.sampled_from(_LABEL_VALUES), _scalars, _rare_huge),
        max_size=10,
    ),
    _odd,
)
_allocatable = st.one_of(
    st.dictionaries(
        st.one_of(st.sampled_from(_RESOURCES), st.text(max_size=10)),
        st.one_of(
            st.sampled_from(["0", "1", "2", "4", "12", "1.5", "-2", "two", "1e2", "9" * 40]),
            _scalars,
        ),
        max_size=6,
    ),
    _odd,
)


@st.composite
def nodes(draw: st.DrawFn) -> Any:
    annotations = draw(
        st.one_of(
            st.fixed_dictionaries({INVENTORY_ANNOTATION: _inventory}),
            st.dictionaries(st.text(max_size=8), _scalars, max_size=2),
            _odd,
        )
    )
    metadata = draw(
        st.one_of(
            st.fixed_dictionaries(
                {"name": st.one_of(st.text(min_size=1, max_size=10), _scalars)},
                optional={"labels": _labels, "annotations": st.just(annotations)},
            ),
            _odd,
        )
    )
    status = draw(
        st.one_of(
            st.fixed_dictionaries(
                {}, optional={"allocatable": _allocatable, "capacity": _allocatable}
            ),
            _odd,
        )
    )
    return {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "status": status}


def _policies() -> Any:
    good = corpus_gen.policy_object(sandbox=True)
    return st.one_of(
        st.just(good),
        st.builds(
            lambda enabled, workload, extra: {
                "apiVersion": "nvidia.com/v1",
                "kind": "ClusterPolicy",
                "metadata": {"name": "p"},
                "spec": {
                    "sandboxWorkloads": {"enabled": enabled, "defaultWorkload": workload},
                    **extra,
                },
            },
            _scalars,
            st.one_of(st.sampled_from(["container", "vm-vgpu", "bogus"]), _scalars),
            st.dictionaries(
                st.sampled_from(["driver", "future", "vgpuDeviceManager"]), _odd, max_size=2
            ),
        ),
        st.builds(
            lambda spec: {"kind": "ClusterPolicy", "metadata": {"name": "q"}, "spec": spec}, _odd
        ),
    )


_device = st.fixed_dictionaries(
    {"deviceName": st.one_of(st.sampled_from(_RESOURCES), _scalars)}, optional={"name": _scalars}
)
_kubevirts = st.builds(
    lambda permitted, gates, version, mdc: {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
        "spec": {
            "configuration": {
                "developerConfiguration": {"featureGates": gates},
                "permittedHostDevices": permitted,
                "mediatedDevicesConfiguration": mdc,
            }
        },
        "status": {"observedKubeVirtVersion": version},
    },
    st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                section: st.lists(
                    st.one_of(
                        st.fixed_dictionaries(
                            {"resourceName": st.one_of(st.sampled_from(_RESOURCES), _scalars)},
                            optional={
                                "pciVendorSelector": st.one_of(
                                    st.sampled_from(["10DE:2236", "10de:zzzz", "8086:1"]), _scalars
                                ),
                                "mdevNameSelector": st.one_of(
                                    st.sampled_from(["NVIDIA A10-12Q", " "]), _scalars
                                ),
                                "externalResourceProvider": _scalars,
                            },
                        ),
                        _scalars,
                    ),
                    max_size=3,
                )
                for section in ("pciHostDevices", "mediatedDevices", "usb")
            },
        ),
        _odd,
    ),
    st.one_of(
        st.lists(
            st.one_of(
                st.sampled_from(["GPU", "HostDevices", "DisableMDEVConfiguration"]), _scalars
            ),
            max_size=3,
        ),
        _odd,
    ),
    st.one_of(st.sampled_from(["v1.2.0", "v1.8.1", "1.4", "v99999999999999999999.1"]), _scalars),
    _odd,
)
_pods = st.builds(
    lambda name, node, phase, resources, owners: {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "ownerReferences": owners},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": resources}],
            "initContainers": resources,
        },
        "status": {"phase": phase, "initContainerStatuses": resources, "conditions": owners},
    },
    st.one_of(st.text(min_size=1, max_size=8), _scalars),
    st.one_of(st.sampled_from(["", "n1", "lab-1"]), _scalars),
    st.one_of(st.sampled_from(["Pending", "Running", "Succeeded"]), _scalars),
    st.one_of(
        st.fixed_dictionaries({}, optional={"limits": _allocatable, "requests": _allocatable}), _odd
    ),
    st.one_of(
        st.lists(
            st.fixed_dictionaries(
                {
                    "kind": st.sampled_from(["DaemonSet", "VirtualMachineInstance", "ReplicaSet"]),
                    "name": st.one_of(st.sampled_from(["nvidia-driver-daemonset", "vm"]), _scalars),
                }
            ),
            max_size=2,
        ),
        _odd,
    ),
)
_vmis = st.builds(
    lambda name, devices, status: {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": "vms"},
        "spec": {"domain": {"devices": devices}},
        "status": status,
    },
    st.one_of(st.text(min_size=1, max_size=8), _scalars),
    st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "gpus": st.one_of(st.lists(_device, max_size=2), _odd),
                "hostDevices": st.lists(_device, max_size=2),
            },
        ),
        _odd,
    ),
    st.one_of(
        st.fixed_dictionaries(
            {"phase": st.sampled_from(["Pending", "Running", "Failed", ""])},
            optional={"nodeName": _scalars},
        ),
        _odd,
    ),
)
_others = st.one_of(
    st.builds(
        lambda name, status: {
            "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "g"},
            "status": status,
        },
        st.sampled_from(["nvidia-driver-daemonset", "x"]),
        st.one_of(
            st.fixed_dictionaries(
                {"numberUnavailable": _scalars, "desiredNumberScheduled": _scalars}
            ),
            _odd,
        ),
    ),
    st.builds(
        lambda involved, message: {
            "kind": "Event",
            "metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": involved,
            "message": message,
            "lastTimestamp": message,
        },
        _odd,
        _scalars,
    ),
    st.builds(
        lambda data: {
            "kind": "ConfigMap",
            "metadata": {"name": "default-vgpu-devices-config"},
            "data": data,
        },
        st.one_of(
            st.dictionaries(
                st.text(max_size=5),
                st.one_of(
                    _rare_huge,
                    st.just(
                        "version: v1\nvgpu-configs: {a: [{devices: all, vgpu-devices: {A10-4Q: 99}}]}"
                    ),
                ),
                max_size=2,
            ),
            _odd,
        ),
    ),
    _odd,
    st.builds(lambda kind: {"kind": kind}, _scalars),
)
_objects = st.lists(
    st.one_of(nodes(), _policies(), _kubevirts, _pods, _vmis, _others, _json), max_size=6
)


_POLICIES = {flag: corpus_gen.policy_object(sandbox=flag) for flag in (True, False)}


def _assert_sound(objects: list[Any], *, text: bool = True) -> None:
    report = run_checks(objects)
    assert not [f for f in report.findings if f.code == "GPU000"], report.findings
    json.loads(report.to_json())
    json.dumps(to_sarif(report))
    if text:
        render_text(report)


@pytest.mark.fuzz
@settings(FUZZ, max_examples=scaled(550))
@given(_objects)
def test_adversarial_objects_never_crash(objects: list[Any]) -> None:
    _assert_sound(objects)


@pytest.mark.fuzz
@settings(FUZZ, max_examples=scaled(350))
@given(st.lists(nodes(), min_size=1, max_size=4), st.sampled_from([True, False]))
def test_adversarial_nodes_under_both_policies(node_list: list[Any], sandbox: bool) -> None:
    _assert_sound([_POLICIES[sandbox], *node_list], text=False)


@settings(FUZZ)
@given(st.lists(nodes(), min_size=1, max_size=3))
def test_the_planning_projection_matches_plan_on_odd_nodes(node_list: list[Any]) -> None:
    state = ClusterState.from_objects(node_list)
    policy = default_policy()
    ctx = CheckContext(state, policy, PciDatabase.builtin())
    by_name = {}
    for obj in node_list:
        name = obj["metadata"].get("name") if isinstance(obj["metadata"], dict) else None
        if isinstance(name, str) and name and name not in by_name:
            by_name[name] = obj
    for view in state.nodes:
        labels = dict(view.labels)
        # Every label and annotation, against the projection of those the planner reads;
        # the quantities as the checks read them (allocatable, and capacity beside it).
        facts = NodeFacts(
            view.name,
            labels,
            dict(view.annotations),
            dict(view.planned_resources),
            dict(view.planned_capacity),
        )
        projected = ctx.plan_for(view)
        assert projected is not None
        full = plan(policy, facts).to_dict()
        got = projected.to_dict()
        full.pop("node"), got.pop("node")
        assert got == full


_runner = CliRunner()


@pytest.mark.fuzz
@settings(FUZZ, max_examples=scaled(550))
@given(st.binary(max_size=300))
def test_cli_with_random_bytes_exits_cleanly(data: bytes) -> None:
    result = _runner.invoke(check, ["-", "-o", "json"], input=data)
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output


@pytest.mark.fuzz
@settings(FUZZ, max_examples=scaled(300))
@given(_objects, st.sampled_from(["json", "yaml", "yaml-broken", "latin1"]))
def test_cli_with_adversarial_documents(objects: list[Any], form: str) -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": objects}
    if form == "json":
        data = json.dumps(listing).encode()
    elif form == "latin1":
        data = json.dumps(listing, ensure_ascii=False).encode("utf-8") + b"\xe9\xff"
    else:
        text = yaml.safe_dump_all(objects) if objects else "---\n"
        data = (text[: len(text) // 2] if form == "yaml-broken" else text).encode()
    result = _runner.invoke(check, ["-", "-o", "sarif"], input=data)
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    assert "Traceback" not in result.output
    if result.exit_code in (0, 1):
        json.loads(result.stdout)
    else:
        assert result.stderr.count("\n") == 1
