"""FailedWrites: files of current/ whose last write through the mount failed.

A copy that stops with EFBIG (max_size), ENOSPC, EDQUOT or EIO leaves the file on
disk with what was written so far; committing it would publish a truncated file that
looks whole to every colleague. So the file stays in current/ as it is, the sync
leaves it out of its commits (every name of it: cycle.py puts its index entries back
as the branch holds them), the status names it, and it is committed again once it is
written whole or it is removed.

Written whole means: truncated to zero (open with O_TRUNC, truncate(0): what it holds
from then on is what the program writes, and a write that fails marks it again),
replaced by a rename onto its name, or every byte range a failed write missed written
since by a write that succeeded. Writes may finish out of order (Samba's
asynchronous writes, multi-threaded copiers): a write below or beyond a missed range
leaves it missed. An error only fsync or close reports (delayed allocation) marks the
whole file: it is written whole only by a rewrite.

CurrentView reports every write's outcome (`written` is a dictionary lookup while
nothing failed: it runs at every write), SyncCycle asks for `paths()` before each
commit, SyncStatus lists `entries()`. Thread-safe.

The record (the clone's git directory, so that a remount does not commit what the last
mount held back) lives on the clone's disk, the disk that is full when ENOSPC was the
failure. The rule: a record that cannot vouch for the working tree never means
"nothing failed".
- It is written to a temporary file, fsync'ed and renamed over the old one: a crash
  leaves the old or the new list, never a torn one.
- A write of it that fails leaves the list in memory, retried at each change and each
  commit, and the status says the record is not saved. The record on disk is emptied
  meanwhile (truncation needs no free space), so that a mount that starts before it is
  saved finds it unreadable.
- A record that exists but cannot be read or parsed (emptied as above, damaged) holds
  back, at the mount's first commit, every file of the working tree that differs from
  the branch, but those written whole since the mount began: each is committed once
  written whole. A record that does not exist is a clone where nothing failed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Optional

from gitfs.repo import private_dirs

log = logging.getLogger(__name__)

# What a write can fail with that leaves the file incomplete (EBUSY, EINTR... write nothing).
INCOMPLETE = frozenset({errno.EFBIG, errno.ENOSPC, errno.EDQUOT, errno.EIO})
MOST_RANGES = 64  # missed ranges kept per file; more are merged into one that covers them
UNREADABLE_RECORD = "unknown: the record of failed writes could not be read"


def _key(path: str) -> str:
    return path.strip("/")


def _add(ranges: list[list[int]], start: int, end: int) -> list[list[int]]:
    """The sorted, disjoint ranges with [start, end) added."""
    merged: list[list[int]] = []
    for low, high in sorted([*ranges, [start, end]]):
        if merged and low <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    if len(merged) > MOST_RANGES:
        merged = [[merged[0][0], merged[-1][1]]]
    return merged


def _subtract(ranges: list[list[int]], start: int, end: int) -> list[list[int]]:
    """The ranges without [start, end)."""
    left = []
    for low, high in ranges:
        if low < start:
            left.append([low, min(high, start)])
        if high > end:
            left.append([max(low, end), high])
    return left


def _ranges(entry: dict) -> list[list[int]]:
    """The missed ranges of a loaded entry; the whole file where they are not known."""
    ranges = entry.get("missing")
    if isinstance(ranges, list) and ranges and all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(n, int) for n in pair) and pair[0] < pair[1]
            for pair in ranges):
        return ranges
    return [[0, 1 << 63]]


class FailedWrites:
    def __init__(self, record: Optional[str] = None):
        self._record = record  # the JSON file that keeps them across mounts, if any
        self._lock = threading.Lock()
        self._unsaved: Optional[str] = None  # why the record on disk is behind the list, if it is
        self._unreadable = False  # the record at mount could not be read: recover() holds back
        self._whole_since_load: set[str] = set()  # written whole before recover() ran
        self._failed: dict[str, dict] = self._load()  # path -> {"path", "error", "time", "missing"}

    def _load(self) -> dict[str, dict]:
        if self._record is None:
            return {}
        try:
            with open(self._record, encoding="utf-8") as handle:
                entries = json.load(handle)
            if not isinstance(entries, list):
                raise ValueError("not a list")
            return {entry["path"]: {"path": entry["path"], "error": str(entry.get("error", "unknown")),
                                    "time": str(entry.get("time", "")), "missing": _ranges(entry)}
                    for entry in entries if isinstance(entry, dict) and isinstance(entry.get("path"), str)}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError) as error:
            log.warning("the record of the files whose last write failed (%s) cannot be read (%s); every file "
                        "that differs from the branch is held back until written again", self._record, error)
            self._unreadable = True
            return {}

    def _save(self) -> None:
        """Under the lock. A record that cannot be written is emptied and retried (module docstring)."""
        if self._record is None:
            return
        temporary = f"{self._record}.tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(list(self._failed.values()), handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self._record)
            folder = os.open(os.path.dirname(self._record), os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(folder)
            finally:
                os.close(folder)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            with contextlib.suppress(OSError):  # unreadable from now on: truncation needs no space
                os.close(os.open(self._record, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
            if self._unsaved is None:
                log.warning("cannot record the files whose last write failed in %s (%s); kept in memory and "
                            "tried again at each change", self._record, error.strerror)
            self._unsaved = error.strerror or str(error)
            return
        if self._unsaved is not None:
            log.info("the files whose last write failed are recorded again in %s", self._record)
        self._unsaved = None

    # -- reports from current/ ------------------------------------------------------

    def failed(self, path: str, code: int, start: int = 0, end: int = 1 << 63) -> None:
        """A write, truncate, allocation or sync of path failed with errno `code`; bytes
        [start, end) may be missing (unknown: the whole file)."""
        if code not in INCOMPLETE:
            return
        key = _key(path)
        with self._lock:
            entry = self._failed.get(key)
            if entry is None:
                log.warning("/%s: a write failed (%s); the file is not committed until it is written whole "
                            "or removed", key, os.strerror(code))
                entry = {"path": key, "missing": []}
            entry.update(error=os.strerror(code), time=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                         missing=_add(entry["missing"], start, max(end, start + 1)))
            self._failed[key] = entry
            self._whole_since_load.discard(key)
            self._save()

    def written(self, path: str, start: int, end: int) -> None:
        """Bytes [start, end) of path were written: the ranges they cover are no longer missed."""
        if not self._failed:  # every write comes here: no lock while nothing failed
            return
        key = _key(path)
        with self._lock:
            entry = self._failed.get(key)
            if entry is None:
                return
            entry["missing"] = _subtract(entry["missing"], start, end)
            if not entry["missing"]:
                del self._failed[key]
                self._save()

    def truncated(self, path: str, length: int) -> None:
        """path was truncated (or created) to `length` bytes: at zero, it is written anew."""
        if length == 0:
            self._written_anew(path)

    def removed(self, path: str) -> None:
        key = _key(path)
        with self._lock:
            if self._unreadable:
                self._whole_since_load.add(key)
            if self._failed.pop(key, None) is not None:
                self._save()

    def _written_anew(self, path: str) -> None:
        if not self._failed and not self._unreadable:
            return
        self.removed(path)

    def renamed(self, old: str, new: str) -> None:
        """The failed file (or a folder holding some) has a new name; a file renamed over is gone."""
        old_key, new_key = _key(old), _key(new)
        with self._lock:
            if self._unreadable:
                self._whole_since_load.add(new_key)
            if not self._failed:
                return
            replaced = self._failed.pop(new_key, None) is not None
            moved = {path: entry for path, entry in self._failed.items()
                     if path == old_key or path.startswith(old_key + "/")}
            for path, entry in moved.items():
                del self._failed[path]
                renamed = new_key + path[len(old_key):]
                self._failed[renamed] = {**entry, "path": renamed}
            if replaced or moved:
                self._save()

    # -- for the sync and the status ---------------------------------------------------

    @property
    def unreadable(self) -> bool:
        """The record could not be read at mount, and recover() has not run yet."""
        return self._unreadable

    def recover(self, differing: Iterable[str], workdir: str) -> None:
        """The record was unreadable: hold back every regular file among the paths that
        differ from the branch, but those written whole since the mount began."""
        with self._lock:
            if not self._unreadable:
                return
            now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            for path in differing:
                key = _key(path)
                if key in self._whole_since_load or key in self._failed:
                    continue
                try:
                    if not os.path.isfile(os.path.join(workdir, key)) or os.path.islink(os.path.join(workdir, key)):
                        continue
                except OSError:
                    continue
                self._failed[key] = {"path": key, "error": UNREADABLE_RECORD, "time": now, "missing": [[0, 1 << 63]]}
            self._unreadable = False
            self._whole_since_load.clear()
            self._save()

    def paths(self) -> set[str]:
        with self._lock:
            if self._unsaved is not None:
                self._save()  # the disk may have room again
            return set(self._failed)

    def entries(self) -> list[dict]:
        """For the status: path, error, time, and `record` when the list could not be saved."""
        with self._lock:
            shown = [{key: entry[key] for key in ("path", "error", "time")} for entry in self._failed.values()]
            if self._unsaved is not None:
                for entry in shown:
                    entry["record"] = f"not saved: {self._unsaved}"
            return shown


def record_in(git_dir: str) -> str:
    """Where a clone keeps its list: git_dir/gitfs/, beside GitFS's record of conflicts."""
    return os.path.join(private_dirs.state_folder(git_dir), "failed-writes.json")
