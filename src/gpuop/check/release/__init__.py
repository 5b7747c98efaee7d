"""Which GPU Operator release a cluster runs: one answer for every checker.

The evidence is weighed in one order of trust, whichever command asks:

1. `--operator-release` / `--operator-version`, when given;
2. what NVIDIA's operator shows of itself: its Deployment's or pod's image tag, its Helm
   labels (`observed.detect_release`, which also reads the validator image and
   `spec.validator.version`, then the ClusterPolicy fields a release's CRD first admitted,
   for the deploy-label rules of `gpuop check`);
3. the operand versions the ClusterPolicy pins, matched against the version matrix
   (`pinned.release_in_use`, for the version checks, which start from step 2's answer).

`observed` answers with release lines (the deploy labels change by line); `pinned`
answers with the matrix's releases (support ranges change by release).

    seen = detect_release(state)                          # OperatorRelease
    used = release_in_use(matrix, policy, None, seen)     # Detection
"""

from gpuop.check.release.observed import (
    LabelExpectation,
    OperatorRelease,
    ReleaseError,
    detect_release,
    label_expectation,
    line_key,
    parse_operator_version,
)
from gpuop.check.release.pinned import (
    DRIVER_KEY,
    Detection,
    DetectionSource,
    PinnedVersion,
    describe_releases,
    gpuop_default_release,
    pinned_versions,
    policy_version,
    release_in_use,
    releases_shipping,
)

__all__ = [
    "DRIVER_KEY",
    "Detection",
    "DetectionSource",
    "LabelExpectation",
    "OperatorRelease",
    "PinnedVersion",
    "ReleaseError",
    "describe_releases",
    "detect_release",
    "gpuop_default_release",
    "label_expectation",
    "line_key",
    "parse_operator_version",
    "pinned_versions",
    "policy_version",
    "release_in_use",
    "releases_shipping",
]
