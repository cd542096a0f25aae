"""Layer 2: when the sync worker runs a cycle (gitfs/sync/sync_worker.py), step by step
with a fake clock, on real repositories; the thread is never started except where the
test is about the thread (the final cycle at stop)."""

import contextlib
import errno
import logging
import os
import threading
from pathlib import Path

import pytest

from aging import age_clone_quickly, pack_count
from gitfs.repo.tidying.housekeeping import (
    AUTO_PACK_LIMIT,
    BUSY_FACTOR,
    CHECK_SECONDS,
    FAILED_WAIT_SECONDS,
    Housekeeper,
)
from gitfs.sync import sync_worker
from gitfs.sync.cycle import CycleResult
from gitfs.sync.jobs import CommitJob
from gitfs.sync.sync_worker import SyncWorker
from helpers import git, make_rig
from servers import GitDaemon


class Writers:
    """What the handle table would say: files open for writing, and for how long."""

    def __init__(self):
        self.count, self.oldest = 0, 0.0

    def __call__(self):
        return self.count, self.oldest


@pytest.fixture
def writers():
    return Writers()


def worker_for(rig, writers, sync_timeout=1.0):
    return SyncWorker(rig.cycle, rig.jobs, rig.state, writers=writers, dirty_open_paths=lambda: rig.dirty_paths,
                      sync_timeout=sync_timeout, clock=rig.clock)


def settled(rig, writers):
    """A worker that has done its start-up cycle (a previous mount's leftovers: none)."""
    worker = worker_for(rig, writers)
    rig.clock.advance(5)
    assert worker.step(timeout=0) is not None
    return worker


def test_nothing_runs_before_sync_timeout_of_quiet(rig, writers):
    worker = settled(rig, writers)
    rig.write("a.txt", "a")
    rig.clock.advance(0.5)
    assert worker.step(timeout=0) is None
    rig.write("b.txt", "b")  # a new write restarts the quiet period
    rig.clock.advance(0.9)
    assert worker.step(timeout=0) is None
    rig.clock.advance(0.2)
    result = worker.step(timeout=0)
    assert result is not None and result.committed is not None
    assert {"a.txt", "b.txt"} <= set(rig.remote.files())


def test_a_change_in_flight_after_a_quiet_spell_starts_no_cycle(rig, writers):
    """CurrentView queues a change's job (waking the worker) before its mutation ends:
    after a long quiet spell, a cycle taken then would commit the first removal of an
    `rm -rf` alone."""
    worker = settled(rig, writers)
    rig.clock.advance(100)
    with rig.state.mutation():
        rig.write_file("a.txt", "a")
        rig.jobs.put(CommitJob("Update /a.txt", add=("a.txt",)))
        assert not worker.due()  # (a cycle here would wait for this very mutation to end)
    rig.clock.advance(0.5)
    assert worker.step(timeout=0) is None
    rig.clock.advance(0.6)
    result = worker.step(timeout=0)
    assert result is not None and result.committed is not None
    assert "a.txt" in rig.remote.files()


def test_nothing_to_do_runs_no_cycle(rig, writers):
    worker = settled(rig, writers)
    rig.clock.advance(100)
    assert worker.step(timeout=0) is None


def test_an_open_writer_holds_the_commit_until_the_open_file_bound(rig, writers):
    worker = settled(rig, writers)
    rig.write("a.txt", "a")
    rig.dirty_paths = ["/big.log"]
    with open(f"{rig.path}/big.log", "w") as handle:
        handle.write("still being written\n")
    writers.count, writers.oldest = 1, 5.0
    rig.clock.advance(2)
    assert worker.step(timeout=0) is None  # quiet, but a file is open for writing
    writers.oldest = 10.5  # past 10 x sync_timeout
    result = worker.step(timeout=0)
    assert result is not None and result.committed is not None
    assert rig.remote.show("big.log") == b"still being written\n"


def test_sync_now_skips_the_quiet_period(rig, writers):
    worker = settled(rig, writers)
    rig.write("now.txt", "now")
    worker.sync_now()
    result = worker.step(timeout=0)
    assert result is not None and "now.txt" in rig.remote.files()


def test_a_wake_up_brings_their_change_in_while_a_file_is_written(rig, writers):
    worker = settled(rig, writers)
    writers.count, writers.oldest = 1, 0.5
    rig.remote.commit({"theirs.txt": "theirs\n"}, "theirs")
    rig.clock.advance(2)
    assert worker.step(timeout=0) is None
    worker.wake()  # what the fetch worker does when the remote moved
    result = worker.step(timeout=0)
    assert result is not None and result.committed is None
    assert rig.read("theirs.txt") == "theirs\n"


def test_failures_back_off_and_the_commit_stays_local(remote, tmp_path, writers):
    rig = make_rig(remote, tmp_path / "mine", url=str(tmp_path / "gone.git"))
    worker = worker_for(rig, writers)
    rig.write("offline.txt", "offline")
    rig.clock.advance(2)
    assert worker.step(timeout=0) is None and rig.link.attempts == 1
    assert not rig.jobs  # committed locally all the same
    assert rig.status.snapshot()["last_fetch"]["result"] == "failed"
    for attempts, backoff in enumerate((1, 2, 4), start=1):  # seconds, plus up to 1 s of jitter
        rig.clock.advance(backoff - 0.1)
        worker.step(timeout=0)
        assert rig.link.attempts == attempts, "retried before the back-off ended"
        rig.clock.advance(1.2)
        worker.step(timeout=0)
        assert rig.link.attempts == attempts + 1, "not retried once the back-off ended"
    git("remote", "set-url", "origin", str(remote.bare), cwd=rig.path)  # back on line
    rig.clock.advance(9)
    result = worker.step(timeout=0)
    assert result is not None and result.pushed is not None
    assert remote.show("offline.txt") == b"offline"


def test_stop_runs_the_final_cycle_on_the_worker_thread(rig, writers):
    worker = worker_for(rig, writers, sync_timeout=3600)  # never quiet long enough by itself
    worker.start()
    rig.write("last.txt", "at unmount\n")
    worker.stop(timeout=30)
    assert not worker.is_alive()
    assert rig.remote.show("last.txt") == b"at unmount\n"


class Said(logging.Handler):
    """Sets `event` once a log line holds `words`."""

    def __init__(self, words: str):
        super().__init__()
        self.words, self.event = words, threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.words in record.getMessage():
            self.event.set()


def test_stop_waits_for_the_final_commit_however_long_it_takes(rig, writers, monkeypatch, caplog):
    """The push has a deadline at unmount, the commit none: a daemon that quit half-way
    through a commit would leave the change uncommitted and the clone's index locked. The
    final commit here (a burst of thousands of files) ends only once stop() has said it
    still waits for it, longer than its timeout."""
    monkeypatch.setattr(sync_worker, "COMMIT_NOTICE_SECONDS", 0.2)  # longer than stop's timeout below
    caplog.set_level(logging.INFO, logger=sync_worker.__name__)
    said = Said("still committing the last changes")
    logging.getLogger(sync_worker.__name__).addHandler(said)
    worker = worker_for(rig, writers, sync_timeout=3600)
    commit_pending = rig.cycle.commit_pending

    def slow_commit(*args, **kwargs):
        said.event.wait(30)
        return commit_pending(*args, **kwargs)

    rig.cycle.commit_pending = slow_commit
    try:
        worker.start()
        rig.write("last.txt", "at unmount\n")
        worker.stop(timeout=0.1)
        assert said.event.is_set()
        assert "last.txt" in git("ls-tree", "--name-only", "HEAD", cwd=rig.path).split()
    finally:
        said.event.set()
        worker.join(30)
        logging.getLogger(sync_worker.__name__).removeHandler(said)


def test_stop_gives_up_on_a_cycle_that_hangs(rig, writers):
    """A cycle in flight at unmount (a push over a network that hangs) is waited for at most
    the timeout: only the final cycle's own commit is waited for however long it takes."""
    worker = worker_for(rig, writers, sync_timeout=3600)
    release = threading.Event()
    running = threading.Event()

    def hanging_run(*args, **kwargs):
        running.set()
        release.wait(60)
        return CycleResult()

    rig.cycle.run = hanging_run
    worker.start()
    worker.sync_now()
    assert running.wait(10)
    stopped = threading.Event()
    stopper = threading.Thread(target=lambda: (worker.stop(timeout=0.2), stopped.set()), daemon=True)
    stopper.start()
    try:
        assert stopped.wait(30), "stop() waited for the hanging cycle"
        assert worker.is_alive()
    finally:
        release.set()
        worker.join(30)


def test_sync_now_waits_for_the_files_closed_before_it_and_holds_those_still_open(rig, writers):
    worker = settled(rig, writers)
    open_files = {7: "/closing.txt", 8: "/open.txt"}  # handle -> path, as the handle table says
    waited = []

    def wait_released(numbers, timeout):
        waited.append(set(numbers))
        rig.write("closing.txt", "closed before the request")  # its RELEASE arrives meanwhile
        del open_files[7]
        writers.count = len(open_files)
        return False  # open.txt stays open

    worker.writing, worker.wait_released, worker.release_wait = lambda: dict(open_files), wait_released, 0.0
    writers.count, writers.oldest = 2, 0.5
    rig.write("open.txt", "an earlier save of the file open again now")
    worker.sync_now()
    result = worker.step(timeout=0)
    assert waited == [{7, 8}]
    assert result is not None and result.committed is not None
    files = rig.remote.files()
    assert "closing.txt" in files and "open.txt" not in files
    assert rig.jobs.paths() == {"open.txt"}  # its job waits for the file to be closed


def test_the_clone_is_tidied_between_cycles_when_quiet_and_busy_only_far_past_the_thresholds(rig, writers):
    housekeeper = Housekeeper(rig.path, pushed=lambda: rig.repo.count_ahead() == 0, exclusive=rig.link.quiet,
                              clock=rig.clock)
    worker = SyncWorker(rig.cycle, rig.jobs, rig.state, writers=writers, dirty_open_paths=lambda: rig.dirty_paths,
                        sync_timeout=1.0, clock=rig.clock, housekeeping=housekeeper)
    rig.clock.advance(5)
    assert worker.step(timeout=0) is not None
    age_clone_quickly(rig.remote.bare, Path(rig.path), AUTO_PACK_LIMIT + 5)
    rig.write("a.txt", "a")
    rig.clock.advance(0.5)
    assert worker.step(timeout=0) is None  # a change waits: the clone is not far enough past
    assert pack_count(Path(rig.path)) >= AUTO_PACK_LIMIT + 5
    rig.clock.advance(1)
    assert worker.step(timeout=0) is not None and "a.txt" in rig.remote.files()
    rig.clock.advance(CHECK_SECONDS)
    assert worker.step(timeout=0) is None  # nothing waits
    assert pack_count(Path(rig.path)) <= 2 and housekeeper.runs == 1  # (git 2.43 on: a cruft pack too)

    age_clone_quickly(rig.remote.bare, Path(rig.path), BUSY_FACTOR * AUTO_PACK_LIMIT + 1)
    rig.clock.advance(CHECK_SECONDS)
    rig.write("b.txt", "b")
    assert worker.step(timeout=0) is None  # busy, but far past: tidied all the same
    assert pack_count(Path(rig.path)) <= 2 and housekeeper.runs == 2
    rig.clock.advance(1.5)
    assert worker.step(timeout=0) is not None and "b.txt" in rig.remote.files()


def test_a_tidying_that_fails_delays_no_commit_and_is_said_once_by_the_housekeeper(rig, writers, caplog):
    """A real gc, then the callback that lets go of the old packs fails: the housekeeper says
    it once and waits its FAILED_WAIT_SECONDS; the sync neither backs off nor logs it."""
    let_go = []

    def tidied():
        let_go.append(rig.clock())
        raise OSError(errno.EMFILE, "Too many open files")

    housekeeper = Housekeeper(rig.path, pushed=lambda: rig.repo.count_ahead() == 0, exclusive=rig.link.quiet,
                              tidied=tidied, clock=rig.clock)
    worker = SyncWorker(rig.cycle, rig.jobs, rig.state, writers=writers, dirty_open_paths=lambda: rig.dirty_paths,
                        sync_timeout=1.0, clock=rig.clock, housekeeping=housekeeper)
    caplog.set_level(logging.INFO)
    rig.clock.advance(5)
    assert worker.step(timeout=0) is not None
    age_clone_quickly(rig.remote.bare, Path(rig.path), AUTO_PACK_LIMIT + 5)
    rig.clock.advance(CHECK_SECONDS)
    assert worker.step(timeout=0) is None and len(let_go) == 1

    rig.write("a.txt", "a")
    rig.clock.advance(1.0)  # sync_timeout of quiet, and no moment of back-off
    result = worker.step(timeout=0)
    assert result is not None and "a.txt" in rig.remote.files()

    age_clone_quickly(rig.remote.bare, Path(rig.path), AUTO_PACK_LIMIT + 5)
    rig.clock.advance(CHECK_SECONDS)
    assert worker.step(timeout=0) is None and len(let_go) == 1
    rig.clock.advance(FAILED_WAIT_SECONDS)
    assert worker.step(timeout=0) is None and len(let_go) == 2
    said = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert [(record.name, record.exc_info) for record in said] == [("gitfs.repo.tidying.housekeeping", None)]
    assert "Too many open files" in said[0].getMessage()


class HousekeeperWithABug:
    """A housekeeper whose tidy_if_due raises, which the real one never does."""

    def __init__(self):
        self.calls = 0

    def tidy_if_due(self, busy):
        self.calls += 1
        raise AttributeError("a bug")

    def interrupt(self):
        pass


def test_a_housekeeper_that_raises_neither_stops_nor_delays_the_sync(rig, writers, caplog):
    housekeeper = HousekeeperWithABug()
    worker = SyncWorker(rig.cycle, rig.jobs, rig.state, writers=writers, dirty_open_paths=lambda: rig.dirty_paths,
                        sync_timeout=1.0, clock=rig.clock, housekeeping=housekeeper)
    rig.clock.advance(5)
    assert worker.step(timeout=0) is not None
    assert worker.step(timeout=0) is None and housekeeper.calls == 1
    rig.write("a.txt", "a")
    rig.clock.advance(1.0)
    result = worker.step(timeout=0)
    assert result is not None and "a.txt" in rig.remote.files()
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == \
        ["tidying the clone failed"]


@contextlib.contextmanager
def refusing_rig(remote, tmp_path, hook: str):
    """The rig on a clone whose remote is served by git daemon (a path remote runs no hook),
    the bare repository's pre-receive hook running `hook` (sh)."""
    path = remote.bare / "hooks" / "pre-receive"
    path.write_text(f"#!/bin/sh\n{hook}\n")
    path.chmod(0o755)
    daemon = GitDaemon(remote.bare.parent)
    daemon.start()
    try:
        yield make_rig(remote, tmp_path / "mine", url=daemon.url(remote.bare.name))
    finally:
        daemon.stop()


def test_a_push_the_server_refuses_backs_off_to_minutes_and_a_change_retries_at_once(remote, tmp_path, writers):
    """A real server (git daemon) whose pre-receive hook refuses while the branch is frozen:
    attempts counted by the hook itself."""
    attempts, frozen = tmp_path / "attempts", tmp_path / "frozen"
    frozen.touch()
    with refusing_rig(remote, tmp_path, f"echo push >> {attempts}\nif [ -e {frozen} ]; then\n"
                                        f"  echo 'policy: frozen' >&2\n  exit 1\nfi") as rig:
        worker = worker_for(rig, writers)

        def pushes() -> int:
            return len(attempts.read_text().split()) if attempts.exists() else 0

        rig.write("a.txt", "a")
        rig.clock.advance(2)
        assert worker.step(timeout=0) is None and pushes() == 1
        assert rig.status.snapshot()["last_push"]["server_says"] == ["policy: frozen"]
        for refused, backoff in enumerate((1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300), start=1):
            rig.clock.advance(backoff - 0.1)  # plus up to 1 s of jitter
            worker.step(timeout=0)
            assert pushes() == refused, f"retried before the back-off of {backoff} s ended"
            rig.clock.advance(1.2)
            worker.step(timeout=0)
            assert pushes() == refused + 1, f"not retried once the back-off of {backoff} s ended"
        assert rig.link.attempts == pushes()  # one fetch per attempt: never merged again in a loop

        rig.clock.advance(5)  # well inside the 5-minute back-off:
        rig.write("b.txt", "b")  # the user mends something in current/
        rig.clock.advance(1.1)  # sync_timeout of quiet
        worker.step(timeout=0)
        assert pushes() == 13, "a change in current/ did not retry at once"

        frozen.unlink()
        rig.clock.advance(5)
        worker.sync_now()  # SIGUSR1
        result = worker.step(timeout=0)
        assert result is not None and result.pushed is not None and pushes() == 14
        assert {"a.txt", "b.txt"} <= set(remote.files())
        assert rig.status.snapshot()["last_push"]["result"] == "ok"


def test_after_a_refusal_an_editor_s_swap_file_asks_the_server_nothing_and_a_real_change_does(
        remote, tmp_path, writers):
    attempts = tmp_path / "attempts"
    with refusing_rig(remote, tmp_path, f"echo push >> {attempts}\necho 'policy: frozen' >&2\nexit 1") as rig:
        with open(os.path.join(rig.path, ".git", "info", "exclude"), "a") as exclude:
            exclude.write("*.swp\n")  # as GitFS's default rules keep an editor's swap files local
        worker = SyncWorker(rig.cycle, rig.jobs, rig.state, writers=writers, dirty_open_paths=lambda: rig.dirty_paths,
                            sync_timeout=0.1, committable=rig.repo.committable, clock=rig.clock)

        def pushes() -> int:
            return len(attempts.read_text().split()) if attempts.exists() else 0

        rig.write("a.txt", "a")
        rig.clock.advance(0.2)
        worker.step(timeout=0)
        assert pushes() == 1  # refused: backing off at least 1 s
        rig.write(".a.txt.swp", "vim's swap")
        rig.clock.advance(0.2)  # quiet, inside the back-off
        worker.step(timeout=0)
        assert pushes() == 1, "a swap file retried the refused push"
        rig.write("b.txt", "b")
        rig.clock.advance(0.2)
        worker.step(timeout=0)
        assert pushes() == 2, "a change to commit did not retry at once"


def test_undoing_what_the_server_refused_leaves_nothing_to_push(remote, tmp_path, writers):
    with refusing_rig(remote, tmp_path, "echo 'policy: no pushes today' >&2\nexit 1") as rig:
        worker = worker_for(rig, writers)
        before = remote.head()
        rig.write("secret.txt", "a token")
        rig.clock.advance(2)
        assert worker.step(timeout=0) is None
        assert rig.status.snapshot()["last_push"]["result"] == "refused"
        with rig.state.mutation():
            os.unlink(os.path.join(rig.path, "secret.txt"))
            rig.jobs.put(CommitJob("Deleted /secret.txt", remove=("secret.txt",)))
        rig.clock.advance(1.1)
        result = worker.step(timeout=0)
        assert result is not None and result.pushed == rig.repo.remote_tip()
        assert str(rig.repo.branch_tip()) == before == remote.head()  # no empty commit, nothing sent
        assert rig.status.snapshot()["last_push"]["result"] == "ok"


# -- a mount that never rests ------------------------------------------------------

def busy_worker(rig, writers, max_sync_delay=5.0):
    worker = SyncWorker(rig.cycle, rig.jobs, rig.state, writers=writers, dirty_open_paths=lambda: rig.dirty_paths,
                        sync_timeout=1.0, max_sync_delay=max_sync_delay, clock=rig.clock)
    rig.clock.advance(5)
    assert worker.step(timeout=0) is not None  # the start-up cycle
    return worker


def commits(rig) -> int:
    return int(git("--git-dir", str(rig.remote.bare), "rev-list", "--count", rig.remote.branch).strip())


def test_a_logger_reopening_its_file_every_0_4_s_is_committed_every_max_sync_delay(rig, writers):
    worker = busy_worker(rig, writers)
    before = commits(rig)
    rows = ""
    times = []
    for row in range(60):  # 24 s of a row every 0.4 s: never sync_timeout of quiet
        rows += f"row {row}\n"
        rig.write("readings.csv", rows)
        rig.clock.advance(0.4)
        result = worker.step(timeout=0)
        if result is not None and result.committed is not None:
            times.append(row * 0.4)
            assert rig.remote.show("readings.csv") == rows.encode()  # pushed, every row up to now
    assert times and times[0] >= 4.6  # not before max_sync_delay: a burst stays one commit
    assert all(later - earlier >= 4.6 for earlier, later in zip(times, times[1:]))  # no commit storm
    assert len(times) == 4 and commits(rig) == before + 4


def test_a_file_held_open_and_written_does_not_hold_back_a_document_saved_beside_it(rig, writers):
    worker = busy_worker(rig, writers)
    rig.dirty_paths = ["/station.csv"]
    writers.count, writers.oldest = 1, 0.0
    rows = ""
    saved_at = None
    for row in range(20):  # a row every 0.5 s into a file held open: the mount never quiet
        rows += f"row {row}\n"
        with rig.state.mutation():
            rig.write_file("station.csv", rows)
        if row == 2:
            rig.write("notes.txt", "saved once\n")
            saved_at = rig.clock()
        status = worker.writing_status()
        assert [entry["path"] for entry in status] == ["station.csv"]
        rig.clock.advance(0.5)
        writers.oldest += 0.5
        result = worker.step(timeout=0)
        if result is not None and result.committed is not None:
            break
    else:
        raise AssertionError("nothing committed while a file was written all along")
    assert rig.clock() - saved_at <= 5.0 + 1.0  # within max_sync_delay of the save (one step's slack)
    assert rig.remote.show("notes.txt") == b"saved once\n"
    assert rig.remote.show("station.csv") == rows.encode()  # as it stood between two writes
    assert worker.writing_status()[0]["next_commit_in"] == 5.0  # the next one, max_sync_delay on


def test_the_busy_file_s_commit_says_it_is_still_being_written(rig, writers):
    worker = busy_worker(rig, writers)
    rig.dirty_paths = ["/station.csv"]
    writers.count, writers.oldest = 1, 6.0
    rig.write_file("station.csv", "row 0\n")
    rig.state.last_change = rig.clock()  # written this instant: not quiet
    result = worker.step(timeout=0)
    assert result is not None and result.committed is not None
    assert rig.remote.log()[0] == "Update /station.csv (still being written)"
