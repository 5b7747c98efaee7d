"""Healthy dumps of every supported operator release: no errors, no warnings.

The dumps (tests/corpus/releases/) are written by release_corpus_gen.py from upstream's
labelling rules, not by gpuop's planner; the release is read from the operator image.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import release_corpus_gen as gen

from gpuop.check import Report, run_checks
from gpuop.manifests import load_objects

CASES = gen.cases()
NAMES = sorted(CASES)


@functools.cache
def _report(name: str) -> Report:
    path = gen.CORPUS / f"{name}.json"
    return run_checks(load_objects(path.read_text(encoding="utf-8"), str(path)))


def _scenario(name: str) -> str:
    return name.split("-", 1)[1]


def test_the_corpus_files_are_generated() -> None:
    """The committed JSON is what release_corpus_gen.py writes (run it after changing it)."""
    files = {path.name for path in gen.CORPUS.glob("*.json")}
    assert files == {f"{name}.json" for name in CASES}
    for name, document in CASES.items():
        assert (gen.CORPUS / f"{name}.json").read_text() == gen.render(document), name


def test_every_release_line_and_workload_is_covered() -> None:
    releases = {name.split("-", 1)[0] for name in NAMES}
    assert {"v24.9.2", "v25.3.4", "v25.10.1", "v26.3.0", "v26.7.0"} <= releases
    for release in releases:
        scenarios = {_scenario(n) for n in NAMES if n.startswith(release + "-")}
        assert {"container", "mig-single", "mig-mixed", "time-slicing"} <= scenarios
        assert {"vm-passthrough", "vm-vgpu"} <= scenarios
    assert "v26.7.0-kata" in CASES and "v26.3.0-kata" in CASES


def test_no_dump_carries_gpuop_metadata() -> None:
    for name, document in CASES.items():
        assert "gpuop.io/" not in json.dumps(document), name


@pytest.mark.parametrize("name", NAMES)
def test_healthy_dump_has_no_errors_or_warnings(name: str) -> None:
    report = _report(name)
    loud = [f"{f.code} {f.subject}: {f.message}" for f in report.findings if f.severity != "info"]
    assert loud == []
    assert report.exit_code == 0
    assert report.release is not None
    assert report.release.version == name.split("-", 1)[0].removeprefix("v")
    assert not [f for f in report.findings if f.code in ("GPU000", "GPU301", "GPU302")]


@pytest.mark.parametrize("name", NAMES)
def test_healthy_dump_nodes_are_described(name: str) -> None:
    """No inventory gaps (GPU104): every GPU node's cards are learnt, and counted.

    Under MIG `single` GPU feature discovery counts MIG devices, not cards, so there the
    count stays unknown by design.
    """
    report = _report(name)
    assert not [f for f in report.findings if f.code == "GPU104"]
    for node in report.nodes:
        if not node.gpu_node:
            continue
        assert node.model, node
        assert node.inventory_source not in (None, "none", "annotation"), node
        if _scenario(name) != "mig-single":
            assert node.gpus is not None, node


@pytest.mark.parametrize("version", ["v24.9.2", "v25.3.4", "v25.10.1", "v26.3.0"])
def test_an_older_release_judged_as_the_newest_misses_the_client_label(version: str) -> None:
    """The corpus would be wrong under v26.7.0's sets: the release detection matters."""
    path = Path(gen.CORPUS / f"{version}-container.json")
    objects = load_objects(path.read_text(encoding="utf-8"), str(path))
    for obj in objects:
        if obj.get("kind") == "Deployment":
            image = obj["spec"]["template"]["spec"]["containers"][0]
            image["image"] = "nvcr.io/nvidia/gpu-operator:v26.7.0"
    report = run_checks(objects)
    assert {f.code for f in report.findings if f.severity == "warning"} == {"GPU302"}
    assert all("gpu.deploy.client" in f.message for f in report.findings if f.code == "GPU302")
