"""SyncCycle: one synchronous sync, commit -> fetch -> accept mine -> apply -> push.

No thread and no timing here: the sync worker decides when a cycle runs, and a test
runs one on two real clones and a bare remote. Local work (committing the working
tree, bringing the remote's changes into it) runs under SyncState.frozen(); fetch
and push run outside it, so no FUSE call ever waits on the network.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, Protocol

import pygit2

from gitfs.lfs import checkout as lfs_checkout
from gitfs.repo.accept_mine import replay_local_commits
from gitfs.repo.errors import PushRejected, RemoteError
from gitfs.repo.repository import Repository
from gitfs.repo.worktree import WorktreeKernelView, apply_changes, tree_changes
from gitfs.sync.jobs import CommitJob, PendingJobs, batch_message, job_paths
from gitfs.sync.metrics import Metrics
from gitfs.sync.remote_link import RemoteLink
from gitfs.sync.state import SyncState

log = logging.getLogger(__name__)

PUSH_RACE_RETRIES = 5


class ConflictReport(Protocol):
    def conflicts(self, paths: list[str], remote_commit: pygit2.Oid) -> None: ...


@dataclass(frozen=True)
class CycleResult:
    committed: Optional[pygit2.Oid] = None  # the local commit this cycle made
    pushed: Optional[pygit2.Oid] = None  # the tip the remote now has from us
    conflicts: tuple[str, ...] = ()  # files whose local version won over the remote's
    waiting_for: tuple[str, ...] = ()  # open files the remote's change touches: not applied yet

    @property
    def complete(self) -> bool:
        return not self.waiting_for


@dataclass(frozen=True)
class OpenFiles:
    """What the cycle needs to know of the files open in current/."""

    paths: Callable[[], set[str]]  # every open path
    dirty_paths: Callable[[], list[str]]  # written while open, not yet released


class SyncCycle:
    def __init__(self, repo: Repository, state: SyncState, jobs: PendingJobs, remote: RemoteLink, *,
                 signature: Callable[[], pygit2.Signature], open_files: OpenFiles,
                 conflicts: Optional[ConflictReport] = None, metrics: Optional[Metrics] = None,
                 kernel: Optional[WorktreeKernelView] = None):
        self.repo = repo
        self.state = state
        self.jobs = jobs
        self.remote = remote
        self.signature = signature
        self.open_files = open_files
        self.conflict_report = conflicts
        self.metrics = metrics
        self.kernel = kernel  # told of every path the remote's changes replace in current/
        self._known_remote = repo.remote_tip()  # the remote's tip as this mount last saw it

    # -- the cycle ----------------------------------------------------------------

    def run(self, *, commit: bool = True, include_open: bool = False) -> CycleResult:
        """Commit the pending jobs (unless a file is being written: commit=False), then
        bring the remote's changes in and push. RemoteError if the remote failed."""
        committed = None
        if commit:
            self.repo.prepare_staging(self.jobs.paths())  # big LFS files hashed before the freeze
            with self.state.frozen():
                committed = self.commit_pending(include_open=include_open)
        result = self.sync_with_remote()
        return dataclasses.replace(result, committed=committed)

    def commit_pending(self, include_open: bool = False) -> Optional[pygit2.Oid]:
        """Commit what the working tree holds for the pending jobs (caller holds frozen())."""
        jobs = self.jobs.take()
        if include_open:  # release queues them again: committed once more if they change
            jobs += [CommitJob(f"Update {path}", add=(path.lstrip("/"),)) for path in self.open_files.dirty_paths()]
        index = self.repo.index()
        jobs = [job for job in jobs if not self._only_ignored(job, index)]
        if not jobs:
            return None
        message = batch_message(jobs)
        started = time.monotonic()
        try:
            oid = self._stage_and_commit(job_paths(jobs), message)
        except BaseException:
            self.jobs.give_back(jobs)
            raise
        if oid is not None:
            if self.metrics is not None:
                self.metrics.commit(time.monotonic() - started)
            log.info("committed %s: %s", str(oid)[:10], message)
        return oid

    def commit_everything(self, jobs_for: Callable[[list[str]], list[CommitJob]]) -> Optional[pygit2.Oid]:
        """Commit every change the working tree holds (a crash left them uncommitted)."""
        with self.state.frozen():
            try:
                changed = self.repo.changed_paths()
            except (OSError, pygit2.GitError) as error:  # libgit2's status could not read the tree
                log.error("cannot list the working tree's changes (%s); committing it as a whole", _short(str(error)))
                self.repo.stage_everything()
                return self.repo.commit_index("Update the working tree", self.signature())
            for job in jobs_for(changed):
                self.jobs.put(job)
            return self.commit_pending()

    def _stage_and_commit(self, paths: set[str], message: str) -> Optional[pygit2.Oid]:
        """Commit the batch's paths; if that fails on this machine, commit the whole
        working tree instead, so that a local commit is never stuck behind a retry.
        What still fails then (a full disk) goes to the caller's back-off."""
        try:
            self.repo.stage_paths(paths)
            return self.repo.commit_index(message, self.signature())
        except (OSError, pygit2.GitError, KeyError, ValueError) as error:
            log.error("staging failed (%s) for %s; committing the whole working tree instead",
                      _short(str(error)), _some(paths))
        self.repo.stage_everything()
        return self.repo.commit_index(message, self.signature())

    def _only_ignored(self, job: CommitJob, index: pygit2.Index) -> bool:
        return all(self.repo.is_ignored(path) and path not in index for path in job.paths)

    # -- with the remote ----------------------------------------------------------

    def sync_with_remote(self) -> CycleResult:
        """fetch -> replay local commits on the remote's tip -> push; again on a push race."""
        conflicts: tuple[str, ...] = ()
        last_rejection: Optional[PushRejected] = None
        for _attempt in range(PUSH_RACE_RETRIES):
            remote_tip = self.remote.fetch()
            local_tip = self.repo.branch_tip()
            if remote_tip is not None and local_tip is not None and not self.repo.is_ancestor(remote_tip, local_tip):
                # Git LFS: the remote's new objects, downloaded before the freeze that applies them.
                lfs_checkout.prefetch(self.repo, self.repo.root_tree(local_tip), self.repo.root_tree(remote_tip))
                integrated = self._integrate(remote_tip)
                if integrated.waiting_for:
                    return integrated
                conflicts += integrated.conflicts
                local_tip = self.repo.branch_tip()
            if local_tip is None or local_tip == remote_tip:
                return CycleResult(conflicts=conflicts)
            try:
                self.remote.push()
            except PushRejected as rejected:
                log.info("%s; merging again", rejected)
                last_rejection = rejected
                continue
            self._known_remote = local_tip
            log.info("pushed %s", str(local_tip)[:10])
            return CycleResult(pushed=local_tip, conflicts=conflicts)
        error = RemoteError(f"{last_rejection} ({PUSH_RACE_RETRIES} times in a row)")
        self.remote.push_failed(error)
        raise error

    def _integrate(self, remote_tip: pygit2.Oid) -> CycleResult:
        """Bring the remote's commits into the branch and the working tree (accept mine).

        A file open in current/ is never changed under a program: the kernel would
        mix cached pages of both versions. If the remote's change touches one,
        nothing is applied and the result names the files to wait for."""
        with self.state.frozen():
            self.commit_pending()
            local_tip = self.repo.branch_tip()
            git = self.repo.git
            known, self._known_remote = self._known_remote, remote_tip
            if local_tip is not None and known is not None and not self.repo.is_ancestor(known, remote_tip):
                self._rescue(local_tip, remote_tip)
            conflicts: list[str] = []
            replay_tip = remote_tip
            if local_tip is not None:
                result = replay_local_commits(self.repo, local_tip, remote_tip, self.signature())
                replay_tip, conflicts = result.tip, result.conflicts
            old_tree = git[local_tip].tree.id if local_tip is not None else None
            changes = tree_changes(self.repo, old_tree, git[replay_tip].tree.id)
            busy = changes.paths() & {path.lstrip("/") for path in self.open_files.paths()}
            if busy:
                log.info("the remote changed open files (%s); applying once they are closed",
                         ", ".join(sorted(busy)))
                return CycleResult(waiting_for=tuple(sorted(busy)))
            # Working tree first, then the ref: a crash in between leaves changes
            # that the next mount commits again as local ones (they match the remote's).
            removed = apply_changes(self.repo, changes)
            self.repo.set_branch_tip(replay_tip, "gitfs: accept mine")
        if self.kernel is not None:
            # Outside frozen(): telling the kernel takes its lock of each parent folder,
            # which a FUSE call in that folder may hold while it waits for frozen() to end.
            self.kernel.changed(changes.paths(), removed)
        if conflicts:
            log.warning("conflicts resolved with the local version: %s", ", ".join(conflicts))
            if self.metrics is not None:
                self.metrics.conflicts(len(conflicts))
            if self.conflict_report is not None:
                self.conflict_report.conflicts(conflicts, remote_tip)
        return CycleResult(conflicts=tuple(conflicts))

    def _rescue(self, local_tip: pygit2.Oid, remote_tip: pygit2.Oid) -> None:
        """The remote's branch was rewritten (force-push, or deleted and recreated): the
        replay keeps the local work on the branch, and a rescue branch in the clone
        keeps the local history as it was, in case the replay is not what the user wants."""
        name = time.strftime("gitfs-rescue-%Y%m%d-%H%M%S")
        while f"refs/heads/{name}" in self.repo.git.references:
            name += "-1"
        self.repo.git.create_reference(f"refs/heads/{name}", local_tip)
        log.warning("the remote's branch %s was rewritten (now %s); the local work is replayed on it "
                    "and kept as it was on branch %s in %s", self.repo.branch, str(remote_tip)[:10], name,
                    self.repo.path)
        if self.conflict_report is not None:
            self.conflict_report.conflicts([f"local history saved on branch {name}"], remote_tip)

    # -- at unmount ------------------------------------------------------------------

    def final(self, seconds: float) -> None:
        """Commit everything, then push if the remote answers within `seconds`."""
        with self.state.frozen():
            self.commit_pending()
        if self.repo.count_ahead() == 0 and self.repo.remote_tip() is not None:
            return
        pusher = threading.Thread(target=self._push_quietly, name="FinalPush", daemon=True)
        pusher.start()
        pusher.join(seconds)
        if pusher.is_alive():
            log.warning("unmount: push did not finish in time; the next mount pushes it")

    def _push_quietly(self) -> None:
        try:
            self.sync_with_remote()
        except RemoteError as error:
            log.warning("unmount: %s; the next mount pushes it", error)


def _some(paths: set[str], count: int = 5) -> str:
    """A few of the paths, for a log line that stays one line."""
    shown = ", ".join(_short(path) for path in sorted(paths)[:count])
    return shown + (f" and {len(paths) - count} more" if len(paths) > count else "")


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit // 2]}...{text[-limit // 2:]}"
