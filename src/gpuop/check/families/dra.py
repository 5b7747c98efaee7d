"""The GPU family's DRA rules (GPU8xx): ResourceSlices, ResourceClaims and DeviceClasses.

Reported by `gpuop.check.claims` and `gpuop.check.claim_fit`; kept in a module of their own
beside `gpu.py`, which lists them after its own.
"""

from __future__ import annotations

from gpuop.check.rule_types import Rule

DRA_RULES: tuple[Rule, ...] = (
    Rule(
        "GPU801",
        "CardAllocatedTwice",
        "error",
        "One physical GPU is allocated to two claims",
        "Two devices allocated to different ResourceClaims are the same card: the same"
        " `uuid` attribute (a MIG device's `parentUUID`), or the same"
        " `resource.kubernetes.io/pciBusID` on one node. NVIDIA's DRA driver with"
        " PassthroughSupport publishes each card twice, as `gpu-<minor>` for containers and"
        " `gpu-vfio-<index>` for VMs, and the scheduler sees two devices. Two MIG or vGPU"
        " devices of one card, and admin-access allocations, are not counted.",
        "The second prepare fails (the card is on vfio-pci, or held by the nvidia driver),"
        " and that pod or VM waits in ContainerCreating (dra-driver-nvidia-gpu#1330); the"
        " upstream workaround is to submit container and VM claims one at a time.",
        "Delete the pod of one claim so the claim is deallocated; publish the card's roles"
        " with one shared counter set that each of them consumes (KEP-4815), so that the"
        " scheduler cannot allocate both again.",
    ),
    Rule(
        "GPU802",
        "CardInTwoPools",
        "error",
        "One GPU is published by two DRA pools",
        "Devices of two ResourceSlice pools (two drivers, or an old pool beside a new one)"
        " carry the same `uuid`.",
        "The scheduler counts the card once per pool and can allocate it to two claims; the"
        " second prepare fails.",
        "Remove the second driver, or delete the stale pool's ResourceSlices.",
    ),
    Rule(
        "GPU803",
        "CardPublishedByBothStacks",
        "error",
        "A node's GPUs are advertised by the device plugin and published by a DRA driver",
        "The node's `status.capacity` has NVIDIA device plugin resources (`nvidia.com/gpu`,"
        " MIG, passthrough or vGPU names) above zero, while ResourceSlices for the node"
        " publish its cards as DRA devices.",
        "The scheduler can give one card to a device-plugin pod and to a claim at once:"
        " over-admission (NVIDIA/aicr PR #332, ai-dynamo/dynamo PR #13536). NVIDIA's operator"
        " refuses both in one ClusterPolicy (gpu-operator PR #1541).",
        "Run one stack per node: the device plugin (ClusterPolicy) or the DRA driver"
        " (GPUCluster); `gpuop plan` shows which stack a node gets and why.",
    ),
    Rule(
        "GPU804",
        "NodeRunsBothStacks",
        "warning",
        "A node is set up for both the device plugin and the DRA driver",
        "ResourceSlices of NVIDIA's DRA driver publish the node's cards while a device"
        " plugin's deploy label (`nvidia.com/gpu.deploy.device-plugin` or"
        " `sandbox-device-plugin`) is `true` and the ClusterPolicy in the input deploys that"
        " plugin, though the node advertises no device plugin resource yet. (The operator"
        " sets the label whether or not the plugin is enabled; NVIDIA's guide for the DRA"
        " driver beside the operator turns the plugin off.)",
        "Both stacks take the node's GPUs; once the device plugin runs, the cards are offered"
        " twice (GPU803).",
        "Leave one of the two stacks on the node: remove the node from the GPUCluster's or the"
        " ClusterPolicy's nodes.",
    ),
    Rule(
        "GPU805",
        "ClaimNeverFits",
        "error",
        "A ResourceClaim can never be allocated",
        "A request of a claim that is not allocated matches no published device of any node"
        " (the DeviceClass's selectors and the request's own, in CEL), or asks for more"
        " devices than any one node publishes that match; allocated devices and counters are"
        " left aside, so the claim would not fit an empty cluster either.",
        "Its pods stay Pending, and kube-scheduler says only `cannot allocate all claims`.",
        "Fix the selector or the device class, or lower the count; `gpuop explain` on the"
        " claim says per node and per device why it does not fit.",
    ),
    Rule(
        "GPU806",
        "SliceForUnknownNode",
        "warning",
        "A ResourceSlice names a node that is not in the input",
        "`spec.nodeName` of a ResourceSlice is not a Node of the input (checked when the"
        " input has Nodes): the node was deleted or renamed, or the input lacks it.",
        "Stale slices: the scheduler offers no pod those devices, and tools that count the"
        " slices count GPUs that are gone.",
        "Delete the slices of nodes that are gone (`kubectl delete resourceslice NAME`), or"
        " add the Node to the input.",
    ),
    Rule(
        "GPU807",
        "UnknownDeviceClass",
        "error",
        "A ResourceClaim asks for a DeviceClass that does not exist",
        "A request's `deviceClassName` is not a DeviceClass of the input (checked when the"
        " input has DeviceClasses).",
        "The claim is never allocated: the scheduler fails it on every node"
        " (`device class ... does not exist`).",
        "Use one of the classes the DRA driver installs (`gpu.nvidia.com`,"
        " `mig.nvidia.com`, `vfio.gpu.nvidia.com`), or install the missing one.",
    ),
    Rule(
        "GPU808",
        "InvalidDeviceSelector",
        "error",
        "A device selector is not valid CEL",
        "A CEL selector of a DeviceClass or of a claim's request does not compile (a syntax"
        " error, an unknown function), or fails on every device it is tried on.",
        "Every claim that uses it fails allocation on every node.",
        "Fix the expression; the message names it and says where it fails.",
    ),
    Rule(
        "GPU809",
        "UnreadableDraObject",
        "warning",
        "A ResourceSlice, ResourceClaim or DeviceClass could not be read",
        "A field of the object has the wrong type or shape for `resource.k8s.io/v1`, so the"
        " DRA checks left it out.",
        "The other DRA findings then say less than they seem to.",
        "Regenerate the dump from the API server (`kubectl get resourceslices,"
        "resourceclaims,deviceclasses -A -o json`).",
    ),
    Rule(
        "GPU810",
        "TwoFacedCardWithoutCounters",
        "warning",
        "A GPU is published for containers and VMs without a shared counter set",
        "One card (one `uuid`) is published as a container device (`type: gpu`) and as a"
        " passthrough device (`type: vfio`), and no counter set is consumed by both: how"
        " NVIDIA's DRA driver publishes with PassthroughSupport.",
        "Container and VM claims can race for this card: a container claim and a VFIO claim"
        " allocated before either is prepared can both get it, and the second prepare fails"
        " (dra-driver-nvidia-gpu#1330; upstream's workaround: serialise submissions, or"
        " dedicate nodes).",
        "Publish a counter set per card that each of its devices consumes fully (KEP-4815"
        " partitionable devices, beta and on by default from Kubernetes 1.36), as gpuop's"
        " DRA publication does; or give the node one role.",
    ),
    Rule(
        "GPU811",
        "DriverPublishesNothing",
        "error",
        "NVIDIA's DRA driver runs on a node but publishes none of its GPUs",
        "A pod of the DRA driver's kubelet plugin runs on the node and no ResourceSlice of"
        " `gpu.nvidia.com` names it. Checked where the input holds DRA objects"
        " (ResourceSlices, claims or DeviceClasses), so that slices left out of a partial"
        " dump are not taken for missing.",
        "The plugin found no GPU (the driver is not loaded, or not where the chart's"
        " `nvidiaDriverRoot` says) or its GPU allocation is turned off: claims for the node's"
        " GPUs never allocate.",
        "Read the log of the kubelet plugin's `gpus` container on the node; check the driver"
        " with `nvidia-smi` there and the chart's `nvidiaDriverRoot` and GPU allocation"
        " settings.",
    ),
    Rule(
        "GPU812",
        "DraPluginNotEvictedOnDriverUpgrade",
        "warning",
        "Driver upgrades do not evict NVIDIA's DRA kubelet plugin",
        "The ClusterPolicy in the input installs the driver (`driver.enabled`, no NVIDIADriver"
        " CRD) of nodes NVIDIA's DRA driver serves (its kubelet plugin, its ResourceSlices or"
        " its node label), and `driver.manager.env` has no `NODE_LABEL_FOR_GPU_POD_EVICTION`"
        " naming a label those nodes carry as `true`.",
        "NVIDIA's driver manager is not aware of the DRA kubelet plugin: without the label it"
        " reloads the kernel module under the running plugin, and the GPUs of running claims"
        " are left in an undefined state until their pods are cycled (NVIDIA's known issue in"
        " the DRA driver's install guide).",
        "Set `driver.manager.env` `NODE_LABEL_FOR_GPU_POD_EVICTION` to the label the DRA chart's"
        " `kubeletPlugin.nodeSelector` uses (`nvidia.com/dra-kubelet-plugin` in NVIDIA's"
        " guide), and label those nodes with it.",
    ),
    Rule(
        "GPU813",
        "DraPluginMissingOnNode",
        "warning",
        "A node labelled for NVIDIA's DRA kubelet plugin runs none",
        "The node carries `nvidia.com/dra-kubelet-plugin=true` (the label NVIDIA's install"
        " guide has the DRA chart select nodes by), the input shows the kubelet plugin's pods"
        " on other nodes but none on this one, and the node neither publishes its GPUs as"
        " ResourceSlices nor advertises a device plugin resource.",
        "Its GPUs are served by nothing: claims never allocate there and pods asking for"
        " `nvidia.com/gpu` never fit. A nodeSelector, affinity or toleration of the chart that"
        " does not match the node is the usual cause.",
        "Compare the chart's `kubeletPlugin` nodeSelector, affinity and tolerations with the"
        " node's labels and taints; `kubectl describe daemonset` of the kubelet plugin says"
        " why it places no pod there.",
    ),
)

__all__ = ["DRA_RULES"]
