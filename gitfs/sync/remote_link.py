"""RemoteLink: the remote side of a mount, owned once and shared by both workers.

It holds the credentials and the lock that keeps fetch and push from running at the
same time, reports every result to the status file, and logs a failure once per
change of state (the first failure, a different one, the recovery), never once per
retry: a server that is down for an hour gives two lines, not hundreds.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Optional, Protocol

import pygit2

from gitfs.lfs.pushing import upload_before_push
from gitfs.repo.errors import PushRefused, PushRejected, RemoteError
from gitfs.repo.remote import transfer as remote_ops
from gitfs.repo.repository import Repository
from gitfs.sync.metrics import Metrics
from gitfs.sync.push_progress import PushProgress

log = logging.getLogger(__name__)


class StatusReport(Protocol):
    def fetch_ok(self) -> None: ...
    def fetch_failed(self, error: str) -> None: ...
    def push_ok(self) -> None: ...
    def push_failed(self, error: str) -> None: ...
    def push_refused(self, error: str, *, reason: str, server_says: tuple[str, ...], commit: str,
                     denied: str = "") -> None: ...


class RemoteLink:
    def __init__(self, repo: Repository, credentials: remote_ops.Credentials, *,
                 status: StatusReport, metrics: Metrics, progress: Optional[PushProgress] = None):
        self.repo = repo
        self.progress = progress or PushProgress()  # the push in flight: the status and metrics read it
        self._credentials = credentials
        self._status = status
        self._metrics = metrics
        self._lock = threading.Lock()  # one network operation on the clone at a time
        self._failing_lock = threading.Lock()
        self._failing: dict[str, Optional[str]] = {"fetch": None, "push": None}  # the last failure, by action

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """No fetch or push while the block runs (a fetch under way ends first)."""
        with self._lock:
            yield

    def fetch(self, *, wait: bool = True) -> Optional[pygit2.Oid]:
        """The remote's tip after fetching (None: the branch is gone), or RemoteError.
        wait=False: while a push or fetch is under way, the remote's tip as last known,
        without waiting for it (the sync cycle fetches before each push anyway)."""
        if not self._lock.acquire(blocking=wait):
            return self.repo.remote_tip()
        started = time.monotonic()
        try:
            tip = remote_ops.fetch(self.repo, self._credentials)
        except RemoteError as error:
            failure: Optional[RemoteError] = error
        else:
            failure = None
        finally:
            self._lock.release()
        self._report("fetch", failure, time.monotonic() - started)
        if failure is not None:
            raise failure
        return tip

    def push(self, source_ref: Optional[str] = None) -> None:
        """Push the branch (or the commit source_ref names) without force: PushRejected if
        the remote moved, PushRefused if the server said no, RemoteError if it failed."""
        try:
            with self._lock:
                started = time.monotonic()
                self.progress.started(self.repo.count_ahead())
                try:
                    # Git LFS: the objects go up before the pointers that name them (those of
                    # the commit sent, when it is not the branch: a replacement's own).
                    upload_before_push(self.repo, None if source_ref is None else
                                       self.repo.reference_target(source_ref))
                    remote_ops.push(self.repo, self._credentials, source_ref=source_ref,
                                    progress=self.progress.sending)
                finally:
                    self.progress.ended()
                    took = time.monotonic() - started
        except PushRejected as rejected:
            # The remote moved: the caller merges and pushes again.
            self._status.push_failed(str(rejected))
            self._metrics.push(False, took)
            raise
        except PushRefused as refused:
            self._status.push_refused(str(refused), reason=refused.reason, server_says=refused.server_says,
                                      commit=refused.commit, denied=refused.denied)
            self._metrics.push(False, took)
            self._metrics.push_refused()
            self._log_change("push", str(refused))
            raise
        except RemoteError as error:
            self._report("push", error, took)
            raise
        self._report("push", None, took)

    def nothing_to_push(self) -> None:
        """The remote has everything (what it refused was undone): reported like a push that worked."""
        self._report("push", None)

    def push_failed(self, error: RemoteError) -> None:
        """The caller gave up pushing (rejected again and again): report it like a failed push."""
        self._report("push", error)

    def _report(self, action: str, error: Optional[RemoteError], took: Optional[float] = None) -> None:
        if took is not None:  # None: no attempt of its own (push_failed)
            (self._metrics.fetch if action == "fetch" else self._metrics.push)(error is None, took)
        if error is None:
            (self._status.fetch_ok if action == "fetch" else self._status.push_ok)()
        else:
            (self._status.fetch_failed if action == "fetch" else self._status.push_failed)(str(error))
        self._log_change(action, None if error is None else str(error))

    def _log_change(self, action: str, now: Optional[str]) -> None:
        """Log a failure when it begins or changes, and the recovery: never once per retry."""
        with self._failing_lock:
            before = self._failing[action]
            self._failing[action] = now
        if now is not None and now != before:
            log.warning("%s; writes are kept locally, retrying", now)
        elif now is None and before is not None:
            log.warning("%s works again", action)
