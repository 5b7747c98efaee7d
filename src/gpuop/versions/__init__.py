"""Version compatibility: the cluster against the GPU Operator version matrix.

Pure, like `gpuop.check`, and a family of its rules: the VER codes are in the checker's one
registry (`gpuop.check.families.versions`), and `check_versions` returns the checker's
`Report` (wrapped with the release it decided on), so `gpuop versions check` prints text,
JSON and SARIF through `gpuop check`'s output. `preview_upgrade` says what moving from one
ClusterPolicy or operator release to another changes, node by node. Facts come only from
`gpuop.catalog.versions` (the matrix) and `gpuop.planner.plan` (which operand runs where).

    result = check_versions(objects, today=date.today())
    render_versions_text(result), to_versions_sarif(result), result.exit_code
    preview = preview_upgrade(old_side, new_side, nodes, today=date.today())
"""

from gpuop.check.rules import VERSION_RULES
from gpuop.versions.checks import check_versions
from gpuop.versions.docs import render_docs
from gpuop.versions.parse import VersionError
from gpuop.versions.preview_text import render_preview_text
from gpuop.versions.release import Detection, detect_release
from gpuop.versions.report import VersionReport, render_versions_text, to_json, to_versions_sarif
from gpuop.versions.sides import Side, side_from_policy, side_from_release
from gpuop.versions.upgrade import UpgradePreview, preview_upgrade

__all__ = [
    "VERSION_RULES",
    "Detection",
    "Side",
    "UpgradePreview",
    "VersionError",
    "VersionReport",
    "check_versions",
    "detect_release",
    "preview_upgrade",
    "render_docs",
    "render_preview_text",
    "render_versions_text",
    "side_from_policy",
    "side_from_release",
    "to_json",
    "to_versions_sarif",
]
