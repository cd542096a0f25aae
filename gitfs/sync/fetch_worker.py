"""FetchWorker: fetch every fetch_timeout seconds (idle_fetch_timeout when idle).

When the remote moved it wakes the sync worker, which brings the change into
current/ and history/. A FUSE call after an idle spell wakes it at once
(SyncState.touch sets wake_fetch). Failures are logged and reported by the
remote link it shares with the sync cycle.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from gitfs.repo.errors import RemoteError
from gitfs.sync.remote_link import RemoteLink
from gitfs.sync.state import SyncState

log = logging.getLogger(__name__)


class FetchWorker(threading.Thread):
    def __init__(self, remote: RemoteLink, state: SyncState, *, fetch_timeout: float, idle_fetch_timeout: float,
                 on_remote_moved: Callable[[], None]):
        super().__init__(name="FetchWorker", daemon=True)
        self.remote = remote
        self.repo = remote.repo
        self.state = state
        self.fetch_timeout = fetch_timeout
        self.idle_fetch_timeout = idle_fetch_timeout
        self.on_remote_moved = on_remote_moved
        self._stopping = threading.Event()

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
            after = self.remote.fetch()
        except RemoteError:
            return  # logged and reported by the remote link; tried again next period
        local = self.repo.branch_tip()
        if after != before or (after is not None and (local is None or not self.repo.is_ancestor(after, local))):
            self.on_remote_moved()
