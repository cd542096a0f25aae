"""SyncStatus: what the workers last did, for the user (MOUNTPOINT/.gitfs/status).

Workers report into it; the status view renders it as JSON. Thread-safe.
Users of the original could not tell that pushes were failing; this says so.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Optional

from gitfs.repo.conflicts import ConflictLog

CONFLICTS_FOLDER = ".gitfs/conflicts"  # relative to the mount point


def _now(timestamp: Optional[float] = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(timestamp))


class SyncStatus:
    MAX_CONFLICTS = 50
    MAX_LFS_MISSING = 50

    def __init__(self, *, remote: str, branch: str, pending: Callable[[], dict]):
        self._lock = threading.Lock()
        self._pending = pending
        self._state: dict[str, Any] = {
            "remote": remote, "branch": branch,
            "last_fetch": None, "last_push": None, "last_error": None, "conflicts": [],
            "lfs_missing": [],
        }

    def _record(self, key: str, ok: bool, error: Optional[str] = None) -> None:
        with self._lock:
            self._state[key] = {"time": _now(), "result": "ok" if ok else "failed", "error": error}
            if error:
                self._state["last_error"] = {"time": _now(), "message": error}

    def fetch_ok(self) -> None:
        self._record("last_fetch", True)

    def fetch_failed(self, error: str) -> None:
        self._record("last_fetch", False, error)

    def push_ok(self) -> None:
        self._record("last_push", True)

    def push_failed(self, error: str) -> None:
        self._record("last_push", False, error)

    def conflicts(self, paths: list[str], remote_commit, *, files: Optional[dict[str, str]] = None,
                  timestamp: Optional[float] = None) -> None:
        """Accept-mine kept the local version of paths; remote_commit's version lost.
        files: where the lost versions can be read, by path (relative to the mount point)."""
        files = files or {}
        with self._lock:
            entries = self._state["conflicts"]
            entries.extend({"time": _now(timestamp), "path": path, "remote_commit": str(remote_commit),
                            "file": files.get(path)} for path in paths)
            del entries[:-self.MAX_CONFLICTS]

    def lfs_missing(self, path: str, oid: str, why: str) -> None:
        """A Git LFS object that cannot be had: its file reads as an error (gitfs/lfs)."""
        with self._lock:
            entries = self._state["lfs_missing"]
            entries.append({"time": _now(), "path": path, "oid": oid, "error": why})
            del entries[:-self.MAX_LFS_MISSING]

    def snapshot(self) -> dict:
        with self._lock:
            state = json.loads(json.dumps(self._state))
        state["pending"] = self._pending()
        return state

    def render(self) -> bytes:
        return (json.dumps(self.snapshot(), indent=2, sort_keys=True) + "\n").encode()


class ConflictRecorder:
    """What the sync cycle reports conflicts to: the lost versions go to the clone's
    ConflictLog (served under .gitfs/conflicts/), and the status file names them."""

    def __init__(self, log: ConflictLog, status: SyncStatus):
        self.log = log
        self.status = status
        for entry in log.entries()[-SyncStatus.MAX_CONFLICTS:]:  # earlier mounts' conflicts, still kept
            status.conflicts([entry.path], entry.remote_commit, files={entry.path: _file(entry.folder, entry.path)},
                             timestamp=entry.timestamp)

    def conflicts(self, paths: list[str], remote_commit) -> None:
        folder, timestamp, kept = self.log.record(paths, remote_commit)
        self.status.conflicts(paths, remote_commit, files={path: _file(folder, path) for path in kept},
                              timestamp=timestamp)


def _file(folder: str, path: str) -> str:
    return f"{CONFLICTS_FOLDER}/{folder}/{path}"
