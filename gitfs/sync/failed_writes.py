"""FailedWrites: files of current/ whose last write through the mount failed.

A copy that stops with EFBIG (max_size), ENOSPC, EDQUOT or EIO leaves the file on
disk with what was written so far; committing it would publish a truncated file that
looks whole to every colleague. So the file stays in current/ as it is, the sync
leaves it out of its commits, the status names it, and it is committed again once a
write to it succeeds (a program that retries and finishes) or it is removed.

CurrentView reports every write's outcome (`succeeded` is a dictionary lookup: it
runs at every write), SyncCycle asks for `paths()` before each commit, SyncStatus
lists `entries()`. The record is kept in the clone's git directory, so that a
remount does not commit what the last mount held back (it commits what a crash left
uncommitted). Thread-safe.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import threading
import time
from typing import Optional

log = logging.getLogger(__name__)

# What a write can fail with that leaves the file incomplete (EBUSY, EINTR... write nothing).
INCOMPLETE = frozenset({errno.EFBIG, errno.ENOSPC, errno.EDQUOT, errno.EIO})


def _key(path: str) -> str:
    return path.strip("/")


class FailedWrites:
    def __init__(self, record: Optional[str] = None):
        self._record = record  # the JSON file that keeps them across mounts, if any
        self._lock = threading.Lock()
        self._failed: dict[str, dict] = self._load()  # path -> {"path", "error", "time"}

    def _load(self) -> dict[str, dict]:
        if self._record is None:
            return {}
        try:
            with open(self._record, encoding="utf-8") as handle:
                entries = json.load(handle)
            return {entry["path"]: entry for entry in entries if isinstance(entry, dict) and "path" in entry}
        except (OSError, ValueError, TypeError):
            return {}

    def _save(self) -> None:
        """Under the lock; a record that cannot be written only costs the next mount the list."""
        if self._record is None:
            return
        temporary = f"{self._record}.tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(list(self._failed.values()), handle)
            os.replace(temporary, self._record)
        except OSError as error:
            log.warning("cannot record the files whose last write failed in %s: %s", self._record, error.strerror)

    # -- reports from current/ ------------------------------------------------------

    def failed(self, path: str, code: int) -> None:
        """A write, truncate or allocation of path failed with errno `code`."""
        if code not in INCOMPLETE:
            return
        key = _key(path)
        entry = {"path": key, "error": os.strerror(code), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        with self._lock:
            if key not in self._failed:
                log.warning("/%s: a write failed (%s); the file is not committed until a write to it "
                            "succeeds or it is removed", key, entry["error"])
            self._failed[key] = entry
            self._save()

    def succeeded(self, path: str) -> None:
        """A write to path succeeded: the file is whatever the program makes of it now."""
        if not self._failed:  # every write comes here: no lock while nothing failed
            return
        self.removed(path)

    def removed(self, path: str) -> None:
        key = _key(path)
        with self._lock:
            if self._failed.pop(key, None) is not None:
                self._save()

    def renamed(self, old: str, new: str) -> None:
        """The failed file (or a folder holding some) has a new name."""
        if not self._failed:
            return
        old_key, new_key = _key(old), _key(new)
        with self._lock:
            replaced = self._failed.pop(new_key, None) is not None  # renamed over: that file is gone
            moved = {path: entry for path, entry in self._failed.items()
                     if path == old_key or path.startswith(old_key + "/")}
            for path, entry in moved.items():
                del self._failed[path]
                renamed = new_key + path[len(old_key):]
                self._failed[renamed] = {**entry, "path": renamed}
            if replaced or moved:
                self._save()

    # -- for the sync and the status ---------------------------------------------------

    def paths(self) -> set[str]:
        with self._lock:
            return set(self._failed)

    def entries(self) -> list[dict]:
        with self._lock:
            return [dict(entry) for entry in self._failed.values()]


def record_in(git_dir: str) -> str:
    """Where a clone keeps its list: git_dir/gitfs/, beside GitFS's record of conflicts."""
    folder = os.path.join(git_dir, "gitfs")
    with contextlib.suppress(OSError):
        os.makedirs(folder, mode=0o700, exist_ok=True)
    return os.path.join(folder, "failed-writes.json")
