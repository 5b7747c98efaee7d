"""What every test run shares: the Hypothesis profiles, end-to-end tests as an opt-in, and
whether golden files are rewritten.

Hypothesis profiles (``HYPOTHESIS_PROFILE=dev|ci|deep``; ``ci`` when unset):

* ``dev``: a tenth of the examples, for a quick loop while editing;
* ``ci``: the counts the tests were sized for (what ``make unit`` and ``make test`` run);
* ``deep``: ten times as many, for a long hunt (what ``GPUOP_FUZZ_SCALE=10`` used to do).

Property tests take their example counts from the profile (``scaled(n)`` in
``tests/unit/fuzzing.py`` for the counted fuzz runs), so one variable sizes them all.

End-to-end tests (marker ``e2e``) need the local control plane, which is built from source
the first time (about 20 minutes on 2 cores). A bare ``pytest`` leaves them out and says so;
``pytest --with-e2e`` (what ``make test`` and CI run, after ``make setup`` has made the
binaries) runs them.

Golden files (``kit.golden``) are compared byte for byte; ``pytest --update-golden`` (or
``UPDATE_GOLDEN=1``) rewrites them instead. Tests take that choice from the
``update_golden`` fixture.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from kit.golden import update_requested

CI_EXAMPLES = 100
_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(
    "dev", max_examples=CI_EXAMPLES // 10, deadline=None, suppress_health_check=_SLOW_IS_FINE
)
settings.register_profile(
    "ci", max_examples=CI_EXAMPLES, deadline=None, suppress_health_check=_SLOW_IS_FINE
)
settings.register_profile(
    "deep", max_examples=CI_EXAMPLES * 10, deadline=None, suppress_health_check=_SLOW_IS_FINE
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_LEFT_OUT = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--with-e2e",
        action="store_true",
        default=False,
        help="also run the end-to-end tests (marker e2e): they start a local control plane "
        "and build its binaries first when they are missing",
    )
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the golden files instead of comparing with them (UPDATE_GOLDEN=1 does "
        "the same); review `git diff tests/golden` afterwards",
    )


@pytest.fixture(scope="session")
def update_golden(pytestconfig: pytest.Config) -> bool:
    """Whether this run rewrites the golden files: `--update-golden`, or `UPDATE_GOLDEN=1`."""
    return update_requested(bool(pytestconfig.getoption("--update-golden")))


def pytest_report_header(config: pytest.Config) -> str:
    e2e = "run" if config.getoption("--with-e2e") else "left out (--with-e2e runs them)"
    return f"hypothesis profile: {settings.get_current_profile_name()}; e2e tests: {e2e}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--with-e2e"):
        return
    e2e = [item for item in items if item.get_closest_marker("e2e")]
    if not e2e:
        return
    config.hook.pytest_deselected(items=e2e)
    items[:] = [item for item in items if not item.get_closest_marker("e2e")]
    config.stash[_LEFT_OUT] = len(e2e)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    left_out = terminalreporter.config.stash.get(_LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(
            f"{left_out} end-to-end tests were left out: pass --with-e2e (make test does)"
        )
