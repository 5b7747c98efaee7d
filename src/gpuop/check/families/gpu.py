"""The GPU family: every finding `gpuop check` can report, with a stable code.

The hundreds group rules by what they look at:

* ``GPU0xx`` the input itself and the ClusterPolicy;
* ``GPU1xx`` the workload config and the GPUs the planner learns for a node;
* ``GPU2xx`` the extended resources a node advertises, against `gpuop.planner.plan`;
* ``GPU3xx`` deploy labels, configuration states and operand pods;
* ``GPU4xx`` nodes without GPUs;
* ``GPU5xx`` the KubeVirt (or HyperConverged) CR and VirtualMachineInstances;
* ``GPU6xx`` workloads that wait for a GPU resource;
* ``GPU7xx`` drift between nodes (driver versions, upgrades);
* ``GPU8xx`` DRA: ResourceSlices, ResourceClaims and DeviceClasses (`families/dra.py`).

`docs/checks.md` is rendered from this table by `gpuop.check.docs.render_docs`.
"""

from __future__ import annotations

from gpuop.api.notices import NoticeCode
from gpuop.check.families.dra import DRA_RULES
from gpuop.check.rule_types import Rule, RuleFamily

FAMILY = RuleFamily(
    prefix="GPU",
    tool="gpuop check",
    sarif_tags=("kubernetes", "gpu"),
    rules=(
        Rule(
            "GPU000",
            "InternalError",
            "error",
            "A check failed on this object",
            "gpuop hit an unexpected condition while checking the object; the other checks ran.",
            "A bug in gpuop, not in the cluster: the object's data made a check fail.",
            "Report it with the object (labels, annotations, allocatable) that triggered it.",
        ),
        Rule(
            "GPU001",
            "NoClusterPolicy",
            "info",
            "No ClusterPolicy in the input: the default policy is used",
            "Nodes are compared with what the default ClusterPolicy (the Helm chart's values,"
            " sandbox workloads off) would make them run and advertise; nodes labelled"
            " vm-passthrough or vm-vgpu are checked as if sandbox workloads were on (kata mode"
            " where the node shows the Kata plugin), and their findings are at most warnings.",
            "Whether sandbox workloads are on, and which vGPU config and operands the policy"
            " sets, is not known: checks on vm-* nodes rest on an assumption.",
            "Add the ClusterPolicy to the input (`kubectl get clusterpolicies -o json`), or pass"
            " one with `--policy FILE`.",
        ),
        Rule(
            "GPU002",
            "MultipleClusterPolicies",
            "warning",
            "More than one ClusterPolicy",
            "The operator reconciles one ClusterPolicy and marks the others `ignored`; gpuop"
            " checks against the same one: the oldest that is not being deleted (one without a"
            " creation time counts as oldest; the name breaks ties).",
            "A second ClusterPolicy created by a second Helm release or a copied manifest has no"
            " effect, so settings changed in it are silently not applied.",
            "Delete the extra ClusterPolicies and keep the settings in one.",
        ),
        Rule(
            "GPU003",
            "InvalidClusterPolicy",
            "error",
            "The ClusterPolicy cannot be used",
            "The ClusterPolicy has values of the wrong type or shape, so gpuop cannot tell what"
            " the nodes should run; the checks that compare nodes with the plan are skipped.",
            "The operator rejects or mis-reads such a policy: operands stay undeployed while the"
            " policy looks applied (gpu-operator#139, #186, #431 after CRD drift).",
            "Fix the fields named in the message; `gpuop policy validate FILE` lists every problem.",
        ),
        Rule(
            "GPU004",
            "UnusableObject",
            "warning",
            "An object in the input was skipped",
            "An item is not a Kubernetes object gpuop can read (not a mapping, no kind, a Node"
            " without a name, a duplicate Node), so no check looked at it.",
            "Hand-edited or truncated dumps lose objects without anyone noticing; the result"
            " then says less than it seems to.",
            "Regenerate the dump with `kubectl get ... -o json` or `gpuop collect`.",
        ),
        Rule(
            "GPU005",
            "UnknownPolicyFields",
            "warning",
            "ClusterPolicy fields gpuop does not know were ignored",
            "The ClusterPolicy has fields that are not in gpuop's ClusterPolicy schema; they"
            " were dropped and the rest of the policy was used for the checks.",
            "When the CRD and the operator disagree the API server prunes unknown fields and the"
            " operator runs with defaults instead (edgelesssys/contrast#2599: no device plugin"
            " was deployed while the policy reported Ready).",
            "Check the field names against the installed CRD; upgrade the CRD together with the"
            " operator.",
        ),
        Rule(
            "GPU006",
            "PolicyWarning",
            "info",
            "The ClusterPolicy sets something that has no effect",
            "A field is deprecated or depends on another one that is off.",
            "Settings that look active but are ignored (PodSecurityPolicy, `defaultRuntime`)"
            " send people debugging the wrong component.",
            "Remove the field or enable what it depends on.",
        ),
        Rule(
            "GPU007",
            "InvalidGpuCluster",
            "error",
            "The GPUCluster cannot be used",
            "The GPUCluster (the GPU Operator's DRA stack, `nvidia.com/v1alpha1`) has values of"
            " the wrong type or shape, or a name other than the singleton's; its nodes are"
            " checked against the GPUCluster's defaults.",
            "The operator rejects such a GPUCluster: the DRA driver's operands stay undeployed"
            " and the nodes publish no ResourceSlices.",
            "Fix the fields named in the message; the CRD (`kubectl explain gpucluster.spec`)"
            " lists what each takes.",
        ),
        Rule(
            "GPU100",
            "PlannerNotice",
            "info",
            "The planner noted something about this node",
            "A notice from `gpuop plan` that has no rule of its own.",
            "Varies; the message says what the planner saw.",
            "Run `gpuop plan` for the node to see the full plan.",
        ),
        Rule(
            "GPU101",
            NoticeCode.WORKLOAD_LABEL_IGNORED,
            "warning",
            "The workload label is ignored: sandbox workloads are disabled",
            "The node asks for vm-passthrough or vm-vgpu with `nvidia.com/gpu.workload.config`,"
            " but `sandboxWorkloads.enabled` is false, so the operator provisions it for"
            " containers and says nothing.",
            "The most reported sandbox trap (gpu-operator#568, #468, #1392, #1610): the label is"
            " set, no sandbox operand ever appears, and the node keeps advertising"
            " `nvidia.com/gpu`.",
            "Set `spec.sandboxWorkloads.enabled: true` in the ClusterPolicy, or remove the label.",
        ),
        Rule(
            "GPU102",
            NoticeCode.INVALID_WORKLOAD_LABEL,
            "warning",
            "The workload label has an invalid value",
            "`nvidia.com/gpu.workload.config` is not one of container, vm-passthrough or"
            " vm-vgpu; the operator logs an error and uses `sandboxWorkloads.defaultWorkload`.",
            "A typo (`vm_passthrough`, `vgpu`) silently gives the node the default workload.",
            "Set the label to container, vm-passthrough or vm-vgpu.",
        ),
        Rule(
            "GPU103",
            NoticeCode.BAD_INVENTORY,
            "warning",
            "The node's GPU inventory cannot be read",
            "The optional `gpuop.io/gpu-inventory` annotation is not a valid card list; it is"
            " ignored and the node's other signals are used.",
            "Whoever wrote the hint meant to describe the cards; without it, counts rest on the"
            " other signals, which may be fewer.",
            'Rewrite the annotation (a JSON list of `{"index": 0, "pci": "10de:2236"}`) or remove it.',
        ),
        Rule(
            "GPU104",
            NoticeCode.UNKNOWN_INVENTORY,
            "info",
            "The node's GPUs are not described",
            "Nothing on the node says which GPUs it has: no GPU feature discovery labels, no"
            " resource that names a GPU model (`nvidia.com/gpu` names none), no NFD label with"
            " a PCI device id, no vGPU type in `nvidia.com/vgpu.config`. Resource names and"
            " counts are not checked.",
            "Name and count checks cannot run on this node until one of those appears.",
            "Wait for the node's device plugin (or GPU feature discovery on container nodes) to"
            " start; optionally describe the cards with the `gpuop.io/gpu-inventory` annotation.",
        ),
        Rule(
            "GPU105",
            NoticeCode.VGPU_CONFIG_INFEASIBLE,
            "error",
            "The node's vGPU config cannot be applied to its cards",
            "The vGPU config named by `nvidia.com/vgpu.config` (or the policy default) is"
            " unknown, or asks for a type or a count the cards do not support.",
            "The vGPU device manager fails and sets `nvidia.com/vgpu.config.state=failed`; no"
            " vGPU device is created, and VMs asking for the type stay Pending.",
            "Pick a config whose types the cards support (`gpuop plan` lists them) and set"
            " `nvidia.com/vgpu.config` to it.",
        ),
        Rule(
            "GPU106",
            NoticeCode.INVENTORY_CONFLICT,
            "warning",
            "Signals on the node disagree about its GPUs",
            "Two descriptions of the node's cards (GPU feature discovery's `nvidia.com/gpu.count`"
            " and `nvidia.com/gpu.product`, the `gpuop.io/gpu-inventory` hint) give different"
            " counts or models.",
            "Resource counts are checked against the more trusted one (the hint, then GPU"
            " feature discovery), which may be the stale one.",
            "Find out which is current (`nvidia-smi -L` on the node); remove a stale hint, or"
            " restart GPU feature discovery so its labels are rewritten.",
        ),
        Rule(
            "GPU107",
            NoticeCode.PARTIAL_VGPU_CARDS,
            "error",
            "The node advertises vGPU devices that do not fill whole cards",
            "A vGPU resource's count is not a multiple of what one card gets under the node's"
            " vGPU config (two A10s give `nvidia.com/NVIDIA_A10-12Q: 4`; 3 is half a card short).",
            "A card's vGPU devices are missing or only partly created: the device manager's apply"
            " failed half-way or a card dropped off the bus, so VMs find fewer devices than"
            " the node should have.",
            "Check `nvidia.com/vgpu.config.state` and the nvidia-vgpu-device-manager logs on the"
            " node, and `lspci -d 10de:` on the host; relabel `nvidia.com/vgpu.config` to"
            " re-apply the config.",
        ),
        Rule(
            "GPU108",
            "MixedManagers",
            "error",
            "Two managers serve the node's GPUs",
            "Two stacks that each register `nvidia.com/gpu` act on the node: the GPU Operator's"
            " deploy labels or operands beside the standalone NVIDIA device plugin, a managed"
            " cloud's plugin, a plugin built into the OS or another vendor's sharing plugin"
            " (`gpuop check -o json` lists the evidence under `nodes[].management`). The GPU"
            " Operator counts only where its device plugin runs: with `devicePlugin.enabled:"
            " false` (beside GKE's own plugin, say) or the node's"
            " `nvidia.com/gpu.deploy.device-plugin=false`, it registers nothing.",
            "The kubelet keeps the last plugin that registered a resource: the count and the"
            " sharing follow whichever restarted last, and two drivers or toolkits may fight"
            " over the host.",
            "Keep one: remove the other's DaemonSet (or exclude the node from it with a node"
            " selector), or label the node `nvidia.com/gpu.deploy.operands=false` to keep the"
            " GPU Operator away.",
        ),
        Rule(
            "GPU201",
            "WrongResourceKind",
            "error",
            "The node advertises another workload config's resource",
            "The node advertises no resource of its own workload config but does advertise a"
            " resource another config makes (`nvidia.com/gpu` on a vm-passthrough node, a PCI"
            " model name on a container node).",
            "The node's device plugin is the wrong one: after a relabel the old operands still"
            " run and the new ones never started, so pods or VMs for this node stay Pending.",
            "Compare the workload label with the deploy labels (`gpuop plan`), and check that the"
            " operator relabelled the node and restarted its operands.",
        ),
        Rule(
            "GPU202",
            "LeftoverResource",
            "error",
            "Two resource kinds at once: a resource of another config is left behind",
            "The node advertises its own workload config's resource and, with a count above"
            " zero, one of another config, so the same GPUs are offered twice.",
            "After a mode switch the old device plugin (or a kubelet checkpoint) keeps the old"
            " resource; the scheduler places container pods on GPUs bound to vfio-pci, and they"
            " fail at start.",
            "Make sure the old device plugin pod is gone, then restart the kubelet so the stale"
            " resource drops to 0.",
        ),
        Rule(
            "GPU203",
            "VgpuTypeNotConfigured",
            "error",
            "The node advertises a vGPU type that is not its configured profile",
            "A vGPU resource of a type other than the one `nvidia.com/vgpu.config` gives is"
            " advertised.",
            "The vGPU devices were created by hand or by an earlier config and were never"
            " replaced; VMs asking for the configured type cannot schedule here.",
            "Re-apply the config (relabel `nvidia.com/vgpu.config`) or let the vGPU device"
            " manager recreate the devices.",
        ),
        Rule(
            "GPU204",
            "VgpuCountMismatch",
            "error",
            "The vGPU count is not profile × cards",
            "The node advertises the configured vGPU type, but not as many devices as the config"
            " creates on its cards.",
            "Some mdev devices were not created, or were removed after the config was applied;"
            " VMs find fewer vGPUs than planned and the scheduler's arithmetic is off.",
            "Check `nvidia.com/vgpu.config.state` and the vgpu-device-manager logs on the node,"
            " then re-apply the config.",
        ),
        Rule(
            "GPU205",
            "MoreDevicesThanGpus",
            "error",
            "More devices advertised than the node has GPUs",
            "A whole-GPU resource (passthrough, Kata or `nvidia.com/gpu` without sharing)"
            " counts more devices than the node's cards.",
            "Double counting: the plugin registers each function of a multi-function card, or"
            " two plugins advertise the same cards; workloads land on a node that cannot hold"
            " them (for VMs, virt-launcher fails with `the number of GPU/s do not match the"
            " number of devices`).",
            "Check which functions are bound to vfio-pci (`lspci -nnk`) and which device plugins"
            " run on the node.",
        ),
        Rule(
            "GPU206",
            "FewerDevicesThanGpus",
            "warning",
            "Fewer devices advertised than the node has GPUs",
            "The node advertises fewer whole-GPU devices than it has cards.",
            "A card fell off the bus, failed to bind to vfio-pci, or is held by a host driver"
            " (gpu-operator#551: one of two cards registered); or the device plugin registered"
            " it and marks it unhealthy after an XID error (the node's capacity then shows"
            " more than its allocatable, and the message says so).",
            "Check `lspci -nnk` on the node and the vfio-manager or device plugin logs; for an"
            " unhealthy device, `nvidia-smi -q`, then reset or replace the GPU.",
        ),
        Rule(
            "GPU207",
            "ExpectedResourceMissing",
            "error",
            "The resource the node should advertise is missing",
            "The plan says the node advertises a resource, but it is absent or 0 and nothing"
            " else explains it.",
            "The device plugin is not running or not Ready, or the cards are not bound; every"
            " workload for this node stays Pending with `Insufficient` in its events.",
            "Check the device plugin pod on the node (`gpuop check` with pods in the input"
            " names it) and its validator init containers.",
        ),
        Rule(
            "GPU208",
            NoticeCode.INVALID_RESOURCE_NAME,
            "error",
            "A resource name is not a valid extended resource name",
            "A name the node advertises, or the name the plan predicts, breaks Kubernetes'"
            " qualified-name rules (length, characters).",
            "The kubelet rejects the device plugin's registration, so the GPUs are never advertised.",
            "Use a pci.ids where the device has a usable name, or a plugin version that names it"
            " properly.",
        ),
        Rule(
            "GPU209",
            "PassthroughNameMismatch",
            "warning",
            "A passthrough name differs from the PCI database's",
            "The node advertises a passthrough resource for its cards under a name other than"
            " the one gpuop derives from pci.ids (a raw device id such as `nvidia.com/26b5`, or"
            " `UNKNOWN_DEVICE`), or the device is not in gpuop's PCI database.",
            "Stale pci.ids in the plugin image: VMs asking for the model name never schedule"
            " (gpu-operator#548, #551, #556; kubevirt-gpu-device-plugin#20, #42, #106).",
            "Pass the plugin's pci.ids with `--pci-ids`, or permit and request the name the"
            " node really advertises.",
        ),
        Rule(
            "GPU210",
            "BadResourceQuantity",
            "warning",
            "A GPU resource quantity is not a whole number",
            "An allocatable GPU resource is not a valid quantity or not an integer.",
            "Extended resources are integers; a hand-edited or corrupted status cannot be"
            " scheduled against.",
            "Regenerate the dump; on a live cluster restart the kubelet to rewrite node status.",
        ),
        Rule(
            "GPU211",
            "ZeroDevices",
            "error",
            "A GPU resource is registered with no device",
            "The node's device plugin registered an NVIDIA resource (`nvidia.com/gpu`, a"
            " passthrough model name, a vGPU type) with a count of 0, and the node advertises"
            " no other.",
            "The plugin found the cards but none usable: for passthrough, none bound to"
            " vfio-pci; for vGPU, no mediated device of the type created; for containers, no"
            " device the driver serves. Workloads asking for the resource stay Pending.",
            "Passthrough: check the vfio-manager (or your vfio-pci binding) and IOMMU; vGPU: the"
            " vgpu-device-manager and `nvidia.com/vgpu.config`; containers: the driver"
            " (`nvidia-smi` on the node) and the device plugin's logs.",
        ),
        Rule(
            "GPU212",
            "SharingConfigNotFollowed",
            "warning",
            "The node does not advertise what its device plugin config gives",
            "The device plugin config the node is given (the key `nvidia.com/device-plugin.config`"
            " names in the plugin's ConfigMap, else the ClusterPolicy's default, else, for the"
            " standalone plugin, its DaemonSet's DEFAULT_CONFIG or fallback: the key `default`"
            " or the only key) shares each GPU"
            " by time-slicing or MPS `replicas` ways, under `nvidia.com/gpu` or, with"
            " `renameByDefault`, `nvidia.com/gpu.shared`, and sets the MIG strategy"
            " (`flags.migStrategy`; under the GPU Operator the ClusterPolicy's `mig.strategy`,"
            " which the plugin's environment sets and which wins over the file): only `mixed`"
            " advertises `nvidia.com/mig-<profile>`, and GPU feature discovery labels"
            " `nvidia.com/mig.strategy` for `single` and `mixed` alone (the standalone"
            " plugin's `--mig-strategy` or MIG_STRATEGY wins over the file too; without"
            " either or a file, its default `none`). On GKE, a pool with GPU time-sharing or MPS"
            " (`cloud.google.com/gke-max-shared-clients-per-gpu`) or MIG partitions"
            " (`cloud.google.com/gke-gpu-partition-size`) gives that many `nvidia.com/gpu` per"
            " GPU (per partition), and the accelerator-optimized machine types (`a2-highgpu-2g`)"
            " name how many GPUs. The node advertises another name or count (on GKE: not a"
            " multiple of what one GPU gives, or not what the machine's GPUs give), or is"
            " labelled with another MIG strategy, or its label names a config the ConfigMap"
            " does not have, so the plugin's config-manager refuses to start.",
            "The plugin runs another config than the one given: it did not restart after the"
            " label or the ConfigMap changed, or it could not load the config. Pods are packed"
            " by the old sharing.",
            "Restart the device plugin pod on the node and read its log for a config it could"
            " not load.",
        ),
        Rule(
            "GPU213",
            "MachineGpusMissing",
            "warning",
            "The node advertises fewer GPUs than its machine has",
            "The node's provisioner labels it with its machine's GPU count"
            " (`karpenter.k8s.aws/instance-gpu-count`, `eks.amazonaws.com/instance-gpu-count`,"
            " `karpenter.azure.com/sku-gpu-count`, GKE's `cloud.google.com/gke-accelerator-count`),"
            " or GKE's machine type names it (`a3-highgpu-8g`), and the node advertises fewer `nvidia.com/gpu` (or passthrough"
            " devices) than that, with no sharing that would change the count. Checked where"
            " neither GPU feature discovery nor gpuop's hint counts the cards (GPU205 and GPU206"
            " judge those).",
            "A GPU fell off the bus or is not seen by the driver (the plugin registered fewer),"
            " or the plugin marked one unhealthy after an XID error (capacity shows more than"
            " allocatable). Workloads that need the whole machine stay Pending, and the node"
            " is billed for GPUs it cannot run.",
            "Read the device plugin's log on the node and run `nvidia-smi -L` there; reset or"
            " replace the GPU (or the node), then restart the plugin pod.",
        ),
        Rule(
            "GPU214",
            "GpusNotAdvertised",
            "error",
            "The node has GPUs but advertises none",
            "What provisioned the node says its machine has NVIDIA GPUs (Karpenter's or EKS Auto"
            " Mode's GPU count, GKE's `cloud.google.com/gke-accelerator`, EKS's"
            " `k8s.amazonaws.com/accelerator`, AKS's `kubernetes.azure.com/accelerator`), or"
            " NFD labels an NVIDIA PCI device, and the node advertises no GPU resource at all:"
            " no `nvidia.com/gpu`, no passthrough or vGPU name, not even one registered with 0"
            " devices (GPU211). Checked on nodes the GPU Operator does not manage (GPU207 judges"
            " those) and that NVIDIA's DRA driver does not serve (it publishes ResourceSlices),"
            " and not on GKE pools labelled `gke-no-default-nvidia-gpu-device-plugin=true`.",
            "No device plugin runs on the node, or the one that runs found no GPU: the driver"
            " is not loaded, or the plugin's container cannot reach it. Pods that request a GPU"
            " never schedule there, while the node is billed for its GPUs. With NFD's label as"
            " the only evidence and nothing naming a manager, it is a warning: the input may"
            " lack the DRA driver's pod and ResourceSlices.",
            "Follow the fix the finding gives for the node's manager (`no_gpu_resource` in"
            " `catalog/managers.yaml`): install a device plugin that tolerates the node's taints,"
            " or repair the driver the running one cannot find.",
        ),
        Rule(
            "GPU215",
            "PlatformReportsGpuFault",
            "error",
            "The platform reports a fault of the node's GPUs",
            "A node condition that a platform's node problem detector sets for GPU faults is"
            " True: AKS's `GPUMissing`, `XIDErrors`, `NVLinkStatusInactive`, `IBLinkFlapping`,"
            " `GPUClockThrottling` and, on its fully managed GPU nodes,"
            " `UnhealthyNvidiaDevicePlugin` and `UnhealthyNvidiaDCGMServices`; Nebius's"
            " `NebiusGPUError` (`catalog/gpu-conditions.yaml`). Links, throttling and DCGM are"
            " warnings, the rest errors.",
            "The node's own checks failed: a GPU is gone, the driver logged XID errors, a link"
            " is down, or the platform's device plugin stopped. Workloads on the node fail or"
            " run slower; the platform may be about to recover the node.",
            "Follow the fix the finding gives for the condition; the condition's reason and"
            " message (`kubectl describe node`) say which check failed.",
        ),
        Rule(
            "GPU216",
            "FeatureDiscoveryMissesSharing",
            "warning",
            "GPU feature discovery does not know the plugin's sharing",
            "The device plugin shares the node's GPUs (it advertises `nvidia.com/gpu.shared`,"
            " which only time-slicing or MPS with `renameByDefault` gives, more of them than"
            " the node has GPUs; or the count its sharing config in the input gives), but GFD"
            " labels other replicas (`nvidia.com/gpu.replicas=1`): GFD runs without the"
            " plugin's sharing config. It happens where GFD is installed by its own chart"
            " beside the plugin (NVIDIA/k8s-device-plugin#732), or is given another config key"
            " than the plugin. (Without the config in the input, a plain `nvidia.com/gpu` over"
            " the GPUs' count is GPU205: it may be cards GFD does not see.)",
            "GFD's labels say the GPUs are not shared: `nvidia.com/gpu.replicas` is 1,"
            " `nvidia.com/gpu.product` lacks the `-SHARED` suffix and"
            " `nvidia.com/gpu.sharing-strategy` says `none`. Workloads and autoscalers that"
            " select nodes on those labels miss the node or size it wrong.",
            "Give GFD the plugin's config: install it through the plugin's Helm chart"
            " (`gfd.enabled=true`), which hands both the same ConfigMap and"
            " `nvidia.com/device-plugin.config` key, then restart the GFD pod on the node.",
        ),
        Rule(
            "GPU301",
            "DeployLabelsContradictWorkload",
            "error",
            "Deploy labels contradict the workload config",
            "The node carries `nvidia.com/gpu.deploy.*` labels the operator removes for its"
            " workload config (for example `device-plugin=true` on a vm-vgpu node), or labels"
            " of two configs at once.",
            "Operands of two modes run on one node, or the wrong ones do: a hand-set deploy"
            " label is reset by the operator, or the relabel never happened"
            " (gpu-operator#2272, #1018, #316).",
            "Remove the listed labels (`kubectl label node NODE KEY-`) and let the operator"
            " label the node, or fix the workload label.",
        ),
        Rule(
            "GPU302",
            "DeployLabelsMissing",
            "warning",
            "Deploy labels of the workload config are missing",
            "The node lacks deploy labels (or `nvidia.com/gpu.present`) that the operator sets"
            " for its workload config: the labels of the release that labelled the nodes, or"
            " when the input does not show it, those every plausible release sets.",
            "The operator has not labelled the node: it is not running, or it cannot patch"
            " nodes; the operands it should run never start.",
            "Check the operator's logs and RBAC; `gpuop plan` shows the labels it would set.",
        ),
        Rule(
            "GPU303",
            "OperandPaused",
            "warning",
            "An operand is paused by a `paused-for-*` deploy label",
            "A deploy label has a `paused-for-*` value (or one ending in"
            " `_paused-for-driver-upgrade`), left by a component that stops operands while it"
            " changes the GPUs (MIG, vGPU, driver upgrade, CC mode).",
            "If the component crashed or was removed, the label is never restored and the operand"
            " never runs again (gpu-operator#2845 deadlock). Not reported for the vGPU device"
            " manager at `paused-for-vgpu-change` while pods use the node's vGPU devices: gpuop's"
            " operator parks it there so that a `nvidia.com/vgpu.config` change cannot destroy"
            " devices in use, and sets it back to `true` when they are gone.",
            "Check the component that paused it; if it is done, set the label back to `true`.",
        ),
        Rule(
            "GPU304",
            "OperandDisabledByLabel",
            "info",
            "An operand is turned off by its deploy label",
            "A deploy label of the node's workload config has a value other than `true`"
            " (`false`, `pre-installed`), so that operand does not run here.",
            "Deliberate opt-outs are fine, but a forgotten `false` keeps an operand off after"
            " the reason is gone.",
            "Set the label to `true` if the operand should run on the node.",
        ),
        Rule(
            "GPU305",
            "ConfigStateFailed",
            "error",
            "A GPU configuration failed on the node",
            "`nvidia.com/vgpu.config.state` or `nvidia.com/mig.config.state` is `failed`.",
            "The vGPU or MIG devices the node should have were not created; workloads asking"
            " for them stay Pending, and operands paused for the change may stay paused.",
            "Read the vgpu-device-manager or mig-manager logs on the node, fix the config, and"
            " relabel to retry.",
        ),
        Rule(
            "GPU306",
            "ConfigStatePending",
            "warning",
            "A GPU configuration is still in progress",
            "`nvidia.com/vgpu.config.state` or `nvidia.com/mig.config.state` is `pending` or"
            " `rebooting`.",
            "Normal for minutes; for longer, the manager is stuck waiting for GPU clients to"
            " stop, and the paused operands stay off.",
            "If it persists, check the manager's logs and the pods still holding the GPUs.",
        ),
        Rule(
            "GPU307",
            "OperandNotReady",
            "warning",
            "An operand is not Ready on the node",
            "An operand pod on the node is not Ready, or the node is labelled for an operand"
            " whose DaemonSet has no pod there.",
            "Operands wait for each other through validator init containers; one stuck pod"
            " (`Init:0/1`, CrashLoopBackOff) keeps every later one, and the GPUs, unavailable"
            " (gpu-operator#448, #280, #378).",
            "`kubectl describe pod` the named pod; its first waiting init container says what it"
            " waits for.",
        ),
        Rule(
            "GPU308",
            "DaemonSetNotReady",
            "warning",
            "An operand DaemonSet has unavailable pods",
            "The DaemonSet's status counts pods that are not available; its pods are not in the"
            " input, so the nodes cannot be named.",
            "Same as GPU307: a stuck operand blocks the ones after it.",
            "Add the operand pods to the input (`gpuop collect` does) to see which nodes.",
        ),
        Rule(
            "GPU401",
            "GpuNodeWithoutNfdLabel",
            "info",
            "A node advertises GPU resources but has no NFD GPU label",
            "No NFD label marks the node as having an NVIDIA GPU, yet it is a GPU node by other"
            " evidence: it advertises a GPU resource above zero (a device plugin found GPUs"
            " there), and may carry `nvidia.com/gpu.present=true` or run a device plugin pod.",
            "NFD does not run there, lost its labels or is configured without the NVIDIA PCI"
            " classes; NVIDIA's operator then treats the node as GPU-less (it deploys no"
            " operands and removes its deploy labels), which is fine only when the GPUs are"
            " managed without the operator.",
            "Check that NFD runs on the node and labels its NVIDIA PCI devices"
            " (`feature.node.kubernetes.io/pci-10de.present=true`).",
        ),
        Rule(
            "GPU402",
            "NonGpuNodeLabelled",
            "warning",
            "A node without GPUs carries GPU deploy labels",
            "The node has `nvidia.com/gpu.deploy.*` labels or `nvidia.com/gpu.present=true`"
            " though no NFD label marks it as a GPU node.",
            "Operand pods are scheduled on a node without GPUs and crash-loop, or the node lost"
            " its NFD labels.",
            "Check NFD on the node; remove the labels if the node really has no GPU.",
        ),
        Rule(
            "GPU501",
            "ResourceNotPermitted",
            "error",
            "An advertised sandbox resource is not in permittedHostDevices",
            "Nodes advertise a passthrough or vGPU resource that the KubeVirt CR does not list"
            " under `permittedHostDevices` (on OpenShift: the HyperConverged CR, whose"
            " `spec.permittedHostDevices` overwrites the KubeVirt CR's).",
            "Every VM asking for it fails: `GPU nvidia.com/X is not permitted in"
            " permittedHostDevices configuration` (kubevirt#4950, HCO#1227, cozystack#2765).",
            "Add the resource to `spec.configuration.permittedHostDevices` with"
            " `externalResourceProvider: true`.",
        ),
        Rule(
            "GPU502",
            "PermittedNameMismatch",
            "error",
            "A permitted name differs from the advertised one only by case or form",
            "A `permittedHostDevices` resourceName matches a name the nodes advertise only when"
            " case and punctuation are ignored; KubeVirt compares names exactly.",
            "The device plugin upper-cases PCI names (`TU104GL_TESLA_T4`), while hand-written"
            " configs copy the pci.ids spelling (`TU104GL_Tesla_T4`): `Insufficient` or `not"
            " permitted` (kubevirt#7547, kubevirt-gpu-device-plugin#31).",
            "Copy the name exactly as the node advertises it (`kubectl get node -o"
            " jsonpath='{.status.allocatable}'`).",
        ),
        Rule(
            "GPU503",
            "ExternalResourceProviderNotSet",
            "error",
            "A permitted NVIDIA resource is not marked as externally provided",
            "A `permittedHostDevices` entry for a resource NVIDIA's device plugin advertises"
            " (`nvidia.com/...`) lacks `externalResourceProvider: true`, so KubeVirt starts its"
            " own device plugin for it. Other providers' entries (`devices.kubevirt.io/...`,"
            " `intel.com/...`) are not checked.",
            "Two device plugins register the same resource name with the kubelet and replace"
            " each other; which devices a VM gets depends on which registered last.",
            "Set `externalResourceProvider: true` on the entry.",
        ),
        Rule(
            "GPU504",
            "FeatureGateMissing",
            "error",
            "A KubeVirt feature gate the VMs need is missing",
            "VMIs use `hostDevices` without the `HostDevices` gate, `gpus` before KubeVirt v1.4"
            " without `GPU`, or `gpus` naming a claim before v1.9 without `GPUsWithDRA`.",
            "The VMI is rejected at admission: `Host Devices feature gate is not enabled in"
            " kubevirt-config` (cozystack#2765).",
            "Add the gate to `spec.configuration.developerConfiguration.featureGates`.",
        ),
        Rule(
            "GPU505",
            "MdevConfigurationNotDisabled",
            "warning",
            "KubeVirt manages mediated devices on vGPU nodes",
            "Nodes run vm-vgpu, but the KubeVirt CR neither has the `DisableMDEVConfiguration`"
            " gate nor sets `mediatedDevicesConfiguration.enabled: false`.",
            "KubeVirt and the vGPU device manager both create and delete mdev devices, and"
            " undo each other's work (NVIDIA docs require the gate since KubeVirt v0.58.2).",
            "Add the `DisableMDEVConfiguration` gate (before v1.8) or set"
            " `spec.configuration.mediatedDevicesConfiguration.enabled: false` (v1.8 and later).",
        ),
        Rule(
            "GPU506",
            "VmiDeviceNotPermitted",
            "error",
            "A VMI asks for a device that is not permitted",
            "A VMI's `gpus[].deviceName` or `hostDevices[].deviceName` is not a resourceName"
            " in `permittedHostDevices`.",
            "virt-controller refuses to render the launcher pod; the VMI stays Pending with"
            " `Synchronized=False`, reason FailedCreate.",
            "Permit the device in the KubeVirt CR, or change the VMI to a permitted name.",
        ),
        Rule(
            "GPU507",
            "NoPermittedHostDevices",
            "info",
            "The KubeVirt CR has no permittedHostDevices",
            "Nodes advertise sandbox GPU resources but the KubeVirt CR lists no"
            " `permittedHostDevices`; KubeVirt then makes no check at all.",
            "Works, but any host device can be requested; once one entry is added, every"
            " device not listed is refused.",
            "List the GPU resources the nodes advertise under `permittedHostDevices`.",
        ),
        Rule(
            "GPU508",
            "SelectorNameMismatch",
            "warning",
            "A permitted entry's selector and name disagree",
            "The `pciVendorSelector` or `mdevNameSelector` of an `nvidia.com/` entry names a"
            " device whose resource, as the NVIDIA plugin names it, differs from the entry's"
            " `resourceName`.",
            "Hand-written names are often wrong (`TU104GL_T4` for `TU104GL_TESLA_T4`,"
            " cozystack#2768); the entry permits a name no node advertises.",
            "Set `resourceName` to the name the plugin advertises for the selected device.",
        ),
        Rule(
            "GPU509",
            "MultipleKubeVirts",
            "warning",
            "More than one KubeVirt CR",
            "KubeVirt uses one KubeVirt CR; gpuop checks against the first.",
            "Settings edited in the wrong CR have no effect.",
            "Keep one KubeVirt CR.",
        ),
        Rule(
            "GPU601",
            "RequestedResourceNotAdvertised",
            "error",
            "A workload asks for a GPU resource no node advertises",
            "A Pending pod or a VMI requests a GPU resource that no node advertises; it waits"
            " forever with `Insufficient` in its events.",
            "The resource belongs to a workload config no node runs, or its name is spelled"
            " differently from what nodes advertise (kubevirt#7547).",
            "Switch a node to the workload config that advertises it (the hint names it), or fix"
            " the requested name.",
        ),
        Rule(
            "GPU602",
            "StrandedCapacity",
            "warning",
            "Idle GPUs in one mode while workloads of another wait",
            "The node's GPU resources are all unused, while Pending workloads ask for a resource"
            " this node would advertise in another workload config.",
            "Nodes are split between container and VM modes by hand; demand moves and capacity"
            " sits idle in the wrong mode (gpu-operator#944, #1186).",
            "Relabel the node's `nvidia.com/gpu.workload.config` to the mode that is short.",
        ),
        Rule(
            "GPU701",
            "DriverVersionDrift",
            "warning",
            "Container nodes run different driver versions",
            "GPU feature discovery reports a `nvidia.com/cuda.driver-version.full` on this node"
            " that differs from most container nodes whose driver the GPU Operator installs"
            " (`nvidia.com/gpu.deploy.driver=true`, the ClusterPolicy's driver on), compared"
            " within the pool of the NVIDIADriver that owns them"
            " (`nvidia.com/gpu-operator.driver.owner`). Drivers a host or a cloud image brings,"
            " and other managers' nodes, are not compared.",
            "A half-finished driver upgrade: nodes stuck in `upgrade-required`, CUDA images that"
            " run on some nodes and fail on others (gpu-operator#2509, #2166).",
            "Check `nvidia.com/gpu-driver-upgrade-state` and the driver pod on the node.",
        ),
        Rule(
            "GPU702",
            "DriverUpgradeFailed",
            "error",
            "The driver upgrade failed on the node",
            "`nvidia.com/gpu-driver-upgrade-state` is `upgrade-failed`.",
            "The node keeps the old driver, or none, until the driver pod becomes Ready by itself"
            " or someone relabels it; the state machine has also been seen to move on without"
            " recovering (gpu-operator#2549).",
            "Read the driver pod's logs, fix the cause, and set the state label to"
            " `upgrade-required` to retry.",
        ),
        Rule(
            "GPU703",
            "DriverUpgradeInProgress",
            "warning",
            "A driver upgrade under way leaves the node without its GPUs",
            "`nvidia.com/gpu-driver-upgrade-state` is between `upgrade-required` and"
            " `uncordon-required`, and the node does not advertise the GPU resources its plan"
            " gives: the upgrade controller replaced the driver pod, and the device plugin"
            " registers the GPUs again once the new driver and the validator are ready.",
            "Normal for minutes during a rolling upgrade; a node that stays there keeps its"
            " GPUs from workloads, and a driver pod that keeps restarting ends in"
            " `upgrade-failed` (GPU702).",
            "If it persists, check the driver pod and the validator on the node; the upgrade"
            " moves to `upgrade-failed` after 10 restarts or the validation timeout.",
        ),
        *DRA_RULES,
    ),
)

__all__ = ["FAMILY"]
