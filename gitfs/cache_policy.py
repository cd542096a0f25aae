"""What the kernel may keep of the mount, for how long, and what GitFS makes it forget.

The table below is the whole policy; the router applies it to libfuse's configuration
and to each open file, GitFSFUSE.opendir to each folder, and the two forgetters below
(fed to the sync cycle and to the repository's branch-moved hook) say what goes when
something changes behind the kernel's back. fuse_binding.KernelCache is the mechanism
(libfuse's notifications); this module decides what to hand it.

Behind the kernel's back, only two things change: the branch moves (a commit, the
remote's commits brought in), which changes history/; and the remote's changes land in
the working tree. Everything else changes through the mount, and the kernel updates its
cache for those itself, but for a hard link's other names in the same folder, which
CurrentView names (views/links.py: libfuse's high-level API gives each name its own node).

Not forgotten, so possibly stale for up to ATTRIBUTES.seconds: a hard link's names in
other folders, changes made directly in the clone while mounted, and the size `stat`
shows for .gitfs/status and .gitfs/metrics (their content is read with direct_io).
"""

from __future__ import annotations

import enum
import os
import stat
import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from gitfs.repo import beneath
from gitfs.repo.relative_paths import folders_above


@dataclass(frozen=True)
class Rule:
    kept: str  # what the kernel keeps
    seconds: Optional[float]  # for how long at most; None: until GitFS says otherwise
    forgotten_when: str  # what GitFS tells it to forget, and when


ENTRIES = Rule("a name found in a folder", 3600.0,
               "a remote change removed it or changed its type (WorktreeForgetter); the branch moved, "
               "for history/ and the days that changed (HistoryForgetter); the mount went idle, "
               "for the names below history/ (HistoryForgetter) and the versions of the files "
               "listed under .gitfs/versions/ (VersionsForgetter), but processes' working directories")
ATTRIBUTES = Rule("a path's attributes", 3600.0,
                  "a remote change wrote it or a path below it, and once more at the end of that "
                  "sync where the kernel still shows the old file (WorktreeForgetter.recheck); a "
                  "change through another name of the same hard link in its folder (views/links.py)")
MISSING = Rule("a name found missing", 0.0,
               "never kept: a name that appears on the remote must show at once")
PAGES = Rule("an open file's pages", 3600.0,
             "at open, when mtime or size changed (checked once per `seconds`); a remote change "
             "wrote the file; per view, see Pages")
LISTINGS = Rule("the listing of a folder under history/ (libfuse >= 3.16)", None,
                "the branch moved: history/ and the days that gained or lost commits")
TABLE = (ENTRIES, ATTRIBUTES, MISSING, PAGES, LISTINGS)


class Pages(enum.Enum):
    """What the kernel may do with a file's pages; each view declares one (View.pages)."""

    UNTIL_CHANGED = "until_changed"  # kept across opens while mtime and size are unchanged
    KEEP = "keep"  # immutable content: kept across opens without asking
    NEVER = "never"  # rendered at open, its size unknown at stat time: every read comes to GitFS


def configure(config: Any) -> None:
    """libfuse's struct fuse_config (global: it covers every view)."""
    config.entry_timeout = ENTRIES.seconds
    config.attr_timeout = ATTRIBUTES.seconds
    config.negative_timeout = MISSING.seconds
    # Pages.UNTIL_CHANGED: cached pages stay across opens while mtime and size are
    # unchanged (a remote change replaces the file: new mtime, pages dropped).
    config.auto_cache = 1
    # libfuse checks that (a getattr into GitFS at an open) at most once per PAGES.seconds,
    # not once a second: the remote's changes drop the pages themselves (WorktreeForgetter),
    # and the kernel updates its pages for its own writes.
    config.ac_attr_timeout_set = 1
    config.ac_attr_timeout = PAGES.seconds


def open_file(file_info: Any, pages: Pages) -> None:
    """libfuse's struct fuse_file_info of a file a view opened."""
    if pages is Pages.KEEP:
        file_info.keep_cache = 1
    elif pages is Pages.NEVER:
        file_info.direct_io = 1


def listing_kept(path: bytes, history: bytes) -> bool:
    """Whether the kernel may keep the listing of a folder (LISTINGS): history/ and below."""
    return bool(history) and (path == history or path.startswith(history + b"/"))


def mount_prefix(folder: str) -> str:
    """The mount path of a top folder option (`current`, `history`); "" for `/` (the root)."""
    folder = folder.strip("/")
    return f"/{folder}" if folder else ""


class Kernel(Protocol):
    """fuse_binding.KernelCache, as the forgetters use it."""

    @property
    def active(self) -> bool: ...
    def node_ids(self, paths: Iterable[str]) -> dict[str, int]: ...
    def invalidate(self, paths: Iterable[str]) -> None: ...
    def attributes(self, path: str) -> Optional[os.stat_result]: ...
    def invalidate_while_serving(self, paths: Iterable[str]) -> None: ...
    def forget_entries(self, parents: dict[str, int], removed: Iterable[str]) -> None: ...


class WorktreeForgetter:
    """What the kernel forgets of current/ (worktree.WorktreeKernelView and
    views.links.KernelAttributes): relative paths of the working tree to mount paths."""

    def __init__(self, kernel: Kernel, prefix: str, workdir: str):
        self.kernel = kernel
        self.prefix = prefix  # "/current", or "" when current_path=/
        self.workdir = workdir  # the working tree the mount shows there
        self._written: set[str] = set()  # files told of since the last recheck
        # Removed or replaced by another kind of thing, the kernel not yet told to forget the
        # name (`rewritten` to `changed`): shown missing meanwhile (replaced_meanwhile).
        self._replaced: frozenset[str] = frozenset()
        self._replaced_lock = threading.Lock()  # made() from FUSE calls, changed() from the sync

    def _mount_path(self, relative: str) -> str:
        relative = relative.strip("/")
        return f"{self.prefix}/{relative}" if relative else (self.prefix or "/")

    def forget_attributes(self, paths: Collection[str]) -> None:
        """A hard link's other names ("/d/f"), from the FUSE call that changed the file."""
        self.kernel.invalidate_while_serving([self._mount_path(path) for path in paths])

    def rewritten(self, paths: Collection[str], replaced: Collection[str] = ()) -> None:
        """Under SyncState.frozen(), right after the working tree changed: the attributes
        and pages of `paths` and their folders, before a program's next call can use them
        (an append's offset comes from the size the kernel holds). fuse_invalidate_path
        takes no folder lock, so no FUSE call waiting for the freeze holds one it needs.
        The names in `replaced` show missing until changed() has the kernel forget them."""
        with self._replaced_lock:
            self._replaced = frozenset("/" + path.strip("/") for path in replaced)
        self.kernel.invalidate(self._mount_path(path) for path in sorted(_with_parents(paths)))

    def replaced_meanwhile(self, path: str) -> bool:
        """Whether `path` ("/d/f", as current/'s view is given it) names what the sync
        removed or replaced by another kind of thing (a file by a folder) while the kernel
        still holds the old name: forgetting it takes the folder's lock, so it waits for the
        end of the freeze. Until then the kernel may send GETATTR for the old file's node,
        and attributes of another kind of thing would make it fail that node with EIO for
        good; "missing" instead is what a program sees of a change made in two steps
        (removed, then made again)."""
        return path in self._replaced

    def made(self, path: str) -> None:
        """A FUSE call made `path` ("/d/f") anew in the working tree: it is no longer missing.
        libfuse answers a call that makes a name (create, mkdir, symlink, link, mknod) by
        looking the name up, i.e. with a getattr of it: "missing" there fails the call with
        ENOENT although the file was made (a program saving a file the remote just deleted)."""
        with self._replaced_lock:
            if path in self._replaced:
                self._replaced = self._replaced - {path}

    def settled(self) -> None:
        """The sync failed between rewritten() and changed(): nothing shows missing any more."""
        with self._replaced_lock:
            self._replaced = frozenset()

    def changed(self, paths: Collection[str], removed: Collection[str]) -> None:
        """A remote change landed: `paths` written or removed, `removed` gone or replaced
        (outside SyncState.frozen(): forgetting a name takes its folder's lock). The
        attributes go once more: a lookup under way at the freeze may have brought the old
        ones back."""
        gone = set(removed)
        # The highest removed paths only: forgetting a folder's name forgets all below it.
        tops = [path for path in sorted(gone) if not any(parent in gone for parent in folders_above(path))]
        # Node ids of their folders, which exist now (a removed one would be in `gone`).
        folders = sorted({path.rsplit("/", 1)[0] if "/" in path else "" for path in tops})
        nodes = self.kernel.node_ids(self._mount_path(folder) for folder in folders)
        self.kernel.forget_entries(nodes, [self._mount_path(path) for path in tops])
        self.kernel.invalidate(self._mount_path(path) for path in sorted(_with_parents(paths)))
        with self._replaced_lock:
            self._replaced = frozenset()
        self._written |= {path.strip("/") for path in paths} - gone

    def recheck(self) -> list[str]:
        """The files told of since the last recheck, compared as the kernel shows them with
        the working tree (type, size, mtime): a reply the kernel read from a replaced file
        and took after the notification (a lookup under way then) leaves its attributes for
        an hour. Those that differ are told again; returned, for the caller to say so."""
        written, self._written = self._written, set()
        if not self.kernel.active:
            return []
        stale = []
        root = os.open(self.workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for path in sorted(written)[:RECHECKED]:
                shown = self.kernel.attributes(self._mount_path(path))
                try:
                    disk: Optional[os.stat_result] = beneath.lstat(root, path)
                except OSError:
                    disk = None
                if shown is None or disk is None:
                    continue  # gone since, or never known: the kernel asks anew
                if _attributes(shown) != _attributes(disk):
                    stale.append(path)
        finally:
            os.close(root)
        if stale:
            self.kernel.invalidate(self._mount_path(path) for path in stale)
        return stale


class HistoryForgetter:
    """What the kernel forgets of history/: when the branch moves (Repository.on_branch_moved),
    the listings and attributes of history/ and of the days that gained or lost commits; when
    the mount goes idle, the names below history/ (forget_names)."""

    def __init__(self, kernel: Kernel, prefix: str, *, new_days: Callable[[Any, Any], Optional[Iterable[str]]],
                 all_days: Callable[[], Iterable[str]], indexed_days: Callable[[], Collection[str]],
                 commits_of: Callable[[str], Optional[Iterable[str]]]):
        self.kernel = kernel
        self.prefix = prefix  # "/history"
        self.new_days = new_days  # (old tip, new tip) -> days of the commits between; None if not a fast-forward
        self.all_days = all_days
        # The days of history/'s index as it is: none while nothing below history/ was used
        # (and then none the kernel can know), without reading a long history for it.
        self.indexed_days = indexed_days
        self.commits_of = commits_of  # day -> its commit folders' names

    def forget_names(self, working_dirs: Collection[str]) -> int:
        """The mount went idle: the kernel forgets each day's name, and with it every name
        below (its commit folders, their files and folders). libfuse keeps a node (~165
        bytes) for every name the kernel holds, and the kernel drops names only under memory
        pressure: `ls -R history/` of 17,000 commits left 225,000 of them, 37 MB, for good.
        history/ itself stays known, and so does a folder that is a process's working
        directory (working_dirs.py): a day that is one keeps its name and forgets its commit
        folders' instead. A working directory deeper down stays as it is (only unused names
        go); the day above it loses its name, which leaves the working directory's path
        whole. Gives how many names were told."""
        days = self.indexed_days()
        if not self.kernel.active or not days:
            return 0
        nodes = self.kernel.node_ids([self.prefix])
        if not nodes:
            return 0
        paths = [f"{self.prefix}/{day}" for day in days]
        idle = [path for path in paths if path not in working_dirs]
        self.kernel.forget_entries(nodes, idle)
        told = len(idle)
        for busy in (path for path in paths if path in working_dirs):
            commits = [f"{busy}/{name}" for name in self.commits_of(busy.rsplit("/", 1)[1]) or ()]
            idle = [path for path in commits if path not in working_dirs]
            self.kernel.forget_entries(self.kernel.node_ids([busy]), idle)
            told += len(idle)
        return told

    def branch_moved(self, old: Any, new: Any) -> None:
        if not self.kernel.active:
            return
        days = self.new_days(old, new) if old is not None else None
        if days is None:  # rewritten: any day may have lost or gained commits
            days = self.all_days()
        self.kernel.invalidate([self.prefix, *(f"{self.prefix}/{day}" for day in sorted(set(days)))])


class VersionsForgetter:
    """What the kernel forgets of .gitfs/versions/ when the mount goes idle: the names of
    the versions of each file listed. libfuse keeps a node (~130 bytes) for every name the
    kernel holds, and the kernel drops names only under memory pressure: a listing of
    300,000 versions held 40 MB of the daemon's heap for good. The folder of a file's versions
    itself stays known (forgetting a folder would unhash the working directory of a shell in it)."""

    def __init__(self, kernel: Kernel, prefix: str):
        self.kernel = kernel
        self.prefix = prefix  # "/.gitfs/versions"

    def folders(self, paths: Iterable[str]) -> dict[str, int]:
        """{file path: node id of its versions folder} of the files whose folder the kernel
        knows. Read BEFORE the files' versions are let go: a listing leaves the folder's
        attributes stale in the kernel (its atime), so the lstat that finds the node id asks
        GitFS for them, and a folder's times come from its file's versions (a walk of the
        whole branch again, had they gone: ~4 s and 18 MB kept for 300,000 versions)."""
        found: dict[str, int] = {}
        if not self.kernel.active:
            return found
        for path in paths:
            folder = f"{self.prefix}/{path}"
            node = self.kernel.node_ids([folder]).get(folder)
            if node is not None:
                found[path] = node
        return found

    def forget(self, listings: dict[str, Any], folders: dict[str, int]) -> None:
        """listings: {file path: its versions (len() and name(number))} whose names the kernel
        may hold, in the folders found by folders(); each name is made as it is told (no list
        of 300,000 names at once)."""
        if not self.kernel.active:
            return
        for path, listing in listings.items():
            node = folders.get(path)
            if node is None:
                continue  # the kernel never looked into that folder
            folder = f"{self.prefix}/{path}"
            self.kernel.forget_entries({folder: node}, (f"{folder}/{listing.name(number)}"
                                                        for number in range(len(listing))))


RECHECKED = 256  # files compared by one recheck: a pull of thousands costs no more


def _attributes(st: os.stat_result) -> tuple[int, int, int]:
    return stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns


def _with_parents(paths: Collection[str]) -> set[str]:
    """The paths and every folder above them, up to the root ("")."""
    found = set(paths)
    for path in paths:
        found.update(folders_above(path))
    return found
