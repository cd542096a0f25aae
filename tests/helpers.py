"""Helpers shared by the test modules: hermetic git, bare remotes, errnos, the sync
rig (the sync layer on real clones, no FUSE), GitFS runs and mounts, the sync status,
and the trees of a remote and of a plain directory.

Plain functions and classes only; the fixtures that use them live in conftest.py
(tests/ is on sys.path through pytest.ini's `pythonpath`, so test modules in
every folder import this as `helpers`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pygit2
import pytest

from gitfs.repo.credentials import Credentials
from gitfs.repo.repository import Repository
from gitfs.repo.workdir.ignore import IgnoreRules
from gitfs.sync.cycle import OpenFiles, SyncCycle
from gitfs.sync.jobs import CommitJob, PendingJobs
from gitfs.sync.metrics import Metrics
from gitfs.sync.remote_link import RemoteLink
from gitfs.sync.state import SyncState
from gitfs.sync.status import SyncStatus

ROOT = Path(__file__).resolve().parent.parent
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Other Person", "GIT_AUTHOR_EMAIL": "other@example.com",
    "GIT_COMMITTER_NAME": "Other Person", "GIT_COMMITTER_EMAIL": "other@example.com",
}
# The mount's committer where a test commits as GitFS, at a fixed time.
COMMITTER = pygit2.Signature("GitFS", "gitfs@example.com", 1_700_000_000, 0)


def git(*args, cwd=None, check=True, env=None) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def wait_for(predicate, timeout=15.0, interval=0.05, message="condition"):
    """Poll observable state (a file, the remote, the status file) until it holds, failing the
    test after `timeout` s; returns the predicate's value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)


def __getattr__(name: str):
    """helpers.OWNER, made on first use: whose files the views called directly say they are
    (not this process's, so a test sees it passed on). It imports the views, which load
    libfuse through mfusepy; the layers that use no view run where there is none."""
    if name == "OWNER":
        from gitfs.views.base import Owner  # noqa: PLC0415

        return Owner(1234, 5678)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def errno_of(call, *args, **kwargs) -> int:
    """The errno of the OSError that call(*args, **kwargs) raises (FuseOSError is one);
    fails the test if it raises none."""
    with pytest.raises(OSError) as raised:
        call(*args, **kwargs)
    return raised.value.errno


def clone_of(remote: Remote, path: Path) -> Path:
    """A plain clone of the remote's bare repository at path."""
    git("clone", "-q", str(remote.bare), str(path))
    return path


def stage_files(work: Path, files: dict[str, bytes | str | None]) -> None:
    """Write (or, for None, delete) files in a clone and stage them."""
    for name, content in files.items():
        if content is None:
            git("rm", "-q", "-r", name, cwd=work)
            continue
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        git("add", name, cwd=work)


def assert_one_line_error(result, *words) -> str:
    """Non-zero exit, exactly one line on stderr that names the problem, no traceback."""
    assert result.returncode != 0, result
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def gitfs_pids(mount_point: Path) -> list[int]:
    """Live gitfs processes whose command line names this (unique) mount point."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                args = handle.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        # `python -m gitfs ...` or `/usr/bin/gitfs ...`
        launched = any(arg == b"gitfs" or arg.endswith(b"/gitfs") for arg in args[:3])
        if launched and str(mount_point).encode() in args and state != "Z":
            pids.append(int(entry))
    return pids


def descendants(pid: int) -> list[int]:
    """Every process below pid (read from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class Remote:
    """A bare repository plus a plain clone of it that acts as "the other person"."""

    def __init__(self, root: Path, branch: str = "main"):
        self.root = root
        self.bare = root / "remote.git"
        self.work = root / "other"
        self.branch = branch
        git("init", "-q", "--bare", "-b", branch, str(self.bare))
        git("clone", "-q", str(self.bare), str(self.work))
        git("checkout", "-q", "-b", branch, cwd=self.work, check=False)

    @property
    def url(self) -> str:
        return str(self.bare)

    def commit(self, files: dict[str, bytes | str | None], message="change", *, push=True, date=None) -> str:
        """Write (or, for None, delete) files in the other clone, commit, and push."""
        git("pull", "-q", "--rebase", "origin", self.branch, cwd=self.work, check=False)
        stage_files(self.work, files)
        self.commit_staged(message, push=push, date=date)
        return self.head()

    def commit_staged(self, message: str, *, push=True, date=None) -> str:
        """Commit what is staged in the other clone (and push it); the new commit's sha."""
        env = None
        if date is not None:
            env = dict(os.environ, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
        git("commit", "-q", "-m", message, cwd=self.work, env=env)
        if push:
            git("push", "-q", "origin", self.branch, cwd=self.work)
        return git("rev-parse", "HEAD", cwd=self.work).strip()

    def head(self) -> str:
        return git("--git-dir", str(self.bare), "rev-parse", self.branch).strip()

    def log(self, fmt="%s") -> list[str]:
        out = git("--git-dir", str(self.bare), "log", f"--format={fmt}", self.branch, check=False)
        return out.splitlines()

    def show(self, path: str, rev: str | None = None) -> bytes:
        spec = f"{rev or self.branch}:{path}"
        return subprocess.run(["git", "--git-dir", str(self.bare), "show", spec],
                              capture_output=True, check=True).stdout

    def files(self, rev: str | None = None) -> list[str]:
        out = git("--git-dir", str(self.bare), "ls-tree", "-r", "--name-only", rev or self.branch)
        return out.splitlines()


# -- the sync rig: the sync layer on real clones, wired as the mount wires it, no FUSE -----

class FakeClock:
    """Time that moves only when a test says so (monotonic or wall-clock alike)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class KernelNotes:
    """The kernel's cache of current/ as the cycle sees it (worktree.WorktreeKernelView) where
    nothing is mounted: it keeps what it was told, (paths, removed) per call."""

    def __init__(self) -> None:
        self.told: list[tuple[set[str], list[str]]] = []
        self.stale: list[str] = []  # what the next recheck finds the kernel showing as it was
        self.rewritten_told: list[set[str]] = []  # told under the freeze
        self.replaced_told: list[set[str]] = []  # shown missing until `changed` (under the freeze)

    def rewritten(self, paths, replaced=()) -> None:
        self.rewritten_told.append(set(paths))
        self.replaced_told.append(set(replaced))

    def settled(self) -> None:
        pass

    def changed(self, paths, removed) -> None:
        self.told.append((set(paths), list(removed)))

    def recheck(self) -> list[str]:
        stale, self.stale = self.stale, []
        return stale


class RacingRemoteLink(RemoteLink):
    """The real remote link; right after each of the next `races` fetches, the other
    person pushes a commit, so that our push meets a remote that moved."""

    def __init__(self, repo, credentials, *, other: Remote, status, metrics, races: int = 0):
        super().__init__(repo, credentials, status=status, metrics=metrics)
        self.other = other
        self.races = races
        self.attempts = 0  # fetches tried
        self.fetches = 0  # fetches that worked

    def fetch(self, *, wait: bool = True):
        self.attempts += 1
        tip = super().fetch(wait=wait)
        self.fetches += 1
        if self.races > 0:
            self.races -= 1
            self.other.commit({f"race{self.races}.txt": "pushed meanwhile\n"}, f"race {self.races}")
        return tip


class CountingRepository(Repository):
    """A real Repository that counts how often libgit2 inflates a blob whole (blob_bytes
    goes through blob_buffer too)."""

    whole_reads = 0

    def blob_buffer(self, oid):
        self.whole_reads += 1
        return super().blob_buffer(oid)


def repo_pending(repo: Repository, jobs: PendingJobs):
    """What the mount's pending() reports, without open files."""
    return lambda: {"commits_not_pushed": repo.count_ahead(), "changes_not_committed": len(jobs.paths())}


@dataclass
class Rig:
    """A bare remote, the other person's clone (Remote) and the mount's own clone, with the
    mount's sync parts: tests run one cycle, or one scheduler step, at a time."""

    remote: Remote
    path: str
    repo: Repository
    state: SyncState
    jobs: PendingJobs
    link: RacingRemoteLink
    status: SyncStatus
    clock: FakeClock
    metrics: Metrics
    kernel: KernelNotes = field(default_factory=KernelNotes)
    open_paths: set = field(default_factory=set)
    dirty_paths: list = field(default_factory=list)
    cycle: SyncCycle = field(init=False)

    def __post_init__(self) -> None:
        self.cycle = self.cycle_of(SyncCycle)

    def cycle_of(self, kind: type[SyncCycle]) -> SyncCycle:
        """A cycle of this kind (SyncCycle, ReadOnlyCycle) on the rig's parts. GitFS's default
        ignore rules are off, as with -o default_ignore=false."""
        return kind(self.repo, self.state, self.jobs, self.link,
                    signature=lambda: pygit2.Signature("GitFS", "gitfs@example.com"),
                    open_files=OpenFiles(paths=lambda: self.open_paths, dirty_paths=lambda: self.dirty_paths),
                    conflicts=self.status, metrics=self.metrics, kernel=self.kernel,
                    ignore_rules=IgnoreRules(self.path, default_ignore=False))

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


def make_rig(remote: Remote, path: Path, *, url: str | None = None, repository: type[Repository] = Repository) -> Rig:
    """The rig on a new clone of remote at path; `url`: the clone's origin instead of the
    remote (one that fails); `repository`: a Repository with a fault injected."""
    clone_of(remote, path)
    if url is not None:
        git("remote", "set-url", "origin", url, cwd=path)
    repo = repository(str(path), remote.branch)
    clock = FakeClock()
    jobs = PendingJobs(clock=clock)
    status = SyncStatus(remote=url or str(remote.bare), branch=remote.branch, pending=dict)
    metrics = Metrics(pending=repo_pending(repo, jobs))
    link = RacingRemoteLink(repo, Credentials(), other=remote, status=status, metrics=metrics)
    return Rig(remote, str(path), repo, SyncState(idle_after=60, clock=clock), jobs, link, status, clock, metrics)


def fusermount() -> str:
    return shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount"


def unmount(path: Path) -> str:
    """fusermount -u; what it said when it failed ("" when it did not)."""
    done = subprocess.run([fusermount(), "-u", str(path)], capture_output=True, text=True)
    return "" if done.returncode == 0 else f"{fusermount()} -u exited {done.returncode}: {done.stderr.strip()}"


class Mount:
    """A running `gitfs` daemon (foreground, in a subprocess) and its paths."""

    def __init__(self, remote: Remote, mount_point: Path, repo_path: Path, log: Path, process):
        self.remote = remote
        self.path = mount_point
        self.current = mount_point / "current"
        self.history = mount_point / "history"
        self.repo_path = repo_path
        self.log = log
        self.process = process

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, timeout=60) -> int:
        """Unmount like a user would (again, if the mount was busy), and return the daemon's
        exit status."""
        said = [unmount(self.path)]

        def unmounted() -> bool:  # busy: a process leaving the mount (its cwd, an open file)
            if not said[-1] or not os.path.ismount(self.path):
                return True
            said.append(unmount(self.path))
            return not said[-1]

        with contextlib.suppress(AssertionError):  # still busy: the daemon's exit below tells
            wait_for(unmounted, timeout=5, interval=0.2, message="the mount no longer busy")
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGUSR2)  # the daemon prints its threads' stacks
            # faulthandler writes them from the signal handler, with no end to wait for:
            # a moment for it to run before the kill (this test has failed already).
            time.sleep(1)
            self.process.kill()
            self.process.wait()
            stacks = self.process.stdout.read().decode(errors="replace") if self.process.stdout else ""
            unmounting = "\n".join(dict.fromkeys(line for line in said if line)) or "fusermount -u succeeded"
            raise AssertionError(f"gitfs did not exit after unmount ({unmounting}):\n"
                                 f"{self.log_text()}\n{stacks}") from None

    def kill(self) -> None:
        """kill -9 the daemon and clear the dead mount."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        subprocess.run([fusermount(), "-u", "-z", str(self.path)], capture_output=True)


def gitfs_argv(*args) -> list[str]:
    """The command line of `gitfs ARGS...` as the tests start it: this checkout's package."""
    return [sys.executable, "-m", "gitfs", *map(str, args)]


def gitfs_command(url: str, mount_point: Path, options: dict) -> list[str]:
    """`gitfs URL MOUNT_POINT -o key=value,flag,...` (True is a bare flag)."""
    items = [key if value is True else f"{key}={value}" for key, value in options.items()]
    return gitfs_argv(url, mount_point, *(["-o", ",".join(items)] if items else []))


def run_gitfs(*args, timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `gitfs ARGS...` to its end (a failed start, a daemon start, `status`, `--help`):
    exit status and text stdout/stderr."""
    return subprocess.run(gitfs_argv(*args), capture_output=True, text=True, timeout=timeout, env=env)


def start_gitfs(url, tmp_path: Path, *options, timeout: float = 60) -> subprocess.CompletedProcess:
    """`gitfs URL MNT -o repo_path=...,log=...,OPTIONS` in the foreground, for startup failures;
    fails the test if it left a mount behind."""
    mount_point = tmp_path / "mnt-fail"
    mount_point.mkdir(exist_ok=True)
    option_text = ",".join([f"repo_path={tmp_path / 'clone-fail'}", f"log={tmp_path / 'fail.log'}", *options])
    result = run_gitfs(url, mount_point, "-o", option_text, timeout=timeout)
    if os.path.ismount(mount_point):
        unmount(mount_point)
        pytest.fail("a failed start left a mount behind")
    return result



def ls_tree(path: Path, rev: str) -> dict[str, str]:
    """{path: blob sha} of a commit or tree of the repository at path."""
    out = git("ls-tree", "-r", rev, cwd=path)
    return {line.split("\t", 1)[1]: line.split()[2] for line in out.splitlines()}


def worktree_tree(path: Path) -> dict[str, str]:
    """{path: blob sha} of what `git add -A` would commit, computed by git itself in a copy."""
    copy = path.parent / "add-all"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(path, copy, symlinks=True)
    git("add", "-A", cwd=copy)
    return ls_tree(copy, git("write-tree", cwd=copy).strip())


def commit_time(remote: Remote, sha: str) -> int:
    """The committer time of a commit on the remote, or one only the other clone has."""
    for where in (["--git-dir", str(remote.bare)], ["-C", str(remote.work)]):
        out = git(*where, "log", "-1", "--format=%ct", sha, check=False)
        if out:
            return int(out)
    raise AssertionError(f"no commit {sha} on the remote nor in the other clone")


def history_folder(remote: Remote, sha: str) -> tuple[str, str]:
    """(day, name) of a commit's folder in history/, computed here, independently of gitfs:
    local time, committer time."""
    local = time.localtime(commit_time(remote, sha))
    return time.strftime("%Y-%m-%d", local), time.strftime("%H-%M-%S-", local) + sha[:10]


def commit_with(remote: Remote, prepare=None, *, message="change", date=None, gitlinks=(), push=True) -> str:
    """Commit in the other clone whatever `prepare(work_dir)` leaves there (exec bits, symlinks,
    deletions...), plus `gitlinks`: (path, sha) submodule entries without a .gitmodules."""
    git("pull", "-q", "--rebase", "origin", remote.branch, cwd=remote.work, check=False)
    if prepare is not None:
        prepare(remote.work)
    git("add", "-A", cwd=remote.work)
    for path, sha in gitlinks:
        git("update-index", "--add", "--cacheinfo", f"160000,{sha},{path}", cwd=remote.work)
    return remote.commit_staged(message, push=push, date=date)


# -- Git LFS: remotes whose other clone runs the real git-lfs client --------------------------
# Debian's git-lfs package adds `filter.lfs.*` to the system git config; the tests run with
# GIT_CONFIG_NOSYSTEM=1 and a fresh HOME (conftest.py), so each clone that should run
# git-lfs gets `git lfs install --local`, as a user's clone would have it.

LFS_ATTRIBUTES = "*.bin filter=lfs diff=lfs merge=lfs -text\n"
LFS_BIG = bytes(range(256)) * 8192
# What the LFS fixtures' remotes hold: big.bin (2 MiB) and small.bin are LFS objects,
# notes.txt an ordinary blob.
LFS_FILES = {"big.bin": LFS_BIG, "small.bin": b"tiny\n", "notes.txt": "plain\n"}


def git_lfs(*args, cwd, data: bytes | None = None, check=True) -> subprocess.CompletedProcess:
    """`git lfs ARGS` in cwd; bytes in and out."""
    result = subprocess.run(["git", "lfs", *map(str, args)], cwd=cwd, input=data, capture_output=True)
    if check and result.returncode != 0:
        raise AssertionError(f"git lfs {' '.join(map(str, args))} failed: {result.stderr.decode(errors='replace')}")
    return result


def require_git_lfs() -> None:
    if shutil.which("git-lfs") is None:
        pytest.fail("git-lfs is not installed (.ci/install-deps installs Debian's git-lfs)")


def lfs_clone(url: str, path: Path) -> Path:
    """A plain clone with git-lfs set up in it, its objects pulled."""
    git("clone", "-q", url, str(path))
    git_lfs("install", "--local", cwd=path)
    git_lfs("pull", cwd=path)
    return path


def lfs_repository(remote: Remote, path: Path):
    """(a clone of remote at path, GitFS's Repository of it with Git LFS on as a mount turns
    it on, that LfsContent): the git core and the filter without a mount."""
    from gitfs.lfs import setup as lfs_setup  # only the LFS tests need it

    git("clone", "-q", str(remote.bare), str(path))
    repo = Repository(str(path), remote.branch)
    lfs = lfs_setup.content_for(repo, str(remote.bare))
    assert lfs is not None
    repo.content_filter = lfs
    return path, repo, lfs


class LfsRemote(Remote):
    """A bare remote whose other clone tracks `*.bin` with git-lfs: committing a .bin
    file there commits a pointer, and pushing uploads the object to the remote. A path
    remote's objects are in its own git directory (REMOTE/lfs/objects/...), where
    git-lfs's standalone transfer puts them."""

    def __init__(self, root: Path, branch: str = "main"):
        super().__init__(root, branch)
        git_lfs("install", "--local", cwd=self.work)
        (self.work / ".gitattributes").write_text(LFS_ATTRIBUTES)
        git("add", ".gitattributes", cwd=self.work)

    def object_path(self, oid: str) -> Path:
        return self.bare / "lfs" / "objects" / oid[:2] / oid[2:4] / oid


# git's own view of a clone with git-lfs's filters given on the command line: the
# mount's clone is left as GitFS made it.
LFS_FILTERS = ["-c", "filter.lfs.clean=git-lfs clean -- %f", "-c", "filter.lfs.smudge=git-lfs smudge -- %f",
               "-c", "filter.lfs.process=git-lfs filter-process", "-c", "filter.lfs.required=true"]


def git_status_with_lfs(clone) -> str:
    return git(*LFS_FILTERS, "status", "--porcelain", cwd=clone)


def push_without_git_lfs(remote, tmp_path, files: dict[str, bytes]) -> str:
    """Commit and push files from a clone without git-lfs: pointers go up without objects."""
    plain = tmp_path / "plain"
    if not plain.exists():
        clone_of(remote, plain)
    for name, data in files.items():
        (plain / name).parent.mkdir(parents=True, exist_ok=True)
        (plain / name).write_bytes(data)
        git("add", name, cwd=plain)
    git("commit", "-q", "-m", "pushed without git-lfs", cwd=plain)
    git("push", "-q", "origin", "main", cwd=plain)
    return remote.head()


# -- the sync status (MOUNTPOINT/.gitfs/status) -------------------------------------------

def read_status(mount) -> dict:
    """The mount's sync status, as `gitfs status` reads it."""
    with open(mount.path / ".gitfs" / "status", encoding="utf-8") as handle:
        return json.load(handle)


def remote_failing(mount, words: str) -> bool:
    """Whether the status file says the last fetch or the last push failed with `words` in its error."""
    try:
        state = read_status(mount)
    except (OSError, ValueError):
        return False
    for key in ("last_fetch", "last_push"):
        entry = state.get(key) or {}
        if entry.get("result") == "failed" and words in (entry.get("error") or ""):
            return True
    return False


def metric(mount, sample: str) -> float:
    """One sample of MOUNTPOINT/.gitfs/metrics, e.g. 'gitfs_fetches_total{result="failed"}'."""
    for line in (mount.path / ".gitfs" / "metrics").read_text().splitlines():
        name, _space, value = line.rpartition(" ")
        if name == sample:
            return float(value)
    raise AssertionError(f"no {sample} in the metrics")


def fetches(mount, result: str = "ok") -> int:
    """The mount's fetch attempts so far with that result ("ok", "failed"). Every sync cycle
    fetches first: with a fetch_timeout longer than the test, these are the cycles that ran."""
    return int(metric(mount, f'gitfs_fetches_total{{result="{result}"}}'))


def sync_cycles_pass(mount, cycles: int = 1, *, unless=lambda: False) -> None:
    """Until the mount has run `cycles` sync cycles more, or `unless()` holds. Counted by its
    fetches (a cycle commits, then fetches first thing with the remote): the mount's
    fetch_timeout must be longer than the test, so that the fetch worker's are none of them."""
    seen = fetches(mount)
    wait_for(lambda: fetches(mount) >= seen + cycles or unless(), timeout=30,
             message=f"{cycles} sync cycle(s) of the mount")


# -- "nothing else was committed": a marker and the exact commits -----------------------------

def commits_after(remote, since: str) -> list[tuple[str, list[str]]]:
    """(subject, files changed) of each commit on the remote's branch after `since`, newest first."""
    out = git("--git-dir", str(remote.bare), "log", "--format=%x00%s", "--name-only", f"{since}..{remote.branch}")
    commits = []
    for entry in out.split("\0")[1:]:
        subject, _newline, names = entry.partition("\n")
        commits.append((subject, sorted(name for name in names.splitlines() if name)))
    return commits


def commit_marker(mount, remote, name: str = "marker.txt") -> tuple[str, list[str]]:
    """Write a marker file through the mount and wait until the remote has it: whatever the
    mount commits of the changes made through it before, and of what it finds at its start, is
    then on the remote too, in an earlier commit or in the marker's. With commits_after, a test
    checks that nothing else was committed over a period without guessing how long a commit
    would have taken. Returns what commits_after lists for a commit of the marker alone."""
    (mount.current / name).write_text("marker\n")
    wait_for(lambda: name in remote.files(), timeout=30, message=f"the marker {name} on the remote")
    return (f"Update /{name}", [name])


# -- remotes given by URL ------------------------------------------------------------------

def at(url: str) -> SimpleNamespace:
    """What mount_gitfs needs of a remote: its URL."""
    return SimpleNamespace(url=url)


def write_and_wait_pushed(mount, remote, name="hello.txt", text="over ssh\n"):
    (mount.current / name).write_text(text)
    wait_for(lambda: name in remote.files(), timeout=30, message=f"{name} on the remote")
    assert remote.show(name) == text.encode()


# -- trees as plain values --------------------------------------------------------------------

KEEP = ".keep"


def remote_tree(bare: Path, rev: str = "main", prefix: str = "") -> dict[str, tuple[str, bytes]]:
    """{path: (git mode, bytes)} of every blob and link under prefix on rev."""
    args = ["--git-dir", str(bare), "ls-tree", "-r", "-z", rev]
    if prefix:
        args += ["--", prefix]
    out = subprocess.run(["git", *args], capture_output=True, check=True).stdout
    tree = {}
    entries = [e for e in out.split(b"\0") if e]
    shas = []
    for entry in entries:
        meta, path = entry.split(b"\t", 1)
        mode, _type, sha = meta.split()
        shas.append((os.fsdecode(path), mode.decode(), sha.decode()))
    if not shas:
        return tree
    # One cat-file for all blobs: ls-tree + show per file would be slow.
    batch = subprocess.run(["git", "--git-dir", str(bare), "cat-file", "--batch"],
                           input="".join(sha + "\n" for _p, _m, sha in shas).encode(),
                           capture_output=True, check=True).stdout
    position = 0
    for path, mode, _sha in shas:
        header_end = batch.index(b"\n", position)
        size = int(batch[position:header_end].split()[2])
        data = batch[header_end + 1:header_end + 1 + size]
        position = header_end + 1 + size + 1
        tree[path] = (mode, data)
    return tree


def plain_tree(root: Path) -> dict[str, tuple[str, bytes]]:
    """The same shape for a plain directory; an empty directory is DIR/.keep as GitFS stores it."""
    tree = {}
    for directory, dirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        rel = "" if rel == "." else rel + "/"
        for name in dirs + files:
            full = os.path.join(directory, name)
            st = os.lstat(full)
            if os.path.islink(full):
                tree[rel + name] = ("120000", os.fsencode(os.readlink(full)))
            elif os.path.isfile(full):
                tree[rel + name] = ("100755" if st.st_mode & 0o100 else "100644", Path(full).read_bytes())
        if rel and not dirs and not files:
            tree[rel + KEEP] = ("100644", b"")
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(directory, d))]
    return tree


def without_redundant_keeps(tree: dict) -> dict:
    """Drop DIR/.keep where DIR holds something else too (GitFS leaves them; harmless)."""
    dirs_with_content = set()
    for path in tree:
        parent = os.path.dirname(path) if os.path.basename(path) != KEEP else os.path.dirname(os.path.dirname(path))
        while parent not in dirs_with_content:
            dirs_with_content.add(parent)
            if not parent:
                break
            parent = os.path.dirname(parent)
    return {p: v for p, v in tree.items()
            if not (os.path.basename(p) == KEEP and os.path.dirname(p) in dirs_with_content)}


def wait_synced(mount, timeout=60.0):
    """Until the mount has synced everything: nothing pending (the status counts a file
    written and closed whose RELEASE has not arrived yet: its change is not queued yet, and
    the batch being committed), no push under way, and its branch is the remote's head."""

    def synced():
        try:
            state = read_status(mount)
        except (OSError, ValueError):
            return False
        pending = state["pending"]
        if pending["commits_not_pushed"] or pending["changes_not_committed"] or state["in_progress"]["pushing"]:
            return False
        return mount.remote.head() == git("rev-parse", "main", cwd=mount.repo_path, check=False).strip()

    wait_for(synced, timeout=timeout, interval=0.1, message="the mount to finish syncing")
