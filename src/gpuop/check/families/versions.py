"""The VER family: every finding `gpuop versions check` and `gpuop upgrade preview` report.

The rules run in `gpuop.check.versions` (they read the version matrix); their codes, severities
and texts live here, in the one registry, with the checker's stability promise. The
hundreds group rules by what they look at:

* ``VER0xx`` the operator release and the ClusterPolicy's operand versions;
* ``VER1xx`` the platform: Kubernetes, operating system, container runtime;
* ``VER2xx`` drivers and CUDA;
* ``VER3xx`` drift between nodes;
* ``VER4xx`` an upgrade (`gpuop upgrade preview`).

`docs/versions.md` is rendered from this table by `gpuop.versions.docs.render_docs`.
"""

from __future__ import annotations

from gpuop.check.rule_types import Rule, RuleFamily

FAMILY = RuleFamily(
    prefix="VER",
    tool="gpuop versions check",
    sarif_tags=("kubernetes", "gpu", "versions"),
    rules=(
        Rule(
            "VER001",
            "OperatorReleaseUnknown",
            "info",
            "The operator release is unknown: release checks did not run",
            "gpuop cannot tell which GPU Operator release runs the cluster (no ClusterPolicy, no"
            " operand version it knows, or a release newer than its matrix), so the Kubernetes,"
            " OS and container runtime ranges were not checked.",
            "Every range in the version matrix belongs to a release; checking against a guessed"
            " release would call supported clusters broken and broken ones fine.",
            "Pass `--operator-release X.Y.Z`, or add the ClusterPolicy (with its operand"
            " versions) to the input.",
        ),
        Rule(
            "VER002",
            "MixedOperatorReleases",
            "warning",
            "Operand versions come from different operator releases",
            "The ClusterPolicy pins operand image versions that no single GPU Operator release"
            " ships together; the message names which operand comes from which release.",
            "A hand-edited ClusterPolicy (one operand bumped to fix a bug, another left behind)"
            " runs a combination NVIDIA never tested: operands that wait for each other disagree"
            " on validation files, labels or CDI specs, and nobody can say which release's"
            " documentation applies.",
            "Set every operand to one release's versions (`gpuop upgrade preview` shows them),"
            " or remove the pinned versions so the operator's own defaults apply.",
        ),
        Rule(
            "VER003",
            "UnknownOperandVersion",
            "info",
            "An operand version is not a default of any known release",
            "The ClusterPolicy pins an operand to a version (or a digest) that no release in"
            " gpuop's matrix uses as its default, so it cannot tell which release it belongs to.",
            "Custom builds and newer patch images are fine, but nothing is known about what they"
            " are compatible with.",
            "Check the operand's release notes against the operator release in use.",
        ),
        Rule(
            "VER004",
            "UnknownVersion",
            "info",
            "A version could not be read or is not in the matrix",
            "A version on a node or in the input is malformed, or the matrix has no entry for it"
            " (a driver branch, a CUDA minor, an OS, a runtime without published ranges), so the"
            " check that needed it did not run.",
            "An unreadable fact is not a supported one: the combination is simply unchecked.",
            "Fix the label or field if it is malformed; otherwise compare with NVIDIA's"
            " documentation by hand.",
        ),
        Rule(
            "VER005",
            "OperatorReleaseOutOfSupport",
            "warning",
            "The operator release is deprecated or past end of support",
            "NVIDIA supports the newest release line, keeps the previous one deprecated (critical"
            " and security fixes only) and ends support for older ones; the release in use is"
            " not in the supported line.",
            "Fixes for new drivers, Kubernetes minors and CVEs land only in the supported line;"
            " the longer the cluster stays behind, the more lines an upgrade has to cross, one"
            " at a time.",
            "Plan the upgrade one line at a time (`gpuop upgrade preview OLD NEW` shows what it"
            " moves), in its own maintenance window.",
        ),
        Rule(
            "VER006",
            "OperandVersionsDefaulted",
            "info",
            "The ClusterPolicy pins no operand versions: the operator's defaults are assumed",
            "No operand in the ClusterPolicy sets a version, so the operator's built-in defaults"
            " apply; gpuop's operator deploys the release its catalog names, and the checks"
            " assume that release.",
            "If another operator (NVIDIA's, of another release) reconciles this ClusterPolicy,"
            " its own defaults apply and the assumed release is wrong.",
            "Pass `--operator-release X.Y.Z` when the cluster runs another operator release.",
        ),
        Rule(
            "VER101",
            "KubernetesOutOfRange",
            "error",
            "Kubernetes version outside the operator release's supported range",
            "The node's kubelet (or the cluster's control plane) runs a Kubernetes minor the"
            " operator release does not support on that OS.",
            "Operator releases are validated against a window of Kubernetes minors; outside it,"
            " API removals, kubelet device-plugin or CDI changes break operands, and NVIDIA"
            " support does not apply.",
            "Move Kubernetes into the release's range, or move the operator to a release whose"
            " range includes it, in separate maintenance windows.",
        ),
        Rule(
            "VER102",
            "PlatformOnlyInLaterDocs",
            "info",
            "Supported only according to documentation written after the release",
            "The Kubernetes minor or OS version is not in the release's documentation as"
            " published, but the newest documentation of its release line lists it (NVIDIA adds"
            " platforms to a line after its first release).",
            "The newest documentation describes the line's latest patch release; an older patch"
            " may lack the fixes that made the platform work.",
            "Upgrade to the line's latest patch release.",
        ),
        Rule(
            "VER103",
            "OsNotSupported",
            "error",
            "The node's operating system is not supported by the operator release",
            "The node's OS (from NFD's os_release labels or `status.nodeInfo.osImage`) or its"
            " version is not in the release's OS list.",
            "The driver container is built per OS version: on an unlisted OS its image does not"
            " exist or does not match the kernel, and the driver pod never becomes ready. With"
            " pre-installed drivers the rest may work, unsupported (then a warning).",
            "Move the node to a listed OS version, or pre-install the driver and accept running"
            " outside the support matrix.",
        ),
        Rule(
            "VER104",
            "ContainerRuntimeUnsupported",
            "warning",
            "The container runtime version is outside the release's range",
            "The node's containerd minor is outside the range the operator release was validated"
            " with, or the node runs a runtime the release does not list.",
            "The container toolkit rewrites the runtime's configuration; formats change between"
            " containerd minors (1.7 to 2.x moved the config version), so an unvalidated runtime"
            " can be left without the nvidia handler.",
            "Move containerd into the release's range, or the operator to a release that"
            " validates this containerd.",
        ),
        Rule(
            "VER201",
            "DriverBranchEndOfLife",
            "warning",
            "The driver branch is past end of life",
            "The driver's branch is past the end-of-life month in NVIDIA's data center driver"
            " lifecycle, or no longer appears in NVIDIA's lifecycle tables (which list every"
            " branch still supported).",
            "No more bug or security fixes for the branch; new GPUs, kernels and CUDA minors are"
            " not supported on it.",
            "Plan a driver branch upgrade (one change per maintenance window): a long-term"
            " support branch keeps the longest.",
        ),
        Rule(
            "VER202",
            "DriverBranchNearEndOfLife",
            "info",
            "The driver branch reaches end of life within 90 days",
            "The driver's branch has an end-of-life month less than 90 days away.",
            "A driver upgrade needs its own maintenance window, and every GPU pod on a node"
            " restarts with it: it takes planning.",
            "Schedule the branch upgrade now.",
        ),
        Rule(
            "VER203",
            "CudaNeedsNewerDriverBranch",
            "error",
            "The CUDA version needs a newer driver branch than the node has",
            "The node reports a CUDA runtime (`nvidia.com/cuda.runtime-version.full`) whose major"
            " family needs a newer driver branch than the node's driver"
            " (`nvidia.com/cuda.driver-version.full`): minor-version compatibility does not"
            " reach it.",
            "Applications built for that CUDA fail to start (`CUDA driver version is"
            " insufficient`) unless a forward-compatibility package is in use.",
            "Upgrade the node's driver to the family's branch, or keep workloads on an older CUDA.",
        ),
        Rule(
            "VER204",
            "CudaMinorNeedsNewerDriver",
            "warning",
            "The CUDA minor's full feature set needs a newer driver",
            "The node's driver is new enough for the CUDA major (minor-version compatibility),"
            " but older than the driver packaged with this CUDA minor.",
            "Most applications run; APIs that need the newer driver fail at run time"
            " (`cudaErrorCallRequiresNewerDriver`) and PTX built by the newer toolkit cannot be"
            " JIT-compiled.",
            "Upgrade the driver to at least the CUDA minor's packaged driver, or ship SASS for"
            " the GPU instead of relying on PTX JIT.",
        ),
        Rule(
            "VER205",
            "DriverNotDocumentedForRelease",
            "info",
            "The driver is not among the release's documented drivers",
            "The driver version is not in the driver list NVIDIA documents for the operator release.",
            "Undocumented drivers may work, but the combination was not validated.",
            "Pick one of the release's documented drivers (the message names the nearest).",
        ),
        Rule(
            "VER301",
            "DriverDriftInPool",
            "warning",
            "Nodes with the same GPU run different drivers",
            "GPU feature discovery reports a driver on this node that differs from the one most"
            " nodes with the same GPU (`nvidia.com/gpu.product`) run.",
            "Nodes built at different times drift (one made in March runs 535, one added in"
            " August 550): a workload that runs on one node fails on its twin, and every"
            " incident starts with `why only that node?`.",
            "Bring the pool to one driver: let the operator manage it, or rebuild the odd node"
            " from the same image.",
        ),
        Rule(
            "VER401",
            "SeveralMovesInOneWindow",
            "warning",
            "One change moves more than one of driver, toolkit, operator and Kubernetes",
            "Driver, CUDA, toolkit, operator and Kubernetes each have support ranges; this change"
            " moves several of them in the same maintenance window.",
            "When something breaks after the window, you cannot tell which move broke it, and"
            " rolling back one means rolling back all.",
            "Split the change: pin the versions that should not move yet (the hint names the"
            " fields), and give each move its own window.",
        ),
        Rule(
            "VER402",
            "UpgradeSkipsALine",
            "warning",
            "The upgrade skips a release line",
            "NVIDIA supports upgrades within a release line or to the next line only; this"
            " change crosses more than one.",
            "Migrations that run between lines (CRD changes, label and state changes) are only"
            " tested from the previous line.",
            "Upgrade one line at a time, each in its own window.",
        ),
        Rule(
            "VER403",
            "TargetKubernetesUnsupported",
            "warning",
            "After the change, Kubernetes is outside the new release's range",
            "The Kubernetes version the nodes run (or `--kubernetes-to`) is not supported by"
            " the target operator release.",
            "The new operator starts on a Kubernetes it was not validated with; its operands may"
            " fail on the kubelet's device-plugin or CDI interfaces.",
            "Pick a target release whose range includes the Kubernetes version, or move"
            " Kubernetes first, in its own window.",
        ),
    ),
)

__all__ = ["FAMILY"]
