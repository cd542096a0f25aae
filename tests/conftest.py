"""Shared fixtures: hermetic git, bare remotes, and real GitFS mounts.

Layers (see STYLE.md #9): tests/core (git core on real repositories),
tests/views (views called directly), tests/mount (real FUSE mounts driven by
real programs).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitfs import fuselib
from gitfs.errors import FatalError

ROOT = Path(__file__).resolve().parent.parent
# Tests that import mfusepy themselves load libfuse 3 too, as gitfs does (libfuse2 may be
# installed beside it). The variable fuselib sets is removed again: the gitfs processes the
# tests start must choose their library themselves.
_saved = os.environ.get("FUSE_LIBRARY_PATH")
try:
    fuselib.choose()
    import mfusepy  # noqa: E402,F401
except (FatalError, OSError):
    pass  # no libfuse 3: the mount tests fail with gitfs's own line
finally:
    if _saved is None:
        os.environ.pop("FUSE_LIBRARY_PATH", None)
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Other Person", "GIT_AUTHOR_EMAIL": "other@example.com",
    "GIT_COMMITTER_NAME": "Other Person", "GIT_COMMITTER_EMAIL": "other@example.com",
}


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path_factory, monkeypatch):
    """No system or user git config leaks into a test (STYLE.md #12)."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for key, value in GIT_IDENTITY.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def git(*args, cwd=None, check=True, env=None) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def wait_for(predicate, timeout=15.0, interval=0.05, message="condition"):
    """Poll observable state until it holds (STYLE.md #11); returns the predicate's value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)


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


@pytest.fixture
def remote(tmp_path) -> Remote:
    """A bare remote with two files: `testing` and an empty `me` (as the original's tests)."""
    repo = Remote(tmp_path)
    repo.commit({"testing": "just testing around here\n", "me": ""}, "Initial test commit")
    return repo


def fusermount() -> str:
    return shutil.which("fusermount3") or shutil.which("fusermount") or "fusermount"


def unmount(path: Path) -> None:
    subprocess.run([fusermount(), "-u", str(path)], capture_output=True)


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
        """Unmount like a user would, and return the daemon's exit status."""
        unmount(self.path)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGUSR2)  # the daemon prints its threads' stacks
            time.sleep(1)
            self.process.kill()
            self.process.wait()
            stacks = self.process.stdout.read().decode(errors="replace") if self.process.stdout else ""
            raise AssertionError(f"gitfs did not exit after unmount:\n{self.log_text()}\n{stacks}") from None

    def kill(self) -> None:
        """kill -9 the daemon and clear the dead mount."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        subprocess.run([fusermount(), "-u", "-z", str(self.path)], capture_output=True)


def gitfs_command(url: str, mount_point: Path, options: dict) -> list[str]:
    items = [key if value is True else f"{key}={value}" for key, value in options.items()]
    command = [sys.executable, "-m", "gitfs", url, str(mount_point)]
    return command + (["-o", ",".join(items)] if items else [])


@pytest.fixture
def mount_gitfs(tmp_path):
    """Factory: mount_gitfs(remote, **options) -> Mount. Always unmounts; fails the
    test if the daemon exits non-zero or logged a traceback or an unexpected error."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing")
    mounts: list[Mount] = []
    counter = iter(range(1000))

    def start(remote: Remote, *, repo_path: Path | None = None, expect_errors=False, **options) -> Mount:
        number = next(counter)
        mount_point = tmp_path / f"mnt{number}"
        mount_point.mkdir(exist_ok=True)
        repo_path = repo_path or tmp_path / f"clone{number}"
        log = tmp_path / f"gitfs{number}.log"
        defaults = {"repo_path": repo_path, "foreground": True, "log": log, "log_level": "info",
                    "sync_timeout": 0.5, "fetch_timeout": 1}
        defaults.update(options)
        process = subprocess.Popen(gitfs_command(remote.url, mount_point, defaults),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        mount = Mount(remote, mount_point, repo_path, log, process)
        mount.expect_errors = expect_errors
        mounts.append(mount)

        def ready():
            if process.poll() is not None:
                output = process.stdout.read().decode(errors="replace")
                raise AssertionError(f"gitfs exited with {process.returncode}: {output}\n{mount.log_text()}")
            return os.path.ismount(mount_point)

        wait_for(ready, timeout=30, message="the mount")
        return mount

    yield start

    problems = []
    for mount in mounts:
        if mount.process.poll() is None:
            status = mount.stop()
            if status != 0:
                problems.append(f"gitfs exited with {status}")
        with contextlib.suppress(Exception):
            unmount(mount.path)
        text = mount.log_text()
        if mount.process.stdout is not None:  # stderr of the daemon: libfuse and Python crashes
            text += mount.process.stdout.read().decode(errors="replace")
        if "Traceback" in text or (" ERROR " in text and not mount.expect_errors):
            problems.append(f"gitfs logged an error:\n{text}")
    if problems:
        pytest.fail("\n".join(problems))


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


@pytest.fixture
def local_timezone():
    """Set the local timezone (TZ) of this process and of the daemons it starts; restored after."""
    saved = os.environ.get("TZ")

    def set_timezone(name: str) -> None:
        os.environ["TZ"] = name
        time.tzset()

    yield set_timezone
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()
