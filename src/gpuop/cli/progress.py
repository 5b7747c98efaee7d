"""A progress line on stderr for offline work that takes a while, at a terminal only.

Fleet-size inputs (ten thousand nodes, fifty thousand pods) take seconds to read and judge;
a person at a terminal should see that the command is working. Nothing is written when
stderr is not a terminal (scripts and pipes get exactly the output they asked for), nor
for work done within :data:`QUIET_FOR` seconds; the line is erased when the work ends, so
it never mixes with what the command prints.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, TextIO

__all__ = ["QUIET_FOR", "Progress", "progress"]

#: Work shorter than this says nothing.
QUIET_FOR: Final = 2.0
_EVERY: Final = 0.2


class Progress:
    """``what: done/total`` on one stderr line, redrawn at most every 0.2 s once the work
    has run for :data:`QUIET_FOR` seconds; a waiting line (no count) until then if the
    count never moves."""

    def __init__(
        self,
        what: str,
        total: int | None = None,
        stream: TextIO | None = None,
        *,
        streaming: bool = False,
    ) -> None:
        self.what = what
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.shown = 0
        self.done = 0
        self.started = time.monotonic()
        self._last = 0.0
        self._lock = threading.Lock()
        self.enabled = _terminal(self.stream) and not (streaming and _terminal(sys.stdout))
        self._timer: threading.Timer | None = None
        if self.enabled:
            self._timer = threading.Timer(QUIET_FOR, self._draw)
            self._timer.daemon = True
            self._timer.start()

    def advance(self, done: int) -> None:
        """`done` items of the total are finished."""
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started >= QUIET_FOR and now - self._last >= _EVERY:
            self._draw()

    def _draw(self) -> None:
        with self._lock:
            if not self.enabled:
                return
            count = f" {self.done}/{self.total}" if self.total is not None else ""
            line = f"{self.what}...{count}"
            self.stream.write("\r" + line.ljust(self.shown))
            self.stream.flush()
            self.shown = max(self.shown, len(line))
            self._last = time.monotonic()

    def close(self) -> None:
        """Erase the line (if one was drawn) and draw no more."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self.enabled and self.shown:
                self.stream.write("\r" + " " * self.shown + "\r")
                self.stream.flush()
            self.enabled = False


def _terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


@contextmanager
def progress(what: str, total: int | None = None, *, streaming: bool = False) -> Iterator[Progress]:
    """A :class:`Progress` for the work inside the block, erased when it ends; with
    `streaming` (the block prints as it goes), none when stdout is the terminal too."""
    line = Progress(what, total, streaming=streaming)
    try:
        yield line
    finally:
        line.close()
