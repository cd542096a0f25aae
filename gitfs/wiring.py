"""Mount: builds the views, router and workers from Options and owns their lifecycle."""

from __future__ import annotations

import errno
import functools
import logging
import time
from collections.abc import Collection
from typing import Optional

import pygit2
from mfusepy import FuseOSError

from gitfs.fuse_binding import KernelCache
from gitfs.handles import HandleTable
from gitfs.lfs import attributes
from gitfs.lfs import checkout as lfs_checkout
from gitfs.lfs import setup as lfs_setup
from gitfs.options import Options
from gitfs.repo import libgit2
from gitfs.repo import remote as remote_ops
from gitfs.repo.conflicts import ConflictLog
from gitfs.repo.days import CommitDays, day_and_name
from gitfs.repo.ignore import IgnoreRules
from gitfs.repo.repository import Repository
from gitfs.repo.rescue import saved_histories
from gitfs.repo.versions import FileVersions
from gitfs.router import Router
from gitfs.routes import CONFLICTS_DIR, VERSIONS_DIR, build_routes
from gitfs.sync.cycle import OpenFiles, SyncCycle
from gitfs.sync.fetch_worker import FetchWorker
from gitfs.sync.jobs import CommitJob, PendingJobs
from gitfs.sync.metrics import Metrics
from gitfs.sync.read_only import ReadOnlyCycle
from gitfs.sync.remote_link import RemoteLink
from gitfs.sync.state import SyncState
from gitfs.sync.status import ConflictRecorder, SyncStatus
from gitfs.sync.sync_worker import SyncWorker
from gitfs.views.base import Owner, statvfs_dict
from gitfs.views.commit import CommitView
from gitfs.views.commit_link import CommitLinkView
from gitfs.views.conflicts import ConflictsView
from gitfs.views.current import CurrentView
from gitfs.views.history import HistoryView
from gitfs.views.index import IndexView
from gitfs.views.status import METRICS_FILE, STATUS_FILE, StatusView
from gitfs.views.versions import VersionsView

log = logging.getLogger(__name__)

UNMOUNT_PUSH_SECONDS = 30.0  # the final cycle's deadline, from when it starts


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
        self.jobs = PendingJobs()
        # Idle after min_idle_times quiet sync periods, as the original (at least 1 s).
        self.state = SyncState(idle_after=max(options.min_idle_times * options.sync_timeout, 1.0))
        self.days = CommitDays(repo.branch_tip, repo.walk_commits, repo.is_ancestor,
                               moves=lambda: repo.branch_moves, indexed=libgit2.release_free_memory)
        self.kernel = KernelCache(options.mount_point)
        self.worktree_kernel = WorktreeKernelCache(self.kernel, mount_prefix(options.current_path))
        repo.on_branch_moved = self._branch_moved
        self.status = SyncStatus(remote=remote_ops.redact_url(options.remote_url), branch=repo.branch,
                                 pending=self.pending, read_only=options.read_only, repo_path=repo.path)
        self.conflict_log = ConflictLog(repo)
        self.versions = FileVersions(repo)
        self.metrics = Metrics(pending=self.pending)
        # Git LFS: a pointer blob of a filter=lfs path reads as its object (gitfs/lfs).
        repo.lfs = lfs_setup.content_for(repo, options.remote_url, credentials=credentials, enabled=options.lfs,
                                         url_option=options.lfs_url, on_missing=self._lfs_missing,
                                         on_found=self.status.lfs_found, on_transfer=self.metrics.lfs_transfer)
        lfs_checkout.check_out_tip(repo)  # the working tree's LFS files hold their content
        remote = RemoteLink(repo, credentials, status=self.status, metrics=self.metrics)
        # A read-only mount follows the remote and never commits or pushes (read_only.py).
        cycle_kind = ReadOnlyCycle if options.read_only else SyncCycle
        self.cycle = cycle_kind(repo, self.state, self.jobs, remote, signature=self.signature,
                                open_files=OpenFiles(paths=self.handles.open_paths,
                                                     dirty_paths=self.handles.dirty_paths),
                                conflicts=ConflictRecorder(self.conflict_log, self.status, saved_histories(repo)),
                                metrics=self.metrics,
                                kernel=self.worktree_kernel, ignore_rules=ignore_rules)
        self.sync_worker = SyncWorker(self.cycle, self.jobs, self.state, writers=self.writers,
                                      dirty_open_paths=self.handles.dirty_paths, sync_timeout=options.sync_timeout,
                                      recover=recovered_jobs, writing=self.writing,
                                      wait_released=self.handles.wait_released, final_seconds=UNMOUNT_PUSH_SECONDS)
        self.fetch_worker = FetchWorker(remote, self.state, fetch_timeout=options.fetch_timeout,
                                        idle_fetch_timeout=options.idle_fetch_timeout,
                                        on_remote_moved=self.sync_worker.wake)
        routes = build_routes(Views(self), current_path=options.current_path, history_path=options.history_path)
        self.router = Router(routes, cache_size=options.cache_size, touch=self.state.touch,
                             on_init=self.start, on_destroy=self.stop,
                             disk_figures=functools.partial(statvfs_dict, repo.workdir),
                             kernel_cached_dirs=mount_prefix(options.history_path))

    def _branch_moved(self, old: Optional[pygit2.Oid], new: pygit2.Oid) -> None:
        """New commits: the kernel keeps the listings of history/ and its days (see
        GitFSFUSE.opendir) and their attributes, so it forgets those that changed."""
        if not self.kernel.active:
            return
        history = mount_prefix(self.options.history_path)
        if old is not None and self.repo.is_ancestor(old, new):
            days = {day_and_name(str(oid), when)[0] for oid, when in self.repo.walk_commits(new, old)}
        else:  # rewritten: any day may have lost or gained commits
            days = set(self.days.days())
        self.kernel.invalidate([history, *(f"{history}/{day}" for day in sorted(days))])

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
        changed = self.jobs.paths() | {path.strip("/") for path in self.handles.dirty_paths()}
        return {"commits_not_pushed": self.repo.count_ahead(),
                "changes_not_committed": len(self.repo.committable(changed)) + self.cycle.left_uncommitted}

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
        """FUSE destroy: the sync worker commits what is pending and pushes it if the remote
        answers in time. A worker stuck longer than that (a network call that hangs) is left
        behind: whatever it had not committed is on disk, and the next mount commits it."""
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


def mount_prefix(folder: str) -> str:
    """The mount path of a top folder option (`current`, `history`); "" for `/` (the root)."""
    folder = folder.strip("/")
    return f"/{folder}" if folder else ""


class WorktreeKernelCache:
    """The kernel's cache of current/ (worktree.WorktreeKernelView): relative paths of
    the working tree to mount paths, for KernelCache."""

    def __init__(self, kernel: KernelCache, prefix: str):
        self.kernel = kernel
        self.prefix = prefix  # "/current", or "" when current_path=/

    def _mount_path(self, relative: str) -> str:
        relative = relative.strip("/")
        return f"{self.prefix}/{relative}" if relative else (self.prefix or "/")

    def forget_attributes(self, paths: Collection[str]) -> None:
        """views.links.KernelAttributes (from a FUSE call): paths of current/ ("/d/f") whose
        attributes changed."""
        self.kernel.invalidate_while_serving([self._mount_path(path) for path in paths])

    def changed(self, paths: Collection[str], removed: Collection[str]) -> None:
        gone = set(removed)
        # The highest removed paths only: forgetting a folder's name forgets all below it.
        tops = [path for path in sorted(gone) if not any(parent in gone for parent in _parents(path))]
        # Node ids of their folders, which exist now (a removed one would be in `gone`).
        folders = sorted({path.rsplit("/", 1)[0] if "/" in path else "" for path in tops})
        nodes = self.kernel.node_ids(self._mount_path(folder) for folder in folders)
        self.kernel.forget_entries(nodes, [self._mount_path(path) for path in tops])
        changed = set(paths)
        for path in paths:
            changed.update(_parents(path))
        self.kernel.invalidate(self._mount_path(path) for path in sorted(changed))


def _parents(path: str) -> list[str]:
    """The folders above a relative path, up to the root ("")."""
    parts = path.strip("/").split("/")
    return ["/".join(parts[:depth]) for depth in range(len(parts) - 1, -1, -1)]


class Views:
    """Builds each view with what it needs (routes.ViewFactory): one builder per route."""

    def __init__(self, mount: Mount):
        self.options = mount.options
        self.owner = mount.owner
        self.repo = mount.repo
        self.handles = mount.handles
        self.sync_state = mount.state
        self.jobs = mount.jobs
        self.days = mount.days
        self.sync_status = mount.status
        self.metrics = mount.metrics
        self.conflict_log = mount.conflict_log
        self.file_versions = mount.versions
        self.mount_time = mount.mount_time
        self.worktree_kernel = mount.worktree_kernel

    def status(self) -> StatusView:
        files = {STATUS_FILE: self.sync_status.render, METRICS_FILE: self.metrics.render}
        return StatusView(self.owner, files, self.handles, mount_time=self.mount_time,
                          folders=(CONFLICTS_DIR, VERSIONS_DIR))

    def versions(self) -> VersionsView:
        return VersionsView(self.owner, self.repo, self.file_versions, self.handles, mount_time=self.mount_time)

    def conflicts(self) -> ConflictsView:
        return ConflictsView(self.owner, self.conflict_log, self.repo, self.handles, mount_time=self.mount_time)

    def current(self) -> CurrentView:
        extra = (self.options.history_path,) if not self.options.current_path else ()
        return CurrentView(self.owner, self.repo.workdir, self.handles, self.sync_state, self.jobs,
                           max_size=self.options.max_size_bytes, extra_root_entries=extra,
                           kernel=self.worktree_kernel, lfs_path=self._lfs_path, lfs_placeholder=self._lfs_placeholder,
                           lfs_size=self._lfs_size)

    def _lfs_path(self, relative: str) -> bool:
        """Whether a working-tree path is an LFS file's (Git LFS on, a filter=lfs rule)."""
        return self.repo.lfs is not None and attributes.is_lfs_path(self.repo.git, relative)

    def _lfs_placeholder(self, relative: str, fd: int) -> bool:
        """Whether an open working file holds an LFS pointer's text (its object could not be had)."""
        return self.repo.lfs is not None and lfs_checkout.holds_pointer(self.repo.git, relative, fd)

    def _lfs_size(self, root_fd: int, relative: str, size: int) -> Optional[int]:
        """The object's size for a working file left holding an LFS pointer's text, else None."""
        return lfs_checkout.shown_size(self.repo.lfs, root_fd, relative, size)

    def index(self) -> IndexView:
        return IndexView(self.owner, entries=[self.options.current_path, self.options.history_path],
                         mount_time=self.mount_time)

    def history(self) -> HistoryView:
        return HistoryView(self.owner, self.days, mount_time=self.mount_time)

    def day(self, day: str) -> HistoryView:
        return HistoryView(self.owner, self.days, day=day, mount_time=self.mount_time)

    def commit(self, day: str, name: str) -> CommitView:
        found = self.days.commit(day, name)
        if found is None:
            raise FuseOSError(errno.ENOENT)  # not cached: lru_cache keeps no exceptions
        commit, commit_time = found
        return CommitView(self.owner, self.repo, self.handles, commit=commit, commit_time=commit_time)

    def commit_link(self, sha: str) -> CommitLinkView:
        return CommitLinkView(self.owner, self.days, sha=sha)
