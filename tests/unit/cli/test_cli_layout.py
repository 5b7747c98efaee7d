"""The table and wrapping layer every command's text goes through (gpuop.cli.layout)."""

from __future__ import annotations

from gpuop.cli.common import UNLIMITED_WIDTH
from gpuop.cli.layout import Column, fit_lines, fit_table, hang_of, render_table, wrap_words

ROWS = [
    ["driver", "nvidia-driver-daemonset", "container, vm-passthrough, vm-vgpu"],
    ["kata-sandbox-device-plugin", "nvidia-kata-sandbox-device-plugin-daemonset", "kata"],
]
COLUMNS = [Column("OPERAND"), Column("DAEMONSET", drop=1), Column("WORKLOADS", wrap=True)]


def test_a_table_that_fits_is_plain_aligned_columns() -> None:
    table = fit_table(COLUMNS, ROWS, width=UNLIMITED_WIDTH)
    assert table.dropped == ()
    assert table.text.splitlines()[0] == (
        "OPERAND                     DAEMONSET                                    WORKLOADS"
    )
    assert table.text.splitlines()[1].endswith("nvidia-driver-daemonset" + " " * 22 + ROWS[0][2])


def test_wrapped_columns_wrap_inside_their_cells() -> None:
    table = fit_table(COLUMNS, ROWS, width=100)
    lines = table.text.splitlines()
    assert table.dropped == ()
    assert max(len(line) for line in lines) <= 100
    assert lines[1].endswith("container, vm-passthrough,")
    assert lines[2].strip() == "vm-vgpu"
    assert lines[2].index("vm-vgpu") == lines[0].index("WORKLOADS")


def test_columns_are_left_out_when_wrapping_cannot_fit() -> None:
    table = fit_table(COLUMNS, ROWS, width=50)
    assert table.dropped == ("DAEMONSET",)
    assert table.wide_note() == "(-o wide adds DAEMONSET)"
    assert "DAEMONSET" not in table.text
    assert max(len(line) for line in table.text.splitlines()) <= 50
    assert render_table(COLUMNS, ROWS, width=50).endswith("\n(-o wide adds DAEMONSET)")


def test_the_highest_drop_rank_goes_first() -> None:
    columns = [Column("A"), Column("B" * 30, drop=1), Column("C" * 30, drop=2)]
    table = fit_table(columns, [["a", "b", "c"]], width=40)
    assert table.dropped == ("C" * 30,)


def test_nothing_droppable_still_fits_by_wrapping_every_column() -> None:
    columns = [Column("NAME"), Column("VALUE")]
    rows = [["x" * 50, "y" * 50]]
    table = fit_table(columns, rows, width=60)
    assert max(len(line) for line in table.text.splitlines()) <= 60
    assert "".join(line[:29].strip() for line in table.text.splitlines()[1:]) == "x" * 50


def test_long_words_are_cut_where_they_read_best() -> None:
    assert wrap_words("sandbox + kataSandboxDevicePlugin", 16) == [
        "sandbox +",
        "kataSandbox",
        "DevicePlugin",
    ]
    assert wrap_words("vm-passthrough/kata, vm-vgpu", 16) == ["vm-passthrough/", "kata, vm-vgpu"]
    assert wrap_words("/sys/module/firmware_class/parameters/path", 20) == [
        "/sys/module/",
        "firmware_class/",
        "parameters/path",
    ]


def test_lines_wrap_under_their_value_or_indented() -> None:
    assert hang_of("  policy     default ClusterPolicy (sandbox workloads off)") == 13
    assert hang_of("  a10-vgpu  no: Insufficient nvidia.com/gpu") == 12
    assert hang_of("    note: a sentence with single spaces") == 6
    text = "  policy     " + "word " * 30
    lines = fit_lines(text, 40).splitlines()
    assert all(len(line) <= 40 for line in lines)
    assert all(line.startswith(" " * 13) and line[13] != " " for line in lines[1:])


def test_spaces_inside_a_line_are_kept_and_wide_wraps_nothing() -> None:
    line = "  a10-passthrough  no: " + "Insufficient nvidia.com/gpu " * 5
    assert fit_lines(line, 60).splitlines()[0].startswith("  a10-passthrough  no: ")
    assert fit_lines(line + "\n", UNLIMITED_WIDTH) == line + "\n"
    assert fit_lines("short\n", 60) == "short\n"


def test_deep_indents_and_huge_words_still_fit() -> None:
    line = " " * 70 + "x" * 500 + " tail"
    lines = fit_lines(line, 60).splitlines()
    assert all(len(item) <= 60 for item in lines)
    assert "".join(lines).replace(" ", "") == "x" * 500 + "tail"
    table = fit_table(
        [Column("A", wrap=True), Column("B", wrap=True)], [["a" * 10_000, "b"]], width=60
    )
    assert max(len(item) for item in table.text.splitlines()) <= 60
