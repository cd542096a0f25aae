"""FetchWorker: fetch every fetch_timeout seconds (idle_fetch_timeout when idle).

When the remote moved it wakes the sync worker, which brings the change into
current/ and history/. A FUSE call after an idle spell wakes it at once
(SyncState.touch sets wake_fetch). Failures are logged and reported by the
remote link it shares with the sync cycle. Each round also tries again the Git LFS
objects that working files still lack, and wakes the sync worker when one came, and
tells the mount once when an idle spell has begun (`on_idle`: it gives memory back).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from gitfs.lfs import placeholders as lfs_placeholders
from gitfs.repo.errors import RemoteError
from gitfs.sync.remote_link import RemoteLink
from gitfs.sync.state import SyncState

log = logging.getLogger(__name__)

LFS_RETRY_MAX = 600.0  # seconds


class FetchWorker(threading.Thread):
    def __init__(self, remote: RemoteLink, state: SyncState, *, fetch_timeout: float, idle_fetch_timeout: float,
                 on_remote_moved: Callable[[], None], on_idle: Callable[[], None]):
        super().__init__(name="FetchWorker", daemon=True)
        self.remote = remote
        self.repo = remote.repo
        self.state = state
        self.fetch_timeout = fetch_timeout
        self.idle_fetch_timeout = idle_fetch_timeout
        self.on_remote_moved = on_remote_moved
        self.on_idle = on_idle
        self._idle_told = False  # on_idle was called in this idle spell
        self._stopping = threading.Event()
        self._lfs_retry_wait = 0.0  # seconds until missing LFS objects are tried again: doubles while they fail
        self._lfs_retry_at = 0.0

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
            self.retry_lfs_objects()
            self.tell_idle()

    def fetch_once(self) -> None:
        before = self.repo.remote_tip()
        try:
            # Not behind a push in flight: the sync worker fetches before it pushes, and
            # waiting here would hold an unmount until the push ends.
            after = self.remote.fetch(wait=False)
        except RemoteError:
            return  # logged and reported by the remote link; tried again next period
        local = self.repo.branch_tip()
        if after != before or (after is not None and (local is None or not self.repo.is_ancestor(after, local))):
            self.on_remote_moved()

    def tell_idle(self) -> None:
        """on_idle, once an idle spell has begun (a round wakes at most fetch_timeout
        after it did); once a spell, so a fetch while idle keeps what it read."""
        idle = self.state.is_idle()
        if idle and not self._idle_told:
            self.on_idle()
        self._idle_told = idle

    def retry_lfs_objects(self) -> None:
        """Git LFS: the objects of working files left holding their pointer's text, tried
        again (less and less often while they fail); the sync worker puts in those that
        came (lfs/checkout.py)."""
        if time.monotonic() < self._lfs_retry_at:
            return
        try:
            arrived = lfs_placeholders.download_placeholders(self.repo)
        except Exception:  # noqa: BLE001 - a bug must not end the thread, and so every later fetch
            log.exception("retrying Git LFS objects failed")
            arrived = False
        if arrived or not lfs_placeholders.placeholders_waiting(self.repo):
            self._lfs_retry_wait = 0.0
        else:
            self._lfs_retry_wait = min(max(2 * self._lfs_retry_wait, 1.0), LFS_RETRY_MAX)
            self._lfs_retry_at = time.monotonic() + self._lfs_retry_wait
        if arrived:
            self.on_remote_moved()
