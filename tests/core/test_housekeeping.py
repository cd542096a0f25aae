"""Layer 1: a clone kept compact (gitfs/repo/tidying/housekeeping.py) and the pack files GitFS's
own reader keeps open (gitfs/repo/objects/packindex.py's OpenPacks), on clones aged by real packs
and with the real git program."""

import contextlib
import logging
import os
import shutil
import signal
import threading
import time

import pygit2
import pytest

from aging import age_clone_quickly, loose_count, pack_count
from gitfs.repo.objects.packindex import OpenPacks
from gitfs.repo.tidying import housekeeping
from gitfs.repo.tidying.housekeeping import AUTO_PACK_LIMIT, CHECK_SECONDS, FAILED_WAIT_SECONDS, Housekeeper
from helpers import Remote, git, wait_for


@pytest.fixture
def remote(tmp_path):
    remote = Remote(tmp_path / "remote")
    remote.commit({"readme.txt": "the team's folder\n"}, "first")
    return remote


def aged_clone(remote, tmp_path, pushes):
    clone = tmp_path / "clone"
    if not clone.exists():
        git("clone", "-q", str(remote.bare), str(clone))
    age_clone_quickly(remote.bare, clone, pushes)
    return clone


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Exclusive:
    """The remote link's lock as the housekeeper sees it: counts its uses."""

    def __init__(self):
        self.entered = 0

    @contextlib.contextmanager
    def __call__(self):
        self.entered += 1
        yield


def keeper(clone, **options):
    options.setdefault("pushed", lambda: True)
    options.setdefault("exclusive", Exclusive())
    return Housekeeper(str(clone), **options)


def fake_git(tmp_path, script):
    """An executable standing in for git: `script` is its shell body."""
    path = tmp_path / "fake-git"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


def every_object(repo):
    """The bytes of every commit, tree and blob reachable from the remote-tracking branch."""
    contents = []
    for commit in repo.walk(repo.references["refs/remotes/origin/main"].target):
        contents.append(commit.message)
        for entry in commit.tree:
            contents.append(repo[entry.id].data)
    return contents


def test_a_clone_with_more_packs_than_git_allows_is_tidied_into_one_and_reads_on(remote, tmp_path):
    clone = aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 10)
    reader = pygit2.Repository(str(clone))
    before = every_object(reader)  # the handle has the old packs open
    told = []
    exclusive = Exclusive()
    tidier = keeper(clone, exclusive=exclusive, tidied=lambda: told.append(True))

    assert tidier.tidy_if_due()

    assert pack_count(clone) == 1 and loose_count(clone) == 0
    assert tidier.runs == 1 and told == [True] and exclusive.entered == 1
    assert every_object(reader) == before  # a reader that ran across the gc finds every object
    assert every_object(pygit2.Repository(str(clone))) == before
    git("fsck", "--strict", "--no-progress", cwd=clone)


def test_a_clone_under_the_thresholds_is_left_alone(remote, tmp_path):
    clone = aged_clone(remote, tmp_path, 10)
    exclusive = Exclusive()
    tidier = keeper(clone, exclusive=exclusive)

    assert not tidier.tidy_if_due()

    assert pack_count(clone) == 10 and tidier.runs == 0 and exclusive.entered == 0


def test_loose_objects_past_the_threshold_are_packed(remote, tmp_path, monkeypatch):
    monkeypatch.setattr(housekeeping, "AUTO_LOOSE", 20)
    clone = aged_clone(remote, tmp_path, 0)
    repo = pygit2.Repository(str(clone))
    signature = pygit2.Signature("GitFS", "gitfs@example.com")
    for number in range(10):  # GitFS's own commits: a blob, a tree and a commit each
        tree = repo.TreeBuilder(repo.head.peel(pygit2.Tree))
        tree.insert("notes.txt", repo.create_blob(f"note {number}\n".encode()), pygit2.GIT_FILEMODE_BLOB)
        repo.create_commit("HEAD", signature, signature, f"note {number}", tree.write(), [repo.head.target])
    unreachable = repo.create_blob(b"staged, then never committed\n")
    assert loose_count(clone) == 34  # the clone's first commit is loose too
    tidier = keeper(clone)

    assert tidier.tidy_if_due()

    # git keeps what nothing reaches for two weeks: loose, or from git 2.43 in a cruft pack.
    assert (loose_count(clone), pack_count(clone)) in ((1, 1), (0, 2))
    assert repo[unreachable]
    repo.create_blob(b"one more\n")
    tidier._next_check = 0  # the next check, at once
    assert not tidier.tidy_if_due()  # counted from what the gc left


def test_commits_not_yet_on_the_remote_wait_to_be_pushed(remote, tmp_path):
    clone = aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 5)
    pushed = [False]
    exclusive = Exclusive()
    clock = FakeClock()
    tidier = keeper(clone, pushed=lambda: pushed[0], exclusive=exclusive, clock=clock)

    assert not tidier.tidy_if_due()
    assert pack_count(clone) == AUTO_PACK_LIMIT + 5 and exclusive.entered == 0

    pushed[0] = True
    clock.now += CHECK_SECONDS
    assert tidier.tidy_if_due()
    assert pack_count(clone) == 1


def test_the_clone_is_looked_at_once_a_minute_at_most(remote, tmp_path):
    clone = aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 1)
    clock = FakeClock()
    tidier = keeper(clone, clock=clock)
    assert tidier.tidy_if_due()  # at once: a clone that arrives aged is tidied at mount
    aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 1)

    clock.now += CHECK_SECONDS / 2
    assert not tidier.tidy_if_due()
    assert pack_count(clone) == AUTO_PACK_LIMIT + 2

    clock.now += CHECK_SECONDS / 2
    assert tidier.tidy_if_due()
    assert pack_count(clone) == 1 and tidier.runs == 2


def test_without_git_nothing_is_tidied_and_the_log_says_so_once(remote, tmp_path, monkeypatch, caplog):
    clone = aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 1)
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    caplog.set_level(logging.INFO, logger="gitfs.repo.tidying.housekeeping")
    clock = FakeClock()
    tidier = keeper(clone, clock=clock)

    for _ in range(3):
        assert not tidier.tidy_if_due()
        clock.now += CHECK_SECONDS

    assert pack_count(clone) == AUTO_PACK_LIMIT + 1
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 1 and said[0].startswith("git is not installed")


def test_a_failing_gc_is_warned_with_gits_words_and_tried_again_an_hour_later(remote, tmp_path, caplog):
    clone = aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 1)
    runs = tmp_path / "runs"
    failing = fake_git(tmp_path, f"echo run >> {runs}\necho 'fatal: No space left on device' >&2\nexit 128\n")
    clock = FakeClock()
    tidier = keeper(clone, git=failing, clock=clock)
    caplog.set_level(logging.INFO, logger="gitfs.repo.tidying.housekeeping")

    assert not tidier.tidy_if_due()
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings == ["tidying the clone failed (git gc: fatal: No space left on device); tried again in an hour"]

    clock.now += CHECK_SECONDS * 5
    assert not tidier.tidy_if_due()
    assert runs.read_text().count("run") == 1

    clock.now += FAILED_WAIT_SECONDS
    assert not tidier.tidy_if_due()
    assert runs.read_text().count("run") == 2 and tidier.runs == 0


def test_a_git_that_cannot_start_is_said_once_until_a_tidying_works_and_tried_again_an_hour_later(
        remote, tmp_path, caplog):
    """The git program found at mount is gone (an upgrade under way): the tidying fails
    without raising, says so in one line until it works again, and waits an hour."""
    clone = aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 1)
    program = tmp_path / "bin" / "git"
    attempts = []
    clock = FakeClock()
    tidier = keeper(clone, git=str(program), clock=clock, pushed=lambda: attempts.append(clock.now) or True)
    caplog.set_level(logging.INFO, logger="gitfs.repo.tidying.housekeeping")

    def warnings():
        return [record for record in caplog.records if record.levelno >= logging.WARNING]

    assert not tidier.tidy_if_due()
    clock.now += CHECK_SECONDS * 5
    assert not tidier.tidy_if_due()
    clock.now += FAILED_WAIT_SECONDS
    assert not tidier.tidy_if_due()  # fails again, and is not said again
    assert len(attempts) == 2 and len(warnings()) == 1
    assert warnings()[0].exc_info is None and str(program) in warnings()[0].getMessage()

    program.parent.mkdir()
    program.symlink_to(shutil.which("git"))
    clock.now += FAILED_WAIT_SECONDS
    assert tidier.tidy_if_due() and pack_count(clone) == 1

    program.unlink()
    aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 1)
    clock.now += CHECK_SECONDS
    assert not tidier.tidy_if_due()  # a new failure after one that worked is said again
    assert len(attempts) == 4 and len(warnings()) == 2


def test_unmount_ends_a_gc_under_way_and_none_starts_after(remote, tmp_path, caplog):
    clone = aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 1)
    started = tmp_path / "started"
    slow = fake_git(tmp_path, f"touch {started}\nexec sleep 60\n")
    clock = FakeClock()
    tidier = keeper(clone, git=slow, clock=clock)
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(tidier.tidy_if_due()))
    worker.start()
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists()

    tidier.interrupt()
    worker.join(timeout=30)

    assert not worker.is_alive() and outcome == [False]
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]
    started.unlink()
    clock.now += FAILED_WAIT_SECONDS
    assert not tidier.tidy_if_due()
    assert not started.exists()


@pytest.mark.parametrize("where", ["~/.gitconfig", ".git/config"])
def test_a_git_configuration_of_the_users_changes_nothing_the_tidying_relies_on(remote, tmp_path, monkeypatch,
                                                                                 where):
    """What a user may set for their own clones, in ~/.gitconfig or in this clone's config:
    the tidying runs as GitFS has it all the same. One pack; the reflog's recent entries
    kept, a commit left off the branch (a replaced push's) with them; an object nothing
    reaches yet (written a moment ago) kept; no hook, and done in the foreground. Of the
    rest, the clone's own configuration applies, the user's never."""
    clone = aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 1)
    git("-c", "gc.auto=0", "commit", "-q", "--allow-empty", "-m", "replaced", cwd=clone)  # (no gc of its own)
    git("reset", "-q", "--soft", "HEAD~1", cwd=clone)  # the commit is in the reflog alone
    loose_ref = clone / ".git" / "refs" / "remotes" / "origin" / "main"
    assert loose_ref.exists()
    hooks, hooked = tmp_path / "hooks", tmp_path / "hooked"
    hooks.mkdir()
    (hooks / "pre-auto-gc").write_text(f"#!/bin/sh\ntouch {hooked}\nexit 1\n")
    (hooks / "pre-auto-gc").chmod(0o755)
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")  # git reads ~/.gitconfig, as under a user's daemon
    config = home / ".gitconfig" if where == "~/.gitconfig" else clone / ".git" / "config"
    for key, value in {"gc.auto": "0", "gc.autoDetach": "true", "gc.pruneExpire": "now",
                       "gc.reflogExpire": "now", "gc.reflogExpireUnreachable": "now",
                       "gc.bigPackThreshold": "1", "core.hooksPath": str(hooks),
                       "gc.packRefs": "false"}.items():  # (not pinned: the clone's applies, the user's not)
        git("config", "--file", str(config), key, value)
    unreachable = pygit2.Repository(str(clone)).create_blob(b"staged a moment ago, not committed yet\n")
    reflog = git("reflog", "show", "--format=%H %gs", "HEAD", cwd=clone)
    assert "replaced" in reflog

    assert keeper(clone).tidy_if_due()

    assert pack_count(clone) <= 2  # (git 2.43 on: the unreachable blob in a cruft pack)
    assert pygit2.Repository(str(clone))[unreachable]
    assert git("reflog", "show", "--format=%H %gs", "HEAD", cwd=clone) == reflog
    assert not hooked.exists() and not (clone / ".git" / "gc.pid").exists()
    assert loose_ref.exists() == (where == ".git/config")  # refs packed unless the clone says not to


def processes():
    """(pid, parent, group) of every live process (a zombie has ended: only its parent's wait is left)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()  # after the command's name
            if fields[0] != "Z":
                found.append((int(name), int(fields[1]), int(fields[2])))
    return found


def processes_in(group):
    return [pid for pid, _parent, of in processes() if of == group]


def test_unmount_ends_every_process_of_a_gc_under_way(remote, tmp_path):
    """git gc runs git repack, which runs git pack-objects: ending gc alone would leave them
    running past the daemon. A real gc whose subcommands go through a git of the test's
    (GIT_EXEC_PATH) that holds repack back, as a big repack runs a while, is interrupted:
    no process of its group remains, and the clone keeps every object."""
    clone = aged_clone(remote, tmp_path, AUTO_PACK_LIMIT + 1)
    before = every_object(pygit2.Repository(str(clone)))
    real_git, exec_path = shutil.which("git"), git("--exec-path").strip()
    commands, repacking = tmp_path / "commands", tmp_path / "repacking"
    commands.mkdir()
    (commands / "git").write_text(f'#!/bin/sh\nif [ "$1" = repack ]; then\n  echo $$ > {repacking}\n  sleep 600\nfi\n'
                                  f'GIT_EXEC_PATH={exec_path} exec {real_git} "$@"\n')
    (commands / "git").chmod(0o755)
    gc = fake_git(tmp_path, f'GIT_EXEC_PATH={commands} exec {real_git} "$@"\n')
    tidier = keeper(clone, git=gc)
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(tidier.tidy_if_due()))
    worker.start()
    wait_for(lambda: repacking.exists() and repacking.read_text().strip(), message="gc to start repacking")
    repack = int(repacking.read_text())
    group = os.getpgid(repack)
    try:
        assert group != os.getpgrp()  # a group of its own, which alone the interrupt may end whole
        assert len(processes_in(group)) >= 3  # gc, the repack held back, its sleep

        tidier.interrupt()
        worker.join(timeout=30)

        assert not worker.is_alive() and outcome == [False]
        wait_for(lambda: not processes_in(group), message="every process of the gc's group to end")
    finally:  # what is left, never this process's own group
        left = processes_in(group) if group != os.getpgrp() else \
            [repack] + [pid for pid, parent, _group in processes() if parent == repack]
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert every_object(pygit2.Repository(str(clone))) == before
    git("fsck", "--strict", "--no-progress", cwd=clone)


def pack_files(count, folder):
    paths = []
    for number in range(count):
        path = folder / f"pack-{number:04d}.pack"
        path.write_bytes(b"PACK" + number.to_bytes(4, "big") * 8)
        paths.append(str(path))
    return paths


def descriptors_of(paths):
    wanted = set(paths)
    held = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") in wanted:
                held.append(fd)
    return held


def test_open_packs_are_bounded_and_the_least_recently_read_closed_first(tmp_path):
    paths = pack_files(40, tmp_path)
    packs = OpenPacks(limit=16)
    for number, path in enumerate(paths):
        with packs.reading(path) as fd:
            assert os.pread(fd, 8, 4) == number.to_bytes(4, "big") * 2
    assert packs.count() == 16 and len(descriptors_of(paths)) == 16
    assert sorted(descriptors_of(paths[-16:])) == sorted(descriptors_of(paths))  # the last 16 read

    packs.close_all()
    assert packs.count() == 0 and descriptors_of(paths) == []


def test_packs_being_read_stay_open_beyond_the_limit_until_their_reads_end(tmp_path):
    paths = pack_files(6, tmp_path)
    packs = OpenPacks(limit=2)
    with contextlib.ExitStack() as reads:
        fds = [reads.enter_context(packs.reading(path)) for path in paths]
        assert packs.count() == 6
        assert [os.pread(fd, 4, 0) for fd in fds] == [b"PACK"] * 6
        packs.close_all()
        assert packs.count() == 6  # none may close under a read
    assert packs.count() == 2
    packs.close_all()
    assert descriptors_of(paths) == []


def test_a_pack_deleted_while_closed_is_an_oserror(tmp_path):
    path, = pack_files(1, tmp_path)
    packs = OpenPacks(limit=1)
    with packs.reading(path):
        pass
    packs.close_all()
    os.unlink(path)
    with pytest.raises(FileNotFoundError), packs.reading(path):
        pass
    assert packs.count() == 0
