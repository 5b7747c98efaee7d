"""The rules documentation of every checker, rendered from the rule registry.

`render_rule_docs(intro, prefix)` writes one family's page: the checker's own introduction,
then the rule table and a section per rule. `render_docs()` is `docs/checks.md` (the GPU
family, with the report schema); `gpuop.versions.docs` renders `docs/versions.md` (VER).
A test keeps the committed files equal to them; regenerate with
`python -c "from gpuop.check.docs import render_docs; print(render_docs(), end='')" > docs/checks.md`.
"""

from __future__ import annotations

import json
from typing import Any

from gpuop.check.model import SCHEMA_VERSION
from gpuop.check.rules import family


def _closed_object(
    properties: dict[str, Any],
    *,
    optional: tuple[str, ...] = (),
    description: str | None = None,
    nullable: bool = False,
) -> dict[str, Any]:
    """An object schema with exactly `properties`, each required unless `optional`."""
    head = {} if description is None else {"description": description}
    return {
        **head,
        "type": ["object", "null"] if nullable else "object",
        "required": [name for name in properties if name not in optional],
        "additionalProperties": False,
        "properties": properties,
    }


_FINDING_SCHEMA = _closed_object(
    {
        "code": {"type": "string", "pattern": "^GPU[0-9]{3}$"},
        "severity": {"enum": ["error", "warning", "info"]},
        "title": {"type": "string"},
        "kind": {"type": "string"},
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "node": {"type": "string"},
        "message": {"type": "string"},
        "hint": {"type": "string"},
    },
    optional=("namespace", "node"),
)

_EVIDENCE_SCHEMA = _closed_object(
    {
        "source": {"type": "string"},
        "signal": {"type": "string"},
        "implies": {"type": "string"},
    }
)

_NODE_SCHEMA = _closed_object(
    {
        "name": {"type": "string"},
        "gpu_node": {"type": "boolean"},
        "workload": {"type": ["string", "null"]},
        "gpus": {"type": ["integer", "null"]},
        "model": {"type": ["string", "null"]},
        "inventory": _closed_object(
            {
                "source": {"type": ["string", "null"]},
                "evidence": {"type": "array", "items": _EVIDENCE_SCHEMA},
            }
        ),
        "management": _closed_object(
            {
                "managers": {"type": "array", "items": {"type": "string"}},
                "certain": {
                    "description": "False when only weak signals (a platform's label, a"
                    " cluster-wide object) named the managers.",
                    "type": "boolean",
                },
                "evidence": {
                    "type": "array",
                    "items": _closed_object(
                        {"manager": {"type": "string"}, "signal": {"type": "string"}}
                    ),
                },
            },
            optional=("certain",),
            description="What manages the node's GPUs (catalog/managers.yaml) and the signals"
            " that show it.",
        ),
    },
    description="A node some finding is about, and what its GPUs were learnt from.",
)

# `--live` reads name the cluster they read (see gpuop.cli.live).
_CLUSTER_SCHEMA = _closed_object(
    {
        "cluster": {"type": ["string", "null"]},
        "server": {"type": ["string", "null"]},
        "context": {"type": ["string", "null"]},
        "kubeconfig": {"type": ["string", "null"]},
    },
    description="The cluster a --live run read: kubeconfig, context, its cluster and server.",
)

_SUMMARY_SCHEMA = _closed_object(
    {
        "error": {"type": "integer"},
        "warning": {"type": "integer"},
        "info": {"type": "integer"},
        "findings": {"type": "integer"},
        "by_code": {
            "description": "How many findings (after filtering) each code has.",
            "type": "object",
            "additionalProperties": {"type": "integer"},
        },
        "suppressed": {
            "description": "Findings not shown, by reason: below_severity (--severity),"
            " ignored (--ignore, .gpuop.yaml), annotation (gpuop.io/ignore).",
            "type": "object",
            "additionalProperties": {"type": "integer"},
        },
        "nodes_checked": {"type": "integer"},
        "gpu_nodes": {"type": "integer"},
        "managers": {
            "description": "How many nodes each manager of GPUs runs (a node with two counts"
            " for both).",
            "type": "object",
            "additionalProperties": {"type": "integer"},
        },
        "objects": {"type": "object", "additionalProperties": {"type": "integer"}},
        "skipped": {
            "type": "array",
            "items": _closed_object({"check": {"type": "string"}, "reason": {"type": "string"}}),
        },
    },
    optional=("by_code", "suppressed", "managers"),
)

REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gpuop check report",
    **_closed_object(
        {
            "schema_version": {"const": SCHEMA_VERSION},
            "tool": _closed_object({"name": {"type": "string"}, "version": {"type": "string"}}),
            "policy": _closed_object(
                {
                    "source": {"type": "string"},
                    "sandbox_enabled": {"type": ["boolean", "null"]},
                    "default_workload": {"type": ["string", "null"]},
                    "sandbox_mode": {"type": ["string", "null"]},
                    "gpu_cluster": {
                        "type": ["string", "null"],
                        "description": "The GPUCluster the nodes of the GPU Operator's DRA"
                        " stack were checked against (`default`: its defaults); null where"
                        " no node is on that stack.",
                    },
                },
                nullable=True,
            ),
            "operator_release": _closed_object(
                {
                    "version": {"type": ["string", "null"]},
                    "line": {"type": ["string", "null"]},
                    "source": {"type": "string"},
                    "known": {"type": "boolean"},
                    "candidates": {"type": "array", "items": {"type": "string"}},
                }
            ),
            "summary": _SUMMARY_SCHEMA,
            "findings": {"type": "array", "items": _FINDING_SCHEMA},
            "nodes": {"type": "array", "items": _NODE_SCHEMA},
            "cluster": _CLUSTER_SCHEMA,
        },
        optional=("operator_release", "nodes", "cluster"),
    ),
}

_INTRO = """\
# `gpuop check`: rules

<!-- Generated by gpuop.check.docs.render_docs(); do not edit by hand. -->

`gpuop check` reads a cluster dump (or a live cluster) and reports nodes whose labels,
operands and advertised resources disagree, KubeVirt wiring that refuses GPUs, and
workloads that wait for a resource no node advertises. What each node *should* run and
advertise comes from `gpuop plan` (the planner); the checker only compares.

```
gpuop check dump.json                     # kubectl get nodes,pods,... -o json
gpuop check nodes.yaml policy.yaml -      # several files, multi-document YAML, stdin
gpuop check ./bundle                      # a directory written by `gpuop collect`
gpuop check describe.txt                  # `kubectl describe node` output, as posted
gpuop check pod.txt                       # `kubectl describe pod` of a failing operand
gpuop check nodes.txt pods.txt ds.txt     # `kubectl get nodes --show-labels`, `get pods -o wide`, `get ds`
gpuop check --live --context lab          # read the cluster directly
gpuop check dump.json -o json|sarif       # machine-readable output
```

Inputs: Nodes, ClusterPolicies, the GPU Operator's GPUCluster, KubeVirt CRs, Pods, VirtualMachineInstances, DaemonSets,
Deployments, Events, the vGPU config ConfigMap, and DRA's ResourceSlices, ResourceClaims,
ResourceClaimTemplates and DeviceClasses (`resource.k8s.io/v1`, the GPU8xx rules; `v1beta2`,
`v1beta1` and `v1alpha3` objects are read as `v1`). Each kind is optional; the report lists the checks that could not run and why. Without a
ClusterPolicy the default one is used (GPU001). An operand's pod that is not Ready is
found on a node the input does not hold as well (GPU307): a report often posts
`kubectl describe pod` of the failing operand alone.

A node of the GPU Operator's DRA stack is held to that stack's contract, not the
ClusterPolicy's: the DRA stack's deploy labels (`driver`, `dra-driver`, `dra-validator`,
`dcgm-dra`, `dcgm-exporter-dra`) and none of the device plugin's (GPU301, GPU302), and no
device plugin resource (GPU201; GPU803 where its cards are published as well). With a
GPUCluster in the input its nodes are those the operator gives it (every node, or those
labelled `nvidia.com/gpu.stack=dra` beside a ClusterPolicy); without either CR, a node that
carries `nvidia.com/gpu.deploy.dra-driver=true` and not the device plugin's deploy label,
planned under the GPUCluster's defaults. An unusable GPUCluster is GPU007. A node that
NVIDIA's DRA driver serves beside the operator's ClusterPolicy (its kubelet plugin, its
ResourceSlices, or the `nvidia.com/dra-kubelet-plugin=true` label NVIDIA's install guide
has users set) is not expected to advertise `nvidia.com/gpu`.

Each node is held to the contract of what manages its GPUs (`catalog/managers.yaml`, with a
source for each): NVIDIA's GPU Operator, the standalone NVIDIA device plugin (Helm chart or
manifest, with or without GPU feature discovery), NVIDIA's KubeVirt GPU device plugin
installed alone, KubeVirt's own PCI and mediated-device plugins, NVIDIA's DRA driver, GKE's
and Bottlerocket's built-in plugins, EKS Auto Mode's (in the node runtime, no pod), EKS and
AKS GPU node pools, AKS's fully managed GPU node pools (AKS runs the plugin; the node
carries `kubernetes.azure.com/dcgm-exporter`), Alibaba Cloud ACK's GPU nodes (its plugin
add-on or static pod, `component=nvidia-device-plugin`; the node carries
`aliyun.accelerator/nvidia_count`), Oracle OKE's GPU nodes (its NvidiaGpuPlugin add-on runs
Kubernetes' legacy addon DaemonSet, as GKE does: its pods name OKE on a node labelled
`oci.oraclecloud.com/fault-domain`), Huawei Cloud CCE's GPU nodes (its CCE AI Suite add-on
runs DaemonSets of the same legacy names: its pods name CCE on a node carrying CCE's
`cce.cloud.com/cce-nodepool` or `node.kubernetes.io/subnetid`), and other vendors' sharing plugins (HAMi, known by its
`hami.io/node-nvidia-register` annotation; Volcano's vGPU and GPU share plugins,
Alibaba's gpushare and ACK's GPU sharing, and Tencent's GPU Manager, which register the
cards under their own names, `volcano.sh/vgpu-number`, `volcano.sh/gpu-number`,
`aliyun.com/gpu-mem` and `tencent.com/vcuda-core`; where one of those serves the cards a
`nvidia.com/gpu` of 0 is no failure: ACK's sharing modes set it so). A pod
of a manager's plugin on the node, a label only it sets, the OS image or a resource only it
advertises names it; without any, a platform's label or what the cluster holds (a
ClusterPolicy, the plugin's DaemonSet, GPU feature discovery's labels) does. The GPU
Operator's rules (workload configs, deploy labels, operands) judge only its nodes; the
standalone plugin's nodes are checked for the names and counts its sharing config gives,
read as the plugin reads it (the node's `nvidia.com/device-plugin.config`, else its
DaemonSet's DEFAULT_CONFIG and fallback strategies; the DaemonSet's `--mig-strategy` or
MIG_STRATEGY over the file's, and the plugin's default `none` when it reads neither nor any
config file); every node for resources registered with no device (GPU211); GKE's nodes for
the `nvidia.com/gpu` count their pool's time-sharing, MPS and MIG partition labels give
(GPU212, `catalog/gke.yaml`); nodes whose provisioner labels their machine's GPU count
(Karpenter on AWS and Azure, EKS Auto Mode, GKE's `gke-accelerator-count` and
`a3-highgpu-8g`, ACK's `aliyun.accelerator/nvidia_count`) for fewer GPUs
advertised than that, lost or unhealthy (GPU213, `catalog/instance-gpus.yaml`); nodes whose
machine has GPUs by those labels, a cloud's accelerator label or NFD's, and that advertise no
GPU at all, with what to do for their manager (GPU214); node conditions a platform sets
for GPU faults (AKS's `GPUMissing` and `XIDErrors`, Nebius's `NebiusGPUError`: GPU215,
`catalog/gpu-conditions.yaml`); two
managers that each register `nvidia.com/gpu` on one node are GPU108. The operator's
DaemonSets are known by name (its driver's too when named for a kernel, an RHCOS version or
an NVIDIADriver) unless their pods carry another manager's plugin labels: the plugin's
static manifest, which AKS's guide applies, names its DaemonSet
`nvidia-device-plugin-daemonset` as the operator does. In `kubectl describe node` output,
which shows a pod's name alone, a pod is its manager's by the DaemonSet its name carries
and the namespace it runs in (`kube-system/nvidia-gpu-device-plugin-small-cos-7wz9h` is
GKE's, or OKE's on a node labelled `oci.oraclecloud.com/fault-domain`;
`kube-system/nvidia-device-plugin-daemonset-*` the static manifest's, and so is one in a
namespace where no other operand of the operator runs, on a node without deploy labels, as
in AKS's `gpu-resources`; elsewhere the operator's). A node that advertises passthrough or
vGPU names and runs KubeVirt's `virt-handler` but no NVIDIA KubeVirt plugin is served by
KubeVirt's own plugins, also when the KubeVirt CR is not in the input; so is a passthrough
name that NVIDIA's plugin gives no device of pci.ids (`nvidia.com/T4`, a `resourceName`
the CR chose) on a node that advertises KubeVirt's `devices.kubevirt.io/*`. The text report's
first lines count the nodes of each manager when any is not
the GPU Operator; `-o json` says it per node (`nodes[].management`, with the evidence: for
the nodes findings are about, or every node with `--all-nodes`, which also adds a table of
each node's managers to the text) and in `summary.managers`.

Operator releases label nodes differently (v26.7.0 added `nvidia.com/gpu.deploy.client`,
v23.6.0 `kata-manager` and `cc-manager`; before v26.7.0 an empty deploy label stays empty),
so the deploy-label rules (GPU301, GPU302) follow the release that labelled the nodes:
`--operator-version` (or `--operator-release`, as `versions check` spells it), else the tag of
the operator image (`nvcr.io/nvidia/gpu-operator:v25.10.0`)
or its Helm labels, else the validator image, else the chart label on an operand's pod
(`helm.sh/chart=gpu-operator-v23.9.1`, as `kubectl describe pod` shows it), else the ClusterPolicy's
`spec.validator.version`. When none is in the input, a label is required only when every
plausible release sets it (those whose CRD has the ClusterPolicy's fields), and the report
says so (`operator_release.known: false`, and the first line of the text output). Releases
from v1.7.0 (the first to set deploy labels) count, as posted dumps of old clusters show
them: v1.7 set neither `dcgm` nor `node-status-exporter`, so nodes without both may be
its nodes, unless a node carries one of them (then a later release labelled the nodes).
Releases before v1.7.0 set no deploy label at all (their DaemonSets selected
`nvidia.com/gpu.present=true`); they count when the input shows one: its operator image
(`gpu-operator:1.6.2`), an operand DaemonSet selecting nodes without a deploy label, or an
operand pod running where no node carries one. A chart version `v1.0.0-devel` (NVIDIA's
chart sources at every tag) names no release.
The facts per release are in `catalog/release_labels.yaml`.

Exit status: 0 without findings at or above `--fail-on` (errors by default), 1 with at
least one, 2 when the input cannot be read, holds none of the kinds the checks read (an
empty dump, `null`, only ConfigMaps: a failed `kubectl get` must not pass), or the command
line is wrong (the table for every command is in [cli.md](cli.md#exit-status)).

## Managing findings

```
gpuop check dump.json --severity warning          # hide info findings
gpuop check dump.json --fail-on warning           # warnings fail the run too
gpuop check dump.json --ignore GPU305             # hide a code everywhere
gpuop check dump.json --ignore 'GPU201:Node/legacy-*' --ignore 'GPU6*:Pod/ml/*'
gpuop check dump.json --config ci/gpuop.yaml      # default: ./.gpuop.yaml
```

`--ignore CODE[:KIND/NAME]` takes shell globs in each part; `KIND/NAME` matches a
namespaced object in any namespace, `KIND/NAMESPACE/NAME` in one. A `.gpuop.yaml` in the
current directory (or the file `--config` names) holds the same settings for every checker
(`gpuop check`, `gpuop kubevirt check`, `gpuop versions check`):

```yaml
severity: warning          # the lowest severity shown
fail-on: error             # the lowest severity that makes the exit status 1
ignore:
  - GPU305
  - GPU201:Node/legacy-*
annotations: true          # honour gpuop.io/ignore (default)
```

An object can carry its own exception: the annotation `gpuop.io/ignore: GPU201,GPU305` on
a Node or Pod hides those codes for findings about that object. Flags win over the file,
and `--ignore` adds to its list. Hidden findings are counted (`summary.suppressed`, and
the last line of the text output); `summary.by_code` counts the findings shown per code.
In text output, identical findings on several objects are printed once, under the first,
with a count and the other objects named; JSON keeps every finding.

## JSON output (`-o json`)

Schema version {schema_version}. Fields are only ever added; a change of meaning bumps
`schema_version`. `namespace` is present for namespaced objects, `node` for findings about
a node or an object on one. Findings are sorted: nodes first, then by object, severity and
code.

```json
{schema}
```

## SARIF output (`-o sarif`)

SARIF 2.1.0, one run. `tool.driver.rules` holds one rule per code below (`id` is the
code, `defaultConfiguration.level` its severity, with `info` as `note`). Each result has
`ruleId`, `level`, `message.text` (message and fix) and a logical location whose
`fullyQualifiedName` is `Kind/name` or `Kind/namespace/name`. Checks that could not run
are `toolExecutionNotifications`.
"""

_RULES_HEAD = """
## Rules

| Code | Severity | Title |
|---|---|---|
"""


def render_rule_docs(intro: str, prefix: str) -> str:
    """A checker's page: `intro`, then a table of the family's rules and one section each."""
    rules = sorted(family(prefix).rules, key=lambda rule: rule.code)
    lines = [intro, _RULES_HEAD]
    for rule in rules:
        lines.append(f"| [{rule.code}](#{rule.code.lower()}) | {rule.severity} | {rule.title} |\n")
    for rule in rules:
        lines.append(
            f"\n### {rule.code}\n\n"
            f"**{rule.title}** ({rule.name}, {rule.severity})\n\n"
            f"*What it means.* {rule.meaning}\n\n"
            f"*What goes wrong.* {rule.failure}\n\n"
            f"*How to fix.* {rule.fix}\n"
        )
    return "".join(lines)


def render_docs() -> str:
    """`docs/checks.md`: `gpuop check`, its report schema and the GPU rules."""
    intro = _INTRO.replace("{schema_version}", str(SCHEMA_VERSION)).replace(
        "{schema}", json.dumps(REPORT_SCHEMA, indent=2)
    )
    return render_rule_docs(intro, "GPU")


__all__ = ["REPORT_SCHEMA", "render_docs", "render_rule_docs"]
