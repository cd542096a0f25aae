"""Progress of the first clone, for people: a line on a terminal, and the log.

The git core (repo/remote/transfer.py) only hands over figures (`Transfer`); this
reporter decides what to show. On a terminal stderr gets one updating line, as
`git clone` prints it (`\\r`, no newline until done); when stderr is not a
terminal nothing is printed. The log gets one info line per tenth of the objects.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Callable, Optional, TextIO

from gitfs.repo.remote.transfer import Transfer

log = logging.getLogger(__name__)

MIB = 1024 * 1024
REDRAW_SECONDS = 0.2  # a terminal line redrawn at most this often (and at every per cent)


def _mib(count: int) -> str:
    return f"{count / MIB:.2f} MiB"


class CloneProgress:
    """Callable with a Transfer; `finish()` once the clone returned (ends the terminal line)."""

    def __init__(self, what: str, stream: Optional[TextIO] = None, *,
                 clock: Callable[[], float] = time.monotonic):
        self._what = what
        self._stream = sys.stderr if stream is None else stream
        self._tty = _is_terminal(self._stream)
        self._clock = clock
        self._started = clock()
        self._logged_tenths = 0
        self._shown: Optional[tuple] = None  # (phase, per cent) last drawn
        self._drawn_at = 0.0
        self._line_open = False

    def __call__(self, transfer: Transfer) -> None:
        if transfer.total_objects <= 0:
            return
        percent = transfer.received_objects * 100 // transfer.total_objects
        self._log(transfer, percent)
        if self._tty:
            self._draw(transfer, percent)

    def _log(self, transfer: Transfer, percent: int) -> None:
        tenths = percent // 10
        if tenths > self._logged_tenths:
            self._logged_tenths = tenths
            if self._line_open and log.isEnabledFor(logging.INFO) and self._logs_to_stream():
                self.finish()  # the log line goes below the progress line, not into it
            log.info("clone of %s: %d%% of the objects received (%d/%d, %s)", self._what, tenths * 10,
                     transfer.received_objects, transfer.total_objects, _mib(transfer.received_bytes))

    def _draw(self, transfer: Transfer, percent: int) -> None:
        receiving = transfer.received_objects < transfer.total_objects or not transfer.total_deltas
        if receiving:
            phase, done, total = "Receiving objects", transfer.received_objects, transfer.total_objects
        else:
            phase, done, total = "Resolving deltas", transfer.indexed_deltas, transfer.total_deltas
        shown_percent = done * 100 // total if total else 100
        now = self._clock()
        if (phase, shown_percent) == self._shown and now - self._drawn_at < REDRAW_SECONDS:
            return
        if self._line_open and self._shown is not None and self._shown[0] != phase:
            self.finish()  # the finished phase keeps its line, as in git
        self._shown, self._drawn_at = (phase, shown_percent), now
        line = f"{phase}: {shown_percent:3d}% ({done}/{total})"
        if receiving:
            elapsed = max(now - self._started, 1e-6)
            line += f", {_mib(transfer.received_bytes)} | {_mib(int(transfer.received_bytes / elapsed))}/s"
        self._write(f"\r{line}\x1b[K")
        self._line_open = True

    def finish(self) -> None:
        if self._line_open:
            self._write("\n")
            self._line_open = False

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # the terminal went away: the clone goes on without it
            self._tty = False

    def _logs_to_stream(self) -> bool:
        return any(getattr(handler, "stream", None) is self._stream for handler in logging.getLogger().handlers)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
