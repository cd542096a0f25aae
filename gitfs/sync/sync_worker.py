"""SyncWorker: quiet period -> commit -> fetch + accept-mine -> push, with backoff.

Local work (commit, bringing the remote's changes into the working tree) runs
under SyncState.frozen(); fetch and push run outside it, so no FUSE call ever
waits on the network. Offline, commits pile up locally and are pushed later.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from typing import Callable, Optional

import pygit2

from gitfs.repo import remote as remote_ops
from gitfs.repo.accept_mine import replay_local_commits
from gitfs.repo.errors import PushRejected, RemoteError
from gitfs.repo.repository import Repository
from gitfs.repo.worktree import apply_changes, tree_changes
from gitfs.sync.jobs import CommitJob, batch_message, job_paths
from gitfs.sync.state import SyncState

log = logging.getLogger(__name__)

MAX_BACKOFF = 60.0
PUSH_RACE_RETRIES = 5


class SyncWorker(threading.Thread):
    def __init__(self, repo: Repository, jobs: queue.Queue, state: SyncState, *,
                 credentials: remote_ops.Credentials, signature: Callable[[], pygit2.Signature],
                 writers: Callable[[], tuple[int, float]], dirty_open_paths: Callable[[], list[str]],
                 open_paths: Callable[[], set[str]], sync_timeout: float, status=None):
        super().__init__(name="SyncWorker", daemon=True)
        self.repo = repo
        self.jobs = jobs
        self.state = state
        self.credentials = credentials
        self.signature = signature
        self.writers = writers
        self.dirty_open_paths = dirty_open_paths
        self.open_paths = open_paths
        self.sync_timeout = sync_timeout
        self.status = status
        self.pending: list[CommitJob] = []
        self._failures = 0
        self._last_failure: Optional[str] = None
        self._retry_at = 0.0
        self._needs_sync = True  # push what a previous mount left unpushed
        self._stopping = threading.Event()
        self._woken = threading.Event()
        self._forced = threading.Event()  # sync_now(): skip the quiet period and the retry back-off
        self._remote_moved = False
        self._known_remote = repo.remote_tip()  # the remote's tip as last seen by this worker

    # -- lifecycle ----------------------------------------------------------

    def wake(self) -> None:
        """Sync now: the remote moved (fetch worker), SIGUSR1, or unmount."""
        self._woken.set()
        self.jobs.put(None)  # ends the wait in _collect at once; None is not a job

    def sync_now(self) -> None:
        """SIGUSR1: commit and push now, without waiting for sync_timeout of quiet."""
        self._forced.set()
        self.wake()

    def stop(self, timeout: float) -> None:
        self._stopping.set()
        self.wake()
        self.join(timeout)
        if self.is_alive():
            log.warning("SyncWorker did not stop within %.0f s", timeout)

    def run(self) -> None:
        while not self._stopping.is_set():
            self._collect(self._wait_time())
            if self._stopping.is_set():
                break
            if self._due():
                try:
                    self._cycle()
                except (OSError, pygit2.GitError) as error:
                    # Disk full, a lock left by someone else...: the jobs stay pending and
                    # are retried; a dead worker would silently stop every later sync.
                    self._failed(f"local commit failed: {error}")
                except Exception:  # noqa: BLE001 - same reason; a bug, so with its traceback
                    log.exception("sync cycle failed")
                    self._failed("internal error")

    # -- scheduling ------------------------------------------------------------

    def _collect(self, timeout: float) -> None:
        """Wait for a job or a wake-up, then drain the queue."""
        try:
            job = self.jobs.get(timeout=timeout)
            if job is not None:  # None: stop() woke us
                self.pending.append(job)
        except queue.Empty:
            pass
        self._drain()
        if self._woken.is_set():
            self._woken.clear()
            self._needs_sync = self._remote_moved = True

    def _drain(self) -> None:
        while True:
            try:
                job = self.jobs.get_nowait()
            except queue.Empty:
                return
            if job is not None:
                self.pending.append(job)

    def _wait_time(self) -> float:
        if self.pending or self._needs_sync:
            left = self.sync_timeout - self.state.quiet_for()
            return min(max(left, 0.05), max(self._retry_at - time.monotonic(), 0.05), 1.0)
        return 1.0

    def _due(self) -> bool:
        # A file written while open owes a commit too (after the open-file bound).
        if not (self.pending or self._needs_sync or (self._open_too_long() and self.dirty_open_paths())):
            return False
        forced = self._forced.is_set()
        if not forced and (self.state.quiet_for() < self.sync_timeout or time.monotonic() < self._retry_at):
            return False
        # No commit while a file is open for writing, unless it has been open too
        # long; the remote's changes are brought in meanwhile (see _integrate).
        return self.writers()[0] == 0 or self._open_too_long() or self._remote_moved

    def _open_too_long(self) -> bool:
        return self.writers()[1] > max(10 * self.sync_timeout, 1.0)

    # -- the cycle ---------------------------------------------------------------

    def _cycle(self) -> None:
        self._remote_moved = False
        self._forced.clear()
        with self.state.frozen():
            if self.writers()[0] == 0:
                self._commit_pending()
            elif self._open_too_long():
                self._commit_pending(include_open=True)  # what the open file holds now
        try:
            complete = self.sync_with_remote()
        except RemoteError as error:
            self._failed(str(error))
            return
        if self._failures:
            log.warning("sync works again; local commits are on the remote")
        self._failures, self._last_failure = 0, None
        if complete:
            self._retry_at, self._needs_sync = 0.0, False
        else:  # the remote's change touches an open file: try again once it may be closed
            self._retry_at, self._needs_sync = time.monotonic() + max(self.sync_timeout, 0.5), True

    def _failed(self, reason: str) -> None:
        self._failures += 1
        delay = min(2 ** (self._failures - 1), MAX_BACKOFF) + random.random()
        self._retry_at = time.monotonic() + delay
        self._needs_sync = True
        if reason != self._last_failure:  # once per change of state, not once per retry
            log.warning("sync failed (%s); writes are kept locally, retrying with backoff", reason)
            self._last_failure = reason

    def _commit_pending(self, include_open: bool = False) -> Optional[pygit2.Oid]:
        """Commit what the working tree holds for the pending jobs (caller holds frozen())."""
        self._drain()
        jobs = self.pending
        if include_open:  # release queues them again: committed once more if they change
            jobs = jobs + [CommitJob(f"Update {path}", add=(path.lstrip("/"),)) for path in self.dirty_open_paths()]
        if not jobs:
            return None
        jobs = [job for job in jobs if not self._only_ignored(job)]
        paths = job_paths(jobs)
        oid = self._stage_and_commit(paths, batch_message(jobs)) if jobs else None
        self.pending = []
        self._needs_sync = True
        if oid is not None:
            log.info("committed %s: %s", str(oid)[:10], batch_message(jobs))
        return oid

    def _stage_and_commit(self, paths: set[str], message: str) -> Optional[pygit2.Oid]:
        """Commit the batch's paths; if that fails on this machine, commit the whole
        working tree instead, so that a local commit is never stuck behind a retry.
        What is still failing then (a full disk) goes to the caller's back-off."""
        try:
            self.repo.stage_paths(paths)
            return self.repo.commit_index(message, self.signature())
        except (OSError, pygit2.GitError, KeyError, ValueError) as error:
            log.error("staging failed (%s) for %s; committing the whole working tree instead",
                      error, ", ".join(sorted(paths)))
        self.repo.stage_everything()
        return self.repo.commit_index(message, self.signature())

    def _only_ignored(self, job: CommitJob) -> bool:
        return all(self.repo.is_ignored(path) and not self._tracked(path) for path in job.paths)

    def _tracked(self, path: str) -> bool:
        return path in self.repo.index()

    def commit_everything(self, message_for: Callable[[list[str]], list[CommitJob]]) -> Optional[pygit2.Oid]:
        """Commit every change the working tree holds (a crash left them uncommitted)."""
        with self.state.frozen():
            self.pending.extend(message_for(self.repo.changed_paths()))
            return self._commit_pending()

    def sync_with_remote(self) -> bool:
        """fetch -> replay local commits on the remote's tip -> push; repeat on a push race.

        False when the remote's change waits for an open file to be closed."""
        for _attempt in range(PUSH_RACE_RETRIES):
            remote_tip = self._fetch()
            local_tip = self.repo.branch_tip()
            if remote_tip is not None and local_tip is not None and not self.repo.is_ancestor(remote_tip, local_tip):
                if not self._integrate(remote_tip):
                    return False
                local_tip = self.repo.branch_tip()
            if local_tip is None or local_tip == remote_tip:
                return True
            try:
                self._push()
                self._known_remote = local_tip
                log.info("pushed %s", str(local_tip)[:10])
                return True
            except PushRejected as rejected:
                log.info("%s; merging again", rejected)
        raise RemoteError("the remote kept moving during push; will retry")

    def _fetch(self) -> Optional[pygit2.Oid]:
        try:
            with self.state.remote_lock:
                remote_tip = remote_ops.fetch(self.repo, self.credentials)
        except RemoteError as error:
            if self.status:
                self.status.fetch_failed(str(error))
            raise
        if self.status:
            self.status.fetch_ok()
        return remote_tip

    def _push(self) -> None:
        try:
            with self.state.remote_lock:
                remote_ops.push(self.repo, self.credentials)
        except RemoteError as error:
            if self.status:
                self.status.push_failed(str(error))
            raise
        if self.status:
            self.status.push_ok()

    def _integrate(self, remote_tip: pygit2.Oid) -> bool:
        """Bring the remote's commits into the branch and the working tree (accept mine).

        A file open in current/ is never changed under a program: the kernel would
        mix cached pages of both versions. If the remote's change touches one,
        nothing is applied and False says to try again later."""
        with self.state.frozen():
            self._commit_pending()
            local_tip = self.repo.branch_tip()
            git = self.repo.git
            known, self._known_remote = self._known_remote, remote_tip
            if local_tip is not None and known is not None and not self.repo.is_ancestor(known, remote_tip):
                self._rescue(local_tip, remote_tip)
            if local_tip is None:
                replay_tip, conflicts = remote_tip, []
            else:
                result = replay_local_commits(self.repo, local_tip, remote_tip, self.signature())
                replay_tip, conflicts = result.tip, result.conflicts
            old_tree = git[local_tip].tree.id if local_tip is not None else None
            changes = tree_changes(self.repo, old_tree, git[replay_tip].tree.id)
            busy = changes.paths() & {path.lstrip("/") for path in self.open_paths()}
            if busy:
                log.info("the remote changed open files (%s); applying once they are closed",
                         ", ".join(sorted(busy)))
                return False
            # Working tree first, then the ref: a crash in between leaves changes
            # that the next mount commits again as local ones (they match the remote's).
            apply_changes(self.repo, changes)
            self.repo.set_branch_tip(replay_tip, "gitfs: accept mine")
        if conflicts:
            log.warning("conflicts resolved with the local version: %s", ", ".join(conflicts))
            if self.status:
                self.status.conflicts(conflicts, remote_tip)
        return True

    def _rescue(self, local_tip: pygit2.Oid, remote_tip: pygit2.Oid) -> None:
        """The remote's branch was rewritten (force-push, or deleted and recreated): the
        replay below keeps the local work on the branch, and a rescue branch in the clone
        keeps the local history as it was, in case the replay is not what the user wants."""
        name = time.strftime("gitfs-rescue-%Y%m%d-%H%M%S")
        while f"refs/heads/{name}" in self.repo.git.references:
            name += "-1"
        self.repo.git.create_reference(f"refs/heads/{name}", local_tip)
        log.warning("the remote's branch %s was rewritten (now %s); the local work is replayed on it "
                    "and kept as it was on branch %s in %s", self.repo.branch, str(remote_tip)[:10], name,
                    self.repo.path)
        if self.status:
            self.status.conflicts([f"local history saved on branch {name}"], remote_tip)

    def final_sync(self, deadline: float) -> None:
        """At unmount: commit everything, then push if the remote answers in time."""
        self._collect(0)
        with self.state.frozen():
            self._commit_pending()
        if self.repo.count_ahead() == 0 and self.repo.remote_tip() is not None:
            return
        worker = threading.Thread(target=self._push_quietly, name="FinalPush", daemon=True)
        worker.start()
        worker.join(max(deadline - time.monotonic(), 0))
        if worker.is_alive():
            log.warning("unmount: push did not finish in time; the next mount pushes it")

    def _push_quietly(self) -> None:
        try:
            self.sync_with_remote()
        except RemoteError as error:
            log.warning("unmount: %s; the next mount pushes it", error)
