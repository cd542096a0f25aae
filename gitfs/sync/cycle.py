"""SyncCycle: one synchronous sync, commit -> fetch -> accept mine -> apply -> push.

No timing here: the sync worker decides when a cycle runs, and a test runs one on two
real clones and a bare remote. A cycle runs in its caller's thread; only final(), at
unmount, pushes from a thread of its own, so that a remote that does not answer holds
the unmount for a bounded time. Local work (committing the working
tree, bringing the remote's changes into it) runs under SyncState.frozen(); fetch
and push run outside it, so no FUSE call ever waits on the network.

Parts with a job of their own: failed_writes.py (files left out of commits until written
again), slow_saves.py (a document a save renamed away: its deletion waits), and
replacement_push.py (after the server refused a push, one commit in place of the rest).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import Callable, Optional, Protocol

import pygit2

from gitfs.lfs import checkout as lfs_checkout
from gitfs.lfs import placeholders as lfs_placeholders
from gitfs.lfs.content import LfsContent
from gitfs.repo.errors import LocalWriteError, PushRefused, PushRejected, RemoteError
from gitfs.repo.merging.accept_mine import replay_local_commits
from gitfs.repo.merging.rescue import save_local_history
from gitfs.repo.repository import Repository
from gitfs.repo.workdir.hard_links import other_names
from gitfs.repo.workdir.ignore import IgnoreRules, is_gitignore
from gitfs.repo.workdir.worktree import (
    TreeChanges,
    WorktreeKernelView,
    apply_changes,
    differing_paths,
    named_in,
    rewrite,
    tree_changes,
)
from gitfs.sync.failed_writes import FailedWrites
from gitfs.sync.jobs import CommitJob, PendingJobs, batch_message, describe_batch, job_paths
from gitfs.sync.metrics import Metrics
from gitfs.sync.remote_link import RemoteLink
from gitfs.sync.replacement_push import push_replacement
from gitfs.sync.slow_saves import SAVE_WAIT, SlowSaves
from gitfs.sync.state import SyncState

log = logging.getLogger(__name__)

PUSH_RACE_RETRIES = 5
# Where the merge waiting for an open file to close waits for its push; not a branch either.
WAITING_REF = "refs/gitfs/waiting"


class MergeReport(Protocol):
    """Where the cycle reports what the merge with the remote's changes kept and saved."""

    def conflicts(self, paths: list[str], remote_commit: pygit2.Oid) -> None: ...
    def rescued(self, branch: str, saved: pygit2.Oid, *, timestamp: Optional[float] = None) -> None: ...


@dataclass(frozen=True)
class CycleResult:
    committed: Optional[pygit2.Oid] = None  # the local commit this cycle made
    pushed: Optional[pygit2.Oid] = None  # the tip the remote now has from us
    conflicts: tuple[str, ...] = ()  # files whose local version won over the remote's
    waiting_for: tuple[str, ...] = ()  # open files the remote's change touches: not applied yet
    saves_awaited: tuple[str, ...] = ()  # documents renamed away by a save: their deletion waits

    @property
    def complete(self) -> bool:
        return not self.waiting_for and not self.saves_awaited


@dataclass(frozen=True)
class Applied:
    """What _bring_in changed in the working tree, or the open files it waits for."""

    paths: set[str] = dataclasses.field(default_factory=set)  # every path changed
    removed: list[str] = dataclasses.field(default_factory=list)  # removed or replaced (apply_changes)
    waiting_for: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpenFiles:
    """What the cycle needs to know of the files open in current/."""

    paths: Callable[[], set[str]]  # every open path
    dirty_paths: Callable[[], list[str]]  # written while open, not yet released


class LfsSwitch(Protocol):
    """Git LFS to turn on for the .gitattributes among changed paths, if they bring the
    first filter=lfs rule (lfs/setup.py: LfsRules)."""

    def adopted(self, changed: Collection[str]) -> Optional[LfsContent]: ...


class _LfsStaysOff:
    def adopted(self, changed: Collection[str]) -> Optional[LfsContent]:
        return None


LFS_STAYS_OFF = _LfsStaysOff()  # a cycle built without a mount's LfsRules (tests of the cycle)


class SyncCycle:
    def __init__(self, repo: Repository, state: SyncState, jobs: PendingJobs, remote: RemoteLink, *,
                 signature: Callable[[], pygit2.Signature], open_files: OpenFiles,
                 conflicts: MergeReport, metrics: Metrics, kernel: WorktreeKernelView, ignore_rules: IgnoreRules,
                 lfs_rules: LfsSwitch = LFS_STAYS_OFF, failed_writes: Optional[FailedWrites] = None,
                 save_wait: float = SAVE_WAIT):
        self.repo = repo
        self.state = state
        self.jobs = jobs
        self.remote = remote
        self.signature = signature
        self.open_files = open_files
        self.conflict_report = conflicts
        self.metrics = metrics
        self.kernel = kernel  # told of every path the remote's changes replace in current/
        self.ignore_rules = ignore_rules  # follows the negations of the .gitignore files
        self.lfs_rules = lfs_rules  # turns Git LFS on when a .gitattributes brings the first filter=lfs rule
        self._known_remote = repo.remote_tip()  # the remote's tip as this mount last saw it
        self._refused: Optional[PushRefused] = None  # the server's last refusal, until a push is taken
        self.failed_writes = failed_writes or FailedWrites()  # files left out of commits until written again
        self.slow_saves = SlowSaves(repo, age=jobs.age, wait=save_wait)  # documents a save renamed away
        self._brought_in: set[str] = set()  # paths the remote's changes wrote this cycle: checked at its end
        # While the remote's change waits for an open file, the merge of the local commits on
        # it is pushed all the same: (the local tip merged, the merge), until the branch moves.
        self._waiting: Optional[tuple[pygit2.Oid, pygit2.Oid, list[str]]] = None  # and its conflicts
        self._pushed_waiting: Optional[pygit2.Oid] = None  # the last local tip whose merge went out so
        self._said_differing = False  # the working tree or the kernel was found behind the branch once

    @property
    def left_uncommitted(self) -> int:
        """Changes on disk left uncommitted on purpose (a read-only mount's: read_only.py)."""
        return 0

    # -- the cycle ----------------------------------------------------------------

    def run(self, *, commit: bool = True, include_open: bool = False, hold: Collection[str] = ()) -> CycleResult:
        """Commit the pending jobs (unless a file is being written: commit=False), then
        bring the remote's changes in and push. Jobs for the paths in `hold` (files open
        for writing: "/a/b") or above them stay pending. RemoteError if the remote failed."""
        committed = None
        # Git LFS: working files left as pointers get the objects that came since.
        filled = lfs_placeholders.fill_placeholders(self.repo, self.state.frozen)
        if filled:
            self.kernel.changed(filled, filled)  # new files under those names
        if commit:
            pending = self.jobs.paths()
            self._follow_lfs_rules(pending)  # a .gitattributes written through the mount
            self.repo.prepare_staging(pending)  # big LFS files hashed before the freeze
            with self.state.frozen():
                committed = self.commit_pending(include_open=include_open, hold=hold)
        try:
            result = self.sync_with_remote(hold=hold)
        finally:
            self.check_brought_in()
        return dataclasses.replace(result, committed=committed, saves_awaited=self.slow_saves.awaited)

    def commit_pending(self, include_open: bool = False, hold: Collection[str] = (),
                       await_saves: bool = True) -> Optional[pygit2.Oid]:
        """Commit what the working tree holds for the pending jobs (caller holds frozen()),
        but for the jobs that touch a path in `hold`, and (await_saves) those that delete a
        document a save renamed away (slow_saves.py): they stay pending."""
        taken = self.jobs.take()
        waiting: list[CommitJob] = []  # given back: they wait for a save or a file open
        try:
            jobs = taken
            if await_saves:
                jobs, awaited = self.slow_saves.split(jobs)
                waiting += awaited
            if hold:
                open_paths = [path.strip("/") for path in hold]
                touches = [any(_under(path, set(job_paths([job]))) for path in open_paths) for job in jobs]
                waiting += [job for job, held in zip(jobs, touches) if held]
                jobs = [job for job, held in zip(jobs, touches) if not held]
            return self._commit_taken(jobs, include_open)
        except BaseException:
            waiting = taken  # whichever step failed, the whole batch is pending again
            raise
        finally:  # the commit is on the branch now (counted as not pushed), or the jobs are back
            if waiting:
                self.jobs.give_back(waiting)
            self.jobs.done()

    def _commit_taken(self, jobs: list[CommitJob], include_open: bool) -> Optional[pygit2.Oid]:
        if include_open:  # release queues them again: committed once more if they change
            jobs += [CommitJob(f"Update {path} (still being written)", add=(path.lstrip("/"),))
                     for path in self.open_files.dirty_paths()]
        self._follow_gitignores(job_paths(jobs))
        index = self.repo.index()
        jobs = [job for job in jobs if not self._only_ignored(job, index)]
        jobs = self._without_failed_writes(jobs)
        if not jobs:
            return None
        started = time.monotonic()
        oid, message = self._stage_and_commit(jobs)  # a failure: commit_pending gives the batch back
        if oid is not None:
            self.metrics.commit(time.monotonic() - started)
            log.info("committed %s: %s", str(oid)[:10], message)
        return oid

    def commit_everything(self, jobs_for: Callable[[list[str]], list[CommitJob]]) -> Optional[pygit2.Oid]:
        """Commit every change the working tree holds (a crash left them uncommitted)."""
        with self.state.frozen():
            try:
                changed = self.repo.changed_paths()
            except LocalWriteError as error:  # libgit2's status could not read the tree
                log.error("cannot list the working tree's changes (%s); committing it as a whole", _short(str(error)))
                self._stage(None)
                return self.repo.commit_index("Update the working tree", self.signature())
            for job in jobs_for(changed):
                self.jobs.put(job)
            return self.commit_pending()

    def _stage_and_commit(self, jobs: list[CommitJob]) -> tuple[Optional[pygit2.Oid], str]:
        """Commit the batch's paths, with the message of what the commit changes; if that
        fails on this machine, commit the whole working tree instead, so that a local
        commit is never stuck behind a retry. What still fails then (a full disk) goes to
        the caller's back-off."""
        paths = job_paths(jobs)
        # Written through one name of a hard-linked file: every name changed.
        paths |= other_names(self.repo.workdir, paths, {inode for job in jobs for inode in job.linked})
        try:
            self._stage(paths)
            message = describe_batch(jobs, self.repo.staged_changes())
            return self.repo.commit_index(message, self.signature()), message
        except LocalWriteError as error:
            log.error("staging failed (%s) for %s; committing the whole working tree instead",
                      _short(str(error)), _some(paths))
        message = batch_message(jobs)
        self._stage(None)
        return self.repo.commit_index(message, self.signature()), message

    def _stage(self, paths: Optional[set[str]]) -> None:
        """Stage `paths` (None: the whole working tree). Every commit's staging comes here:
        then the files whose last write failed, under every name they have, are put back
        as the branch holds them, however they were staged (a folder renamed, another name
        of the file, the whole tree)."""
        if self.failed_writes.unreadable:  # what the record cannot vouch for waits (failed_writes.py)
            self.failed_writes.recover(self.repo.changed_paths(), self.repo.workdir)
        if paths is None:
            self.repo.stage_everything()
        else:
            self.repo.stage_paths(paths)
        failed = self.failed_writes.paths()
        if failed:
            self.repo.hold_back(failed | other_names(self.repo.workdir, failed))

    def _without_failed_writes(self, jobs: list[CommitJob]) -> list[CommitJob]:
        """The jobs without the files whose last write failed (failed_writes.py): a
        truncated copy is never published; it is committed once written again."""
        failed = self.failed_writes.paths()
        if not failed:
            return jobs
        kept = []
        for job in jobs:
            add = tuple(path for path in job.add if path.strip("/") not in failed)
            if add or job.remove:
                kept.append(job if add == job.add else dataclasses.replace(job, add=add))
        return kept

    def _only_ignored(self, job: CommitJob, index: pygit2.Index) -> bool:
        return all(self.repo.is_ignored(path) and path not in index for path in job.paths)

    def _follow_gitignores(self, changed: Collection[str]) -> None:
        """A .gitignore changed: its negations outrank GitFS's default rules (ignore.py)."""
        if any(is_gitignore(path) for path in changed):
            self.ignore_rules.refresh(self.repo.gitignore_paths() | {p for p in changed if is_gitignore(p)})

    # -- with the remote ----------------------------------------------------------

    def sync_with_remote(self, hold: Collection[str] = ()) -> CycleResult:
        """fetch -> replay local commits on the remote's tip -> push; again on a push race."""
        conflicts: tuple[str, ...] = ()
        last_rejection: Optional[PushRejected] = None
        for _attempt in range(PUSH_RACE_RETRIES):
            remote_tip = self.remote.fetch()
            local_tip = self.repo.branch_tip()
            if remote_tip is not None and local_tip is not None and not self.repo.is_ancestor(remote_tip, local_tip):
                self._prefetch(local_tip, remote_tip)
                integrated = self._integrate(remote_tip, hold)
                if integrated.waiting_for:
                    try:
                        return self._push_waiting(integrated, remote_tip)
                    except PushRejected as rejected:
                        log.info("%s; merging again", rejected)
                        last_rejection = rejected
                        continue
                conflicts += integrated.conflicts
                local_tip = self.repo.branch_tip()
            if local_tip is None or local_tip == remote_tip:
                return CycleResult(conflicts=conflicts)
            try:
                pushed = self._push(local_tip, remote_tip)
            except PushRejected as rejected:
                log.info("%s; merging again", rejected)
                last_rejection = rejected
                continue
            except PushRefused as refused:  # not a race: the worker backs off (sync_worker.py)
                self._refused = refused
                raise
            self._refused = None
            self._known_remote = pushed
            return CycleResult(pushed=pushed, conflicts=conflicts)
        error = RemoteError(f"{last_rejection} ({PUSH_RACE_RETRIES} times in a row)")
        self.remote.push_failed(error)
        raise error

    def _push_waiting(self, waiting: CycleResult, remote_tip: pygit2.Oid) -> CycleResult:
        """The remote's change touches a file open here, so the branch and current/ wait for
        it to close (a log held open for days). The local commits go out all the same: their
        merge on the remote's tip is pushed from a ref of its own, and the remote and every
        colleague have both sides' lines; current/ shows the colleague's once the file is
        closed, and the commits after this merge are replayed from it (the status counts the
        local commits as not pushed until then). Not once the server has refused a push: the
        replacement push (replacement_push.py) takes that case when the branch moves."""
        if self._waiting is None or self._refused is not None:
            return waiting
        local_tip, merged, conflicts = self._waiting
        if merged == remote_tip:
            return waiting
        self.repo.keep_reference(WAITING_REF, merged)
        try:
            self.remote.push(source_ref=WAITING_REF)
        except PushRefused as refused:
            self._refused = refused
            raise
        finally:
            self.repo.drop_reference(WAITING_REF)
        self._known_remote, self._pushed_waiting = merged, local_tip
        if conflicts:  # never again: the commits after this merge are replayed from it
            log.warning("conflicts resolved with the local version: %s", ", ".join(conflicts))
            self.metrics.conflicts(len(conflicts))
            self.conflict_report.conflicts(conflicts, remote_tip)
        log.info("pushed %s, the local commits merged on the remote's; %s in current/ once closed", str(merged)[:10],
                 ", ".join(waiting.waiting_for))
        return dataclasses.replace(waiting, pushed=merged, conflicts=tuple(conflicts))

    def _push(self, local_tip: pygit2.Oid, remote_tip: Optional[pygit2.Oid]) -> pygit2.Oid:
        """Push the branch and return the commit the remote now has. Once the server has
        refused a push, the unpushed commits go as one replacement (replacement_push.py)."""
        if self._refused is None or remote_tip is None or self.repo.count_ahead() < 2:
            self.remote.push()
            log.info("pushed %s", str(local_tip)[:10])
            return local_tip
        return push_replacement(self.repo, self.state, self.remote, self.signature, self._refused,
                                local_tip, remote_tip)

    def _integrate(self, remote_tip: pygit2.Oid, hold: Collection[str] = ()) -> CycleResult:
        """Bring the remote's commits into the branch and the working tree (accept mine);
        nothing while the remote's change touches an open file (see _bring_in)."""
        self.repo.prepare_staging(self.jobs.paths())  # LFS files written since the cycle began
        with self.state.frozen():
            self.commit_pending(hold=hold)
            local_tip = self.repo.branch_tip()
            known, self._known_remote = self._known_remote, remote_tip
            if local_tip is not None and known is not None and not self.repo.is_ancestor(known, remote_tip):
                self._rescue(local_tip, remote_tip)
            conflicts: list[str] = []
            replay_tip = remote_tip
            if local_tip is not None:
                on_remote = self._pushed_waiting if self._pushed_waiting is not None and \
                    self.repo.is_ancestor(self._pushed_waiting, local_tip) else None
                result = replay_local_commits(self.repo, local_tip, remote_tip, self.signature(), on_remote)
                replay_tip, conflicts = result.tip, result.conflicts
                if result.merged:
                    log.info("merged with the remote's lines: %s", ", ".join(result.merged))
            applied = self._bring_in(local_tip, replay_tip, "gitfs: accept mine")
            if applied.waiting_for:
                self._waiting = (local_tip, replay_tip, conflicts) if local_tip is not None else None
                return CycleResult(waiting_for=applied.waiting_for)
            self._waiting = self._pushed_waiting = None
        self._applied(applied)
        if conflicts:
            log.warning("conflicts resolved with the local version: %s", ", ".join(conflicts))
            self.metrics.conflicts(len(conflicts))
            self.conflict_report.conflicts(conflicts, remote_tip)
        return CycleResult(conflicts=tuple(conflicts))

    def _bring_in(self, old_tip: Optional[pygit2.Oid], new_tip: pygit2.Oid, message: str, *,
                  keep: Collection[str] = ()) -> Applied:
        """Move the working tree and then the branch from old_tip to new_tip (caller holds
        frozen()); the paths in `keep`, and below them, stay as the working tree has them.

        A file open in current/ is never changed under a program: the kernel would mix
        cached pages of both versions. If the change touches one, nothing is applied
        and the result names the files to wait for."""
        old_tree = self.repo.root_tree(old_tip) if old_tip is not None else None
        changes = tree_changes(self.repo, old_tree, self.repo.root_tree(new_tip))
        if keep:
            kept = set(keep)
            changes = TreeChanges([entry for entry in changes.deletions if not _under(entry.path, kept)],
                                  [entry for entry in changes.writes if not _under(entry.path, kept)])
        # A document a save renamed away is held as an open file is: written into the gap
        # now, the save's last rename would overwrite it unseen, with no conflict kept.
        held = {path.lstrip("/") for path in self.open_files.paths()} | set(self.slow_saves.awaited)
        busy = changes.paths() & held
        if busy:
            log.info("the remote changed open files or documents being saved (%s); applying once they are done",
                     ", ".join(sorted(busy)))
            return Applied(waiting_for=tuple(sorted(busy)))
        # Working tree first, then the ref: a crash in between leaves changes
        # that the next mount commits again as local ones (they match the remote's).
        removed = apply_changes(self.repo, changes)
        # Before any FUSE call may act on them: an append's offset is the size the kernel
        # holds, and the old one would have it write over the lines that just came in.
        # The names the kernel may hold of what was there before show missing meanwhile (a
        # new file among `removed` is not one of them: it shows as soon as it is written).
        self.kernel.rewritten(changes.paths(), named_in(self.repo, old_tree, removed))
        try:
            self.repo.set_branch_tip(new_tip, message)
            self._follow_gitignores(changes.paths())
        except BaseException:
            self.kernel.settled()  # no _applied() follows
            raise
        return Applied(paths=changes.paths(), removed=removed)

    # -- following the remote: shared by the read-write and the read-only cycle --------

    def _prefetch(self, local_tip: pygit2.Oid, remote_tip: pygit2.Oid) -> None:
        """Git LFS: the remote's new objects, downloaded before the freeze that applies them."""
        lfs_checkout.prefetch(self.repo, self.repo.root_tree(local_tip), self.repo.root_tree(remote_tip))

    def _applied(self, applied: Applied) -> None:
        """After _bring_in, outside frozen(): the kernel told (it takes its lock of each
        parent folder, which a FUSE call in that folder may hold while it waits for
        frozen() to end), and Git LFS turned on if a .gitattributes brought its first rule."""
        self.kernel.changed(applied.paths, applied.removed)
        self._brought_in |= applied.paths
        self._follow_lfs_rules(applied.paths)

    def check_brought_in(self) -> None:
        """At the end of a cycle that brought the remote's changes in: every path they
        wrote holds in the working tree what the branch holds, and the kernel shows it as
        the disk has it. A file written here since (a job queued, open, a failed write) is
        a local change and is left alone. Whatever differs is written again from the
        branch and told to the kernel again, and said loudly once: the next commit would
        otherwise take a colleague's lines out of the remote."""
        paths, self._brought_in = self._brought_in, set()
        if not paths:
            return
        rewritten: list[str] = []
        removed: list[str] = []
        with self.state.frozen():
            tip = self.repo.branch_tip()
            if tip is not None:
                local = self.jobs.paths() | {path.strip("/") for path in self.open_files.paths()} | \
                    self.failed_writes.paths()
                rewritten = differing_paths(self.repo, self.repo.root_tree(tip),
                                            [path for path in paths if not _under(path, local)])
                if rewritten:
                    removed = rewrite(self.repo, self.repo.root_tree(tip), rewritten)
                    self.kernel.rewritten(rewritten)
        if rewritten:
            self._say_differing("the working tree", rewritten)
            self.kernel.changed(set(rewritten), removed)
        received = self.jobs.received
        stale = self.kernel.recheck()
        local = self.jobs.paths() | {path.strip("/") for path in self.open_files.paths()}
        stale = [path for path in stale if not _under(path, local)]
        if stale and self.jobs.received == received:  # no write through the mount meanwhile
            self._say_differing("what the kernel shows of current/", stale)

    def _say_differing(self, what: str, paths: list[str]) -> None:
        """An error the first time (a bug to report), then at debug level: mended each time."""
        level = logging.DEBUG if self._said_differing else logging.ERROR
        self._said_differing = True
        log.log(level, "%s differed from the branch after the remote's changes were applied, at %s; "
                "brought up to date from the branch", what, _some(set(paths)))

    def _follow_lfs_rules(self, changed: Collection[str]) -> None:
        """Git LFS turned on if a changed .gitattributes brings the first filter=lfs rule:
        the working files that hold a pointer's text get their content."""
        adopted = self.lfs_rules.adopted([path.strip("/") for path in changed])
        if adopted is None:
            return
        filled = lfs_checkout.adopt(self.repo, adopted, self.state.frozen)
        if filled:
            self.kernel.changed(filled, filled)

    def _rescue(self, local_tip: pygit2.Oid, remote_tip: pygit2.Oid) -> None:
        """The remote's branch was rewritten (force-push, or deleted and recreated): the
        replay keeps the local work on the branch, and a rescue branch in the clone
        keeps the local history as it was, in case the replay is not what the user wants."""
        rescue = save_local_history(self.repo, local_tip)
        log.warning("the remote's branch %s was rewritten (now %s); the local work is replayed on it "
                    "and kept as it was on branch %s in %s", self.repo.branch, str(remote_tip)[:10], rescue.branch,
                    self.repo.path)
        self.conflict_report.rescued(rescue.branch, rescue.saved, timestamp=rescue.timestamp)

    # -- at unmount ------------------------------------------------------------------

    def final(self, seconds: float, on_committed: Callable[[], None] = lambda: None) -> None:
        """Commit everything (a save still in progress too), then push if the remote
        answers within `seconds`."""
        with self.state.frozen():
            self.commit_pending(await_saves=False)
        on_committed()
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


def _under(path: str, folders: set[str]) -> bool:
    """Whether path is one of `folders` or below one of them."""
    parts = path.split("/")
    return any("/".join(parts[:depth]) in folders for depth in range(1, len(parts) + 1))


def _some(paths: set[str], count: int = 5) -> str:
    """A few of the paths, for a log line that stays one line."""
    shown = ", ".join(_short(path) for path in sorted(paths)[:count])
    return shown + (f" and {len(paths) - count} more" if len(paths) > count else "")


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit // 2]}...{text[-limit // 2:]}"
