"""The losing side of "accept mine": which remote versions lost, kept across mounts.

When a sync keeps the local version of a file the remote also changed, the remote's
version is still in the clone, in the remote's commit. This log remembers which
(time of the sync, path, remote commit) in the clone's git directory, never in the
working tree: `gitfs/conflicts.json` there, plus a ref `refs/gitfs/conflicts/<sha>`
per remote commit so that no `git gc` drops one that a force-push made unreachable.
It keeps the newest KEEP_COUNT files or those of the last KEEP_DAYS days, whichever
is more. Only files whose remote version exists (a file or a symlink) are logged.

Thread-safe: the sync worker records, FUSE threads read; one lock, and the file is
replaced whole (write to a temporary name, then rename), so a crash leaves the old one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional

import pygit2

from gitfs.repo import private_dirs
from gitfs.repo.errors import GitCoreError, local_write
from gitfs.repo.repository import BLOB_MODES, Repository

log = logging.getLogger(__name__)

KEEP_COUNT = 100
KEEP_DAYS = 30
LOG_FILE = os.path.join("gitfs", "conflicts.json")
REF_PREFIX = "refs/gitfs/conflicts/"


def folder_name(timestamp: float) -> str:
    """YYYY-MM-DD_HH-MM-SS in local time, as history/ names days and times."""
    return time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(timestamp))


@dataclass(frozen=True)
class LostVersion:
    folder: str  # the sync's local time, YYYY-MM-DD_HH-MM-SS
    timestamp: int  # the same, as Unix time
    path: str  # relative to the tree's root, "a/b.txt"
    remote_commit: str  # full hex sha: `git show REMOTE_COMMIT:PATH` is the lost version


class ConflictLog:
    def __init__(self, repo: Repository, *, keep_count: int = KEEP_COUNT, keep_days: int = KEEP_DAYS,
                 clock: Callable[[], float] = time.time):
        self.repo = repo
        self._file = os.path.join(repo.git.path, LOG_FILE)
        self._keep_count = keep_count
        self._keep_seconds = keep_days * 86400
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: list[LostVersion] = self._load()  # oldest first

    def _load(self) -> list[LostVersion]:
        try:
            with open(self._file, encoding="utf-8") as handle:
                return [LostVersion(**entry) for entry in json.load(handle)]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError) as error:
            log.warning("cannot read %s (%s); earlier conflicts are not shown", self._file, error)
            return []

    # -- recording (the sync worker) ---------------------------------------------

    @local_write()
    def record(self, paths: list[str], remote_commit: pygit2.Oid) -> tuple[str, int, list[str]]:
        """Log the remote's version of each path that has one; (folder, its time, the paths logged)."""
        now = int(self._clock())
        folder = folder_name(now)
        kept = [path for path in paths if self._is_file(remote_commit, path)]
        if not kept:
            return folder, now, []
        with self._lock:
            entries = [entry for entry in self._entries
                       if not (entry.folder == folder and entry.path in kept)]  # the same second, again
            entries += [LostVersion(folder, now, path, str(remote_commit)) for path in kept]
            self._entries = self._retained(entries, now)
            self._save()
            self._keep_refs()
        return folder, now, kept

    def _is_file(self, commit: pygit2.Oid, path: str) -> bool:
        try:
            item = self.repo.tree_item(commit, [part for part in path.split("/") if part])
        except (GitCoreError, KeyError, ValueError):
            return False
        return item.mode in BLOB_MODES

    def _retained(self, entries: list[LostVersion], now: int) -> list[LostVersion]:
        recent = now - self._keep_seconds
        first_counted = max(len(entries) - self._keep_count, 0)
        return [entry for number, entry in enumerate(entries) if number >= first_counted or entry.timestamp >= recent]

    def _save(self) -> None:
        private_dirs.make_private_dirs(os.path.dirname(self._file))
        temporary = self._file + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump([asdict(entry) for entry in self._entries], handle, indent=0)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self._file)

    def _keep_refs(self) -> None:
        """One ref per remote commit still logged, none for the others."""
        git = self.repo.git
        wanted = {entry.remote_commit for entry in self._entries}
        for name in [name for name in git.references if name.startswith(REF_PREFIX)]:
            if name[len(REF_PREFIX):] not in wanted:
                git.references.delete(name)
        for sha in wanted:
            if REF_PREFIX + sha not in git.references:
                git.references.create(REF_PREFIX + sha, pygit2.Oid(hex=sha))

    # -- reading (FUSE threads) ---------------------------------------------------

    def entries(self) -> list[LostVersion]:
        """Every version logged, oldest first."""
        with self._lock:
            return list(self._entries)

    def folders(self) -> list[tuple[str, int]]:
        """(folder, time) of every sync that logged a version, oldest first."""
        seen: dict[str, int] = {}
        for entry in self.entries():
            seen.setdefault(entry.folder, entry.timestamp)
        return list(seen.items())

    def files(self, folder: str) -> Optional[dict[str, pygit2.Oid]]:
        """{path: remote commit} of one folder; None for a folder that is not logged."""
        found = {entry.path: pygit2.Oid(hex=entry.remote_commit) for entry in self.entries() if entry.folder == folder}
        return found or None
