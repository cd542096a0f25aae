"""ReadOnlyCycle: what a sync does on a read-only mount (`-o ro`): follow the remote.

It fetches and fast-forwards the branch and the working tree to the remote's tip, so
current/ and history/ show the remote's changes (Git LFS files with their content, as
on a read-write mount: SyncCycle's run and its steps to follow the remote are shared);
it never commits and never pushes.
Changes a crash left uncommitted in the clone stay as they are, for the next
read-write mount to commit (as local changes: where the remote changed the same file,
the local one wins then, as it would have). Local commits the remote lacks (a push
that never happened) stay unpushed; while there are any, the remote's changes cannot
be shown without a merge commit, so they wait for a read-write mount too.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Callable, Optional

import pygit2

from gitfs.sync.cycle import CycleResult, SyncCycle
from gitfs.sync.jobs import CommitJob

log = logging.getLogger(__name__)


class ReadOnlyCycle(SyncCycle):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._leftovers: set[str] = set()  # uncommitted changes found in the clone at start
        self._diverged_at: Optional[pygit2.Oid] = None  # the remote tip last reported as not shown

    @property
    def left_uncommitted(self) -> int:
        return len(self._leftovers)

    def commit_everything(self, jobs_for: Callable[[list[str]], list[CommitJob]]) -> Optional[pygit2.Oid]:
        """At start: commits nothing; notes what a crash left uncommitted, to keep it as it is."""
        with self.state.frozen():
            self._leftovers = set(self.repo.changed_paths())
        if self._leftovers:
            log.warning("read-only mount: %d uncommitted changes in %s (left by an earlier mount) are kept "
                        "for the next read-write mount to commit", len(self._leftovers), self.repo.path)
        return None

    def commit_pending(self, include_open: bool = False, hold: Collection[str] = (),
                       await_saves: bool = True) -> Optional[pygit2.Oid]:
        """Nothing is committed here (no write reaches the working tree through the mount)."""
        return None

    def sync_with_remote(self, hold: Collection[str] = ()) -> CycleResult:
        """Fetch, and fast-forward to the remote's tip if it is ahead, as the read-write
        cycle brings the remote in (Git LFS objects first, placeholders filled, LFS turned
        on by a first rule). RemoteError if the fetch failed."""
        remote_tip = self.remote.fetch()
        local_tip = self.repo.branch_tip()
        if remote_tip is None or local_tip is None or self.repo.is_ancestor(remote_tip, local_tip):
            return CycleResult()
        if not self.repo.is_ancestor(local_tip, remote_tip):
            if self._diverged_at != remote_tip:  # once per remote tip, not once per fetch
                self._diverged_at = remote_tip
                log.warning("read-only mount: the clone has local commits the remote lacks (%d), so the remote's "
                            "changes (%s) show after a read-write mount has merged and pushed them",
                            self.repo.count_ahead(), str(remote_tip)[:10])
            return CycleResult()
        self._prefetch(local_tip, remote_tip)
        with self.state.frozen():
            applied = self._bring_in(local_tip, remote_tip, "gitfs: fast-forward (read-only mount)",
                                     keep=self._leftovers)
        if applied.waiting_for:
            return CycleResult(waiting_for=applied.waiting_for)
        self._applied(applied)
        log.info("read-only mount: now at the remote's %s", str(remote_tip)[:10])
        return CycleResult()

    def final(self, seconds: float, on_committed: Callable[[], None] = lambda: None) -> None:
        """At unmount: nothing to commit or push."""
        on_committed()
