"""Mount: builds the views, router and workers from Options and owns their lifecycle."""

from __future__ import annotations

import functools
import logging
import time
from typing import Optional

import pygit2

from gitfs.cache_policy import HistoryForgetter, VersionsForgetter, WorktreeForgetter, mount_prefix
from gitfs.fuse_binding import KernelCache
from gitfs.handles import HandleTable
from gitfs.lfs import checkout as lfs_checkout
from gitfs.lfs import setup as lfs_setup
from gitfs.lfs.worktree import LfsWorktree
from gitfs.options import Options
from gitfs.repo import libgit2
from gitfs.repo.errors import PathNotFound
from gitfs.repo.history.days import CommitDays, day_and_name
from gitfs.repo.history.versions import FileVersions
from gitfs.repo.merging.conflicts import ConflictLog
from gitfs.repo.merging.rescue import saved_histories
from gitfs.repo.remote import transfer as remote_ops
from gitfs.repo.repository import Repository
from gitfs.repo.tidying.housekeeping import Housekeeper
from gitfs.repo.workdir.ignore import IgnoreRules
from gitfs.router import Router
from gitfs.routes import CONFLICTS_DIR, GITFS_DIR, VERSIONS_DIR, build_routes
from gitfs.sync.cycle import OpenFiles, SyncCycle
from gitfs.sync.failed_writes import FailedWrites, record_in
from gitfs.sync.fetch_worker import FetchWorker
from gitfs.sync.jobs import CommitJob, PendingJobs
from gitfs.sync.metrics import Metrics
from gitfs.sync.push_progress import PushProgress
from gitfs.sync.read_only import ReadOnlyCycle
from gitfs.sync.remote_link import RemoteLink
from gitfs.sync.slow_saves import SAVE_WAIT
from gitfs.sync.state import SyncState
from gitfs.sync.status import ConflictRecorder, SyncStatus
from gitfs.sync.sync_worker import SyncWorker
from gitfs.views.base import Owner, statvfs_dict
from gitfs.views.blob import BlobTemplates
from gitfs.views.commit import CommitView
from gitfs.views.commit_link import CommitLinkView
from gitfs.views.conflicts import ConflictsView
from gitfs.views.current import CurrentView
from gitfs.views.generated_files import METRICS_FILE, STATUS_FILE, GeneratedFilesView
from gitfs.views.history import DayView, HistoryView
from gitfs.views.index import IndexView
from gitfs.views.listed_attributes import ListedAttributes
from gitfs.views.versions import VersionsView
from gitfs.working_dirs import working_dirs

log = logging.getLogger(__name__)

UNMOUNT_PUSH_SECONDS = 30.0  # the final push's deadline, once the last commit is made


def recovered_jobs(paths: list[str]) -> list[CommitJob]:
    """Changes found on disk at start (left by a crash): one job per path."""
    return [CommitJob(f"Update /{path}", add=(path,)) for path in paths]


class Mount:
    """Builds the views, router and workers from Options; owns their lifecycle."""

    def __init__(self, options: Options, repo: Repository, owner: Owner, credentials: remote_ops.Credentials,
                 *, ignore_rules: IgnoreRules, on_ready=None):
        self.options = options
        self.repo = repo
        self.owner = owner
        self.on_ready = on_ready
        self.mount_time = int(time.time())
        self.handles = HandleTable()
        self.listed_attributes = ListedAttributes()  # current/: which listings carry attributes
        self.jobs = PendingJobs()
        # Files whose last write failed: left out of commits, named in the status.
        self.failed_writes = FailedWrites(record_in(repo.git.path))
        # Idle after min_idle_times quiet sync periods, as the original (at least 1 s).
        self.state = SyncState(idle_after=max(options.min_idle_times * options.sync_timeout, 1.0))
        self.days = CommitDays(repo.branch_tip, repo.walk_commits, repo.is_ancestor,
                               moves=lambda: repo.branch_moves, indexed=libgit2.release_free_memory)
        self.kernel = KernelCache(options.mount_point)
        self.worktree_kernel = WorktreeForgetter(self.kernel, mount_prefix(options.current_path), repo.workdir)
        self.history_kernel = HistoryForgetter(self.kernel, mount_prefix(options.history_path),
                                               new_days=self._days_between, all_days=self.days.days,
                                               indexed_days=self.days.indexed_days, commits_of=self.days.names)
        repo.on_branch_moved = self.history_kernel.branch_moved
        self.push_progress = PushProgress()  # written by the remote link, read by the status and metrics
        self.status = SyncStatus(remote=remote_ops.redact_url(options.remote_url), branch=repo.branch,
                                 pending=self.pending, read_only=options.read_only, repo_path=repo.path,
                                 committing=self.committing, pushing=self.push_progress.current,
                                 failed_writes=self.failed_writes.entries,
                                 writing=lambda: self.sync_worker.writing_status())
        self.conflict_log = ConflictLog(repo)
        self.versions = FileVersions(repo)
        self.versions_kernel = VersionsForgetter(self.kernel, f"/{GITFS_DIR}/{VERSIONS_DIR}")
        self.metrics = Metrics(pending=self.pending, committing=self.committing, pushing=self.push_progress)
        # Git LFS: a pointer blob of a filter=lfs path reads as its object (gitfs/lfs); on
        # from the start if the branch has a filter=lfs rule, else once one arrives (lfs_rules).
        lfs_rules = lfs_setup.rules_for(repo, options.remote_url, credentials=credentials, enabled=options.lfs,
                                        url_option=options.lfs_url, on_missing=self._lfs_missing,
                                        on_found=self.status.lfs_found, on_transfer=self.metrics.lfs_transfer)
        lfs_rules.start()
        lfs_checkout.check_out_tip(repo)  # the working tree's LFS files hold their content
        remote = RemoteLink(repo, credentials, status=self.status, metrics=self.metrics, progress=self.push_progress)
        # A read-only mount follows the remote and never commits or pushes (read_only.py).
        cycle_kind = ReadOnlyCycle if options.read_only else SyncCycle
        self.cycle = cycle_kind(repo, self.state, self.jobs, remote, signature=self.signature,
                                open_files=OpenFiles(paths=self.handles.open_paths,
                                                     dirty_paths=self.handles.dirty_paths),
                                conflicts=ConflictRecorder(self.conflict_log, self.status, saved_histories(repo)),
                                metrics=self.metrics,
                                kernel=self.worktree_kernel, ignore_rules=ignore_rules, lfs_rules=lfs_rules,
                                failed_writes=self.failed_writes,
                                save_wait=max(SAVE_WAIT, 10 * options.sync_timeout))
        self.sync_worker = SyncWorker(self.cycle, self.jobs, self.state, writers=self.writers,
                                      dirty_open_paths=self.handles.dirty_paths, sync_timeout=options.sync_timeout,
                                      recover=recovered_jobs, writing=self.writing,
                                      wait_released=self.handles.wait_released, final_seconds=UNMOUNT_PUSH_SECONDS,
                                      committable=repo.committable, max_sync_delay=options.max_sync_delay,
                                      housekeeping=Housekeeper(repo.path, pushed=lambda: repo.count_ahead() == 0,
                                                               exclusive=remote.quiet, tidied=repo.release_caches))
        self.fetch_worker = FetchWorker(remote, self.state, fetch_timeout=options.fetch_timeout,
                                        idle_fetch_timeout=options.idle_fetch_timeout,
                                        on_remote_moved=self.sync_worker.wake, on_idle=self.release_idle)
        routes = build_routes(Views(self), current_path=options.current_path, history_path=options.history_path)
        self.router = Router(routes, cache_size=options.cache_size, touch=self.state.touch,
                             on_init=self.start, on_destroy=self.stop,
                             disk_figures=functools.partial(statvfs_dict, repo.workdir),
                             kernel_cached_dirs=mount_prefix(options.history_path),
                             extended_attributes=options.xattr)

    def release_idle(self) -> None:
        """An idle mount gives memory back: the kernel's names below history/, each file's
        versions (and the kernel's names of those listed), then libgit2's caches."""
        started = time.monotonic()
        told = self.history_kernel.forget_names(working_dirs(self.options.mount_point))
        log.debug("idle: the kernel told to forget %d names below history/ (%.2f s)", told,
                  time.monotonic() - started)
        folders = self.versions_kernel.folders(self.versions.kept_paths())  # before they go: see folders()
        dropped = self.versions.release()
        self.versions_kernel.forget(dropped, folders)
        log.debug("idle: the versions of %d files let go", len(dropped))
        self.repo.release_caches()

    def _days_between(self, old: pygit2.Oid, new: pygit2.Oid) -> Optional[set[str]]:
        """The days of the commits from old to new; None if new does not descend from old."""
        if not self.repo.is_ancestor(old, new):
            return None
        return {day_and_name(str(oid), when)[0] for oid, when in self.repo.walk_commits(new, old)}

    def writers(self) -> tuple[int, float]:
        """The files being written, for the sync worker: only those it would commit. An
        editor's swap file, open for writing as long as the editor runs, or a file in an
        ignored folder, holds nothing back."""
        return self.handles.writers(counts=self.repo.would_commit)

    def writing(self) -> dict[int, str]:
        """The files open for writing that a sync asked for now waits for: the same ones."""
        return {number: path for number, path in self.handles.writing().items() if self.repo.would_commit(path)}

    def _lfs_missing(self, path: str, oid: str, why: str) -> None:
        self.status.lfs_missing(path, oid, why)
        self.metrics.lfs_missing()

    def signature(self) -> pygit2.Signature:
        return pygit2.Signature(self.options.commiter_name, self.options.commiter_email)

    def pending(self) -> dict:
        """What is not on the remote yet, for the status file (an ignored file never will be)."""
        # Read before the branch: a batch is done being committed only once its commit is
        # on the branch, so a change is always counted on one side or the other.
        waiting, committing = self.jobs.uncommitted()
        changed = waiting | {path.strip("/") for path in self.handles.dirty_paths()}
        # The batch being committed is counted whole, without asking the ignore rules of
        # each path again: with a status read every 50 ms, that took the GIL from the
        # staging of a 2,700-path batch long enough to make its commit take 70 s, not 40.
        return {"commits_not_pushed": self.repo.count_ahead(),
                "changes_not_committed": len(self.repo.committable(changed)) + len(committing - changed)
                + self.cycle.left_uncommitted}

    def committing(self) -> int:
        """The changes of the batch being staged and committed now (also in changes_not_committed)."""
        return len(self.jobs.committing())

    def start(self) -> None:
        """FUSE init: after any fork, so the threads live in the mounting process."""
        self.kernel.attach()
        self.sync_worker.start()
        self.fetch_worker.start()
        log.info("mounted %s (branch %s) on %s", remote_ops.redact_url(self.options.remote_url),
                 self.repo.branch, self.options.mount_point)
        if self.on_ready:
            self.on_ready()

    def stop(self) -> None:
        """FUSE destroy: the sync worker commits what is pending, however long that takes,
        and pushes it if the remote answers in time. A push stuck longer than that (a
        network call that hangs) is left behind: the commit is in the clone, and the next
        mount pushes it."""
        self.kernel.detach()  # unmounted: nothing is cached any more
        self.fetch_worker.stop(timeout=10)
        self.sync_worker.stop(timeout=UNMOUNT_PUSH_SECONDS + 10)
        log.info("unmounted %s", self.options.mount_point)

    def fuse_options(self) -> dict[str, object]:
        options = self.options
        fuse_kwargs: dict[str, object] = {
            "foreground": True, "fsname": remote_ops.redact_url(options.remote_url).replace(",", "_"),
            "subtype": "gitfs", "allow_other": options.allow_other,
            "allow_root": options.allow_root and not options.allow_other,
            # Explicit: libfuse 3.14 prints a bogus warning for its own default.
            "max_threads": 16, "max_idle_threads": 8,
        }
        if options.allow_other:
            fuse_kwargs["default_permissions"] = True
        if options.read_only:
            fuse_kwargs["ro"] = True
        return fuse_kwargs


class Views:
    """Builds each view with what it needs (routes.ViewFactory): one builder per route."""

    def __init__(self, mount: Mount):
        self.options = mount.options
        self.owner = mount.owner
        self.repo = mount.repo
        self.handles = mount.handles
        self.listed_attributes = mount.listed_attributes
        self.sync_state = mount.state
        self.jobs = mount.jobs
        self.failed_writes = mount.failed_writes
        self.days = mount.days
        self.sync_status = mount.status
        self.metrics = mount.metrics
        self.conflict_log = mount.conflict_log
        self.file_versions = mount.versions
        self.mount_time = mount.mount_time
        self.worktree_kernel = mount.worktree_kernel
        self.worktree_filter = LfsWorktree(mount.repo)  # Git LFS's answers about working files
        self.blob_templates = BlobTemplates(mount.owner)  # the commit folders' listings' attributes

    def status(self) -> GeneratedFilesView:
        files = {STATUS_FILE: self.sync_status.render, METRICS_FILE: self.metrics.render}
        return GeneratedFilesView(self.owner, files, self.handles, mount_time=self.mount_time,
                                  folders=(CONFLICTS_DIR, VERSIONS_DIR))

    def versions(self) -> VersionsView:
        return VersionsView(self.owner, self.repo, self.file_versions, self.handles, mount_time=self.mount_time)

    def conflicts(self) -> ConflictsView:
        return ConflictsView(self.owner, self.conflict_log, self.repo, self.handles, mount_time=self.mount_time)

    def current(self) -> CurrentView:
        extra = (self.options.history_path,) if not self.options.current_path else ()
        return CurrentView(self.owner, self.repo.workdir, self.handles, self.sync_state, self.jobs,
                           max_size=self.options.max_size_bytes, extra_root_entries=extra,
                           kernel=self.worktree_kernel, worktree_filter=self.worktree_filter,
                           listed=self.listed_attributes, failed_writes=self.failed_writes)

    def index(self) -> IndexView:
        return IndexView(self.owner, entries=[self.options.current_path, self.options.history_path],
                         mount_time=self.mount_time)

    def history(self) -> HistoryView:
        return HistoryView(self.owner, self.days, mount_time=self.mount_time, folder=self.blob_templates.folder)

    def day(self, day: str) -> DayView:
        return DayView(self.owner, self.days, day, folder=self.blob_templates.folder)

    def commit(self, day: str, name: str) -> CommitView:
        found = self.days.commit(day, name)
        if found is None:
            raise PathNotFound(f"{day}/{name}")  # the router answers ENOENT
        commit, commit_time = found
        return CommitView(self.owner, self.repo, self.handles, commit=commit, commit_time=commit_time,
                          templates=self.blob_templates)

    def commit_link(self, sha: str) -> CommitLinkView:
        return CommitLinkView(self.owner, self.days, sha=sha)
