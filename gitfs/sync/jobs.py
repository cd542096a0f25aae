"""Commit jobs: what a change in current/ asks the sync worker to commit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence


@dataclass(frozen=True)
class CommitJob:
    message: str
    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()

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


def job_paths(jobs: Iterable[CommitJob]) -> set[str]:
    return {path.strip("/") for job in jobs for path in job.paths}
