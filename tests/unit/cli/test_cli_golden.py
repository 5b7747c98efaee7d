"""Every command's text output at 80 and 120 columns, against golden files.

Each case runs `gpuop` in-process with COLUMNS set, from the repository root on the inputs
in tests/ (fixed dates, relative paths), and compares stdout with
tests/golden/cli/<case>.<width>.txt. After an intended change, rewrite them with
`.venv/bin/pytest tests/unit/cli/test_cli_golden.py --update-golden` and review the diff.

Text output fits the width: no line is longer (tables wrap, or leave columns out and say
so); `-o wide` is the same output with nothing wrapped or left out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_support import GOLDEN_DIR, REPO_ROOT, GoldenCheck, RunCli

WIDTHS = (80, 120)
# A width nothing here reaches: the output as `-o wide` gives it.
UNLIMITED = 100_000

CHECK = "tests/corpus/check"
EXPLAIN = "tests/corpus/explain"
UPGRADE = "tests/golden/upgrade/inputs"
UPSTREAM = "tests/data/upstream-v26.7.0"
TODAY = "--today 2026-11-29"
CLUSTER = f"--cluster {EXPLAIN}/nodes.json {EXPLAIN}/pods.json {EXPLAIN}/kubevirt.json"
INPUTS = "tests/golden/cli/inputs"
DRA = "tests/corpus/explain/dra"

# case name: (the command line after `gpuop`, split at spaces; the exit status it has)
COMMANDS: dict[str, tuple[str, int]] = {
    "operands": ("operands", 0),
    "operands-vm-vgpu": ("operands -w vm-vgpu", 0),
    "audit": ("audit", 0),
    "audit-sandbox": ("audit --sandbox", 0),
    "plan-readme": ("plan --gpu A10 --count 2 --workload vm-vgpu", 0),
    "plan-vgpu-infeasible": (
        "plan --gpu T4 --count 2 --workload vm-vgpu --sandbox --vgpu-config A10-12Q",
        1,
    ),
    "plan-node-file": (f"plan --node {INPUTS}/node-a100.yaml", 0),
    "plan-kata-policy": (f"plan --gpu L40S --policy {INPUTS}/kata-policy.yaml", 0),
    "plan-nodes": (f"plan -f {UPSTREAM}/nodes.yaml", 0),
    "explain-pod": (f"explain {EXPLAIN}/pod-gpu.yaml {CLUSTER}", 0),
    "explain-vmi-blocked": (f"explain {EXPLAIN}/vmi-vgpu.yaml {CLUSTER}", 1),
    "explain-misspelt": (f"explain {EXPLAIN}/pod-wrong-case.yaml {CLUSTER}", 1),
    "explain-deployment": (f"explain {EXPLAIN}/deployment.yaml {CLUSTER}", 0),
    "explain-all-pending": (f"explain --all-pending --cluster {EXPLAIN}/bundle", 1),
    "explain-claims": (f"explain {DRA}/pod-two-vfio.yaml --cluster {DRA}/cluster.json", 1),
    "explain-claims-cel-error": (
        f"explain {DRA}/claim-missing-attribute.yaml"
        f" --cluster {DRA}/cluster.json,{DRA}/slice-unknown-node.yaml",
        1,
    ),
    "check-label-flip": (f"check {CHECK}/drift-label-flip.json", 1),
    "check-unadvertised": (f"check {CHECK}/workloads-unadvertised-request.json", 1),
    "check-healthy": (f"check {CHECK}/healthy-lab.json", 0),
    "check-claims": (
        f"check {INPUTS}/dra-cluster.yaml --ignore GPU1* --ignore GPU2* --ignore GPU3*",
        1,
    ),
    "kubevirt-check": (f"kubevirt check {CHECK}/kubevirt-not-permitted.json", 1),
    "kubevirt-permitted-devices": (
        f"kubevirt permitted-devices {EXPLAIN}/nodes.json {EXPLAIN}/kubevirt.json -o text",
        0,
    ),
    "versions-check": (
        f"versions check {UPGRADE}/nodes.json {UPGRADE}/policy-26.3.2.yaml {TODAY}",
        0,
    ),
    "versions-check-upstream": (
        f"versions check {UPSTREAM}/nodes.yaml {UPSTREAM}/cluster-policy.yaml {TODAY}",
        0,
    ),
    "upgrade-preview-releases": (
        f"upgrade preview 26.3.3 26.7.0 --dump {UPGRADE}/nodes.json {TODAY}",
        0,
    ),
    "upgrade-preview-policies": (
        f"upgrade preview {UPGRADE}/policy-26.3.2.yaml {UPGRADE}/policy-26.3.2-driver-595.yaml"
        f" --dump {UPGRADE}/nodes.json {TODAY}",
        0,
    ),
    "names-pci": ("names pci 2236 20b5 25b6 24fa 1234 zz", 2),
    "names-vgpu": ("names vgpu A10-12Q T4-1Q X-1Q", 1),
    "policy-validate": (f"policy validate {UPSTREAM}/cluster-policy.yaml", 0),
    "policy-validate-invalid": (f"policy validate {INPUTS}/invalid-policy.yaml", 2),
    "policy-defaults": ("policy defaults -o text", 0),
    "sim-models": ("sim models", 0),
    "kubevirt-vmi-example-dra": ("kubevirt vmi-example --dra --count 2 -n vms", 0),
}
CASES = {name: (tuple(line.split()), code) for name, (line, code) in COMMANDS.items()}

# The cases whose command takes -o wide, and the arguments without -o.
WIDE = [
    name
    for name, (args, _) in CASES.items()
    if args[0] not in ("sim",) and args[:2] != ("kubevirt", "vmi-example")
]


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inputs are named relative to the repository root, as the output shows them."""
    monkeypatch.chdir(REPO_ROOT)


def _text_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """`args` with any `-o text` taken out (text is every command's default but these)."""
    if "-o" in args:
        at = args.index("-o")
        return args[:at] + args[at + 2 :]
    return args


def _with_output(args: tuple[str, ...], output: str) -> tuple[str, ...]:
    return (*_text_args(args), "-o", output)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_text_output_is_the_golden_one(
    gpuop: RunCli, golden: GoldenCheck, case: str, width: int
) -> None:
    args, code = CASES[case]
    run = gpuop(*args, columns=width)
    assert "Traceback" not in run.stderr
    assert run.code == code, (run.stdout, run.stderr)
    assert run.stdout, run.stderr
    golden(f"{case}.{width}.txt", run.stdout)
    too_long = [line for line in run.stdout.splitlines() if len(line) > width]
    assert not too_long, f"{len(too_long)} line(s) over {width} columns: {too_long[:3]}"


@pytest.mark.parametrize("case", sorted(WIDE))
def test_wide_is_the_text_unwrapped(gpuop: RunCli, case: str) -> None:
    """`-o wide` on 80 columns is the text a terminal wide enough for everything shows."""
    args, code = CASES[case]
    wide = gpuop(*_with_output(args, "wide"), columns=80)
    unlimited = gpuop(*args, columns=UNLIMITED)
    assert wide.code == unlimited.code == code, (wide.stderr, unlimited.stderr)
    # (explain's wide also lists every node: these clusters are small enough to list anyway.)
    assert wide.stdout == unlimited.stdout
    assert "-o wide adds" not in wide.stdout


def test_narrow_tables_name_the_columns_they_leave_out(gpuop: RunCli) -> None:
    run = gpuop("operands", columns=80)
    assert "(-o wide adds DAEMONSET, DEPLOY LABEL, WAITS FOR, ADVERTISES)" in run.stdout
    audit = gpuop("audit", columns=80)
    # The writable host paths leave the table for a section of their own.
    assert "WRITABLE HOST PATHS" not in audit.stdout
    assert "Writable host paths:\n  driver: /dev/log," in audit.stdout
    assert "WRITABLE HOST PATHS" in gpuop("audit", columns=120).stdout


def test_every_golden_file_belongs_to_a_case(update_golden: bool) -> None:
    expected = {f"{case}.{width}.txt" for case in CASES for width in WIDTHS}
    found = {p.name for width in WIDTHS for p in GOLDEN_DIR.glob(f"*.{width}.txt")}
    if update_golden:
        for stale in found - expected:
            (GOLDEN_DIR / stale).unlink()
        found &= expected
    assert found == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_piped_text_is_the_same_at_every_width_and_never_wrapped(gpuop: RunCli, name: str) -> None:
    """Into a pipe or a file, text is kubectl's: the same bytes whatever $COLUMNS says, no
    value split, no column left out (as `-o wide`, which has the same lines)."""
    args, code = CASES[name]
    outputs = set()
    for columns in (40, 80, 300, 0):
        result = gpuop(*args, columns=columns, terminal=False)
        assert result.code == code, result.stderr
        outputs.add(result.stdout)
    assert len(outputs) == 1, f"{name}: piped text changes with $COLUMNS"
    if name in WIDE:
        wide = gpuop(*_text_args(args), "-o", "wide", terminal=False)
        assert wide.stdout == outputs.pop()


def _nvidia_device_ids() -> list[str]:
    """The device ids of the shipped pci.ids (lines `\tXXXX  name` under vendor 10de)."""
    shipped = REPO_ROOT / "src" / "gpuop" / "catalog" / "pci-ids-nvidia-2025.07.11.ids"
    found = re.findall(r"^\t([0-9a-f]{4})\s", shipped.read_text(), flags=re.MULTILINE)
    return sorted(set(found))


def test_every_piped_pci_name_reads_back_whole(gpuop: RunCli, tmp_path: Path) -> None:
    """`gpuop names pci -f ids > out.txt; awk '{print $2}' out.txt` gives the JSON's names,
    for every NVIDIA device of the shipped pci.ids at once, at any width."""
    listing = tmp_path / "ids.txt"
    listing.write_text("\n".join(_nvidia_device_ids()) + "\n")
    text = gpuop("names", "pci", "-f", str(listing), columns=40, terminal=False)
    data = gpuop("names", "pci", "-f", str(listing), "-o", "json", terminal=False)
    expected = [entry["resource"] for entry in json.loads(data.stdout)]
    awk = [line.split()[1] for line in text.stdout.splitlines()[1:]]
    assert len(expected) > 1900
    assert awk == expected
