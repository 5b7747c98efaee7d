"""Moving between operator releases: what an upgrade changes, and taking a cluster over.

The version checks themselves are a rule family of the checker (`gpuop.check.versions`);
this package answers the questions that compare two sides: `preview_upgrade` says what
moving from one ClusterPolicy or operator release to another changes, node by node, and
`adopt` what gpuop would change when it takes over from NVIDIA's operator. Facts come only
from `gpuop.catalog.versions` (the matrix) and `gpuop.planner.plan` (which operand runs
where); `render_docs` renders `docs/versions.md`.

    preview = preview_upgrade(old_side, new_side, nodes, today=date.today())
    render_preview_text(preview)
"""

from gpuop.versions.docs import render_docs
from gpuop.versions.preview_text import render_preview_text
from gpuop.versions.sides import Side, side_from_policy, side_from_release
from gpuop.versions.upgrade import UpgradePreview, preview_upgrade

__all__ = [
    "Side",
    "UpgradePreview",
    "preview_upgrade",
    "render_docs",
    "render_preview_text",
    "side_from_policy",
    "side_from_release",
]
