"""Metrics: counters and timings of one mount, for MOUNTPOINT/.gitfs/metrics.

The remote link reports fetches and pushes, the sync cycle commits and conflicts;
the metrics view renders them in Prometheus' text exposition format 0.0.4.
Thread-safe: every report and every render takes one lock, held for a few
additions (never for I/O). Counters start at zero with the mount.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from gitfs.sync.push_progress import PushProgress

RESULTS = ("ok", "failed")


class Timing:
    """count and sum of durations: a Prometheus summary without quantiles."""

    __slots__ = ("count", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds


class Metrics:
    def __init__(self, *, pending: Callable[[], dict], clock: Callable[[], float] = time.time,
                 committing: Callable[[], int] = lambda: 0, pushing: Optional[PushProgress] = None):
        self._pending = pending  # {"commits_not_pushed": n, "changes_not_committed": n}, as the status file
        self._committing = committing  # changes being staged and committed now
        self._pushing = pushing or PushProgress()  # the push in flight (its owner is the remote link)
        self._clock = clock
        self._lock = threading.Lock()
        self._commits = 0
        self._conflicts = 0
        self._results: dict[str, dict[str, int]] = {"fetch": dict.fromkeys(RESULTS, 0),
                                                    "push": dict.fromkeys(RESULTS, 0)}
        self._last_ok: dict[str, float] = {"fetch": 0.0, "push": 0.0}
        self._timings = {"commit": Timing(), "fetch": Timing(), "push": Timing()}
        self._lfs = {"download": [0, 0], "upload": [0, 0]}  # direction -> [objects, bytes]
        self._lfs_missing = 0
        self._push_refusals = 0

    # -- reports ------------------------------------------------------------------

    def commit(self, seconds: float) -> None:
        """GitFS made a commit of local changes, in `seconds` (staging included)."""
        with self._lock:
            self._commits += 1
            self._timings["commit"].add(seconds)

    def fetch(self, ok: bool, seconds: float) -> None:
        self._remote("fetch", ok, seconds)

    def push(self, ok: bool, seconds: float) -> None:
        """One push attempt; a push the remote refused (it moved meanwhile) counts as failed."""
        self._remote("push", ok, seconds)

    def push_refused(self) -> None:
        """The server said no to a push (a hook, a protected branch, a size limit)."""
        with self._lock:
            self._push_refusals += 1

    def _remote(self, action: str, ok: bool, seconds: float) -> None:
        with self._lock:
            self._results[action]["ok" if ok else "failed"] += 1
            self._timings[action].add(seconds)
            if ok:
                self._last_ok[action] = self._clock()

    def conflicts(self, count: int) -> None:
        """Files whose local version won over the remote's ("accept mine")."""
        with self._lock:
            self._conflicts += count

    def lfs_transfer(self, direction: str, objects: int, size: int) -> None:
        """Git LFS objects moved ("download" or "upload") and their bytes."""
        with self._lock:
            self._lfs[direction][0] += objects
            self._lfs[direction][1] += size

    def lfs_missing(self) -> None:
        """A Git LFS object that could not be had (its file reads as EIO)."""
        with self._lock:
            self._lfs_missing += 1

    # -- rendering --------------------------------------------------------------

    def render(self) -> bytes:
        committing, push = self._committing(), self._pushing.current()
        pushed_bytes = self._pushing.bytes_sent_total()
        pending = self._pending()
        with self._lock:
            lines: list[str] = []
            _family(lines, "gitfs_commits_total", "counter", "Commits GitFS made of local changes.",
                    [("", self._commits)])
            for action, plural in (("push", "pushes"), ("fetch", "fetches")):
                _family(lines, f"gitfs_{plural}_total", "counter",
                        f"{action.capitalize()} attempts, by result.",
                        [(f'{{result="{result}"}}', count) for result, count in self._results[action].items()])
            _family(lines, "gitfs_push_refusals_total", "counter",
                    "Pushes the server said no to (a hook, a protected branch, a size limit, read-only access); "
                    "counted in gitfs_pushes_total{result=\"failed\"} too.",
                    [("", self._push_refusals)])
            _family(lines, "gitfs_conflicts_total", "counter",
                    "Files both sides changed where the local version was kept (accept mine).",
                    [("", self._conflicts)])
            _family(lines, "gitfs_pending_commits", "gauge", "Local commits the remote does not have yet.",
                    [("", pending.get("commits_not_pushed", 0))])
            _family(lines, "gitfs_pending_changes", "gauge",
                    "Changed paths not committed yet (quiet period, or open for writing).",
                    [("", pending.get("changes_not_committed", 0))])
            _family(lines, "gitfs_changes_committing", "gauge",
                    "Changed paths being staged and committed now (counted in gitfs_pending_changes too).",
                    [("", committing)])
            _family(lines, "gitfs_push_in_progress", "gauge", "1 while a push is under way, else 0.",
                    [("", 1 if push else 0)])
            _family(lines, "gitfs_push_objects_sent", "gauge", "Objects the push under way has sent.",
                    [("", push["objects_sent"] if push else 0)])
            _family(lines, "gitfs_push_objects_to_send", "gauge",
                    "Objects the push under way sends; 0 while its pack is being built.",
                    [("", (push["objects_total"] or 0) if push else 0)])
            _family(lines, "gitfs_push_bytes_sent", "gauge", "Bytes the push under way has sent.",
                    [("", push["bytes_sent"] if push else 0)])
            _family(lines, "gitfs_pushed_bytes_total", "counter", "Bytes of packs sent by pushes.",
                    [("", pushed_bytes)])
            for action in ("push", "fetch"):
                _family(lines, f"gitfs_last_{action}_success_timestamp_seconds", "gauge",
                        f"Unix time of the last successful {action}; 0 before the first.",
                        [("", self._last_ok[action])])
            _family(lines, "gitfs_lfs_objects_total", "counter", "Git LFS objects moved, by direction.",
                    [(f'{{direction="{way}"}}', moved[0]) for way, moved in self._lfs.items()])
            _family(lines, "gitfs_lfs_bytes_total", "counter", "Bytes of Git LFS objects moved, by direction.",
                    [(f'{{direction="{way}"}}', moved[1]) for way, moved in self._lfs.items()])
            _family(lines, "gitfs_lfs_missing_objects_total", "counter",
                    "Git LFS objects that could not be had (their files read as errors).",
                    [("", self._lfs_missing)])
            for action in ("commit", "fetch", "push"):
                timing = self._timings[action]
                _family(lines, f"gitfs_{action}_duration_seconds", "summary",
                        f"Time each {action} took, in seconds.",
                        [("_count", timing.count), ("_sum", timing.total)])
        return ("\n".join(lines) + "\n").encode()


def _family(lines: list[str], name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
    """One metric family: HELP, TYPE, and its samples (a suffix or labels after the name)."""
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} {kind}")
    for suffix, value in samples:
        lines.append(f"{name}{suffix} {_number(value)}")


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))
