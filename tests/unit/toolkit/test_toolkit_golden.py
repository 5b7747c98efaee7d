"""Golden tests: the `--dry-run` diff for real-world containerd configs.

Inputs live in tests/golden/toolkit/inputs/: what `containerd config default` prints in
containerd 1.6.20 (version 2) and 2.4.2 (version 4), a version 3 default in the containerd 2.0 to
2.3 layout (written by hand), hand-written configs with comments and custom runtimes, a
distribution-style conf.d config, and one the upstream toolkit already configured. For each input and scenario the expected `--dry-run` text output (the unified
diff, then the summary) is kept as tests/golden/toolkit/<input>/<scenario>.diff. Regenerate after an intended change with

    .venv/bin/pytest tests/unit/toolkit/test_toolkit_golden.py --update-golden

and review the golden diffs like code.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from toolkit_support import CONFIG, GOLDEN_DIR, INPUTS_DIR, check_golden, contents, make_root

from gpuop.toolkit import RuntimeOptions, configure_runtime

SCENARIOS: dict[str, RuntimeOptions] = {
    "in-place": RuntimeOptions(mode="in-place"),
    "in-place-all": RuntimeOptions(
        mode="in-place", with_cdi_runtimes=True, enable_cdi=True, set_as_default=True
    ),
    "drop-in": RuntimeOptions(),
    "drop-in-operator": RuntimeOptions(with_cdi_runtimes=True, enable_cdi=True),
}
INPUTS = sorted(p.name for p in INPUTS_DIR.glob("*.toml"))


def test_inputs_are_present() -> None:
    assert len(INPUTS) >= 5


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("input_name", INPUTS)
def test_dry_run_diff(tmp_path: Path, update_golden: bool, input_name: str, scenario: str) -> None:
    source = (INPUTS_DIR / input_name).read_bytes()
    root = make_root(tmp_path, source)
    before = contents(root)

    result = configure_runtime(str(root), SCENARIOS[scenario], dry_run=True)

    assert contents(root) == before, "a dry run must not write anything"
    golden = GOLDEN_DIR / input_name.removesuffix(".toml") / f"{scenario}.diff"
    check_golden(golden, result.diff() + result.render_text(), update=update_golden)

    # The dry run tells the truth: doing it for real produces exactly the files it showed.
    done = configure_runtime(str(root), SCENARIOS[scenario])
    assert done.diff() == result.diff()
    for outcome in done.files:
        path = root / outcome.path.lstrip("/")
        if outcome.action == "deleted":
            assert not path.exists()
        elif outcome.action != "unchanged":
            tomllib.loads(path.read_text(encoding="utf-8"))
    assert (root / CONFIG).exists()
