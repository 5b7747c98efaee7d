"""The golden-file comparison in `kit.golden`: a mismatch fails with a unified diff, and
updating writes the file instead of comparing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.golden import check_golden, golden_in, update_requested


def test_matching_output_passes(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("one\ntwo\n", encoding="utf-8")
    check_golden(path, "one\ntwo\n", update=False)


def test_a_mismatch_fails_with_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("one\ntwo\n", encoding="utf-8")
    with pytest.raises(AssertionError) as failure:
        check_golden(path, "one\nthree\n", update=False)
    message = str(failure.value)
    assert f"output differs from {path}" in message
    assert "rerun with --update-golden" in message
    assert f"--- {path} (golden)\n+++ actual\n" in message
    assert "-two\n+three\n" in message
    assert path.read_text(encoding="utf-8") == "one\ntwo\n"


def test_a_missing_file_fails_and_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "missing.txt"
    with pytest.raises(AssertionError, match="run with --update-golden to create it"):
        check_golden(path, "anything\n", update=False)
    assert not path.exists()


def test_updating_writes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / "out.txt"
    check_golden(path, "fresh\n", update=True)
    assert path.read_text(encoding="utf-8") == "fresh\n"
    check_golden(path, "changed\n", update=True)
    assert path.read_text(encoding="utf-8") == "changed\n"
    check_golden(path, "changed\n", update=False)


def test_golden_in_checks_files_of_one_folder(tmp_path: Path) -> None:
    golden_in(tmp_path, update=True)("a.txt", "a\n")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "a\n"
    with pytest.raises(AssertionError, match="differs"):
        golden_in(tmp_path, update=False)("a.txt", "b\n")


def test_the_option_or_the_variable_asks_for_an_update(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    assert not update_requested(False)
    assert update_requested(True)
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    assert update_requested(False)
    monkeypatch.setenv("UPDATE_GOLDEN", "0")
    assert not update_requested(False)
