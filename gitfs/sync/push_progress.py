"""PushProgress: the push in flight, if any, as libgit2 reports it; the one owner of it.

The remote link starts and ends each push and hands libgit2's transfer figures in; the
status file and the metrics read snapshots. libgit2 first builds the pack (no figures:
"preparing"), then sends it, reporting objects sent of objects to send and the bytes
sent so far; it never says how many bytes the pack will have. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Optional


class PushProgress:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: Optional[dict[str, Any]] = None
        self._bytes_sent_total = 0  # by every push of this mount that ended

    def started(self, commits: int) -> None:
        with self._lock:
            self._current = {"commits": commits, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                             "objects_sent": 0, "objects_total": None, "bytes_sent": 0}

    def sending(self, objects_sent: int, objects_total: int, bytes_sent: int) -> None:
        with self._lock:
            if self._current is not None:
                self._current.update(objects_sent=objects_sent, objects_total=objects_total, bytes_sent=bytes_sent)

    def ended(self) -> None:
        with self._lock:
            if self._current is not None:
                self._bytes_sent_total += self._current["bytes_sent"]
            self._current = None

    def current(self) -> Optional[dict[str, Any]]:
        """The push in flight ({"commits", "started", "objects_sent", "objects_total"
        (None while the pack is being built), "bytes_sent"}), or None."""
        with self._lock:
            return dict(self._current) if self._current is not None else None

    def bytes_sent_total(self) -> int:
        with self._lock:
            return self._bytes_sent_total + (self._current["bytes_sent"] if self._current else 0)
