"""The VER0xx rules: the operator release the ClusterPolicy names, and its operand versions.

What the release is comes from `gpuop.check.release.release_in_use`; these rules say
when it is unknown (VER001), mixed (VER002), unknown per operand (VER003), out of support
(VER005) or assumed (VER006), and check the policy's pinned driver as a node's.
"""

from __future__ import annotations

from gpuop.check.release.pinned import describe_releases
from gpuop.check.versions.context import VersionContext
from gpuop.check.versions.driver import driver_checks
from gpuop.check.versions.parse import VersionError, driver_key


def _mixed_text(ctx: VersionContext, name: str) -> tuple[str, str]:
    """(message, hint) for VER002: the pinned versions grouped by the releases shipping them."""
    detection = ctx.detection
    order = {release: index for index, release in enumerate(ctx.matrix.release_names)}
    groups: dict[tuple[str, ...], list[str]] = {}
    release = detection.single if detection.source == "option" else None
    pinned = detection.mismatched() if release is not None else detection.pinned
    for item in pinned:
        groups.setdefault(detection.shipping(item), []).append(f"{item.label} ({item.field})")
    parts = [
        f"from {describe_releases(ctx.matrix, shipping)}: {', '.join(items)}"
        for shipping, items in sorted(
            groups.items(), key=lambda entry: -max(order.get(n, -1) for n in entry[0])
        )
    ]
    if release is not None:
        message = (
            f"ClusterPolicy {name} pins operand versions that operator release"
            f" {release.version} does not ship ({'; '.join(parts)})"
        )
    else:
        message = (
            f"ClusterPolicy {name} mixes operator releases, no release ships these versions"
            f" together ({'; '.join(parts)}); the checks use {ctx.release_text}, the release"
            " most of them come from"
        )
    target = detection.candidates[-1].version if detection.candidates else "X.Y.Z"
    hint = (
        f"set every operand to one release's versions (`gpuop upgrade preview POLICY.yaml"
        f" {target}` lists them), or remove the pinned versions so the operator's defaults"
        " apply"
    )
    return message, hint


def release_findings(ctx: VersionContext, unknown_reason: str | None) -> None:
    detection = ctx.detection
    name = ctx.policy_name
    if not detection.known:
        ctx.add(
            "VER001",
            "ClusterPolicy",
            name,
            unknown_reason or "the operator release could not be determined",
            "pass --operator-release X.Y.Z, or add the ClusterPolicy with its operand versions",
        )
        ctx.skip(
            "kubernetes, os, container runtime",
            "the operator release is unknown: there is no range to compare with",
        )
    if detection.source == "default" and detection.single is not None:
        ctx.add(
            "VER006",
            "ClusterPolicy",
            name,
            f"ClusterPolicy {name} pins no operand version: gpuop's operator deploys its"
            f" {detection.single.version} defaults, and the checks assume"
            f" {detection.single.version}",
            "pass --operator-release X.Y.Z if another operator release reconciles the policy",
        )
    for pinned in detection.unknown:
        what = "a digest" if pinned.version.startswith("sha256:") else "not the default of"
        ctx.add(
            "VER003",
            "ClusterPolicy",
            name,
            f"{pinned.label} ({pinned.field}) is {what}"
            f"{' of' if what == 'a digest' else ''} any release in gpuop's matrix"
            f" ({describe_releases(ctx.matrix, ctx.matrix.release_names)})",
            "check the operand's release notes against the operator release in use",
        )
    if detection.mixed:
        ctx.add("VER002", "ClusterPolicy", name, *_mixed_text(ctx, name))
    statuses = {release.status for release in detection.candidates}
    if detection.candidates and "supported" not in statuses:
        worst = "deprecated" if "deprecated" in statuses else "end_of_support"
        newest = ctx.matrix.newest
        ctx.add(
            "VER005",
            "ClusterPolicy",
            name,
            f"operator release {ctx.release_text} is"
            f" {'deprecated' if worst == 'deprecated' else 'past end of support'} (NVIDIA's"
            f" lifecycle as of {ctx.matrix.as_of}: the newest line is supported, the previous"
            " one deprecated, older ones out of support)",
            f"upgrade one release line at a time towards {newest.version}, each in its own"
            " maintenance window (`gpuop upgrade preview` shows what each step moves)",
            severity="info" if worst == "deprecated" else "warning",
        )
    driver = detection.driver
    if driver is not None:
        try:
            driver_key(driver.version)
        except VersionError as exc:
            ctx.add(
                "VER004",
                "ClusterPolicy",
                name,
                f"{driver.field}: {exc}; the driver was not checked",
                "set spec.driver.version to a driver version such as 595.91.07",
            )
        else:
            driver_checks(ctx, "ClusterPolicy", name, driver.version)


def older_release_finding(ctx: VersionContext, shown: str) -> None:
    """VER005 for an operator older than every release of the matrix (a 1.x one)."""
    newest = ctx.matrix.newest
    ctx.add(
        "VER005",
        "ClusterPolicy",
        ctx.policy_name,
        f"operator release {shown} is past end of support: older than every release in"
        f" gpuop's version matrix, whose oldest ({ctx.matrix.releases[0].version}) is out of"
        f" support too (NVIDIA's lifecycle as of {ctx.matrix.as_of})",
        f"upgrade one release line at a time towards {newest.version}, each in its own"
        " maintenance window (`gpuop upgrade preview` shows what each step moves)",
        severity="warning",
    )


__all__ = ["older_release_finding", "release_findings"]
