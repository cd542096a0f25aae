"""SlowSaves: the documents a save in progress renamed away, whose deletion waits.

Word over a network share, an editor keeping a backup: the save renames the document to
a name GitFS keeps local (`~WRL0002.tmp`, `notes.txt~`), and its next step, seconds
later, puts the new version under the name. Committed in between, the remote and every
colleague would see the document deleted for as long as the save takes; so the rename's
job waits for the document to come back (then the batch is one Update) or for `wait`
seconds. Meanwhile the cycle holds the document as it holds an open file: a change of
the remote's written into the gap would be overwritten unseen by the save's last rename.
"""

from __future__ import annotations

import os
from typing import Callable

import pygit2

from gitfs.repo.repository import Repository
from gitfs.sync.jobs import CommitJob

SAVE_WAIT = 30.0  # seconds a document renamed away by a save may be missing before it counts as deleted


class SlowSaves:
    def __init__(self, repo: Repository, *, age: Callable[[CommitJob], float], wait: float = SAVE_WAIT):
        self.repo = repo
        self.age = age  # seconds since a job was queued, on the clock of the queue that stamped it
        self.wait = wait  # how long a document renamed away may be missing
        self.awaited: tuple[str, ...] = ()  # the documents the last batch found renamed away

    def split(self, jobs: list[CommitJob]) -> tuple[list[CommitJob], list[CommitJob]]:
        """(the jobs to commit, the jobs that wait: the caller gives them back). A job waits
        while it is younger than `wait` and renamed a tracked document, still missing, to
        names kept local only."""
        renames = [job for job in jobs if job.add and job.remove and self.age(job) < self.wait]
        self.awaited = ()
        if not renames:  # only a rename can be a save under way: no index read for the rest
            return jobs, []
        index = self.repo.index()
        awaited = [job for job in renames if self._renamed_away(job, index)]
        held = {id(job) for job in awaited}
        self.awaited = tuple(sorted({path.strip("/") for job in awaited for path in job.remove}))
        return [job for job in jobs if id(job) not in held], awaited

    def _renamed_away(self, job: CommitJob, index: pygit2.Index) -> bool:
        """Whether the job renamed a tracked file, now missing, to names kept local only."""
        added, removed = [path.strip("/") for path in job.add], [path.strip("/") for path in job.remove]
        return (all(self.repo.is_ignored(path) and path not in index for path in added)
                and any(path in index and not os.path.lexists(os.path.join(self.repo.workdir, path))
                        for path in removed))
