"""Commits of the branch grouped by local day, for the history/ folder.

Built on first use and extended incrementally when the branch moves forward
(only the new commits are walked); rebuilt only if the branch was rewritten.
Names are `HH-MM-SS-<first 10 hex of the sha>` in local time, committer time.
"""

from __future__ import annotations

import bisect
import threading
import time
from typing import Callable, Optional

import pygit2

SHA_LENGTH = 10
MIN_PREFIX = 7  # the shortest abbreviation of a commit id that history/ resolves (as git's default)


def day_and_name(oid_hex: str, timestamp: int) -> tuple[str, str]:
    local = time.localtime(timestamp)
    return time.strftime("%Y-%m-%d", local), time.strftime("%H-%M-%S-", local) + oid_hex[:SHA_LENGTH]


class CommitDays:
    """Thread-safe: every public method takes the lock and checks the branch tip first."""

    def __init__(self, tip: Callable[[], Optional[pygit2.Oid]],
                 walk: Callable[[pygit2.Oid, Optional[pygit2.Oid]], object],
                 is_ancestor: Callable[[pygit2.Oid, pygit2.Oid], bool],
                 moves: Optional[Callable[[], int]] = None):
        self._tip = tip
        self._walk = walk
        self._is_ancestor = is_ancestor
        # Without `moves`, the tip is read at every call; with it, only after a move
        # (reading the ref costs more than the rest of a history/ lookup).
        self._moves = moves
        self._indexed_moves: Optional[int] = None
        self._lock = threading.Lock()
        self._indexed_tip: Optional[pygit2.Oid] = None
        # day -> [(time, name, oid)], oldest first. No second index by name: a day holds a
        # few commits, and one entry per commit keeps a history of 170,000 commits small.
        self._days: dict[str, list[tuple[int, str, pygit2.Oid]]] = {}
        self._sorted: Optional[list[str]] = None  # days newest first; None once the index changes
        # full hex sha -> (day, name), built by the first by_prefix: listing and walking
        # history/ never ask, and it was the biggest part of the index (~3 MB for 17,000 commits).
        self._by_sha: Optional[dict[str, tuple[str, str]]] = None
        self._shas: Optional[list[str]] = None  # the keys of _by_sha, sorted; None once the index changes

    def days(self) -> list[str]:
        """Days with commits, newest first."""
        with self._lock:
            self._refresh()
            return list(self._newest_first())

    def spans(self) -> list[tuple[str, tuple[int, int]]]:
        """(day, (first, last) commit time) of every day, newest first."""
        with self._lock:
            self._refresh()
            return [(day, (self._days[day][0][0], self._days[day][-1][0])) for day in self._newest_first()]

    def newest_time(self) -> Optional[int]:
        """Commit time of the newest commit (by day, then time), or None without commits."""
        with self._lock:
            self._refresh()
            days = self._newest_first()
            return self._days[days[0]][-1][0] if days else None

    def entries(self, day: str) -> Optional[list[tuple[str, int]]]:
        """(name, commit time) of a day's commits, oldest first; None for a day without commits."""
        with self._lock:
            self._refresh()
            entries = self._days.get(day)
            return None if entries is None else [(name, timestamp) for timestamp, name, _oid in entries]

    def _newest_first(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self._days, reverse=True)
        return self._sorted

    def names(self, day: str) -> Optional[list[str]]:
        """Commit folder names of a day, oldest first; None for a day without commits."""
        with self._lock:
            self._refresh()
            entries = self._days.get(day)
            return None if entries is None else [name for _time, name, _oid in entries]

    def span(self, day: str) -> Optional[tuple[int, int]]:
        """(first, last) commit time of a day."""
        with self._lock:
            self._refresh()
            entries = self._days.get(day)
            return None if not entries else (entries[0][0], entries[-1][0])

    def commit(self, day: str, name: str) -> Optional[tuple[pygit2.Oid, int]]:
        """(oid, commit time) of the commit listed as day/name, or None."""
        with self._lock:
            self._refresh()
            for timestamp, entry_name, oid in self._days.get(day, ()):
                if entry_name == name:
                    return oid, timestamp
            return None

    def by_prefix(self, prefix: str) -> Optional[tuple[str, str]]:
        """(day, name) of the one commit of the branch whose hex id starts with prefix
        (at least MIN_PREFIX lowercase hex digits); None if none or several do."""
        if len(prefix) < MIN_PREFIX:
            return None
        with self._lock:
            self._refresh()
            by_sha = self._by_sha
            if by_sha is None:
                by_sha = self._by_sha = {}
                for day, entries in self._days.items():
                    _index_shas(by_sha, day, entries)
            if self._shas is None:
                self._shas = sorted(by_sha)
            start = bisect.bisect_left(self._shas, prefix)
            found = [sha for sha in self._shas[start:start + 2] if sha.startswith(prefix)]
            return by_sha[found[0]] if len(found) == 1 else None

    def _refresh(self) -> None:
        moves = self._moves() if self._moves is not None else None
        if moves is not None and moves == self._indexed_moves:
            return
        tip = self._tip()
        self._indexed_moves = moves  # read before the tip: a move after it is seen next time
        if tip == self._indexed_tip:
            return
        self._sorted = None
        self._shas = None
        if self._indexed_tip is None or tip is None or not self._is_ancestor(self._indexed_tip, tip):
            self._days, self._by_sha = {}, None
            hide = None
        else:
            hide = self._indexed_tip
        if tip is not None:
            self._add(self._walk(tip, hide))
        self._indexed_tip = tip

    def _add(self, commits) -> None:
        new: dict[str, list[tuple[int, str, pygit2.Oid]]] = {}
        for oid, timestamp in commits:  # newest first
            day, name = day_and_name(str(oid), timestamp)
            new.setdefault(day, []).append((timestamp, name, oid))
        for day, entries in new.items():
            entries.reverse()
            if self._by_sha is not None:
                _index_shas(self._by_sha, day, entries)
            merged = self._days.get(day, []) + entries
            merged.sort(key=lambda entry: entry[0])  # stable: same-second commits keep walk order
            self._days[day] = merged


def _index_shas(by_sha: dict[str, tuple[str, str]], day: str, entries: list[tuple[int, str, pygit2.Oid]]) -> None:
    for _time, name, oid in entries:
        by_sha[str(oid)] = (day, name)
