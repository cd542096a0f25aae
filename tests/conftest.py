"""Shared fixtures: hermetic git, bare remotes, and real GitFS mounts.

The tests come in layers, one folder each: tests/core (the git core on real
repositories), tests/cli (the options, the command line and its documentation),
tests/sync (the sync cycle and scheduler on real repositories), tests/views (views
called directly, and the FUSE binding), tests/mount (real FUSE mounts driven by real
programs); tests/remotes adds real SSH, git:// and HTTP(S)
servers, tests/lfs Git LFS against the real git-lfs client, tests/stress faults and long
runs.

The plain helpers these fixtures use (and the tests import) are in helpers.py.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from gitfs import fuselib
from gitfs.errors import FatalError
from helpers import GIT_IDENTITY, ROOT, Mount, Remote, clone_of, gitfs_command, unmount, wait_for

# Tests that import mfusepy themselves load libfuse 3 too, as gitfs does (libfuse2 may be
# installed beside it). The variable fuselib sets is removed again: the gitfs processes the
# tests start must choose their library themselves.
_saved = os.environ.get("FUSE_LIBRARY_PATH")
try:
    fuselib.choose()
    import mfusepy  # noqa: F401
except (FatalError, OSError):
    pass  # no libfuse 3: the mount tests fail with gitfs's own line
finally:
    if _saved is None:
        os.environ.pop("FUSE_LIBRARY_PATH", None)


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path_factory, monkeypatch):
    """No system or user git config leaks into a test: HOME is a fresh directory, no system
    config, a fixed identity; daemons started by the test inherit all of it."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for key, value in GIT_IDENTITY.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture
def remote(tmp_path) -> Remote:
    """A bare remote with two files: `testing` and an empty `me` (as the original's tests)."""
    repo = Remote(tmp_path)
    repo.commit({"testing": "just testing around here\n", "me": ""}, "Initial test commit")
    return repo


@pytest.fixture
def clone(remote, tmp_path) -> Path:
    """A plain clone of the `remote` fixture, at tmp_path/clone."""
    return clone_of(remote, tmp_path / "clone")


CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE}


@pytest.fixture
def mount_gitfs(tmp_path):
    """Factory: mount_gitfs(remote, **options) -> Mount. Always unmounts; fails the
    test if the daemon exits non-zero or logged a traceback or an unexpected error."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("/dev/fuse is missing")
    mounts: list[Mount] = []
    counter = iter(range(1000))

    def start(remote: Remote, *, repo_path: Path | None = None, expect_errors=False, open_files: int | None = None,
              **options) -> Mount:
        number = next(counter)
        mount_point = tmp_path / f"mnt{number}"
        mount_point.mkdir(exist_ok=True)
        repo_path = repo_path or tmp_path / f"clone{number}"
        log = tmp_path / f"gitfs{number}.log"
        defaults = {"repo_path": repo_path, "foreground": True, "log": log, "log_level": "info",
                    "sync_timeout": 0.5, "fetch_timeout": 1}
        defaults.update(options)
        # open_files: the daemon's limit, soft and hard (`ulimit -n`; LimitNOFILE= of a systemd unit)
        limit = None if open_files is None else functools.partial(resource.setrlimit, resource.RLIMIT_NOFILE,
                                                                  (open_files, open_files))
        process = subprocess.Popen(gitfs_command(remote.url, mount_point, defaults), preexec_fn=limit,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        mount = Mount(remote, mount_point, repo_path, log, process)
        mount.expect_errors = expect_errors
        mount.crashed_on_purpose = False
        mounts.append(mount)

        def ready():
            if process.poll() is not None:
                output = process.stdout.read().decode(errors="replace")
                raise AssertionError(f"gitfs exited with {process.returncode}: {output}\n{mount.log_text()}")
            return os.path.ismount(mount_point)

        # Up to 2 minutes: the first mount clones, and make test runs several tests at once
        # (a clone of a thousand files, some of megabytes, took over 30 s among them).
        wait_for(ready, timeout=120, message="the mount")
        return mount

    yield start

    problems = []
    for mount in mounts:
        status = mount.process.poll()
        stopped_here = status is None
        if stopped_here:
            status = mount.stop()
        with contextlib.suppress(Exception):
            unmount(mount.path)
        text = mount.log_text()
        if mount.process.stdout is not None:  # stderr of the daemon: libfuse and Python crashes
            text += mount.process.stdout.read().decode(errors="replace")
        # A test may kill the daemon itself; a crash (the stacks end the log) is never the test's.
        if (stopped_here and status != 0) or (-status in CRASH_SIGNALS and not mount.crashed_on_purpose):
            problems.append(f"gitfs exited with {status}:\n{text}")
        elif "Traceback" in text or (" ERROR " in text and not mount.expect_errors):
            problems.append(f"gitfs logged an error:\n{text}")
    if problems:
        pytest.fail("\n".join(problems))


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
