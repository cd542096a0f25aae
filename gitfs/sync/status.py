"""SyncStatus: what the workers last did, for the user (MOUNTPOINT/.gitfs/status).

Workers report into it; the status view renders it as JSON. Thread-safe.
Users of the original could not tell that pushes were failing; this says so.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Optional


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class SyncStatus:
    MAX_CONFLICTS = 50

    def __init__(self, *, remote: str, branch: str, pending: Callable[[], dict]):
        self._lock = threading.Lock()
        self._pending = pending
        self._state: dict[str, Any] = {
            "remote": remote, "branch": branch,
            "last_fetch": None, "last_push": None, "last_error": None, "conflicts": [],
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

    def conflicts(self, paths: list[str], remote_commit) -> None:
        """Accept-mine kept the local version of paths; remote_commit's version lost."""
        with self._lock:
            entries = self._state["conflicts"]
            entries.extend({"time": _now(), "path": path, "remote_commit": str(remote_commit)} for path in paths)
            del entries[:-self.MAX_CONFLICTS]

    def snapshot(self) -> dict:
        with self._lock:
            state = json.loads(json.dumps(self._state))
        state["pending"] = self._pending()
        return state

    def render(self) -> bytes:
        return (json.dumps(self.snapshot(), indent=2, sort_keys=True) + "\n").encode()
