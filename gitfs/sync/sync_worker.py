"""SyncWorker: the thread that alone decides when a sync cycle runs, and runs it.

A cycle is due once current/ has been quiet for sync_timeout with something to
commit or push, and no file that would be committed is open for writing (an
editor's swap file holds nothing back): a burst (`tar x`) is one commit. However busy
the mount, no change waits longer than max_sync_delay: a change queued that long ago,
or a file written while open (a log held open for days) for that long since it was
opened or last committed, has the cycle commit everything, the files being written
too, as they stand between two writes (the commit runs frozen). A logger writing all
day thus makes one commit per max_sync_delay, and a document saved beside it waits
no longer. SIGUSR1 skips the wait, a wake-up from the fetch worker brings the
remote's change in even while a file is being written, and failures back off 1, 2,
4 ... 60 s (a push the server refused: up to 5 minutes, or at once after a change in
current/ that a commit would take). At unmount the same thread runs the final cycle:
it commits everything however long that takes (a commit is local: it ends, and a
daemon that quit half-way would leave the clone's index locked), then gives the push
final_seconds; what is not on the remote by then the next mount pushes.

A sync asked for now (SIGUSR1, unmount) covers every change whose close(2) returned
before the request. close(2) returns before the kernel sends RELEASE, so such a file
may still count as open for writing, its commit job not queued yet: the worker first
waits (at most RELEASE_WAIT) for the files open for writing at the request to be
released. What is still open then is really open: its jobs wait, the rest is committed.

Between cycles the worker lets the housekeeper tidy the clone (repo/tidying/housekeeping.py),
saying whether changes wait (it then tidies only a clone far past its thresholds): the
worker is the one thread that writes the clone, so no commit of its own runs meanwhile.
Changes made during a tidying are committed after it; an unmount interrupts it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Collection
from typing import Callable, Optional, Protocol, TypeVar

from gitfs.repo.errors import LocalWriteError, PushRefused, RemoteError
from gitfs.sync.cycle import CycleResult, SyncCycle
from gitfs.sync.jobs import CommitJob, PendingJobs
from gitfs.sync.state import SyncState

log = logging.getLogger(__name__)

Result = TypeVar("Result")
MAX_BACKOFF = 60.0
# A server that says no answers the same until someone acts: the same 1, 2, 4 ... s at
# first (5 attempts in the first 30 s), then up to 5 minutes; a change in current/ (the
# user mending what the server named) or SIGUSR1 tries again at once.
REFUSED_MAX_BACKOFF = 300.0
FINAL_SYNC_SECONDS = 30.0
# A RELEASE arrives milliseconds after close(2); a file still open after this is in use.
RELEASE_WAIT = 5.0
COMMIT_NOTICE_SECONDS = 60.0  # how often an unmount waiting for a long final commit says so


class Housekeeping(Protocol):
    def tidy_if_due(self, busy: bool) -> bool: ...
    def interrupt(self) -> None: ...


class SyncWorker(threading.Thread):
    def __init__(self, cycle: SyncCycle, jobs: PendingJobs, state: SyncState, *,
                 writers: Callable[[], tuple[int, float]], dirty_open_paths: Callable[[], list[str]],
                 sync_timeout: float, recover: Optional[Callable[[list[str]], list[CommitJob]]] = None,
                 writing: Callable[[], dict[int, str]] = dict,
                 wait_released: Callable[[Collection[int], float], bool] = lambda numbers, timeout: True,
                 release_wait: float = RELEASE_WAIT,
                 final_seconds: float = FINAL_SYNC_SECONDS, housekeeping: Optional[Housekeeping] = None,
                 committable: Callable[[Collection[str]], list[str]] = list,
                 max_sync_delay: Optional[float] = None, clock: Callable[[], float] = time.monotonic):
        super().__init__(name="SyncWorker", daemon=True)
        self.cycle = cycle
        self.jobs = jobs
        self.state = state
        # (files open for writing that would be committed, seconds the oldest has been open)
        self.writers = writers
        self.dirty_open_paths = dirty_open_paths
        self.writing = writing  # {handle: path} of the files open for writing now
        self.wait_released = wait_released  # (handles, timeout) -> whether all were released in time
        self.release_wait = release_wait
        self.sync_timeout = sync_timeout
        # The longest a change waits for quiet: a mount written to all day commits all the same.
        self.max_sync_delay = max_sync_delay if max_sync_delay is not None else max(10 * sync_timeout, 1.0)
        self._included_at = float("-inf")  # when a cycle last committed the files being written
        self.recover = recover
        self.final_seconds = final_seconds
        self.housekeeping = housekeeping
        self.committable = committable  # the paths among these whose changes would be committed
        self.clock = clock
        self._stopping = threading.Event()
        self._final_started = threading.Event()  # the thread left its loop for the final cycle
        self._final_commit_done = threading.Event()  # the final cycle's commit ended, or failed
        # sync_now() asked for a cycle now (no quiet period, no back-off): the files open
        # for writing at each request since the last cycle; None if none was asked for.
        self._request_lock = threading.Lock()
        self._request: Optional[set[int]] = None
        self._woken = False  # the last wait ended in a wake-up: the remote moved, or SIGUSR1
        self._owed = True  # a cycle is owed even with no job: push what a previous mount left
        self._failures = 0
        self._last_failure: Optional[str] = None
        self._retry_at = 0.0
        self._refused_at_change: Optional[int] = None  # jobs.received when the server last said no

    # -- what other threads may call ------------------------------------------------

    def wake(self) -> None:
        """Sync now: the remote moved (fetch worker)."""
        self.jobs.wake()

    def sync_now(self) -> None:
        """SIGUSR1: commit and push now, without waiting for sync_timeout of quiet; what was
        closed before this call is committed too (see the module's docstring)."""
        open_now = set(self.writing())  # in the caller's thread: at the moment of the request
        with self._request_lock:
            self._request = (self._request or set()) | open_now
        self.jobs.wake()

    def stop(self, timeout: float) -> None:
        """Let the thread run its final cycle and end: wait at most timeout seconds for the
        cycle in flight (a push over a network that hangs), then for the final commit
        whatever it takes, then at most timeout seconds for the push."""
        self._stopping.set()
        if self.housekeeping is not None:
            self.housekeeping.interrupt()
        self.jobs.wake()
        deadline = time.monotonic() + timeout
        while self.is_alive() and not self._final_started.wait(0.1) and time.monotonic() < deadline:
            pass
        if self._final_started.is_set():
            while self.is_alive() and not self._final_commit_done.wait(COMMIT_NOTICE_SECONDS):
                log.info("unmount: still committing the last changes")
        self.join(timeout)
        if self.is_alive():
            log.warning("SyncWorker did not stop within %.0f s", timeout)

    # -- the thread -------------------------------------------------------------------

    def run(self) -> None:
        recover = self.recover
        if recover is not None:
            self._guarded(lambda: self.cycle.commit_everything(recover))  # left on disk by a crash
        while not self._stopping.is_set():
            self.step()
        self._final_started.set()
        self._await_releases(set(self.writing()))  # unmounted: every file is closed, or closing
        try:
            self._guarded(lambda: self.cycle.final(self.final_seconds, on_committed=self._final_commit_done.set))
        finally:
            self._final_commit_done.set()

    def step(self, timeout: Optional[float] = None) -> Optional[CycleResult]:
        """Wait for news (at most timeout, else until a cycle may be due), then run a
        cycle if one is due. What happened, or None if no cycle ran."""
        if self.jobs.wait(self._wait_time() if timeout is None else timeout):
            self._woken = self._owed = True
        with self._request_lock:
            request, self._request = self._request, None
        if request:
            self._await_releases(request)
        forced = request is not None
        if self._stopping.is_set():
            return None
        if not self.due(forced):
            self._tidy_if_due(forced)
            return None
        return self._guarded(lambda: self._run_cycle(forced))

    def _tidy_if_due(self, forced: bool) -> None:
        """Let the housekeeper tidy the clone, told whether anything waits for this thread."""
        if self.housekeeping is None:
            return
        busy = bool(forced or self.jobs or self._owed or self.writers()[0])
        try:
            self.housekeeping.tidy_if_due(busy)
        except Exception:  # it reports its own failures; one that escapes is a bug, but no sync's to back off for
            log.exception("tidying the clone failed")

    def due(self, forced: bool = False) -> bool:
        """Whether a cycle is due now; forced: asked for by sync_now()."""
        writing, open_overdue = self._writing()
        # A file written while open owes a commit too (once overdue).
        if not (self.jobs or self._owed or open_overdue):
            return False
        if self.clock() < self._retry_at and not self._changed_since_refusal() and not forced:
            return False
        if self.overdue(open_overdue):  # however busy the mount: the bound on every change's wait
            return True
        if not forced and self.state.quiet_for() < self.sync_timeout:
            return False
        # No commit while a file is open for writing, unless overdue; the remote's changes
        # are brought in meanwhile.
        return writing == 0 or self._woken

    def overdue(self, open_overdue: Optional[bool] = None) -> bool:
        """Whether a change has waited max_sync_delay: a job queued that long ago, or a file
        written while open (a log held open for days) that long since it was opened or last
        committed."""
        if open_overdue is None:
            open_overdue = self._writing()[1]
        return open_overdue or bool(self.jobs) and self.jobs.waited() >= self.max_sync_delay

    def writing_status(self) -> list[dict]:
        """The files being written and when their next commit is due (seconds from now), for
        the status: committed as they stand between two writes once max_sync_delay is up."""
        count, oldest = self.writers()
        dirty = sorted(path.strip("/") for path in self.committable(self.dirty_open_paths()))  # no swap file
        if not count or not dirty:
            return []
        due_in = max(self.max_sync_delay - self._open_waited(oldest), 0.0)
        return [{"path": path, "next_commit_in": round(due_in, 1)} for path in dirty]

    def _changed_since_refusal(self) -> bool:
        """Whether current/ changed since the server last refused a push, in a way a commit
        would take: an editor's swap or lock file, which stays local, asks the server nothing
        (its hook would otherwise run once per quiet period while the editor is open)."""
        if self._refused_at_change is None or self.jobs.received <= self._refused_at_change:
            return False
        if self.committable(sorted(self.jobs.paths())):
            return True
        self._refused_at_change = self.jobs.received  # seen: only local files changed
        return False

    def _wait_time(self) -> float:
        if self.jobs or self._owed:
            left = self.sync_timeout - self.state.quiet_for()
            return min(max(left, 0.05), max(self._retry_at - self.clock(), 0.05), 1.0)
        return 1.0

    def _writing(self) -> tuple[int, bool]:
        """(files open for writing, whether one written while open has waited max_sync_delay
        since it was opened or since the last commit that took what it held)."""
        count, oldest = self.writers()
        if not count:
            return 0, False
        return count, self._open_waited(oldest) >= self.max_sync_delay and bool(self.dirty_open_paths())

    def _open_waited(self, oldest: float) -> float:
        """Seconds the files open for writing have waited for a commit: since the oldest was
        opened (`oldest` seconds ago) or since the last cycle that committed them, the later."""
        now = self.clock()
        return now - max(now - oldest, self._included_at)

    def _await_releases(self, numbers: set[int]) -> None:
        if numbers and not self.wait_released(numbers, self.release_wait):
            log.info("files open for writing when the sync was asked for are still open; their changes wait")

    def _run_cycle(self, forced: bool = False) -> CycleResult:
        self._woken = False
        writers, open_overdue = self._writing()
        writing = writers > 0
        overdue = self.overdue(open_overdue)
        if forced and writing and not overdue:
            # Asked for now: commit everything but what the files still open may change.
            result = self.cycle.run(hold=set(self.writing().values()))
        else:
            # Overdue: the files being written too, as they stand between two writes
            # (the commit runs frozen: no write is half done). Counted from before the
            # cycle: a write after its commit waits max_sync_delay, not that plus the push.
            started = self.clock()
            result = self.cycle.run(commit=not writing or overdue, include_open=writing and overdue)
            if writing and overdue:
                self._included_at = started
        if self._last_failure is not None:  # the remote link reports its own recoveries
            log.warning("sync works again; local commits are on the remote")
        self._failures, self._last_failure, self._refused_at_change = 0, None, None
        if result.complete:
            self._retry_at, self._owed = 0.0, False
        else:  # the remote's change touches an open file: try again once it may be closed
            self._retry_at, self._owed = self.clock() + max(self.sync_timeout, 0.5), True
        return result

    def _guarded(self, action: Callable[[], Result]) -> Optional[Result]:
        """Run action; a failure backs off instead of ending the thread, which would
        silently stop every later sync."""
        try:
            return action()
        except PushRefused:  # logged by the remote link, once per distinct refusal
            self._refused_at_change = self.jobs.received
            self._back_off(None, REFUSED_MAX_BACKOFF)
        except RemoteError:
            self._refused_at_change = None
            self._back_off(None)  # the remote link logged it, once per change of state
        except LocalWriteError as error:  # a full disk, a lock left by someone else...
            self._back_off(f"local commit failed: {error}")
        except Exception:  # noqa: BLE001 - same reason; a bug, so with its traceback
            log.exception("sync cycle failed")
            self._back_off("internal error")
        return None

    def _back_off(self, reason: Optional[str], longest: float = MAX_BACKOFF) -> None:
        self._failures += 1
        self._retry_at = self.clock() + min(2 ** (self._failures - 1), longest) + random.random()
        self._owed = True
        if reason is not None and reason != self._last_failure:  # once per change of state
            log.warning("sync failed (%s); writes are kept locally, retrying with backoff", reason)
        self._last_failure = reason
