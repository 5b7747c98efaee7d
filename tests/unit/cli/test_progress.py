"""The progress line: at a terminal only, after the quiet time, erased at the end."""

from __future__ import annotations

import io
import time

import pytest

from gpuop.cli import progress as module
from gpuop.cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_the_count_then_a_clean_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "QUIET_FOR", 0.0)
    monkeypatch.setattr(module, "_EVERY", 0.0)
    screen = Terminal()
    line = Progress("explaining", total=3, stream=screen)
    for done in (1, 2, 3):
        line.advance(done)
    line.close()
    written = screen.getvalue()
    assert "\rexplaining... 3/3" in written
    # Erased: the last thing written blanks the line and returns to its start.
    assert written.endswith("\r" + " " * len("explaining... 3/3") + "\r")
    line.advance(4)  # closed: nothing more
    assert screen.getvalue() == written


def test_quick_work_and_pipes_say_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Terminal()
    line = Progress("reading", stream=screen)
    line.advance(1)
    line.close()
    assert screen.getvalue() == ""  # done within the quiet time
    monkeypatch.setattr(module, "QUIET_FOR", 0.0)
    pipe = io.StringIO()
    piped = Progress("reading", total=2, stream=pipe)
    piped.advance(2)
    piped.close()
    assert pipe.getvalue() == ""


def test_a_waiting_line_appears_without_a_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "QUIET_FOR", 0.05)
    screen = Terminal()
    line = Progress("checking 10 objects", stream=screen)
    time.sleep(0.3)
    line.close()
    assert screen.getvalue().startswith("\rchecking 10 objects...")


def test_streaming_work_keeps_quiet_when_stdout_is_the_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(module, "QUIET_FOR", 0.0)
    monkeypatch.setattr(module.sys, "stdout", Terminal())
    screen = Terminal()
    line = Progress("planning", total=1, stream=screen, streaming=True)
    line.advance(1)
    line.close()
    assert screen.getvalue() == ""
