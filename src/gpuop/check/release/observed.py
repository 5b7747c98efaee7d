"""Which GPU Operator release labelled the nodes, and what that release requires of them.

Releases label nodes differently (`catalog/release_labels.yaml`): v26.7.0 added
`gpu.deploy.client` to every set, v23.6.0 `kata-manager` and `cc-manager`, v26.3.0 the
Kata device plugin key; before v26.7.0 an empty value was left alone. A healthy node of
one release would be wrong for another, so the deploy-label rules compare against the
release the dump shows: `--operator-version`, else the operator's image or Helm labels,
else the validator image (it carries the operator's version), else the ClusterPolicy's
`spec.validator.version`, else the line all its pinned operand versions belong to. With none of them every plausible release counts (those whose
CRD admits the ClusterPolicy's fields): a key is required only when all of them set it,
and a key only some of them set is allowed but not required.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import Any

from gpuop.api.labels import (
    APP_COMPONENT_LABEL,
    APP_VERSION_LABEL,
    HELM_CHART_LABEL,
    MIG_CONFIG_LABEL,
    OLM_OWNER_KIND_LABEL,
    OLM_OWNER_LABEL,
)
from gpuop.catalog import SandboxMode, WorkloadConfig, operand_table
from gpuop.catalog.release_labels import LabelEra, release_labels
from gpuop.catalog.versions import version_matrix
from gpuop.check.plugin_signals import SHARED_OPERAND_DAEMONSETS, label_match, pod_owner_name
from gpuop.check.release.pinned import release_in_use
from gpuop.check.state import ClusterState
from gpuop.manifests.fields import get, mapping, text
from gpuop.policy import PolicyError, parse_cluster_policy

# YY.MM.PP, or 1.N.P before 22.9.
# NVIDIA's chart sources carry `v1.0.0-devel` at every tag (a release's packaged chart gets its
# own version), so a `-devel` version names no release.
_VERSION = re.compile(
    r"^v?(?P<line>[0-9]{1,2}\.[0-9]{1,2})\.(?P<patch>[0-9]+)(?P<suffix>(?:[-+].*)?)$"
)
_LINE = re.compile(r"^v?(?P<line>[0-9]{1,2}\.[0-9]{1,2})$")
# Image names (last path part) that carry the operator's version in their tag.
_OPERATOR_IMAGES = frozenset({"gpu-operator"})
_VALIDATOR_IMAGES = frozenset({"gpu-operator-validator"})
# gpuop's own operator labels nodes as the newest release does.
_GPUOP_IMAGES = frozenset({"gpuop"})
# What OLM names the operator it installed from a ClusterServiceVersion (OpenShift).
CSV_KIND = "ClusterServiceVersion"


class ReleaseError(ValueError):
    """An `--operator-version` gpuop cannot use."""


def line_key(line: str) -> tuple[int, int]:
    """A release line (`25.10`, `1.7`) as numbers, to order lines."""
    major, minor = line.split(".")
    return int(major), int(minor)


@dataclass(frozen=True)
class OperatorRelease:
    """The release (or the plausible releases) the nodes were labelled by."""

    version: str | None  # "25.10.0"; None when unknown or only the line is known
    line: str | None  # "25.10" when known
    source: str  # where it was read, or why it is unknown
    candidates: tuple[str, ...]  # release lines that may have labelled the nodes
    # Read from NVIDIA's operator itself (its image tag or Helm labels), not from an
    # operand or a setting: the release `gpuop versions check` holds the cluster to.
    from_operator: bool = False

    @property
    def known(self) -> bool:
        return self.line is not None

    @property
    def eras(self) -> tuple[LabelEra, ...]:
        table = release_labels()
        found: list[LabelEra] = []
        for line in self.candidates:
            era = table.era(line)
            if era is not None and era not in found:
                found.append(era)
        return tuple(found) or (table.newest,)

    def describe(self) -> str:
        if self.known:
            shown = f"v{self.version}" if self.version else f"{self.line}.x"
            return f"{shown} (from {self.source})"
        if len(self.candidates) == 1:
            span = self.candidates[0]
        else:
            span = f"{self.candidates[0]} to {self.candidates[-1]}"
        return (
            f"unknown ({self.source}): deploy labels are checked against what every release"
            f" from {span} sets"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "line": self.line,
            "source": self.source,
            "known": self.known,
            "candidates": list(self.candidates),
        }

    def expectation(self, workload: WorkloadConfig, mode: SandboxMode) -> LabelExpectation:
        return label_expectation(self.eras, workload, mode)


@dataclass(frozen=True)
class LabelExpectation:
    """What the plausible releases do to a node of one workload config.

    Keys are without the deploy prefix. `required`: every release sets them; `allowed`:
    some do; `removed`: every release deletes them when present.
    """

    required: frozenset[str]
    allowed: frozenset[str]
    removed: frozenset[str]
    fills_empty: bool
    default_mig_config: bool
    # Whether every plausible release has the MIG manager (v1.7.0 and later).
    mig_manager: bool

    def requires(self, key: str, labels: Mapping[str, str]) -> bool:
        """Whether a label the newest release would add must be there (GPU302)."""
        prefix = release_labels().prefix
        if key == MIG_CONFIG_LABEL:
            return self.default_mig_config
        if not key.startswith(prefix):
            return True
        short = key.removeprefix(prefix)
        if short == release_labels().mig_manager_key:
            return self.mig_manager  # set on MIG-capable container nodes
        if short not in self.required:
            return False
        return self.fills_empty or key not in labels

    def removes(self, key: str) -> bool:
        """Whether a label the newest release would delete is deleted by every release (GPU301)."""
        prefix = release_labels().prefix
        if not key.startswith(prefix):
            return True
        return key.removeprefix(prefix) in self.removed


def label_expectation(
    eras: Sequence[LabelEra], workload: WorkloadConfig, mode: SandboxMode
) -> LabelExpectation:
    """The keys a node of `workload` must, may and must not carry under any of `eras`."""
    table = release_labels()
    if workload != "container" and any(era.sandbox_workloads for era in eras):
        # A release without workload configs cannot have made this a VM node.
        eras = [era for era in eras if era.sandbox_workloads]
    sets = [era.keys_for(workload, mode) for era in eras]
    removed_sets: list[set[str]] = []
    for era, own in zip(eras, sets, strict=True):
        removed = set(era.known_keys(table.mig_manager_key)) - own
        if workload == "container":
            removed.discard(table.mig_manager_key)
        removed_sets.append(removed)
    required = frozenset.intersection(*sets)
    return LabelExpectation(
        required=required,
        allowed=frozenset.union(*sets) - required,
        removed=frozenset(set.intersection(*removed_sets)),
        fills_empty=all(era.fills_empty for era in eras),
        default_mig_config=all(era.default_mig_config for era in eras),
        mig_manager=all(table.mig_manager_key in era.operands for era in eras),
    )


@cache
def _lines() -> tuple[str, ...]:
    """The release lines whose labels gpuop knows, oldest first: versions.yaml's and the
    1.x lines before them."""
    return release_labels().lines


@cache
def _legacy_lines() -> frozenset[str]:
    """The lines older than versions.yaml's (1.x): no longer supported anywhere."""
    return frozenset(_lines()) - {line.line for line in version_matrix().lines}


def _ruled_out(lines: Sequence[str], state: ClusterState) -> frozenset[str]:
    """The 1.x lines the nodes rule out: a node carries a deploy key that a newer release
    sets and that line never does (`dcgm` rules out 1.7, a sandbox key 1.8 to 1.10)."""
    table = release_labels()
    legacy = [line for line in lines if line in _legacy_lines()]
    if not legacy:
        return frozenset()
    seen = {
        key.removeprefix(table.prefix)
        for node in state.nodes
        for key in node.labels
        if key.startswith(table.prefix)
    }
    managed = set().union(*(era.known_keys(table.mig_manager_key) for era in table.eras))
    seen &= managed
    out: set[str] = set()
    for line in legacy:
        era = table.era(line)
        if era is not None and not seen <= era.known_keys(table.mig_manager_key):
            out.add(line)
    return frozenset(out)


def _pre_deploy_evidence(state: ClusterState) -> str | None:
    """What shows a release before v1.7.0, where no node carries a deploy key: an operand
    DaemonSet (or its pod) selecting nodes by another label, or an operand pod running on
    a node of the input. From v1.7.0 every operand DaemonSet selects its deploy key, so
    its pods cannot run on a node without one; before, they selected
    `nvidia.com/gpu.present` or NFD's label."""
    prefix = release_labels().prefix
    if any(key.startswith(prefix) for node in state.nodes for key in node.labels):
        return None
    table = operand_table()
    for daemonset in state.daemonsets:
        name = text(daemonset, "metadata", "name")
        if name in SHARED_OPERAND_DAEMONSETS or table.operand_for_daemonset(name) is None:
            continue
        if label_match(mapping(daemonset, "spec", "template", "metadata", "labels")):
            continue
        selector = mapping(daemonset, "spec", "template", "spec", "nodeSelector")
        if selector and not any(str(key).startswith(prefix) for key in selector):
            shown = ", ".join(f"{key}={value}" for key, value in selector.items())
            return f"{_described(daemonset)} selects nodes by {shown}, not by a deploy label"
    in_input = {node.name for node in state.nodes}
    for pod in state.pod_views:
        if not pod.node or not pod.active or label_match(pod.labels) is not None:
            continue
        owner = next((name for kind, name in pod.owners if kind == "DaemonSet"), None)
        owner = owner or pod_owner_name(pod)
        if owner is None or owner in SHARED_OPERAND_DAEMONSETS:
            continue
        if table.operand_for_daemonset(owner) is None:
            continue
        selector = mapping(pod.obj, "spec", "nodeSelector")
        if any(str(key).startswith(prefix) for key in selector):
            return None  # placed by a deploy label: v1.7.0 or later
        if selector:
            shown_selector = ", ".join(f"{key}={value}" for key, value in selector.items())
            return (
                f"operand pod {pod.namespace}/{pod.name} selects nodes by {shown_selector},"
                " not by a deploy label"
            )
        if pod.node in in_input:
            return (
                f"operand pod {pod.namespace}/{pod.name} runs on node {pod.node}, and no node"
                f" carries a {prefix}* label"
            )
    return None


def _release_of(version: str, source: str) -> OperatorRelease | None:
    """A release from a version string; None when it is no version of a known line."""
    match = _VERSION.match(version.strip())
    if match is None or match.group("suffix").startswith("-devel"):
        return None
    line = match.group("line")
    if line not in _lines():
        return None
    name = f"{line}.{match.group('patch')}"
    return OperatorRelease(name, line, source, (line,))


def parse_operator_version(value: str) -> OperatorRelease:
    """`--operator-version`: `v25.10.0`, `25.10.0` or a line, `25.10`; ReleaseError otherwise."""
    raw = value.strip()
    line_match = _LINE.match(raw)
    if line_match is not None and line_match.group("line") in _lines():
        line = line_match.group("line")
        return OperatorRelease(None, line, "--operator-version", (line,))
    found = _release_of(raw, "--operator-version")
    if found is not None:
        return found
    lines = _lines()
    raise ReleaseError(
        f"--operator-version {value!r}: not a GPU Operator release gpuop knows"
        f" (releases of the lines {lines[0]} to {lines[-1]}, e.g. v{version_matrix().newest.version})"
    )


@lru_cache(maxsize=4096)  # a fleet's pods share a few images
def _image_parts(image: str) -> tuple[str, str | None]:
    """(last path part of the repository, tag or None) of an image reference."""
    reference = image.split("@", 1)[0]
    name, _, tag = reference.rpartition(":")
    if not name or "/" in tag:
        name, tag = reference, ""
    return name.rsplit("/", 1)[-1], tag or None


def _containers(obj: Mapping[str, Any], *path: str) -> Iterable[tuple[str, str]]:
    """(container name, image) of a pod spec at `path`, init containers included."""
    spec = mapping(obj, *path)
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        if not isinstance(containers, list):
            continue
        for container in containers:  # read directly: every pod of a large dump comes here
            if not isinstance(container, Mapping):
                continue
            image = container.get("image")
            if isinstance(image, str) and image:
                name = container.get("name")
                yield (name if isinstance(name, str) else ""), image


def _described(obj: Mapping[str, Any]) -> str:
    namespace = text(obj, "metadata", "namespace")
    name = text(obj, "metadata", "name")
    return f"{obj.get('kind')} {namespace + '/' if namespace else ''}{name}"


_TEMPLATE = ("spec", "template", "spec")


def _first_by_image(
    objects: Iterable[Mapping[str, Any]], *path: str
) -> dict[str, Mapping[str, Any]]:
    """Each image of the objects' pod specs, in the order met, with the first object that
    runs it: a fleet's thousands of pods come down to a few images, searched once each."""
    found: dict[str, Mapping[str, Any]] = {}
    for obj in objects:
        for _, image in _containers(obj, *path):
            found.setdefault(image, obj)
    return found


def _from_images(
    by_image: Mapping[str, Mapping[str, Any]], wanted: frozenset[str]
) -> OperatorRelease | None:
    """The release the first object running one of the `wanted` images shows."""
    for image, obj in by_image.items():
        name, tag = _image_parts(image)
        if name in _GPUOP_IMAGES and wanted is _OPERATOR_IMAGES:
            newest = version_matrix().newest
            source = (
                f"{_described(obj)} image {image}: gpuop's operator labels as v{newest.version}"
            )
            return OperatorRelease(newest.version, newest.line, source, (newest.line,))
        if name in wanted and tag:
            found = _release_of(tag, f"{_described(obj)} image {image}")
            if found is not None:
                return replace(found, from_operator=wanted is _OPERATOR_IMAGES)
    return None


def _unknown_operator_image(*by_image: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The first operator or validator image in the input whose tag names no release gpuop
    knows (`1.6.2`, before the deploy labels; `v27.1.0`; a custom build), as
    `<object> image <image>`."""
    for image, obj in (item for images in by_image for item in images.items()):
        name, tag = _image_parts(image)
        if name in _OPERATOR_IMAGES | _VALIDATOR_IMAGES and tag:
            return f"{_described(obj)} image {image}"
    return None


def _from_install_labels(objects: Iterable[Mapping[str, Any]]) -> OperatorRelease | None:
    """The release an installer's labels name: Helm's chart and app version, or on
    OpenShift the ClusterServiceVersion OLM installed the operator from (its images are
    pinned by digest there, so no tag says the release)."""
    for obj in objects:
        labels = mapping(obj, "metadata", "labels")
        version = labels.get(APP_VERSION_LABEL)
        chart = labels.get(HELM_CHART_LABEL)
        if isinstance(chart, str) and chart.startswith("gpu-operator-"):
            found = _release_of(
                chart.removeprefix("gpu-operator-"),
                f"{_described(obj)} label {HELM_CHART_LABEL}={chart}",
            )
            if found is not None:
                return replace(found, from_operator=True)
        if isinstance(version, str) and labels.get(APP_COMPONENT_LABEL) == "gpu-operator":
            shown = f"{_described(obj)} label {APP_VERSION_LABEL}={version}"
            found = _release_of(version, shown)
            if found is not None:
                return replace(found, from_operator=True)
        owner = labels.get(OLM_OWNER_LABEL)
        if isinstance(owner, str) and labels.get(OLM_OWNER_KIND_LABEL) == CSV_KIND:
            name, _, csv_version = owner.rpartition(".v")
            if name.startswith("gpu-operator"):
                found = _release_of(
                    csv_version, f"{_described(obj)} label {OLM_OWNER_LABEL}={owner}"
                )
                if found is not None:
                    return replace(found, from_operator=True)
    return None


def _from_pinned_versions(policies: Iterable[Mapping[str, Any]]) -> OperatorRelease | None:
    """The release line every operand version a ClusterPolicy pins belongs to, when they
    agree (`pinned.release_in_use`); None for a policy that pins none or mixes lines."""
    for obj in policies:
        try:
            policy = parse_cluster_policy(obj)
        except PolicyError:
            continue
        detection = release_in_use(version_matrix(), policy)
        if detection.source != "policy" or detection.mixed or detection.unknown:
            continue
        lines = {release.line for release in detection.candidates}
        if len(lines) != 1:
            continue
        line = lines.pop()
        single = detection.single
        pinned = ", ".join(p.label for p in detection.pinned)
        source = f"{_described(obj)} operand versions ({pinned})"
        return OperatorRelease(single.version if single else None, line, source, (line,))
    return None


def _lower_bound(policies: Iterable[Mapping[str, Any]]) -> tuple[str | None, str | None]:
    """(the newest line a field of a stored policy needs, that field)."""
    best: tuple[str | None, str | None] = (None, None)
    for policy in policies:
        for path, line in release_labels().policy_fields.items():
            if get(policy, *path.split(".")) is None:
                continue
            if best[0] is None or line_key(line) > line_key(best[0]):
                best = (line, path)
    return best


def detect_release(state: ClusterState, override: OperatorRelease | None = None) -> OperatorRelease:
    """The release the dump shows, in order of trust; all plausible releases when none."""
    if override is not None:
        return override
    policies = state.cluster_policies
    operator_deployments = [
        obj
        for obj in state.deployments
        if any(
            _image_parts(image)[0] in _OPERATOR_IMAGES | _GPUOP_IMAGES
            for _, image in _containers(obj, "spec", "template", "spec")
        )
    ]
    found = _from_images(
        _first_by_image(operator_deployments, *_TEMPLATE), _OPERATOR_IMAGES
    ) or _from_install_labels(operator_deployments)
    if found is not None:
        return found
    pod_images: dict[str, Mapping[str, Any]] = {}
    for pod in state.pod_views:
        for image in pod.images:
            pod_images.setdefault(image, pod.obj)
    found = (
        _from_images(pod_images, _OPERATOR_IMAGES)
        or _from_install_labels(policies)
        or _from_images(_first_by_image(state.daemonsets, *_TEMPLATE), _VALIDATOR_IMAGES)
        or _from_images(pod_images, _VALIDATOR_IMAGES)
        # The operator labels its operands' pods with its chart (`helm.sh/chart=
        # gpu-operator-v23.9.1`): a `describe pod` of one operand shows it.
        or _from_install_labels(
            pod.obj for pod in state.pod_views if HELM_CHART_LABEL in pod.labels
        )
    )
    if found is not None:
        return found
    for policy in policies:
        version = get(policy, "spec", "validator", "version")
        if isinstance(version, str):
            found = _release_of(version, f"ClusterPolicy spec.validator.version={version}")
            if found is not None:
                return found
    found = _from_pinned_versions(policies)
    if found is not None:
        return found
    lines = _lines()
    bound, field = _lower_bound(policies)
    unknown = _unknown_operator_image(
        _first_by_image(operator_deployments, *_TEMPLATE),
        pod_images,
        _first_by_image(state.daemonsets, *_TEMPLATE),
    )
    if unknown is not None:
        unknown = f"{unknown}, not a release of the lines {lines[0]} to {lines[-1]}"
    ruled_out = _ruled_out(lines, state)
    pre_deploy = release_labels().pre_deploy_lines
    evidence = _pre_deploy_evidence(state)
    if evidence is None:
        ruled_out |= pre_deploy
    lines = tuple(line for line in lines if line not in ruled_out)
    if evidence is not None and bound is None:
        reason = f"{evidence}: a release before v1.7.0, which set no deploy labels"
        return OperatorRelease(
            None, None, reason, tuple(line for line in lines if line in pre_deploy)
        )
    if bound is None:
        reason = unknown or "no operator Deployment, validator image or version in the input"
        return OperatorRelease(None, None, reason, lines)
    candidates = tuple(line for line in lines if line_key(line) >= line_key(bound))
    reason = (
        f"{unknown or 'no operator image or version in the input'}; the ClusterPolicy's"
        f" {field} needs {bound} or later"
    )
    return OperatorRelease(None, None, reason, candidates)


__all__ = [
    "LabelExpectation",
    "OperatorRelease",
    "ReleaseError",
    "detect_release",
    "label_expectation",
    "line_key",
    "parse_operator_version",
]
