"""Commit jobs: what a change in current/ asks the sync worker to commit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Optional


@dataclass(frozen=True)
class CommitJob:
    message: str
    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    # (device, inode) of a file with several hard links written through the path: its
    # other names changed too, even if this one is gone by the commit (hard_links.py).
    linked: tuple[tuple[int, int], ...] = ()
    queued: float = field(default=0.0, compare=False)  # when PendingJobs.put took it, on the queue's clock

    @property
    def paths(self) -> tuple[str, ...]:
        return self.add + self.remove


def batch_message(jobs: Sequence[CommitJob]) -> str:
    """One job: its message. Several: the original's `Update U items. Added A items. Removed R items.`"""
    if len(jobs) == 1:
        return jobs[0].message
    updated = {path for job in jobs for path in job.paths}
    added = sum(len(set(job.add)) for job in jobs)
    removed = sum(len(set(job.remove)) for job in jobs)
    message = f"Update {len(updated)} items."
    if added:
        message += f" Added {added} items."
    if removed:
        message += f" Removed {removed} items."
    return message


def describe_batch(jobs: Sequence[CommitJob], changes: Mapping[str, str]) -> str:
    """The message of a batch, from what its commit changes: `changes` maps each file
    path the commit changes to "Created", "Update" or "Deleted".

    Programs save through names that leave no change behind: a temporary file renamed
    over the document, the document renamed to a backup that is then removed or
    ignored, a probe file, a lock file. Their jobs are left out, so a batch that
    changes one file says so ("Update /notes.txt"), never with a temporary's name nor
    as Deleted + Created of the document. A batch of several changes is counted from
    the commit's own diff, in batch_message's words: `Update N items.` (every path
    the commit changes), `Added M items.` (created or changed), `Removed K items.`;
    counting the jobs told 15,445 items for a burst of writes to one file.
    """
    folders = {path.rsplit("/", depth)[0] for path in changes for depth in range(1, path.count("/") + 1)}

    def changed(path: str) -> bool:
        path = path.strip("/")
        return path in changes or path in folders

    kept = [job for job in jobs if any(changed(path) for path in job.paths)]
    whole = len(kept) == len(jobs) and all(changed(path) for job in kept for path in job.paths)
    if not kept:
        return batch_message(jobs)  # nothing changes: no commit is made
    if len(kept) == 1 and whole and _covers(kept[0], changes):
        return kept[0].message  # a rename, a chmod, a new folder: told as it was asked
    return describe_changes(changes)


def describe_changes(changes: Mapping[str, str]) -> str:
    """`Update /notes.txt` for one changed file; batch_message's count for several."""
    if len(changes) == 1:
        (path, change), = changes.items()
        return f"{change} /{path}"
    return batch_message([CommitJob(change, remove=(path,)) if change == "Deleted" else CommitJob(change, add=(path,))
                          for path, change in sorted(changes.items())])


def _covers(job: CommitJob, changes: Mapping[str, str]) -> bool:
    """Whether every changed path is one the job names or lies below one (not, say,
    another name of a hard-linked file the job wrote)."""
    named = [path.strip("/") for path in job.paths]
    return all(any(path == name or path.startswith(name + "/") for name in named) for path in changes)


def job_paths(jobs: Iterable[CommitJob]) -> set[str]:
    return {path.strip("/") for job in jobs for path in job.paths}


class PendingJobs:
    """The commit jobs FUSE threads queue and the sync worker takes: the one owner of
    what is waiting to be committed. Thread-safe.

    FUSE threads `put` jobs; the sync worker `wait`s for news (a job or a wake-up),
    `take`s the batch to commit and `give_back`s it if the commit failed, or says it is
    `done` once the commit is on the branch; the status file reads `uncommitted()` and
    `committing()`: a batch being staged and committed is still pending, so the status
    never says "nothing to commit" while a big one is hashed.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._condition = threading.Condition()
        self._jobs: list[CommitJob] = []
        self._taken: list[CommitJob] = []  # the batch being committed: taken, not done yet
        self._since: Optional[float] = None  # when the oldest waiting job was put (clock time)
        self._taken_since: Optional[float] = None  # the same of the batch taken
        self._news = 0  # jobs and wake-ups since the last wait
        self._woken = False
        self._received = 0  # jobs put since the mount began

    @property
    def received(self) -> int:
        """How many jobs were ever put: a change in current/ since a moment is one more."""
        with self._condition:
            return self._received

    def put(self, job: CommitJob) -> None:
        job = replace(job, queued=self._clock())  # its age is read on this clock (age())
        with self._condition:
            # Only the first job is news: while jobs wait, the worker sleeps until the
            # quiet period ends anyway. Waking it at every job of a `tar x` cost a thread
            # switch and the GIL per file.
            if not self._jobs:
                self._news += 1
                self._condition.notify_all()
                self._since = job.queued
            self._jobs.append(job)
            self._received += 1

    def wake(self) -> None:
        """End a wait at once, and say so to the waiter."""
        with self._condition:
            self._woken = True
            self._news += 1
            self._condition.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait up to timeout for a first job or a wake-up; True if woken since the last wait."""
        with self._condition:
            self._condition.wait_for(lambda: self._news > 0, max(timeout, 0.0))
            woken, self._woken, self._news = self._woken, False, 0
            return woken

    def take(self) -> list[CommitJob]:
        """The batch to commit; it counts as being committed until done() or give_back()."""
        with self._condition:
            jobs, self._jobs = self._jobs, []
            self._taken = list(jobs)
            self._taken_since, self._since = self._since, None
            return jobs

    def give_back(self, jobs: list[CommitJob]) -> None:
        """Jobs whose commit failed (or must wait): first in line again, before any that came since."""
        with self._condition:
            self._jobs[:0] = jobs
            given = {id(job) for job in jobs}
            self._taken = [job for job in self._taken if id(job) not in given]
            if jobs:  # they have waited since the batch's first change
                waited = [since for since in (self._taken_since, self._since) if since is not None]
                self._since = min(waited) if waited else self._clock()

    def done(self) -> None:
        """The batch taken is committed (or needed no commit): no longer pending here."""
        with self._condition:
            self._taken = []

    def age(self, job: CommitJob) -> float:
        """Seconds since the job was put (given back, it keeps its first time)."""
        return self._clock() - job.queued

    def waited(self) -> float:
        """Seconds the oldest waiting job has waited (0 with none): a change is committed
        within max_sync_delay of being made, however busy the mount."""
        with self._condition:
            return 0.0 if self._since is None or not self._jobs else self._clock() - self._since

    def __bool__(self) -> bool:
        with self._condition:
            return bool(self._jobs)

    def paths(self) -> set[str]:
        """The paths of the jobs waiting to be taken."""
        with self._condition:
            return job_paths(self._jobs)

    def uncommitted(self) -> tuple[set[str], set[str]]:
        """(the paths of the jobs waiting, the paths of the batch being committed), read at once."""
        with self._condition:
            return job_paths(self._jobs), job_paths(self._taken)

    def committing(self) -> set[str]:
        """The paths of the batch being committed now."""
        with self._condition:
            return job_paths(self._taken)
