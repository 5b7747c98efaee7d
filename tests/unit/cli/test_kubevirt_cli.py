"""`gpuop kubevirt permitted-devices|check|vmi-example` on the dumps of `tests/corpus/explain/`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_support import Run, RunCli

from gpuop.cli import cli
from gpuop.cli.kubevirt import kubevirt
from gpuop.kubevirt.launcher import render_launcher_pod

CORPUS = Path(__file__).resolve().parents[2] / "corpus" / "explain"
NODES = str(CORPUS / "nodes.json")
KUBEVIRT = str(CORPUS / "kubevirt.json")
BUNDLE = str(CORPUS / "bundle")
A10 = "nvidia.com/GA102GL_A10"
A10_12Q = "nvidia.com/NVIDIA_A10-12Q"
PCI_ENTRY = {
    "pciVendorSelector": "10DE:2236",
    "resourceName": A10,
    "externalResourceProvider": True,
}
MDEV_ENTRY = {
    "mdevNameSelector": "NVIDIA A10-12Q",
    "resourceName": A10_12Q,
    "externalResourceProvider": True,
}


@pytest.fixture
def run(gpuop: RunCli, monkeypatch: pytest.MonkeyPatch) -> RunCli:
    """`gpuop kubevirt ...` through `gpuop.cli.main`, registered here if it is not yet."""
    monkeypatch.setitem(cli.commands, "kubevirt", kubevirt)
    return gpuop


def error_line(result: Run) -> str:
    assert result.code == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def kubevirt_cr(configuration: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
        "spec": {"configuration": configuration},
        "status": {"observedKubeVirtVersion": "v1.5.0"},
    }


# --------------------------------------------------------------------------- permitted-devices


def test_patch_without_a_kubevirt_cr_is_for_a_current_kubevirt(run: RunCli) -> None:
    """No version known: no GPU gate (GA since v1.4), DisableMDEVConfiguration for vGPU."""
    result = run("kubevirt", "permitted-devices", NODES)
    assert result.code == 0
    assert json.loads(result.stdout) == {
        "spec": {
            "configuration": {
                "developerConfiguration": {"featureGates": ["DisableMDEVConfiguration"]},
                "permittedHostDevices": {
                    "pciHostDevices": [PCI_ENTRY],
                    "mediatedDevices": [MDEV_ENTRY],
                },
            }
        }
    }
    assert "the KubeVirt version is unknown" in result.stderr
    assert "before v1.4 also add the GPU feature gate" in result.stderr


@pytest.mark.parametrize(
    ("version", "gates", "mdev_field"),
    [
        ("v1.3.1", ["GPU", "DisableMDEVConfiguration"], False),
        ("v1.4.0", ["DisableMDEVConfiguration"], False),
        ("v1.7.2", ["DisableMDEVConfiguration"], False),
        ("v1.8.0", None, True),
        ("v1.9.1", None, True),
    ],
)
def test_patch_adds_only_the_gates_the_release_needs(
    run: RunCli, tmp_path: Path, version: str, gates: list[str] | None, mdev_field: bool
) -> None:
    cr = kubevirt_cr({})
    cr["status"]["observedKubeVirtVersion"] = version
    path = tmp_path / "kubevirt.json"
    path.write_text(json.dumps(cr))
    result = run("kubevirt", "permitted-devices", NODES, str(path))
    assert (result.code, result.stderr) == (0, "")
    configuration = json.loads(result.stdout)["spec"]["configuration"]
    assert configuration.get("developerConfiguration", {}).get("featureGates") == gates
    assert ("mediatedDevicesConfiguration" in configuration) is mdev_field
    if mdev_field:
        assert configuration["mediatedDevicesConfiguration"] == {"enabled": False}
    # What the patch gives passes the KubeVirt gate checks of `gpuop kubevirt check`.
    patched = kubevirt_cr(configuration)
    patched["status"]["observedKubeVirtVersion"] = version
    path.write_text(json.dumps(patched))
    checked = run("kubevirt", "check", NODES, str(path), "-o", "json")
    codes = {f["code"] for f in json.loads(checked.stdout)["findings"]}
    assert not codes & {"GPU504", "GPU505"}, checked.stdout


def test_patch_without_vgpu_nodes_adds_no_mdev_gate(run: RunCli, tmp_path: Path) -> None:
    nodes = json.loads(Path(NODES).read_text())
    nodes["items"] = [
        node
        for node in nodes["items"]
        if not any("NVIDIA_A10-12Q" in key for key in node["status"].get("allocatable", {}))
    ]
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes))
    cr = kubevirt_cr({})
    kubevirt = tmp_path / "kubevirt.json"
    kubevirt.write_text(json.dumps(cr))
    result = run("kubevirt", "permitted-devices", str(path), str(kubevirt))
    assert result.code == 0, result.stderr
    configuration = json.loads(result.stdout)["spec"]["configuration"]
    assert "developerConfiguration" not in configuration
    assert "mediatedDevices" not in configuration["permittedHostDevices"]


def test_snippet_is_the_yaml_block(run: RunCli) -> None:
    result = run("kubevirt", "permitted-devices", NODES, "--format", "snippet")
    assert result.code == 0
    assert result.stdout == (
        "# under spec.configuration of the KubeVirt CR\n"
        "permittedHostDevices:\n"
        "  pciHostDevices:\n"
        "  - pciVendorSelector: 10DE:2236\n"
        "    resourceName: nvidia.com/GA102GL_A10\n"
        "    externalResourceProvider: true\n"
        "  mediatedDevices:\n"
        "  - mdevNameSelector: NVIDIA A10-12Q\n"
        "    resourceName: nvidia.com/NVIDIA_A10-12Q\n"
        "    externalResourceProvider: true\n"
    )
    assert yaml.safe_load(result.stdout)["permittedHostDevices"]["pciHostDevices"] == [PCI_ENTRY]


def test_patch_keeps_the_crs_other_gates_and_entries(run: RunCli, tmp_path: Path) -> None:
    usb = {"resourceName": "kubevirt.io/token", "selectors": [{"vendor": "1", "product": "2"}]}
    other_pci = {"pciVendorSelector": "8086:1234", "resourceName": "intel.com/qat"}
    cr = kubevirt_cr(
        {
            "developerConfiguration": {"featureGates": ["HostDevices", "GPU"]},
            "permittedHostDevices": {
                "pciHostDevices": [other_pci],
                "mediatedDevices": [
                    {
                        "mdevNameSelector": "NVIDIA A10-12Q",
                        "resourceName": "nvidia.com/NVIDIA_A10-12q",
                    }
                ],
                "usb": [usb],
            },
        }
    )
    path = tmp_path / "kubevirt.json"
    path.write_text(json.dumps(cr))
    result = run("kubevirt", "permitted-devices", NODES, str(path))
    assert result.code == 0
    assert result.stderr == (
        "gpuop: replaces nvidia.com/NVIDIA_A10-12q: nodes advertise it as nvidia.com/NVIDIA_A10-12Q\n"
    )
    configuration = json.loads(result.stdout)["spec"]["configuration"]
    assert configuration["developerConfiguration"]["featureGates"] == [
        "HostDevices",
        "GPU",
        "DisableMDEVConfiguration",
    ]
    assert configuration["permittedHostDevices"] == {
        "pciHostDevices": [other_pci, PCI_ENTRY],
        "mediatedDevices": [MDEV_ENTRY],
        "usb": [usb],
    }


def test_newer_kubevirt_keeps_its_gate_and_gets_the_mdev_switch(
    run: RunCli, tmp_path: Path
) -> None:
    cr = kubevirt_cr({"developerConfiguration": {"featureGates": ["DisableMDEVConfiguration"]}})
    cr["status"]["observedKubeVirtVersion"] = "v1.8.1"
    path = tmp_path / "kubevirt.json"
    path.write_text(json.dumps(cr))
    result = run("kubevirt", "permitted-devices", NODES, str(path))
    assert result.code == 0
    assert "mediatedDevicesConfiguration.enabled: false" in result.stderr
    configuration = json.loads(result.stdout)["spec"]["configuration"]
    assert configuration["mediatedDevicesConfiguration"] == {"enabled": False}
    assert "developerConfiguration" not in configuration  # the CR's gates are left alone


def test_unknown_pci_model_is_a_problem(run: RunCli, tmp_path: Path) -> None:
    nodes = json.loads(Path(NODES).read_text())
    nodes["items"][1]["status"]["allocatable"] = {"nvidia.com/GB999_MYSTERY": "1"}
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes))
    result = run("kubevirt", "permitted-devices", str(path), "--format", "snippet")
    assert result.code == 1
    assert "problem: nvidia.com/GB999_MYSTERY (advertised by a10-passthrough)" in result.stderr
    assert "pciHostDevices" not in result.stdout


def test_no_sandbox_resources(run: RunCli, tmp_path: Path) -> None:
    nodes = json.loads(Path(NODES).read_text())
    nodes["items"] = nodes["items"][:1]
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes))
    result = run("kubevirt", "permitted-devices", str(path))
    assert result.code == 0
    assert "no node advertises a passthrough or vGPU resource" in result.stderr
    assert json.loads(result.stdout)["spec"]["configuration"]["permittedHostDevices"] == {}


def test_permitted_entries_let_the_launchers_render(run: RunCli) -> None:
    """What permitted-devices writes is what KubeVirt's check accepts."""
    patch = json.loads(run("kubevirt", "permitted-devices", NODES).stdout)
    permitted = patch["spec"]["configuration"]["permittedHostDevices"]
    for path in ("vmi-passthrough.yaml", "vmi-vgpu.yaml"):
        vmi = yaml.safe_load((CORPUS / path).read_text())
        render_launcher_pod(vmi, permitted_host_devices=permitted)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give dump files"),
        ((NODES, "--live"), "not both"),
        ((NODES, "--kubeconfig", "k"), "need --live"),
        ((KUBEVIRT,), "no Nodes in the input"),
        ((NODES, "--pci-ids", str(CORPUS / "nope")), "cannot read"),
    ],
)
def test_permitted_devices_errors(run: RunCli, args: tuple[str, ...], message: str) -> None:
    assert message in error_line(run("kubevirt", "permitted-devices", *args))


def hyperconverged_cr(permitted: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "hco.kubevirt.io/v1beta1",
        "kind": "HyperConverged",
        "metadata": {"name": "kubevirt-hyperconverged", "namespace": "openshift-cnv"},
        "spec": {"permittedHostDevices": permitted},
    }


def test_patch_targets_the_hyperconverged_cr_and_keeps_its_entries(
    run: RunCli, tmp_path: Path
) -> None:
    """On OpenShift HCO owns permittedHostDevices: the patch is for it, with its entries."""
    other_pci = {"pciVendorSelector": "8086:1234", "resourceName": "intel.com/qat"}
    path = tmp_path / "hco.json"
    path.write_text(json.dumps(hyperconverged_cr({"pciHostDevices": [other_pci]})))
    kubevirt_path = tmp_path / "kubevirt.json"
    kubevirt_path.write_text(json.dumps(kubevirt_cr({"permittedHostDevices": {}})))
    result = run("kubevirt", "permitted-devices", NODES, str(kubevirt_path), str(path))
    assert result.code == 0
    assert json.loads(result.stdout) == {
        "spec": {
            "permittedHostDevices": {
                "pciHostDevices": [other_pci, PCI_ENTRY],
                "mediatedDevices": [MDEV_ENTRY],
            }
        }
    }
    assert "HyperConverged kubevirt-hyperconverged owns KubeVirt's settings" in result.stderr
    snippet = run("kubevirt", "permitted-devices", NODES, str(path), "--format", "snippet")
    assert snippet.stdout.startswith("# under spec of the HyperConverged CR\n")


def test_check_reads_the_hyperconverged_permitted_devices(run: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "hco.json"
    path.write_text(json.dumps(hyperconverged_cr({"pciHostDevices": [PCI_ENTRY]})))
    result = run("kubevirt", "check", NODES, str(path), "-o", "json")
    codes = {(f["code"], f["kind"]) for f in json.loads(result.stdout)["findings"]}
    assert ("GPU501", "HyperConverged") in codes  # the vGPU resource is not in HCO's list
    text_result = run("kubevirt", "check", NODES, str(path))
    assert "HyperConverged openshift-cnv/kubevirt-hyperconverged" in text_result.stdout


# --------------------------------------------------------------------------- check


def test_check_reports_gpu5xx_with_check_codes(run: RunCli) -> None:
    result = run("kubevirt", "check", BUNDLE, "-o", "json")
    assert result.code == 1
    report = json.loads(result.stdout)
    codes = sorted((f["code"], f["kind"], f["name"]) for f in report["findings"])
    assert codes == [
        ("GPU502", "KubeVirt", "kubevirt"),
        ("GPU503", "KubeVirt", "kubevirt"),
        ("GPU505", "KubeVirt", "kubevirt"),
        ("GPU506", "VirtualMachineInstance", "vdi-1"),
        ("GPU508", "KubeVirt", "kubevirt"),
    ]
    by_code = {f["code"]: f for f in report["findings"]}
    assert by_code["GPU506"]["message"].startswith(
        "failed to render launch manifest: GPU nvidia.com/NVIDIA_A10-12Q is not permitted in"
        " permittedHostDevices configuration"
    )


def test_check_text(run: RunCli) -> None:
    result = run("kubevirt", "check", BUNDLE)
    assert result.code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "gpuop kubevirt check: KubeVirt kubevirt/kubevirt (v1.5.0), 3 node(s), 1 VMI(s)"
    )
    assert "GPU502 permits nvidia.com/NVIDIA_A10-12q, but nodes advertise" in result.stdout
    assert lines[-1] == "3 errors, 2 warnings, 0 info"


@pytest.mark.parametrize(
    ("configuration", "codes"),
    [
        # What permitted-devices writes passes the check.
        (
            {
                "developerConfiguration": {"featureGates": ["GPU", "DisableMDEVConfiguration"]},
                "permittedHostDevices": {
                    "pciHostDevices": [PCI_ENTRY],
                    "mediatedDevices": [MDEV_ENTRY],
                },
            },
            [],
        ),
        ({}, ["GPU505", "GPU507"]),
        (
            {
                "developerConfiguration": {"featureGates": ["DisableMDEVConfiguration"]},
                "permittedHostDevices": {"pciHostDevices": [PCI_ENTRY]},
            },
            ["GPU501"],
        ),
        (
            {
                "developerConfiguration": {"featureGates": ["DisableMDEVConfiguration"]},
                "permittedHostDevices": {
                    "pciHostDevices": [{**PCI_ENTRY, "resourceName": "nvidia.com/GA102GL_a10"}],
                    "mediatedDevices": [{**MDEV_ENTRY, "externalResourceProvider": "true"}],
                },
            },
            ["GPU502", "GPU503", "GPU508"],
        ),
    ],
)
def test_check_cases(
    run: RunCli, tmp_path: Path, configuration: dict[str, Any], codes: list[str]
) -> None:
    path = tmp_path / "kubevirt.json"
    path.write_text(json.dumps(kubevirt_cr(configuration)))
    result = run("kubevirt", "check", NODES, str(path), "-o", "json")
    found = sorted({f["code"] for f in json.loads(result.stdout)["findings"]})
    assert found == codes
    errors = any(f["severity"] == "error" for f in json.loads(result.stdout)["findings"])
    assert result.code == (1 if errors else 0)


def test_check_host_devices_gate(run: RunCli, tmp_path: Path) -> None:
    vmi = yaml.safe_load((CORPUS / "vmi-passthrough.yaml").read_text())
    vmi["spec"]["domain"]["devices"] = {"hostDevices": [{"name": "h", "deviceName": A10}]}
    cr = kubevirt_cr(
        {
            "developerConfiguration": {"featureGates": ["DisableMDEVConfiguration"]},
            "permittedHostDevices": {
                "pciHostDevices": [PCI_ENTRY],
                "mediatedDevices": [MDEV_ENTRY],
            },
        }
    )
    path = tmp_path / "input.json"
    path.write_text(json.dumps({"kind": "List", "items": [cr, vmi]}))
    result = run("kubevirt", "check", NODES, str(path), "-o", "json")
    assert result.code == 1
    [finding] = json.loads(result.stdout)["findings"]
    assert finding["code"] == "GPU504"
    assert "Host Devices feature gate is not enabled in kubevirt-config" in finding["message"]


def test_check_without_a_kubevirt_cr(run: RunCli) -> None:
    result = run("kubevirt", "check", NODES)
    assert result.code == 0
    assert "no KubeVirt CR in the input" in result.stdout


def test_check_bad_input(run: RunCli) -> None:
    assert "not valid YAML" in error_line(
        run("kubevirt", "check", "-", input="kind: Node\n  x: [\n")
    )


# --------------------------------------------------------------------------- vmi-example


def test_vmi_example_for_a_node(run: RunCli) -> None:
    result = run(
        "kubevirt", "vmi-example", "a10-vgpu", "--cluster", NODES, "--count", "2", "--name", "vdi"
    )
    assert (result.code, result.stderr) == (0, "")
    vmi = yaml.safe_load(result.stdout)
    assert vmi["kind"] == "VirtualMachineInstance"
    assert vmi["metadata"] == {"name": "vdi"}
    assert vmi["spec"]["domain"]["devices"]["gpus"] == [
        {"name": "gpu1", "deviceName": A10_12Q},
        {"name": "gpu2", "deviceName": A10_12Q},
    ]


def test_vmi_example_for_a_resource(run: RunCli) -> None:
    result = run("kubevirt", "vmi-example", A10, "-n", "vms", "-o", "json")
    assert result.code == 0
    vmi = json.loads(result.stdout)
    assert vmi["metadata"] == {"name": "gpu-vm", "namespace": "vms"}
    assert vmi["spec"]["domain"]["devices"]["gpus"] == [{"name": "gpu1", "deviceName": A10}]


def test_vmi_example_warns_about_counts_and_kinds(run: RunCli) -> None:
    result = run("kubevirt", "vmi-example", A10, "--count", "3", "--cluster", NODES)
    assert result.code == 0
    assert result.stderr == ("gpuop: warning: asks for 3, but no node advertises more than 2\n")
    container = run("kubevirt", "vmi-example", "nvidia.com/gpu")
    assert container.code == 0
    assert "is a container resource" in container.stderr


def test_vmi_example_dra_prints_the_template_and_a_vmi_that_renders(run: RunCli) -> None:
    result = run("kubevirt", "vmi-example", "--dra", "--count", "2", "-n", "vms")
    assert result.code == 0, result.stderr
    assert result.stderr == (
        "gpuop: KubeVirt before v1.9 needs the GPUsWithDRA feature gate for these gpus\n"
    )
    template, vmi = yaml.safe_load_all(result.stdout)
    assert template["kind"] == "ResourceClaimTemplate"
    assert template["apiVersion"] == "resource.k8s.io/v1"
    assert template["metadata"] == {"name": "gpu-vm-gpus", "namespace": "vms"}
    assert template["spec"]["spec"]["devices"]["requests"] == [
        {"name": "gpu1", "exactly": {"deviceClassName": "vfio.gpu.nvidia.com"}},
        {"name": "gpu2", "exactly": {"deviceClassName": "vfio.gpu.nvidia.com"}},
    ]
    assert vmi["spec"]["resourceClaims"] == [
        {"name": "gpus", "resourceClaimTemplateName": "gpu-vm-gpus"}
    ]
    assert vmi["spec"]["domain"]["devices"]["gpus"] == [
        {"name": "gpu1", "claimName": "gpus", "requestName": "gpu1"},
        {"name": "gpu2", "claimName": "gpus", "requestName": "gpu2"},
    ]
    pod = render_launcher_pod(vmi, permitted_host_devices={"pciHostDevices": []})
    (compute,) = pod["spec"]["containers"]
    assert compute["resources"]["claims"] == [
        {"name": "gpus", "request": "gpu1"},
        {"name": "gpus", "request": "gpu2"},
    ]
    assert "limits" not in compute["resources"]
    assert pod["spec"]["resourceClaims"] == vmi["spec"]["resourceClaims"]


def test_vmi_example_dra_json_and_name(run: RunCli) -> None:
    listed = json.loads(run("kubevirt", "vmi-example", "--dra", "-o", "json").stdout)
    assert listed["kind"] == "List"
    assert [item["kind"] for item in listed["items"]] == [
        "ResourceClaimTemplate",
        "VirtualMachineInstance",
    ]
    named = run("kubevirt", "vmi-example", "--dra", "--name", "vm7", "-o", "name")
    assert (
        named.stdout
        == "resourceclaimtemplate.resource.k8s.io/vm7-gpus\nvirtualmachineinstance.kubevirt.io/vm7\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--dra", A10), "--dra takes no NODE|RESOURCE or --values"),
        (("--dra", "--cluster", NODES), "--dra reads no cluster"),
        (("--dra", "--name", "Bad_Name"), "--name"),
    ],
)
def test_vmi_example_dra_errors(run: RunCli, args: tuple[str, ...], message: str) -> None:
    assert message in error_line(run("kubevirt", "vmi-example", *args))


def test_check_dra_gpus_need_no_permitted_entry_only_the_gate(run: RunCli, tmp_path: Path) -> None:
    vmi = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "claimed", "namespace": "vms"},
        "spec": {
            "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "t"}],
            "domain": {
                "devices": {"gpus": [{"name": "g", "claimName": "gpus", "requestName": "gpu1"}]}
            },
        },
        "status": {"phase": "Pending"},
    }
    old = kubevirt_cr({"permittedHostDevices": {"pciHostDevices": [PCI_ENTRY]}})
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"kind": "List", "items": [old, vmi]}))
    result = run("kubevirt", "check", str(dump), "-o", "json")
    codes = [f["code"] for f in json.loads(result.stdout)["findings"]]
    assert "GPU506" not in codes and "GPU601" not in codes
    assert codes.count("GPU504") == 1
    gated = kubevirt_cr(
        {
            "permittedHostDevices": {"pciHostDevices": [PCI_ENTRY]},
            "developerConfiguration": {"featureGates": ["GPUsWithDRA"]},
        }
    )
    current = kubevirt_cr({"permittedHostDevices": {"pciHostDevices": [PCI_ENTRY]}})
    current["status"]["observedKubeVirtVersion"] = "v1.9.0"
    for cr in (gated, current):
        dump.write_text(json.dumps({"kind": "List", "items": [cr, vmi]}))
        result = run("kubevirt", "check", str(dump), "-o", "json")
        assert [f["code"] for f in json.loads(result.stdout)["findings"]] == []


def test_values_indirection(run: RunCli, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("replicas: 2\nvm:\n  memory: 8Gi\n")
    written = run(
        "kubevirt",
        "vmi-example",
        "a10-passthrough",
        "--cluster",
        NODES,
        "--values",
        str(values),
        "--key",
        "vm.gpuResource",
    )
    assert written.code == 0
    # The note wraps to the terminal; the words are these.
    said = f"gpuop: {values}: vm.gpuResource: unset -> {A10}"
    assert written.stderr.split() == said.split()
    assert values.read_text() == f"replicas: 2\nvm:\n  memory: 8Gi\n  gpuResource: {A10}\n"
    assert yaml.safe_load(values.read_text()) == {
        "replicas": 2,
        "vm": {"memory": "8Gi", "gpuResource": A10},
    }
    read = run(
        "kubevirt",
        "vmi-example",
        "--values",
        str(values),
        "--resource-from-values",
        "vm.gpuResource",
    )
    assert read.code == 0
    assert read.stdout.startswith(f"# deviceName {A10} read from {values} (vm.gpuResource)\n")
    assert yaml.safe_load(read.stdout) == yaml.safe_load(written.stdout)


def test_values_default_key(run: RunCli, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    assert run("kubevirt", "vmi-example", A10_12Q, "--values", str(values)).code == 0
    assert yaml.safe_load(values.read_text()) == {"gpuResource": A10_12Q}
    values.write_text("gpuResource: nvidia.com/NVIDIA_A10-4Q\n")
    result = run(
        "kubevirt", "vmi-example", "--values", str(values), "--resource-from-values", "gpuResource"
    )
    gpus = yaml.safe_load(result.stdout)["spec"]["domain"]["devices"]["gpus"]
    assert gpus == [{"name": "gpu1", "deviceName": "nvidia.com/NVIDIA_A10-4Q"}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give NODE|RESOURCE"),
        (("a10-vgpu",), "is a node name"),
        (("nope", "--cluster", NODES), "no node 'nope' in the input"),
        (("a10-container", "--cluster", NODES), "advertises no passthrough or vGPU resource"),
        (("--resource-from-values", "k"), "needs --values"),
        ((A10, "--key", "k"), "--key needs --values"),
        ((A10, "--memory", "8 GB"), "--memory: '8 GB' is not a quantity"),
    ],
)
def test_vmi_example_errors(run: RunCli, args: tuple[str, ...], message: str) -> None:
    assert message in error_line(run("kubevirt", "vmi-example", *args))


def test_click_usage_errors_exit_2(run: RunCli) -> None:
    result = run("kubevirt", "vmi-example", A10, "--count", "0")
    assert result.code == 2
    assert "Invalid value for '--count'" in result.stderr


def test_values_errors(run: RunCli, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    read = ("kubevirt", "vmi-example", "--values", str(values), "--resource-from-values")
    assert "no such values file" in error_line(run(*read, "gpuResource"))
    values.write_text("- a list\n")
    assert "expected a YAML mapping" in error_line(run(*read, "gpuResource"))
    values.write_text("gpuResource: [1]\n")
    assert "gpuResource is a list, not a resource name" in error_line(run(*read, "gpuResource"))
    values.write_text("gpuResource: {\n")
    assert "not valid YAML" in error_line(run(*read, "gpuResource"))
    assert "not both" in error_line(run(*read, "gpuResource", A10))
