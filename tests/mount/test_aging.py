"""Layer 3: a mount that lives for months, under the 1,024 open files a systemd service
gets (`ulimit -n 1024`, soft and hard), on a clone that fetched 2,000 of a colleague's
pushes: one pack each, as libgit2's fetch leaves them (tests/aging.py writes them directly,
faster than 2,000 fetches). Before bounds on open packs, the daemon failed with EMFILE at
about 400 packs: commits failed, reads of history/ answered EINVAL.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from aging import FILES, OpenFilesPeak, age_clone_quickly, open_files, pack_count
from helpers import descendants, git, history_folder, wait_for, wait_synced

PUSHES = 2000
OPEN_FILES = 1024
BOUND = 256  # the daemon's open files at any age, with no file open through the mount


@pytest.fixture
def aged(remote, mount_gitfs, tmp_path):
    """(remote, clone path): a clone made by a mount, then aged by PUSHES fetched pushes."""
    first = mount_gitfs(remote)
    assert first.stop() == 0
    age_clone_quickly(remote.bare, first.repo_path, PUSHES)
    assert pack_count(first.repo_path) >= PUSHES
    return remote, first.repo_path


@pytest.fixture
def path_without_git(tmp_path) -> str:
    """A PATH with no git program on it (a machine where git is not installed), only
    what libfuse runs to mount."""
    bin_dir = tmp_path / "bin-without-git"
    bin_dir.mkdir()
    for program in ("fusermount3", "fusermount"):
        for folder in ("/usr/bin", "/bin"):
            if os.path.exists(f"{folder}/{program}"):
                (bin_dir / program).symlink_to(f"{folder}/{program}")
                break
    return str(bin_dir)


def colleague_text(number: int) -> bytes:
    return f"push {number} by a colleague\n".encode() * 20


def read_everything(mount, remote) -> None:
    """What a user does: write and get it pushed, cat every file of current/, ls -R of
    history/, a file in an old commit's folder, the versions of a busy file."""
    (mount.current / "mine.txt").write_text("written on an aged clone\n")
    wait_for(lambda: remote.show("mine.txt", "main") == b"written on an aged clone\n"
             if "mine.txt" in remote.files("main") else False, timeout=60, message="mine.txt on the remote")
    for number in range(PUSHES - FILES, PUSHES):
        assert (mount.current / f"colleague-{number % FILES:02d}.txt").read_bytes() == colleague_text(number)
    listing = subprocess.run(["ls", "-R", str(mount.history)], capture_output=True, text=True, timeout=300)
    assert listing.returncode == 0, listing.stderr[-2000:]
    assert listing.stdout.count("colleague-00.txt") >= PUSHES // 2
    first_push = git("rev-list", "--reverse", "main", cwd=remote.bare).split()[1]
    day, name = history_folder(remote, first_push)
    assert (mount.history / day / name / "colleague-00.txt").read_bytes() == colleague_text(0)
    versions = os.listdir(mount.path / ".gitfs" / "versions" / "colleague-07.txt")
    assert len(versions) == PUSHES // FILES


def test_an_aged_clone_works_under_systemds_open_file_limit_and_is_tidied_when_idle(
        aged, mount_gitfs, path_without_git, monkeypatch):
    remote, clone = aged
    # Without git nothing tidies the clone: every operation works on its 2,000 packs,
    # within the bound.
    with monkeypatch.context() as patch:
        patch.setenv("PATH", path_without_git)
        mount = mount_gitfs(remote, repo_path=clone, open_files=OPEN_FILES)
    with OpenFilesPeak(mount.process.pid) as untidied:
        read_everything(mount, remote)
    assert pack_count(clone) >= PUSHES
    assert "git is not installed" in mount.log_text()
    assert untidied.peak <= BOUND, f"{untidied.peak} open files on {PUSHES} packs"
    assert mount.stop() == 0

    # With git, the mount tidies the clone once it has nothing to push, while a reader
    # keeps reading old versions (none may go missing).
    mount = mount_gitfs(remote, repo_path=clone, open_files=OPEN_FILES, min_idle_times=2)
    folders = [history_folder(remote, sha) for sha in git("rev-list", "main", cwd=remote.bare).split()[5:400:7]]
    failures: list[str] = []
    stop_reading = threading.Event()

    def read_history() -> None:
        while not stop_reading.is_set():
            for day, name in folders:
                try:
                    data = (mount.history / day / name / "colleague-00.txt").read_bytes()
                except OSError as error:
                    failures.append(f"{day}/{name}: {error}")
                    return
                if not data.startswith(b"push "):
                    failures.append(f"{day}/{name}: {data[:40]!r}")

    reader = threading.Thread(target=read_history)
    with OpenFilesPeak(mount.process.pid) as tidying:
        reader.start()
        try:
            wait_for(lambda: pack_count(clone) <= 2, timeout=120, message="the clone's packs consolidated")
        finally:
            stop_reading.set()
            reader.join()
    assert not failures, failures[:5]
    wait_for(lambda: "clone tidied" in mount.log_text(), timeout=30, message="the tidying logged")
    read_everything(mount, remote)
    wait_synced(mount)
    # Idle: what libgit2 and the pack reader kept open is let go.
    wait_for(lambda: open_files(mount.process.pid) <= 16, timeout=60, message="open files back to a few")
    assert tidying.peak <= BOUND
    assert mount.stop() == 0
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=clone, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def git_running_under(pid: int) -> list[int]:
    found = []
    for child in descendants(pid):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip().startswith("git"):
                found.append(child)
        except OSError:
            continue
    return found


def pack_being_written(clone: Path) -> bool:
    """Whether git's pack-objects is writing a pack in the clone: its temporary files
    (tmp_pack_*, tmp_idx_*; repack's .tmp-PID-pack-*) are there until it renames them."""
    return any(name.startswith(("tmp_", ".tmp-")) for name in os.listdir(clone / ".git" / "objects" / "pack"))


def group_of(pid: int) -> int:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:  # ended meanwhile
        return -1


@contextlib.contextmanager
def scheduled_first():
    """This thread scheduled ahead of every ordinary process (SCHED_FIFO), where the system
    allows it: on a loaded machine a sleep of 2 ms otherwise lasted long enough for git gc
    to write its pack and end in one step."""
    try:
        before = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (OSError, AttributeError):
        yield
        return
    try:
        yield
    finally:
        os.sched_setscheduler(0, *before)


def stopped_at_the_pack(group: int, clone: Path, timeout: float = 120) -> None:
    """Stop the process group `group` (git gc and what it runs) once it is writing its new
    pack, running it in steps of a few milliseconds until then; it is left stopped."""
    deadline = time.monotonic() + timeout
    with scheduled_first():
        os.killpg(group, signal.SIGSTOP)
        while not pack_being_written(clone):
            if time.monotonic() > deadline:
                raise AssertionError(f"git gc wrote no new pack within {timeout} s")
            os.killpg(group, signal.SIGCONT)
            time.sleep(0.002)
            os.killpg(group, signal.SIGSTOP)


def stopped_git_under(pid: int) -> int | None:
    """A git program under the process `pid` that has stopped itself, or None."""
    for child in git_running_under(pid):
        try:
            state = Path(f"/proc/{child}/stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state == "T":
            return child
    return None


@pytest.fixture
def git_stopping_at_gc(tmp_path, monkeypatch) -> str:
    """Put first on PATH a `git` that stops itself (SIGSTOP) before it runs the real git's
    gc, so a test meets git gc before it has done anything, however late it looks; other
    commands run at once. Returns the PATH it replaced."""
    real = shutil.which("git")
    bin_dir = tmp_path / "bin-git-stopping-at-gc"
    bin_dir.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\ncase " $* " in *" gc "*) kill -STOP $$ ;; esac\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    saved = os.environ["PATH"]
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{saved}")
    return saved


def test_kill_9_in_the_middle_of_tidying_loses_nothing(aged, mount_gitfs, git_stopping_at_gc, monkeypatch):
    remote, clone = aged
    mount = mount_gitfs(remote, repo_path=clone, open_files=OPEN_FILES)
    monkeypatch.setenv("PATH", git_stopping_at_gc)  # the remount tidies with the real git at once
    (mount.current / "before-the-crash.txt").write_text("kept\n")
    # git gc stopped itself at its start: the test meets it however late it looks.
    leader = wait_for(lambda: stopped_git_under(mount.process.pid), timeout=60, interval=0.01,
                      message="git gc stopped at its start")
    # Into its work: the new pack being written (git's temporary pack file). Not later: once gc
    # has deleted some of the old packs, fewer than its threshold may be left, and the remount
    # rightly does not tidy again. gc leads a process group of its own: let run a few
    # milliseconds at a time, it cannot write its pack between two looks at the folder however
    # loaded the machine (polling alone missed the whole window under load).
    assert group_of(leader) == leader and os.getpgrp() != leader, "git gc is not in a process group of its own"
    stopped_at_the_pack(leader, clone)
    gc = git_running_under(mount.process.pid)
    for pid in [mount.process.pid, *gc, *descendants(mount.process.pid)]:
        try:
            os.kill(pid, signal.SIGKILL)  # the power cut: the daemon and every git it ran
        except ProcessLookupError:
            pass
    mount.kill()

    fsck = subprocess.run(["git", "fsck", "--connectivity-only"], cwd=clone, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    again = mount_gitfs(remote, repo_path=clone, open_files=OPEN_FILES)
    assert (again.current / "before-the-crash.txt").read_text() == "kept\n"
    wait_for(lambda: "before-the-crash.txt" in remote.files("main"), timeout=60, message="the file on the remote")
    wait_for(lambda: pack_count(clone) <= 2, timeout=120, message="the remount's tidying")
    assert (again.current / "colleague-00.txt").read_bytes() == colleague_text(PUSHES - FILES)
    assert again.stop() == 0
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=clone, capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
