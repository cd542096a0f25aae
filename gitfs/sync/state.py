"""SyncState: the one object FUSE threads and the workers synchronise on.

Contract:
- FUSE threads wrap every mutation of current/ in `mutation()`. It waits (at
  most `freeze_timeout` seconds, then EBUSY) while the sync worker holds
  `frozen()`, and records the time of the last change.
- The sync worker holds `frozen()` only for local work: committing the working
  tree and bringing the remote's changes into it. `frozen()` waits until no
  mutation is in flight. Network I/O happens outside it, always.
- The quiet period (`quiet_for`) runs from the end of the last mutation and is
  zero while one is in flight.
- Opening a file for reading also waits out `frozen()` (`mutation(changes=False)`),
  so the sync worker sees every open file before it replaces any; and so does the
  release of a file (`patient`: however long): a file open at the freeze stays open to
  the sync worker until it ends, or the remote's version would be written over lines
  appended to it that no commit holds yet.
- Fetch and push are serialised by the remote link (remote_link.py), which FUSE
  threads never touch.
- `wake_fetch` is set when activity resumes after an idle spell, and at unmount.
  (The sync worker is woken through SyncWorker.wake.)
- `touch()` is called by the router on every FUSE call (cheap: a float store).
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from typing import Callable


class SyncState:
    def __init__(self, *, idle_after: float, freeze_timeout: float = 30.0,
                 clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._condition = threading.Condition()
        self._frozen = False
        self._mutations_in_flight = 0
        self._freeze_timeout = freeze_timeout
        self._idle_after = idle_after
        self.last_change = 0.0  # clock time of the last finished mutation
        self.last_activity = clock()
        self.wake_fetch = threading.Event()

    @contextlib.contextmanager
    def mutation(self, changes: bool = True, patient: bool = False):
        """patient: wait out the freeze however long it lasts (a release, which no program waits for)."""
        with self._condition:
            if not self._condition.wait_for(lambda: not self._frozen, None if patient else self._freeze_timeout):
                # An OSError: the FUSE binding answers its errno like any os.* failure.
                raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))
            self._mutations_in_flight += 1
        try:
            yield
        finally:
            with self._condition:
                self._mutations_in_flight -= 1
                if changes:
                    self.last_change = self._clock()
                self._condition.notify_all()

    @contextlib.contextmanager
    def frozen(self):
        with self._condition:
            self._condition.wait_for(lambda: not self._frozen)
            self._frozen = True
            self._condition.wait_for(lambda: self._mutations_in_flight == 0)
        try:
            yield
        finally:
            with self._condition:
                self._frozen = False
                self._condition.notify_all()

    def touch(self) -> None:
        now = self._clock()
        if now - self.last_activity > self._idle_after:
            self.wake_fetch.set()  # leaving idle mode: fetch at once
        self.last_activity = now

    def is_idle(self) -> bool:
        return self._clock() - self.last_activity > self._idle_after

    def quiet_for(self) -> float:
        """Seconds since the last change; 0 while one is in flight: its commit job is
        queued (and the sync worker woken) before the mutation ends, and a cycle taken
        then would commit the first of a burst of changes (rm -rf) alone."""
        with self._condition:
            if self._mutations_in_flight:
                return 0.0
            return self._clock() - self.last_change
