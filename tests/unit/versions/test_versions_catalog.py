"""catalog/versions.yaml: it parses, and it is consistent with itself and the operand table."""

from __future__ import annotations

import copy
from importlib import resources

import pytest
import yaml
from pydantic import ValidationError

from gpuop.catalog import operand_table
from gpuop.catalog.versions import VersionMatrix, version_matrix
from gpuop.check.versions.parse import dotted_key, driver_branch, driver_key, release_key

MATRIX = version_matrix()


def _raw() -> dict[str, object]:
    text = resources.files("gpuop.catalog").joinpath("versions.yaml").read_text("utf-8")
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


def test_it_parses_and_covers_every_release_line() -> None:
    assert MATRIX.schema_version == 1
    assert len(MATRIX.releases) == 31
    assert MATRIX.releases[0].version == "22.9.0"
    assert MATRIX.newest.version == "26.7.0"
    assert [line.line for line in MATRIX.lines] == [
        "22.9",
        "23.3",
        "23.6",
        "23.9",
        "24.3",
        "24.6",
        "24.9",
        "25.3",
        "25.10",
        "26.3",
        "26.7",
    ]


def test_releases_are_sorted_and_unique() -> None:
    keys = [release_key(r.version) for r in MATRIX.releases]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    # Within a line, patch releases come out in order (lines overlap: 23.6.2 follows 23.9.0).
    for line in MATRIX.lines:
        dates = [r.date for r in MATRIX.releases if r.line == line.line]
        assert dates == sorted(dates), line.line


def test_lines_list_exactly_their_releases() -> None:
    for line in MATRIX.lines:
        members = tuple(r.version for r in MATRIX.releases if r.line == line.line)
        assert line.releases == members, line.line
        for name in members:
            release = MATRIX.release(name)
            assert release is not None and release.version.startswith(line.line + ".")
    assert {r.line for r in MATRIX.releases} == {line.line for line in MATRIX.lines}


def test_every_default_driver_belongs_to_a_known_branch() -> None:
    for release in MATRIX.releases:
        driver = release.components.driver
        assert driver is not None, release.version
        assert MATRIX.branch(driver_branch(driver)) is not None, (release.version, driver)


def test_documented_drivers_are_driver_versions() -> None:
    for release in MATRIX.releases:
        for driver in release.documented_drivers or ():
            driver_key(driver)


def _ranges_ok(platform: object) -> None:
    kubernetes = platform.kubernetes  # type: ignore[attr-defined]
    assert dotted_key(kubernetes.min) <= dotted_key(kubernetes.max)
    for row in kubernetes.by_os:
        assert dotted_key(row.min) <= dotted_key(row.max)
        # The overall range is the widest over the OS rows.
        assert dotted_key(kubernetes.min) <= dotted_key(row.min)
        assert dotted_key(row.max) <= dotted_key(kubernetes.max)
        listed = platform.operating_systems.get(row.os)  # type: ignore[attr-defined]
        assert listed is not None and set(row.versions) <= set(listed), row
    assert min(dotted_key(row.min) for row in kubernetes.by_os) == dotted_key(kubernetes.min)
    assert max(dotted_key(row.max) for row in kubernetes.by_os) == dotted_key(kubernetes.max)
    containerd = platform.containerd  # type: ignore[attr-defined]
    if containerd is not None:
        assert dotted_key(containerd.min) <= dotted_key(containerd.max)


@pytest.mark.parametrize("release", MATRIX.releases, ids=lambda r: r.version)
def test_release_ranges_are_ordered(release: object) -> None:
    _ranges_ok(release)


@pytest.mark.parametrize("line", MATRIX.lines, ids=lambda line: line.line)
def test_line_documentation_ranges_are_ordered(line: object) -> None:
    _ranges_ok(line.latest_docs)  # type: ignore[attr-defined]


def test_kubernetes_ranges_never_move_backwards_across_releases() -> None:
    previous: tuple[int, ...] = (0, 0)
    for release in MATRIX.releases:
        high = dotted_key(release.kubernetes.max)
        assert high >= previous, release.version
        previous = high


def test_cuda_table_is_sorted_and_monotonic() -> None:
    minors = [dotted_key(m.cuda) for m in MATRIX.cuda.minors]
    assert minors == sorted(minors) and len(set(minors)) == len(minors)
    known = [driver_key(m.min_driver) for m in MATRIX.cuda.minors if m.min_driver is not None]
    assert known == sorted(known)
    families = [f.cuda_major for f in MATRIX.cuda.families]
    assert families == sorted(families) and len(set(families)) == len(families)
    branches = [f.min_driver_branch for f in MATRIX.cuda.families]
    assert branches == sorted(branches)
    for minor in MATRIX.cuda.minors:
        family = MATRIX.cuda.family(int(minor.cuda.split(".")[0]))
        assert family is not None, minor.cuda
        if minor.min_driver is not None:
            assert driver_key(minor.min_driver)[0] >= family.min_driver_branch


def test_driver_branches_are_sorted_and_their_lifecycle_is_consistent() -> None:
    numbers = [b.branch for b in MATRIX.driver_branches]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    for branch in MATRIX.driver_branches:
        # Only the lifecycle tables publish end-of-life dates.
        assert (branch.end_of_life is not None) == branch.in_lifecycle_tables, branch.name


def test_components_are_keyed_like_the_operand_table() -> None:
    keys = {op.image.version_key for op in operand_table().operands if op.image.version_key}
    for release in MATRIX.releases:
        assert {key for key, _ in release.components.items()} == keys


def test_the_newest_release_is_the_operand_tables_defaults() -> None:
    defaults = dict(operand_table().default_versions)
    assert defaults.pop("release") == MATRIX.newest.version
    assert dict(MATRIX.newest.components.items()) == defaults


@pytest.mark.parametrize(
    ("release", "os_id", "versions", "low", "high"),
    [
        # Facts from the reference: 26.7 lists Ubuntu 24.04 from 1.32, every other OS from 1.33.
        ("26.7.0", "ubuntu", ("24.04",), "1.32", "1.36"),
        ("26.7.0", "ubuntu", ("26.04", "22.04"), "1.33", "1.36"),
        ("26.7.0", "rhel", ("9.2", "9.4", "9.6", "9.7", "9.8"), "1.33", "1.36"),
        ("25.10.1", "ubuntu", ("20.04", "22.04", "24.04"), "1.30", "1.34"),
        ("23.3.2", "ubuntu", ("18.04",), "1.21", "1.26"),
    ],
)
def test_spot_facts_kubernetes_rows(
    release: str, os_id: str, versions: tuple[str, ...], low: str, high: str
) -> None:
    found = MATRIX.release(release)
    assert found is not None
    rows = [r for r in found.kubernetes.by_os if r.os == os_id and r.versions == versions]
    assert len(rows) == 1 and (rows[0].min, rows[0].max) == (low, high)


def test_spot_facts_cuda_drivers_and_lifecycle() -> None:
    minor = MATRIX.cuda.minor("12.8")
    assert minor is not None and minor.min_driver == "570.26"
    family = MATRIX.cuda.family(13)
    assert family is not None and family.min_driver_branch == 580
    family12 = MATRIX.cuda.family(12)
    assert family12 is not None and family12.min_driver == "525.60.13"
    thirteen_four = MATRIX.cuda.minor("13.4")
    assert thirteen_four is not None and thirteen_four.min_driver is None  # unknown, not guessed
    r535 = MATRIX.branch(535)
    assert r535 is not None and (r535.type, r535.end_of_life) == ("long_term_support", "2026-06")
    r570 = MATRIX.branch(570)
    assert r570 is not None and r570.end_of_life is None and not r570.in_lifecycle_tables
    newest = MATRIX.newest
    assert newest.containerd is not None
    assert (newest.containerd.min, newest.containerd.max) == ("1.8", "2.3")
    assert newest.components.driver == "595.91.07"
    assert newest.documented_drivers == ("610.57.04", "595.91.07", "580.173.02", "535.309.01")
    assert MATRIX.release("22.9.0") is not None
    assert MATRIX.release("22.9.0").platform_approximate  # type: ignore[union-attr]
    assert not newest.platform_approximate


def test_unquoted_versions_are_refused() -> None:
    raw = copy.deepcopy(_raw())
    releases = raw["releases"]
    assert isinstance(releases, list)
    releases[0]["kubernetes"]["min"] = 1.3  # what YAML makes of an unquoted "1.30"
    with pytest.raises(ValidationError):
        VersionMatrix.model_validate(raw)


def test_unknown_fields_are_refused() -> None:
    raw = copy.deepcopy(_raw())
    raw["driver_branches"][0]["eol"] = "2026-01"  # type: ignore[index]
    with pytest.raises(ValidationError):
        VersionMatrix.model_validate(raw)


def test_lookups() -> None:
    assert MATRIX.release("26.8.0") is None
    assert MATRIX.line("26.3") is not None and MATRIX.line("26.4") is None
    assert MATRIX.branch(999) is None
    assert MATRIX.newest.components.get("no_such_key") is None
    assert MATRIX.newest.components.get("kata_manager") is None
