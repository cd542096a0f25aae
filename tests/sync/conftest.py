"""Layer 2 rig for the sync core: a bare remote, the other person's clone (the Remote
fixture) and the mount's own clone, wired as the mount wires them, with no FUSE and
no thread: tests run one cycle, or one scheduler step, at a time."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pygit2
import pytest

from gitfs.repo.credentials import Credentials
from gitfs.repo.repository import Repository
from gitfs.sync.cycle import OpenFiles, SyncCycle
from gitfs.sync.jobs import CommitJob, PendingJobs
from gitfs.sync.metrics import Metrics
from gitfs.sync.remote_link import RemoteLink
from gitfs.sync.state import SyncState
from gitfs.sync.status import SyncStatus
from helpers import Remote, git


class FakeClock:
    """Monotonic time that moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RacingRemoteLink(RemoteLink):
    """The real remote link; right after each of the next `races` fetches, the other
    person pushes a commit, so that our push meets a remote that moved."""

    def __init__(self, repo, credentials, *, other: Remote, races: int = 0, status=None, metrics=None):
        super().__init__(repo, credentials, status=status, metrics=metrics)
        self.other = other
        self.races = races
        self.attempts = 0  # fetches tried
        self.fetches = 0  # fetches that worked

    def fetch(self):
        self.attempts += 1
        tip = super().fetch()
        self.fetches += 1
        if self.races > 0:
            self.races -= 1
            self.other.commit({f"race{self.races}.txt": "pushed meanwhile\n"}, f"race {self.races}")
        return tip


@dataclass
class Rig:
    remote: Remote
    path: str
    repo: Repository
    state: SyncState
    jobs: PendingJobs
    link: RacingRemoteLink
    status: SyncStatus
    cycle: SyncCycle
    clock: FakeClock
    metrics: Metrics
    open_paths: set = field(default_factory=set)
    dirty_paths: list = field(default_factory=list)

    def write(self, relative: str, text: str) -> None:
        """Change the working tree as CurrentView does: under mutation(), then a job."""
        with self.state.mutation():
            self.write_file(relative, text)
            self.jobs.put(CommitJob(f"Update /{relative}", add=(relative,)))

    def write_file(self, relative: str, text: str) -> None:
        full = os.path.join(self.path, relative)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as handle:
            handle.write(text)

    def read(self, relative: str) -> str:
        with open(os.path.join(self.path, relative)) as handle:
            return handle.read()


def repo_pending(repo: Repository, jobs: PendingJobs):
    """What the mount's pending() reports, without open files."""
    return lambda: {"commits_not_pushed": repo.count_ahead(), "changes_not_committed": len(jobs.paths())}


def make_rig(remote: Remote, path, *, url: str | None = None) -> Rig:
    git("clone", "-q", str(remote.bare), str(path))
    if url is not None:
        git("remote", "set-url", "origin", url, cwd=path)
    repo = Repository(str(path), remote.branch)
    clock = FakeClock()
    state = SyncState(idle_after=60, clock=clock)
    jobs = PendingJobs()
    status = SyncStatus(remote=url or str(remote.bare), branch=remote.branch, pending=dict)
    metrics = Metrics(pending=repo_pending(repo, jobs))
    link = RacingRemoteLink(repo, Credentials(), other=remote, status=status, metrics=metrics)
    rig = Rig(remote, str(path), repo, state, jobs, link, status, None, clock, metrics)  # type: ignore[arg-type]
    rig.cycle = SyncCycle(repo, state, jobs, link, signature=lambda: pygit2.Signature("GitFS", "gitfs@example.com"),
                          open_files=OpenFiles(paths=lambda: rig.open_paths, dirty_paths=lambda: rig.dirty_paths),
                          conflicts=status, metrics=metrics)
    return rig


@pytest.fixture
def rig(remote, tmp_path) -> Rig:
    return make_rig(remote, tmp_path / "mine")
