"""FetchWorker: fetch every fetch_timeout seconds (idle_fetch_timeout when idle).

When the remote moved it wakes the sync worker, which brings the change into
current/ and history/. A FUSE call after an idle spell wakes it at once
(SyncState.touch sets wake_fetch).
"""

from __future__ import annotations

import logging
import threading

from gitfs.repo import remote as remote_ops
from gitfs.repo.errors import RemoteError
from gitfs.repo.repository import Repository
from gitfs.sync.state import SyncState

log = logging.getLogger(__name__)


class FetchWorker(threading.Thread):
    def __init__(self, repo: Repository, state: SyncState, *, credentials: remote_ops.Credentials,
                 fetch_timeout: float, idle_fetch_timeout: float, on_remote_moved, status=None):
        super().__init__(name="FetchWorker", daemon=True)
        self.repo = repo
        self.state = state
        self.credentials = credentials
        self.fetch_timeout = fetch_timeout
        self.idle_fetch_timeout = idle_fetch_timeout
        self.status = status
        self.on_remote_moved = on_remote_moved
        self._stopping = threading.Event()
        self._failing = False

    def stop(self, timeout: float) -> None:
        self._stopping.set()
        self.state.wake_fetch.set()
        self.join(timeout)
        if self.is_alive():
            log.warning("FetchWorker did not stop within %.0f s", timeout)

    def run(self) -> None:
        while not self._stopping.is_set():
            period = self.idle_fetch_timeout if self.state.is_idle() else self.fetch_timeout
            # A huge timeout option means "rarely", not an OverflowError that ends the thread.
            self.state.wake_fetch.wait(min(period, threading.TIMEOUT_MAX))
            self.state.wake_fetch.clear()
            if self._stopping.is_set():
                return
            self.fetch_once()

    def fetch_once(self) -> None:
        before = self.repo.remote_tip()
        try:
            with self.state.remote_lock:
                after = remote_ops.fetch(self.repo, self.credentials)
        except RemoteError as error:
            if not self._failing:  # once per change of state, not once per retry
                log.warning("%s; will keep trying", error)
            self._failing = True
            if self.status:
                self.status.fetch_failed(str(error))
            return
        if self._failing:
            log.warning("fetch works again")
        self._failing = False
        if self.status:
            self.status.fetch_ok()
        if after != before or (after is not None and after != self.repo.branch_tip()
                               and not self.repo.is_ancestor(after, self.repo.branch_tip())):
            self.on_remote_moved()
