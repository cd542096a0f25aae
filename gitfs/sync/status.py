"""SyncStatus: what the workers last did, for the user (MOUNTPOINT/.gitfs/status).

Workers report into it; the status view renders it as JSON. Thread-safe.
Users of the original could not tell that pushes were failing; this says so.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from typing import Any, Callable, Optional

from gitfs.repo.merging.conflicts import ConflictLog
from gitfs.repo.merging.rescue import Rescue

CONFLICTS_FOLDER = ".gitfs/conflicts"  # relative to the mount point


def _now(timestamp: Optional[float] = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(timestamp))


class SyncStatus:
    MAX_CONFLICTS = 50
    MAX_RESCUES = 50
    MAX_LFS_MISSING = 50

    def __init__(self, *, remote: str, branch: str, pending: Callable[[], dict], read_only: bool = False,
                 repo_path: Optional[str] = None, committing: Callable[[], int] = lambda: 0,
                 pushing: Callable[[], Optional[dict]] = lambda: None,
                 failed_writes: Callable[[], list[dict]] = list, writing: Callable[[], list[dict]] = list):
        self._lock = threading.Lock()
        self._pending = pending
        self._committing = committing  # changes being staged and committed now
        self._pushing = pushing  # the push in flight (PushProgress.current), or None
        self._failed_writes = failed_writes  # files left uncommitted: their last write failed
        self._writing = writing  # files being written: when their next commit is due
        self._state: dict[str, Any] = {
            "remote": remote, "branch": branch, "read_only": read_only, "repo_path": repo_path,
            "last_fetch": None, "last_push": None, "last_error": None, "conflicts": [], "rescues": [],
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

    def push_refused(self, error: str, *, reason: str, server_says: tuple[str, ...], commit: str,
                     denied: str = "") -> None:
        """The server said no to the push itself: its reason and its own words, the commit
        refused, and what it denies this mount if it refuses it every write (PushRefused.denied)."""
        with self._lock:
            self._state["last_push"] = {"time": _now(), "result": "refused", "error": error, "reason": reason,
                                        "server_says": list(server_says), "commit": commit,
                                        "writes_refused": bool(denied), "denied": denied}
            self._state["last_error"] = {"time": _now(), "message": error}

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

    def rescued(self, branch: str, saved, *, timestamp: Optional[float] = None) -> None:
        """The remote's branch was rewritten: the local history (tip `saved`) is kept on `branch` of the clone."""
        with self._lock:
            entries = self._state["rescues"]
            entries.append({"time": _now(timestamp), "branch": branch, "saved_commit": str(saved)})
            del entries[:-self.MAX_RESCUES]
    def lfs_missing(self, path: str, oid: str, why: str) -> None:
        """A Git LFS object that cannot be had: its file reads as an error (gitfs/lfs)."""
        with self._lock:
            entries = self._state["lfs_missing"]
            entries.append({"time": _now(), "path": path, "oid": oid, "error": why})
            del entries[:-self.MAX_LFS_MISSING]

    def lfs_found(self, oid: str) -> None:
        """A Git LFS object reported missing could be had after all: its entries go."""
        with self._lock:
            self._state["lfs_missing"] = [entry for entry in self._state["lfs_missing"] if entry["oid"] != oid]

    def snapshot(self) -> dict:
        with self._lock:
            state = json.loads(json.dumps(self._state))
        # What runs now, read before `pending`: a batch committed or a push ended
        # meanwhile is then counted there, never in neither.
        in_progress = {"committing": self._committing(), "pushing": self._pushing()}
        state["pending"] = self._pending()
        state["failed_writes"] = self._failed_writes()
        state["writing"] = self._writing()
        state["in_progress"] = in_progress
        return state

    def render(self) -> bytes:
        return (json.dumps(self.snapshot(), indent=2, sort_keys=True) + "\n").encode()


class ConflictRecorder:
    """What the sync cycle reports conflicts and rescues to: the lost versions go to the
    clone's ConflictLog (served under .gitfs/conflicts/), and the status file names them;
    a rescue branch is its own record in the clone, and the status file names it."""

    def __init__(self, log: ConflictLog, status: SyncStatus, rescues: Iterable[Rescue] = ()):
        self.log = log
        self.status = status
        for entry in log.entries()[-SyncStatus.MAX_CONFLICTS:]:  # earlier mounts' conflicts, still kept
            status.conflicts([entry.path], entry.remote_commit, files={entry.path: _file(entry.folder, entry.path)},
                             timestamp=entry.timestamp)
        for rescue in rescues:  # earlier mounts' rescue branches, still in the clone
            status.rescued(rescue.branch, rescue.saved, timestamp=rescue.timestamp)

    def rescued(self, branch: str, saved, *, timestamp: Optional[float] = None) -> None:
        self.status.rescued(branch, saved, timestamp=timestamp)

    def conflicts(self, paths: list[str], remote_commit) -> None:
        folder, timestamp, kept = self.log.record(paths, remote_commit)
        self.status.conflicts(paths, remote_commit, files={path: _file(folder, path) for path in kept},
                              timestamp=timestamp)


def _file(folder: str, path: str) -> str:
    return f"{CONFLICTS_FOLDER}/{folder}/{path}"
