"""Commits of the branch grouped by local day, for the history/ folder.

Built on first use and extended incrementally when the branch moves forward
(only the new commits are walked); rebuilt only if the branch was rewritten.
Names are `HH-MM-SS-<first 10 hex of the sha>` in local time, committer time.

Compact: a day keeps its commits as flat buffers, the times (8 bytes each), the
raw ids (20 bytes each) and the folder names in one string (20 bytes each), not a
Python object per commit: about 50 MB for a history of a million commits.
"""

from __future__ import annotations

import bisect
import threading
import time
from array import array
from collections.abc import Iterable
from typing import Callable, Optional

import pygit2

SHA_LENGTH = 10
MIN_PREFIX = 7  # the shortest abbreviation of a commit id that history/ resolves (as git's default)
ID_BYTES = 20  # a raw SHA-1 commit id
TWO_DIGITS = [f"{number:02d}" for number in range(60)]


def day_and_name(oid_hex: str, timestamp: int) -> tuple[str, str]:
    local = time.localtime(timestamp)
    return time.strftime("%Y-%m-%d", local), time.strftime("%H-%M-%S-", local) + oid_hex[:SHA_LENGTH]


def _name(raw_id: bytes, timestamp: int) -> str:
    return time.strftime("%H-%M-%S-", time.localtime(timestamp)) + raw_id[:SHA_LENGTH // 2].hex()


class Day:
    """One day's commits, oldest first (same-second commits in walk order, parents first).
    Grows in place (merged): only under CommitDays' lock, which every reader takes."""

    __slots__ = ("times", "ids", "_names")

    def __init__(self, times: array, ids: bytes):
        self.times = times  # array("q"): committer times
        self.ids = bytearray(ids)  # raw ids, ID_BYTES each, in the same order
        # The folder names joined by "/" (which no name holds), ASCII: 20 bytes a commit,
        # and a listing splits them in C instead of formatting each time again.
        self._names = bytearray("/".join(_folder_names(times, ids)).encode())

    def __len__(self) -> int:
        return len(self.times)

    def raw_id(self, index: int) -> bytes:
        return bytes(self.ids[index * ID_BYTES:(index + 1) * ID_BYTES])

    def names(self) -> list[str]:
        return self._names.decode().split("/") if self._names else []

    def merged(self, commits: list[tuple[int, bytes]]) -> Day:
        """This day with more (time, raw id) commits, oldest first; a stable sort by time
        keeps same-second commits in the order they came.

        The usual case, commits no older than the day's newest (a branch moving forward a
        commit at a time, all day long), extends the day's buffers in place: neither a
        Python object per commit the day had nor its names formatted again. Sorting them all
        made every move of the branch cost in proportion to the day: at a commit a second,
        up to 86,400 pairs of Python objects made and dropped each second. In place, the
        buffers grow by steps (realloc) instead of being copied whole at every move into a
        block a little bigger than the one freed, which left the heap growing around them."""
        if not commits:
            return self
        commits = sorted(commits, key=lambda pair: pair[0])
        if self.times and commits[0][0] < self.times[-1]:
            pairs = [(when, self.raw_id(index)) for index, when in enumerate(self.times)] + commits
            pairs.sort(key=lambda pair: pair[0])
            return Day(array("q", [when for when, _raw in pairs]), b"".join(raw for _when, raw in pairs))
        first = len(self.times)
        self.times.extend(when for when, _raw in commits)
        self.ids += b"".join(raw for _when, raw in commits)
        added = "/".join(_folder_names(self.times, self.ids, first=first)).encode()
        self._names += b"/" + added if self._names else added
        return self


def _folder_names(times: array, ids: bytes | bytearray, first: int = 0) -> list[str]:
    """The folder names of a day's commits (times, raw ids) from index `first` on."""
    hexes = ids[first * ID_BYTES:].hex()
    starts = range(0, len(hexes), 2 * ID_BYTES)
    midnight = day_start(times[0]) if times else None
    if midnight is None:  # a day with a change of UTC offset: local time of each
        return [time.strftime("%H-%M-%S-", time.localtime(when)) + hexes[at:at + SHA_LENGTH]
                for when, at in zip(times[first:], starts)]
    two = TWO_DIGITS
    return [f"{two[(when - midnight) // 3600]}-{two[(when - midnight) // 60 % 60]}-{two[(when - midnight) % 60]}-"
            f"{hexes[at:at + SHA_LENGTH]}" for when, at in zip(times[first:], starts)]


class CommitDays:
    """Thread-safe: every public method takes the lock and checks the branch tip first."""

    def __init__(self, tip: Callable[[], Optional[pygit2.Oid]],
                 walk: Callable[[pygit2.Oid, Optional[pygit2.Oid]], Iterable[tuple[pygit2.Oid, int]]],
                 is_ancestor: Callable[[pygit2.Oid, pygit2.Oid], bool],
                 moves: Optional[Callable[[], int]] = None,
                 indexed: Optional[Callable[[], None]] = None):
        self._tip = tip
        self._walk = walk
        self._is_ancestor = is_ancestor
        # Without `moves`, the tip is read at every call; with it, only after a move
        # (reading the ref costs more than the rest of a history/ lookup).
        self._moves = moves
        self._indexed_moves: Optional[int] = None
        # Told after each walk: the walk's garbage can be given back (libgit2.release_free_memory).
        self._after_walk = indexed
        self._lock = threading.Lock()
        self._indexed_tip: Optional[pygit2.Oid] = None
        self._days: dict[str, Day] = {}
        self._sorted: Optional[list[str]] = None  # days newest first; None once the index changes
        # Every raw id sorted, with the day of each, built by the first by_prefix: listing and
        # walking history/ never ask. None once the index changes.
        self._by_id: Optional[tuple[bytes, list[str]]] = None

    def days(self) -> list[str]:
        """Days with commits, newest first."""
        with self._lock:
            self._refresh()
            return list(self._newest_first())

    def indexed_days(self) -> list[str]:
        """The days of the index as it is, without reading the branch (none before a first use)."""
        with self._lock:
            return list(self._days)

    def spans(self) -> list[tuple[str, tuple[int, int]]]:
        """(day, (first, last) commit time) of every day, newest first."""
        with self._lock:
            self._refresh()
            return [(day, (self._days[day].times[0], self._days[day].times[-1])) for day in self._newest_first()]

    def newest_time(self) -> Optional[int]:
        """Commit time of the newest commit (by day, then time), or None without commits."""
        with self._lock:
            self._refresh()
            days = self._newest_first()
            return self._days[days[0]].times[-1] if days else None

    def entries(self, day: str) -> Optional[list[tuple[str, int]]]:
        """(name, commit time) of a day's commits, oldest first; None for a day without commits."""
        with self._lock:
            self._refresh()
            found = self._days.get(day)
            return None if found is None else list(zip(found.names(), found.times))

    def _newest_first(self) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self._days, reverse=True)
        return self._sorted

    def names(self, day: str) -> Optional[list[str]]:
        """Commit folder names of a day, oldest first; None for a day without commits."""
        with self._lock:
            self._refresh()
            found = self._days.get(day)
            return None if found is None else found.names()

    def span(self, day: str) -> Optional[tuple[int, int]]:
        """(first, last) commit time of a day."""
        with self._lock:
            self._refresh()
            found = self._days.get(day)
            return None if not found else (found.times[0], found.times[-1])

    def commit(self, day: str, name: str) -> Optional[tuple[pygit2.Oid, int]]:
        """(oid, commit time) of the commit listed as day/name, or None."""
        with self._lock:
            self._refresh()
            found = self._days.get(day)
            if found is None:
                return None
            try:
                index = found.names().index(name)  # the names kept, not one formatted per commit
            except ValueError:
                return None
            return pygit2.Oid(raw=found.raw_id(index)), found.times[index]

    def by_prefix(self, prefix: str) -> Optional[tuple[str, str]]:
        """(day, name) of the one commit of the branch whose hex id starts with prefix
        (at least MIN_PREFIX lowercase hex digits); None if none or several do."""
        if len(prefix) < MIN_PREFIX:
            return None
        with self._lock:
            self._refresh()
            if self._by_id is None:
                self._by_id = self._sorted_ids()
            ids, days = self._by_id
            try:
                low = bytes.fromhex(prefix + "0" * (len(prefix) % 2))  # the smallest id with that prefix
            except ValueError:
                return None
            start = bisect.bisect_left(_IdList(ids), low)
            found = [index for index in range(start, min(start + 2, len(days)))
                     if ids[index * ID_BYTES:(index + 1) * ID_BYTES].hex().startswith(prefix)]
            if len(found) != 1:
                return None
            day = days[found[0]]
            raw = ids[found[0] * ID_BYTES:(found[0] + 1) * ID_BYTES]
            entries = self._days[day]
            for index, when in enumerate(entries.times):
                if entries.raw_id(index) == raw:
                    return day, _name(raw, when)
            return None

    def _sorted_ids(self) -> tuple[bytes, list[str]]:
        pairs = sorted((day_entries.raw_id(index), day) for day, day_entries in self._days.items()
                       for index in range(len(day_entries)))
        return b"".join(raw for raw, _day in pairs), [day for _raw, day in pairs]

    def _refresh(self) -> None:
        moves = self._moves() if self._moves is not None else None
        if moves is not None and moves == self._indexed_moves:
            return
        tip = self._tip()
        self._indexed_moves = moves  # read before the tip: a move after it is seen next time
        if tip == self._indexed_tip:
            return
        self._sorted = None
        self._by_id = None
        if self._indexed_tip is None or tip is None or not self._is_ancestor(self._indexed_tip, tip):
            self._days = {}
            hide = None
        else:
            hide = self._indexed_tip
        if tip is not None:
            self._add(self._walk(tip, hide))
            if self._after_walk is not None:
                self._after_walk()
        self._indexed_tip = tip

    def _add(self, commits: Iterable[tuple[pygit2.Oid, int]]) -> None:
        """Index walked commits (newest first). The walk goes into three flat buffers (its
        times, its raw ids, where each run of one day starts), with no Python object kept
        per commit or per day until it ends: what the walk leaves behind is freed at once,
        not pinned by the day objects between it (they would fragment the daemon's heap)."""
        times, ids, run_starts = array("q"), bytearray(), array("q")
        low = high = 0  # [low, high): the local day of the run being walked
        for oid, timestamp in commits:
            if not low <= timestamp < high:
                run_starts.append(len(times))
                low, high = _day_bounds(timestamp)
            times.append(timestamp)
            ids += oid.raw
        run_starts.append(len(times))
        runs: dict[str, list[tuple[int, int]]] = {}
        for start, end in zip(run_starts, run_starts[1:]):
            runs.setdefault(_day(times[start]), []).append((start, end))
        for day, day_runs in runs.items():
            self._days[day] = _merge_runs(self._days.get(day), times, ids, day_runs)


def _merge_runs(known: Optional[Day], times: array, ids: bytearray, runs: list[tuple[int, int]]) -> Day:
    """A day from the commits it had and runs [start, end) of the walk's buffers (each run
    newest first, as walked)."""
    if known is None and len(runs) == 1:
        start, end = runs[0]
        day_times = times[start:end]
        day_times.reverse()
        oldest_first = b"".join(ids[at * ID_BYTES:(at + 1) * ID_BYTES] for at in range(end - 1, start - 1, -1))
        if all(day_times[index] <= day_times[index + 1] for index in range(len(day_times) - 1)):
            return Day(day_times, oldest_first)  # the usual case: already in time order
        return Day(array("q"), b"").merged(list(zip(day_times, _split(oldest_first))))
    commits: list[tuple[int, bytes]] = []
    for start, end in reversed(runs):  # the oldest run first
        commits += [(times[at], bytes(ids[at * ID_BYTES:(at + 1) * ID_BYTES])) for at in range(end - 1, start - 1, -1)]
    return (known or Day(array("q"), b"")).merged(commits)


def _split(ids: bytes) -> list[bytes]:
    return [ids[index:index + ID_BYTES] for index in range(0, len(ids), ID_BYTES)]


def day_start(timestamp: int) -> Optional[int]:
    """The start of timestamp's local day, if that day has one UTC offset throughout (else None)."""
    local = time.localtime(timestamp)
    start = timestamp - (local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec)
    offset = local.tm_gmtoff
    if time.localtime(start).tm_gmtoff != offset or time.localtime(start + 86399).tm_gmtoff != offset:
        return None
    return start


def _day(timestamp: int) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(timestamp))


def _day_bounds(timestamp: int) -> tuple[int, int]:
    """[start, end) of timestamp's local day; of the second alone on a day whose UTC
    offset changes (no shortcut there)."""
    start = day_start(timestamp)
    return (start, start + 86400) if start is not None else (timestamp, timestamp + 1)


class _IdList:
    """The raw ids in one bytes object, seen as a sorted sequence for bisect."""

    def __init__(self, ids: bytes):
        self._ids = ids

    def __len__(self) -> int:
        return len(self._ids) // ID_BYTES

    def __getitem__(self, index: int) -> bytes:
        return self._ids[index * ID_BYTES:(index + 1) * ID_BYTES]
